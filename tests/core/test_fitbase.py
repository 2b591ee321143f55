"""FitBase: one protocol for the three fit families (attrs, save/load, flat draws, group index),
the registry that reads any fit file as its class, one-line errors, and one config scheme."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import bayescpt.cli.main  # noqa: F401  (imports every fit family, so all are registered)
from bayescpt.core.config import ConfigError, check_config
from bayescpt.core.fitfile import FitBase, FitError, load_fit
from bayescpt.curves.model.fit import Fit
from bayescpt.hparams.fit import HparamsFit
from bayescpt.mixture.fit import MixtureFit

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "bayescpt" / "resources" / "models"
FILES = sorted(MODELS.glob("*.nc"))
CLASS_OF = {
    "annealing": Fit,
    "multipower": Fit,
    "cpt": Fit,
    "hparams": HparamsFit,
    "mixture": MixtureFit,
}


def _law(path) -> str:
    import xarray as xr

    with xr.open_dataset(str(path), group="posterior") as ds:
        return ds.attrs["law"]


def _rewrite(src, dst, **attrs):
    """Copy the fit file ``src`` to ``dst`` with some posterior attrs replaced."""
    import arviz as az

    idata = az.from_netcdf(str(src))
    idata.posterior.attrs.update(attrs)
    idata.to_netcdf(str(dst))
    return dst


# -- (a) every reference fit through the dispatcher -------------------------------------------
def test_every_family_is_registered_under_its_laws():
    assert {k: FitBase._registry[k] for k in CLASS_OF} == CLASS_OF
    path = MODELS / "hparams_steplaw.nc"
    assert type(FitBase.load(path)) is HparamsFit and type(FitBase.load_any(path)) is HparamsFit


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_reference_fit_loads_as_its_class(path):
    fit = load_fit(path)
    assert type(fit) is CLASS_OF[_law(path)]
    assert fit.fit_seconds > 0
    # flat draws: (chain, draw) flattened chain-major, the order of stack(("chain", "draw"))
    post = fit.idata.posterior
    name = max(post.data_vars, key=lambda v: post[v].ndim)
    stacked = post[name].stack(s=("chain", "draw")).transpose("s", ...).to_numpy()
    np.testing.assert_array_equal(fit.flat(name), stacked)
    assert fit.draws([name])[name].shape == stacked.shape


# -- (b) save/load round trip -------------------------------------------------------------------
@pytest.mark.parametrize("name", ["mixture_ct70m", "hparams_steplaw", "cpt_simulated"])
def test_save_load_round_trip_keeps_attrs_and_draws(tmp_path, name):
    fit = load_fit(MODELS / f"{name}.nc")
    out = fit.save(tmp_path / "again.nc")
    with pytest.raises(FileExistsError):
        fit.save(out)
    back = type(fit).load(out)
    assert back.attrs == fit.attrs
    assert back.meta == fit.meta and back.config == fit.config
    for v in fit.idata.posterior.data_vars:
        np.testing.assert_array_equal(back.flat(v), fit.flat(v))


def test_round_trip_of_a_fresh_fit(small_fit_file, tmp_path):
    _, path = small_fit_file
    fit = load_fit(path)
    assert type(fit) is Fit and fit.meta["fit_seconds"] > 0
    back = load_fit(fit.save(tmp_path / "copy.nc"))
    assert back.attrs == fit.attrs
    for v in ("A", "log_sigma", "A_w"):
        np.testing.assert_array_equal(back.flat(v), fit.flat(v))


def test_a_file_with_the_old_time_key_reads_as_fit_seconds(tmp_path):
    src = MODELS / "mixture_ct70m.nc"
    fit = load_fit(src)
    import arviz as az

    idata = az.from_netcdf(str(src))
    attrs = dict(idata.posterior.attrs)
    attrs["sampling_seconds"] = 12.5
    attrs.pop("fit_seconds", None)
    idata.posterior.attrs.clear()
    idata.posterior.attrs.update(attrs)
    idata.to_netcdf(str(tmp_path / "old.nc"))
    old = load_fit(tmp_path / "old.nc")
    assert old.fit_seconds == 12.5 and "sampling_seconds" not in old.meta
    assert old.attrs["fit_seconds"] == 12.5 and "sampling_seconds" not in old.attrs
    assert fit.fit_seconds != 12.5


# -- group index: one argument order ------------------------------------------------------------
def test_group_index_takes_model_size_then_val_set():
    mix = load_fit(MODELS / "mixture_ct70m.nc")
    g = mix.groups
    for i in range(len(g)):
        assert mix.group_index(g.loc[i, "model_size"], g.loc[i, "val_set"]) == i
        assert mix.group_index(val_set=g.loc[i, "val_set"], model_size=g.loc[i, "model_size"]) == i
    with pytest.raises(ValueError, match="no fitted group for val_set 'nowhere'"):
        mix.group_index(g.loc[0, "model_size"], "nowhere")

    cpt = load_fit(MODELS / "cpt_simulated.nc")
    g = cpt.groups
    for i in range(len(g)):
        size = None if np.isnan(g.loc[i, "size"]) else g.loc[i, "size"]
        assert cpt.group_index(size, g.loc[i, "val_set"]) == i
    assert cpt.group_index(123.0, g.loc[0, "val_set"]) is None  # a new size: predictable


# -- (c) one-line errors --------------------------------------------------------------------------
def _one_line(err) -> str:
    text = str(err.value)
    assert "\n" not in text
    return text


def test_wrong_kind_is_one_line():
    with pytest.raises(FitError) as err:
        MixtureFit.load(MODELS / "hparams_steplaw.nc")
    assert "a fit of the 'hparams' law, expected 'mixture'" in _one_line(err)
    with pytest.raises(FitError) as err:
        HparamsFit.load(MODELS / "cpt_simulated.nc")
    assert "expected 'hparams'" in _one_line(err)
    with pytest.raises(FitError) as err:
        load_fit(MODELS / "cpt_simulated.nc", law="mixture")
    assert "expected 'mixture'" in _one_line(err)


def test_wrong_version_is_one_line(tmp_path):
    bad = _rewrite(MODELS / "mixture_ct70m.nc", tmp_path / "v.nc", bayescpt_version="0.0.9")
    with pytest.raises(FitError) as err:
        load_fit(bad)
    assert "saved by bayescpt 0.0.9" in _one_line(err)


def test_not_a_fit_is_one_line(tmp_path):
    text = tmp_path / "x.nc"
    text.write_text("hello")
    with pytest.raises(FitError) as err:
        load_fit(text)
    assert "not a NetCDF fit file" in _one_line(err)
    with pytest.raises(FitError) as err:
        load_fit(tmp_path / "missing.nc")
    assert "no such file" in _one_line(err)
    other = _rewrite(MODELS / "mixture_ct70m.nc", tmp_path / "f.nc", format="something/2")
    with pytest.raises(FitError) as err:
        load_fit(other)
    assert "not a bayescpt fit" in _one_line(err)


def test_unknown_law_and_damaged_attrs_are_one_line(tmp_path):
    odd = _rewrite(MODELS / "mixture_ct70m.nc", tmp_path / "odd.nc", law="tea-leaves")
    with pytest.raises(FitError) as err:
        load_fit(odd)
    assert "'tea-leaves' law, which no imported fit class reads" in _one_line(err)
    broken = _rewrite(MODELS / "mixture_ct70m.nc", tmp_path / "b.nc", ratio_ref="[1, 2")
    with pytest.raises(FitError) as err:
        load_fit(broken)
    assert "damaged mixture fit" in _one_line(err)


# -- one config scheme ----------------------------------------------------------------------------
DEFAULTS = {
    "form": "power",
    "n": 1,
    "flag": True,
    "prior": [None, 2.0],
    "sub": {"loc": 0.5, "per": {"a": 1.0}},
    "free": {"x": 1},
}


@pytest.mark.parametrize(
    "override, message",
    [
        ({"fomr": "exp"}, "unknown key 'fomr'"),
        ({"sub": {"scale": 1.0}}, "unknown key 'sub.scale'"),
        ({"n": "two"}, "n = 'two'; expected a number"),
        ({"flag": 1}, "flag = 1; expected a bool"),
        ({"n": True}, "n = True; expected a number"),
        ({"prior": [1.0]}, "prior = [1.0]; expected a list of 2"),
        ({"prior": [0.0, "wide"]}, "prior[1] = 'wide'; expected a number"),
        ({"sub": 3.0}, "sub = 3.0; expected a dict"),
        ({"form": "log"}, "form = 'log'; expected one of 'power', 'exp'"),
        ({"sampler": {"draw": 10}}, "unknown key 'sampler.draw'"),
        ({"sampler": {"chains": "4"}}, "sampler.chains = '4'; expected a number"),
    ],
)
def test_check_config_refuses_with_one_line(override, message):
    with pytest.raises(ConfigError) as err:
        check_config(
            override,
            DEFAULTS,
            "test config",
            choices={"form": ("power", "exp")},
            alternatives={"sub.per": (float,)},
            open_keys=("free",),
        )
    text = _one_line(err)
    assert text.startswith("test config: ") and message in text


def test_check_config_merges_what_it_accepts():
    got = check_config(
        {
            "n": 2.5,
            "prior": (1.0, 3),
            "sub": {"per": 0.3},
            "free": {"y": "z"},
            "sampler": {"draws": 10},
        },
        DEFAULTS,
        "test config",
        alternatives={"sub.per": (float,)},
        open_keys=("free",),
    )
    assert got == {
        "form": "power",
        "n": 2.5,
        "flag": True,
        "prior": (1.0, 3),
        "sub": {"loc": 0.5, "per": 0.3},
        "free": {"x": 1, "y": "z"},
        "sampler": {"draws": 10},
    }
    assert DEFAULTS["sub"] == {"loc": 0.5, "per": {"a": 1.0}}  # defaults untouched
    assert check_config(None, DEFAULTS, "test config") == DEFAULTS


def test_the_families_check_their_configs():
    from bayescpt.curves.model.config import make_config as curves_config
    from bayescpt.curves.model.laws import get_law
    from bayescpt.hparams.model import make_config as hparams_config
    from bayescpt.mixture.model import make_config as mixture_config

    with pytest.raises(ConfigError, match="annealing law config: unknown key 'priors.Q'"):
        curves_config(get_law("annealing"), {"priors": {"Q": {"loc": 1.0}}})
    with pytest.raises(ConfigError, match="noise.family = 'cauchy'"):
        curves_config(get_law("annealing"), {"noise": {"family": "cauchy"}})
    assert (
        curves_config(get_law("cpt"), {"settings": {"replay_ref": 0.25}})["settings"]["replay_ref"]
        == 0.25
    )  # law settings stay open
    with pytest.raises(ConfigError, match="hparams config: optimum_law = 'flops'"):
        hparams_config({"optimum_law": "flops"})
    with pytest.raises(ConfigError, match="mixture config: token_terms.domain = 3"):
        mixture_config({"token_terms": {"domain": 3}})
    assert mixture_config({"centered": ["c"], "priors": {"c_loc": 0.0}})["priors"]["c_loc"] == 0.0


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_saved_configs_pass_the_check(path):
    """A reference fit's saved config is a valid override of its family's defaults."""
    from bayescpt.curves.model.config import make_config as curves_config
    from bayescpt.hparams.model import make_config as hparams_config
    from bayescpt.mixture.model import make_config as mixture_config

    fit = load_fit(path)
    saved = json.loads(json.dumps(fit.config))
    if isinstance(fit, Fit):
        merged = curves_config(fit.law, saved)
    else:
        merged = {HparamsFit: hparams_config, MixtureFit: mixture_config}[type(fit)](saved)

    def holds(merged, saved):  # every saved value is in the merged config (which may have
        if isinstance(saved, dict):  # keys added since the fit was saved, at their defaults)
            return all(k in merged and holds(merged[k], v) for k, v in saved.items())
        return merged == saved

    assert holds(merged, saved)
