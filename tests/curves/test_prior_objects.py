"""Priors as data (issue 18, item 4): the loss-curve laws' top-level priors are pymc_extras Prior
objects, any PyMC family with nested hyper-priors, checked with one-line errors and stored in
the fit file."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from pymc_extras.prior import Prior

from bayescpt.cli.main import main
from bayescpt.core.config import ConfigError
from bayescpt.curves.evaluate import simulate
from bayescpt.curves.model.config import make_config, node_priors
from bayescpt.curves.model.fit import Fit
from bayescpt.curves.model.hierarchy import build_model, prepare
from bayescpt.curves.model.laws import get_law
from tests.conftest import ROOT

# module-scoped fixtures: the module's tests run on one xdist worker (--dist loadgroup)
pytestmark = pytest.mark.xdist_group("curves/test_prior_objects")

LAW = get_law("annealing")
HALF = {"dist": "HalfNormal", "kwargs": {"sigma": 0.2}}


@pytest.fixture(scope="module")
def table():
    df, _ = simulate.simulate_hierarchy(
        LAW,
        {"L0": 2.8, "A": 0.55, "alpha": 0.5, "C": 0.45},
        {"L0": 0.05, "A": 0.15, "alpha": 0.1, "C": 0.15},
        [25e6, 100e6, 400e6],
        simulate.default_schedules(total=2000),
        points=10,
        seed=3,
    )
    return df


@pytest.mark.parametrize(
    "override, message",
    [
        (
            {"priors": {"A": {"sd_prior": {"dist": "HalfNormall", "kwargs": {"sigma": 1}}}}},
            "priors.A.sd_prior.dist = 'HalfNormall' is not a PyMC distribution; did you mean "
            "'HalfNormal'",
        ),
        (
            {"priors": {"A": {"mu_prior": {"dist": "Normal", "kwargs": {"mu": 0, "sgima": 1}}}}},
            "priors.A.mu_prior.kwargs.sgima: not a parameter of Normal; expected some of mu, sigma",
        ),
        (
            {"priors": {"A": {"mu_prior": {"dist": "Normal", "kwargs": {"mu": "zero"}}}}},
            "priors.A.mu_prior.kwargs.mu = 'zero'; expected a number",
        ),
        (
            {"priors": {"A": {"mu_prior": "Normal(0, 1)"}}},
            "priors.A.mu_prior = 'Normal(0, 1)'; expected a prior such as",
        ),
        (
            {"priors": {"A": {"mu_prior": {"dist": "Normal", "kwarg": {"mu": 0}}}}},
            "priors.A.mu_prior: unknown key 'kwarg'",
        ),
        (
            {"priors": {"A": {"sd_prior": {"dist": "Normal", "kwargs": {"mu": 0, "sigma": 1}}}}},
            "priors.A.sd_prior = Normal: a scale needs a prior on positive values only",
        ),
        (
            {
                "priors": {
                    "alpha": {
                        "mu_prior": {
                            "dist": "Normal",
                            "kwargs": {
                                "mu": {"dist": "Normal", "kwargs": {"mu": 0, "sigmaa": 1}},
                                "sigma": 1,
                            },
                        }
                    }
                }
            },
            "priors.alpha.mu_prior.kwargs.mu.kwargs.sigmaa: not a parameter of Normal",
        ),
        (
            {"priors": {"L0": {"tau_prior": HALF}}},  # L0 has no schedule level by default
            "priors.L0.tau_prior is given but run_sd is 0",
        ),
        (
            {"noise": {"sigma_sd_prior": {"dist": "Gamma", "kwargs": {"alpha": 2, "bta": 1}}}},
            "noise.sigma_sd_prior.kwargs.bta: not a parameter of Gamma",
        ),
        ({"priors": {"A": {"sd_priors": HALF}}}, "unknown key 'priors.A.sd_priors'"),
    ],
)
def test_a_bad_prior_is_one_line_naming_the_key(override, message):
    with pytest.raises(ConfigError) as err:
        make_config(LAW, override)
    text = str(err.value)
    assert "\n" not in text and text.startswith("annealing law config: ")
    assert message in text, text


def test_a_bad_prior_on_the_command_line_exits_2_with_one_line(table, tmp_path, capsys):
    data, cfg = tmp_path / "d.csv", tmp_path / "c.json"
    table.to_csv(data, index=False)
    cfg.write_text(
        json.dumps({"priors": {"C": {"sd_prior": {"dist": "Halfnormal", "kwargs": {"sigma": 1}}}}})
    )
    rc = main(
        [
            "fit",
            str(data),
            "--law",
            "annealing",
            "--config",
            str(cfg),
            "--out",
            str(tmp_path / "f.nc"),
            "--quiet",
        ]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and not (tmp_path / "f.nc").exists()
    assert "priors.C.sd_prior.dist = 'Halfnormal'" in err[0] and "'HalfNormal'" in err[0]


def test_default_priors_are_the_documented_families(table):
    cfg = make_config(LAW)
    pri = node_priors(LAW, cfg, 3, True)
    c = cfg["priors"]["A"]
    assert pri["A_mu"] == Prior("Normal", mu=c["loc"], sigma=c["scale"])
    assert pri["A_sd"] == Prior("LogNormal", mu=float(np.log(c["group_sd"])), sigma=0.5)
    assert pri["A_tau"] == Prior(
        "LogNormal", mu=float(np.log(c["run_sd"])), sigma=c["run_sd_spread"]
    )
    assert "L0_tau" not in pri and "log_sigma_sd" in pri
    assert "A_slope" not in node_priors(LAW, cfg, 2, False)  # two sizes: no size slope


def test_any_family_and_nested_hyper_priors_build_the_model(table):
    cfg = make_config(
        LAW,
        {
            "priors": {
                "A": {"sd_prior": HALF},
                "C": {
                    "mu_prior": {
                        "dist": "StudentT",
                        "kwargs": {
                            "nu": 4,
                            "mu": {"dist": "Normal", "kwargs": {"mu": -0.8, "sigma": 0.3}},
                            "sigma": 0.5,
                        },
                    }
                },
            },
            "noise": {"sigma_sd_prior": {"dist": "Gamma", "kwargs": {"alpha": 2.0, "beta": 4.0}}},
        },
    )
    prep = prepare(table, LAW, cfg["settings"])
    model = build_model(LAW, prep, cfg)
    op = lambda name: type(model[name].owner.op).__name__  # noqa: E731
    assert op("A_sd") == "HalfNormalRV" and op("C_mu") == "StudentTRV"
    assert op("C_mu_mu") == "NormalRV"  # the hyper-prior is a model variable
    assert op("log_sigma_sd") == "GammaRV" and op("alpha_sd") == "LogNormalRV"
    # the prior is the one asked for: its log density at a point is HalfNormal(0.2)'s
    logp = model.compile_logp(vars=[model["A_sd"]], jacobian=False)
    point = model.initial_point()
    point["A_sd_log__"] = np.log(0.1)
    assert np.isclose(logp(point), np.log(2 / np.sqrt(2 * np.pi) / 0.2) - 0.5 * (0.1 / 0.2) ** 2)


def test_the_fit_file_stores_its_priors(table, tmp_path):
    cfg = {"priors": {"A": {"sd_prior": HALF}}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = Fit.run(
            table,
            law="annealing",
            config=cfg,
            chains=1,
            draws=20,
            tune=20,
            seed=0,
            warn=False,
            cores=1,
        )
    out = tmp_path / "f.nc"
    fit.save(out)
    back = Fit.load(out)
    assert back.priors == fit.priors
    assert back.priors["A_sd"] == Prior("HalfNormal", sigma=0.2)
    assert set(back.priors) == {
        v.name
        for v in build_model(
            LAW, prepare(table, LAW, back.config["settings"]), back.config
        ).free_RVs
    } - {f"{p}_{lvl}" for p in "L0 A alpha C".split() for lvl in ("u", "w")} - {"log_sigma"}
    # the saved config rebuilds the same priors
    assert (
        node_priors(LAW, make_config(LAW, {"priors": back.config["priors"]}), 3, True)
        == back.priors
    )


def test_a_file_written_before_the_priors_attr_reports_its_default_priors():
    old = Fit.load(ROOT / "tests" / "data" / "old_layout" / "annealing_multipowerlaw.nc")
    assert "priors" not in old.meta
    pri = old.priors
    c = old.config["priors"]["alpha"]
    assert pri["alpha_mu"] == Prior("Normal", mu=c["loc"], sigma=c["scale"])
    assert {"A_mu", "A_sd", "A_tau", "log_sigma_mu", "log_sigma_sd"} <= set(pri)
