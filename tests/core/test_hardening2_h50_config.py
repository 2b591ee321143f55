"""Issue 50 (configuration, priors, sampler settings): every setting is range-checked when a
config, a sweep file or an option is read, before anything is compiled or Dask starts, and is
refused in one line naming the key path, the value and what is expected (items 8, 12, 14, 15)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from bayescpt.cli.main import main
from bayescpt.core.config import ConfigError
from bayescpt.core.sampling import MAX_SEED, resolve_settings
from bayescpt.curves.model.config import make_config
from bayescpt.curves.model.laws import get_law
from bayescpt.hparams.model import make_config as hparams_config
from bayescpt.mixture.model import make_config as mixture_config
from bayescpt.parallel.spec import SweepError, read_sweep
from tests.conftest import ROOT

LAW = get_law("annealing")
NEG_SIGMA = {"priors": {"A": {"sd_prior": {"dist": "HalfNormal", "kwargs": {"sigma": -1}}}}}


# -- item 8: sampler settings in range -------------------------------------------------------
@pytest.mark.parametrize(
    "key, value, expected",
    [
        ("target_accept", 1.5, "a number strictly between 0 and 1"),
        ("target_accept", 0, "a number strictly between 0 and 1"),
        ("draws", -5, "a whole number >= 1"),
        ("draws", 10.5, "a whole number >= 1"),
        ("chains", 0, "a whole number >= 1"),
        ("tune", -1, "a whole number >= 0"),
        ("seed", -1, f"a whole number from 0 to {MAX_SEED}"),
        ("seed", MAX_SEED + 1, f"a whole number from 0 to {MAX_SEED}"),
        ("max_tree_depth", 0, "a whole number from 1 to 30"),
        ("extend", 0, "a whole number >= 1"),
        ("init", "prior", "one of map, jitter"),
    ],
)
def test_a_sampler_setting_out_of_range_is_refused_naming_its_key(key, value, expected):
    with pytest.raises(ConfigError) as err:
        make_config(LAW, {"sampler": {key: value}})
    text = str(err.value)
    assert text.startswith(f"annealing law config: sampler.{key} = {value!r}; expected ")
    assert text.endswith(expected) and "\n" not in text


def test_sampler_settings_given_to_the_library_are_range_checked_too():
    with pytest.raises(
        ValueError,
        match=r"sampler setting target_accept = 1.5; expected a "
        r"number strictly between 0 and 1",
    ):
        resolve_settings(None, "auto", target_accept=1.5)
    with pytest.raises(ValueError, match=r"sampler setting draws = -5; expected a whole"):
        resolve_settings({"draws": -5}, "auto")
    assert resolve_settings({"draws": 300.0}, "auto")["draws"] == 300  # a whole float is fine


def test_a_fit_with_target_accept_above_1_exits_2_in_one_line_before_compiling(tiny_csv, tmp_path):
    _one_line_refusal(
        tmp_path,
        ["fit", str(tiny_csv), "--law", "annealing"],
        {"sampler": {"target_accept": 1.5}},
        "sampler.target_accept = 1.5; expected a number strictly between 0 and 1",
    )


@pytest.mark.parametrize(
    "grid, key",
    [
        ('[fit.grid]\n"sampler.target_accept" = [0.9, 1.5]\n', "grid.sampler.target_accept"),
        ("sampler = { chains = 2, draws = -5 }\n", "sampler.draws"),
        ("config = { sampler = { target_accept = 1.5 } }\n", "config.sampler.target_accept"),
    ],
)
def test_a_sweep_with_a_sampler_setting_out_of_range_is_refused_when_read(
    tmp_path, tiny_csv, grid, key
):
    path = tmp_path / "s.toml"
    path.write_text(f'[[fit]]\nname = "t"\ndata = "{tiny_csv}"\n{grid}')
    with pytest.raises(SweepError) as err:
        read_sweep(path)
    text = str(err.value)
    assert f"fit entry 1, key '{key}': " in text and "expected" in text and "\n" not in text


def test_a_sweep_of_an_unknown_law_or_too_large_a_seed_fails_before_dask(
    tmp_path, tiny_csv, capsys
):
    path = tmp_path / "s.toml"
    path.write_text(f'[[fit]]\ndata = "{tiny_csv}"\nlaw = "anealing"\n')
    t0 = time.perf_counter()
    rc = main(["sweep", str(path), "--out", str(tmp_path / "out"), "--workers", "1"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and time.perf_counter() - t0 < 10
    assert "key 'law': 'anealing'; expected one of annealing, " in err[0]
    assert not (tmp_path / "out").exists()  # nothing started, nothing written
    path.write_text(f'[[fit]]\ndata = "{tiny_csv}"\nseeds = [0, {MAX_SEED + 1}]\n')
    with pytest.raises(SweepError, match=f"from 0 to {MAX_SEED}"):
        read_sweep(path)


# -- items 12, 14a: priors and knobs that cannot mean what was written ---------------------------
@pytest.mark.parametrize(
    "override, message",
    [
        (NEG_SIGMA, "priors.A.sd_prior.kwargs.sigma = -1; expected > 0"),
        (
            {"priors": {"A": {"mu_prior": {"dist": "Normal", "kwargs": {"mu": 0, "sigma": 0}}}}},
            "priors.A.mu_prior.kwargs.sigma = 0; expected > 0",
        ),
        (
            {"priors": {"C": {"mu_prior": {"dist": "Gamma", "kwargs": {"alpha": 2, "beta": -1}}}}},
            "priors.C.mu_prior.kwargs.beta = -1; expected > 0",
        ),
        (
            {
                "priors": {
                    "A": {"mu_prior": {"dist": "Uniform", "kwargs": {"lower": 1, "upper": 0}}}
                }
            },
            "priors.A.mu_prior.kwargs.lower = 1; expected <= upper (0)",
        ),
        (
            {
                "priors": {
                    "A": {
                        "mu_prior": {
                            "dist": "Normal",
                            "kwargs": {
                                "mu": {"dist": "Normal", "kwargs": {"mu": 0, "sigma": -2}},
                                "sigma": 1,
                            },
                        }
                    }
                }
            },
            "priors.A.mu_prior.kwargs.mu.kwargs.sigma = -2; expected > 0",
        ),
        (
            {
                "priors": {
                    "A": {
                        "mu_prior": {
                            "dist": "MvNormal",
                            "kwargs": {"mu": [0, 0], "cov": [[1, 0], [0, 1]]},
                        }
                    }
                }
            },
            "priors.A.mu_prior = MvNormal of shape (2,): expected a prior of one number",
        ),
        (
            {
                "priors": {
                    "A": {"mu_prior": {"dist": "Normal", "kwargs": {"mu": [0, 1], "sigma": 1}}}
                }
            },
            "priors.A.mu_prior = Normal of shape (2,): expected a prior of one number",
        ),
        (
            {"priors": {"A": {"scale": 1e308}}},
            "priors.A.scale = 1e+308; expected a finite number of magnitude at most 1e+38",
        ),
        ({"priors": {"A": {"scale": 1e30}}}, "priors.A.scale = 1e+30 (with priors.A.loc = "),
        (
            {
                "priors": {
                    "A": {"mu_prior": {"dist": "Normal", "kwargs": {"mu": 0, "sigma": 1e308}}}
                }
            },
            "priors.A.mu_prior.kwargs.sigma = 1e+308; expected a finite number",
        ),
        ({"priors": {"A": {"scale": -1}}}, "priors.A.scale = -1; expected > 0"),
        ({"priors": {"A": {"group_sd": -0.3}}}, "priors.A.group_sd = -0.3; expected >= 0"),
        ({"noise": {"nu": -3}}, "noise.nu = -3; expected > 0"),
        ({"noise": {"sigma_scale": 0}}, "noise.sigma_scale = 0; expected > 0"),
        # NumPy numbers (a library caller's) are shown as plain numbers
        ({"priors": {"A": {"scale": np.float64(-1.0)}}}, "priors.A.scale = -1.0; expected > 0"),
        ({"sampler": {"draws": np.int64(-50)}}, "sampler.draws = -50; expected a whole number"),
    ],
)
def test_a_prior_that_cannot_mean_what_was_written_is_one_line_naming_the_key(override, message):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no raw NumPy / PyMC warning on the way
        with pytest.raises(ConfigError) as err:
            make_config(LAW, override)
    text = str(err.value)
    assert "\n" not in text and text.startswith("annealing law config: ")
    assert message in text, text
    assert "np." not in text


def test_valid_priors_and_knobs_still_pass():
    cfg = make_config(
        LAW,
        {
            "priors": {
                "A": {
                    "scale": 2.0,
                    "group_sd": 0.0,
                    "sd_prior": None,
                    "mu_prior": {"dist": "StudentT", "kwargs": {"nu": 4, "mu": 0, "sigma": 1}},
                }
            },
            "sampler": {"target_accept": 0.9, "seed": MAX_SEED},
        },
    )
    assert cfg["sampler"]["seed"] == MAX_SEED


@pytest.mark.parametrize(
    "make, override, message",
    [
        (
            hparams_config,
            {"priors": {"sigma": -0.02}},
            "hparams config: priors.sigma = -0.02; expected > 0",
        ),
        (
            hparams_config,
            {"priors": {"g": [-1.2, -0.8]}},
            "hparams config: priors.g[1] = -0.8; expected > 0",
        ),
        (hparams_config, {"nu": 0}, "hparams config: nu = 0; expected > 0"),
        (
            hparams_config,
            {"sampler": {"target_accept": 1.5}},
            "hparams config: sampler.target_accept = 1.5",
        ),
        (
            mixture_config,
            {"priors": {"m_scale": -0.5}},
            "mixture config: priors.m_scale = -0.5; expected > 0",
        ),
        (mixture_config, {"noise": {"nu": -4.0}}, "mixture config: noise.nu = -4.0; expected > 0"),
        (
            mixture_config,
            {"run_sd": {"scale": 0}},
            "mixture config: run_sd.scale = 0; expected > 0",
        ),
    ],
)
def test_the_hparams_and_mixture_knobs_are_range_checked(make, override, message):
    with pytest.raises(ConfigError) as err:
        make(override)
    assert str(err.value).startswith(message), str(err.value)


@pytest.mark.parametrize("command", ["fit", "prior-check"])
def test_a_negative_sigma_exits_2_in_one_line_naming_the_key_before_compiling(
    command, tiny_csv, tmp_path
):
    args = [command, str(tiny_csv), "--law", "annealing"]
    if command == "prior-check":
        args += ["--plot", str(tmp_path / "p.png")]
    _one_line_refusal(
        tmp_path,
        args,
        NEG_SIGMA,
        "priors.A.sd_prior.kwargs.sigma = -1; expected > 0",
        out=command == "fit",
    )


@pytest.mark.parametrize(
    "family, data, override, message",
    [
        (
            "hparams",
            "steplaw_grid.csv",
            {"priors": {"sigma": -0.02}},
            "hparams config: priors.sigma = -0.02; expected > 0",
        ),
        (
            "mixture",
            "mixture_ct70m.csv",
            {"noise": {"sigma_scale": -1.5}},
            "mixture config: noise.sigma_scale = -1.5; expected > 0",
        ),
    ],
)
def test_a_negative_knob_of_the_hparams_and_mixture_fits_exits_2_in_one_line(
    family, data, override, message, tmp_path, capsys
):
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps(override))
    rc = main(
        [
            family,
            "fit",
            str(ROOT / "data" / data),
            "--config",
            str(cfg),
            "--out",
            str(tmp_path / "f.nc"),
            "--quiet",
        ]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and message in err[0], err
    assert not (tmp_path / "f.nc").exists()


# -- item 15: the seed's range ---------------------------------------------------------------
def test_a_seed_too_large_for_the_samplers_names_the_largest(tmp_path, capsys, tiny_csv):
    with pytest.raises(SystemExit) as stop:
        main(
            [
                "fit",
                str(tiny_csv),
                "--law",
                "annealing",
                "--out",
                str(tmp_path / "f.nc"),
                "--seed",
                "99999999999999999999999",
            ]
        )
    err = capsys.readouterr().err
    assert stop.value.code == 2
    assert f"expected a whole number from 0 to {MAX_SEED}" in err


def _one_line_refusal(
    tmp_path: Path, args: list, config: dict, message: str, out: bool = True
) -> None:
    """``bayescpt ARGS --config CONFIG`` in its own process: exit 2 within seconds (nothing is
    compiled), exactly one stderr line holding ``message``, no traceback, nothing written."""
    cfg = tmp_path / "bad.json"
    cfg.write_text(json.dumps(config))
    target = tmp_path / "f.nc"
    cmd = [sys.executable, "-m", "bayescpt.cli.main", *args, "--config", str(cfg)]
    if out:
        cmd += ["--out", str(target)]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    took = time.perf_counter() - t0
    err = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and len(err) == 1, proc.stderr
    assert err[0].startswith("bayescpt: error: ") and message in err[0], err[0]
    assert not target.exists() and took < 60
