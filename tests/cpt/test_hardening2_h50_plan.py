"""Issue 50, planner and predict: ``plan`` warns where its plans leave the fit's training range
(item 9) and refuses a grid too big for memory before allocating it (item 13); ``predict`` refuses
a ``model_size`` column on a fit made without sizes (item 10); every command that loads a fit
that failed its diagnostics says so in one line (item 16).

Cheap: the bundled reference fits, copied and edited (a stored training range, a few divergent
transitions); no sampling."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from bayescpt.cli.main import main

# module-scoped fixtures: the module's tests run on one xdist worker (--dist loadgroup)
pytestmark = pytest.mark.xdist_group("cpt/test_hardening2_h50_plan")

ROOT = Path(__file__).resolve().parents[2]
MODELS, DATA = ROOT / "models", ROOT / "data"
CPT_FIT, CPT_DATA = MODELS / "cpt_simulated.nc", DATA / "cpt_simulated.csv"
PT_RUN = "pt@10000/cosine"


def _edited(src: Path, dst: Path, edit) -> Path:
    """A copy of the fit file ``src`` at ``dst`` with ``edit(idata)`` applied."""
    import arviz as az

    idata = az.from_netcdf(str(src))
    edit(idata)
    idata.to_netcdf(str(dst))
    return dst


@pytest.fixture(scope="module")
def ranged_fit(tmp_path_factory):
    """The reference cpt fit with the training range of its data stored (the reference file was
    written before the range was; a fit made today stores it)."""
    from bayescpt.curves.data.table import schedules_of, training_range
    from bayescpt.curves.data.validate import read_curves

    df = read_curves(CPT_DATA)
    rng = json.dumps(training_range(df, schedules_of(df)))

    def edit(idata):
        idata.posterior.attrs["train_range"] = rng

    return _edited(CPT_FIT, tmp_path_factory.mktemp("ranged") / "cpt.nc", edit)


@pytest.fixture(scope="module")
def failed_fit(tmp_path_factory):
    """The reference cpt fit with 17 divergent transitions: it fails its diagnostics."""

    def edit(idata):
        div = idata.sample_stats["diverging"].values.copy()
        div[0, :17] = True
        idata.sample_stats["diverging"] = (idata.sample_stats["diverging"].dims, div)

    return _edited(CPT_FIT, tmp_path_factory.mktemp("failed") / "bad.nc", edit)


def _plan(fit, out, *extra):
    return [
        "plan",
        str(fit),
        "--pt",
        str(CPT_DATA),
        "--pt-run",
        PT_RUN,
        "--tolerance",
        "0.05",
        "--shapes",
        "cosine",
        "--backend",
        "numpy",
        "--out",
        str(out),
        *extra,
    ]


def _warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("warning:")]


# ---- item 9: plan's extrapolation check -----------------------------------------------------


def test_plan_warns_per_setting_that_leaves_the_fits_range(ranged_fit, tmp_path, capsys):
    out = tmp_path / "plans.csv"
    assert main(_plan(ranged_fit, out, "--peak-lrs", "2e-4,2e-3", "--steps", "1000,40000")) == 0
    lines = _warnings(capsys.readouterr().err)
    lr = [w for w in lines if "peak LR 0.002 is 10x the largest training peak LR 0.0002" in w]
    assert len(lr) == 1 and "plans with peak LR 0.002" in lr[0], lines
    length = [w for w in lines if "length 5e+04 steps" in w]
    assert len(length) == 1, lines
    assert "40000 CPT steps from PT step 10000" in length[0]
    assert "largest training run 1.4e+04 steps" in length[0]
    assert all("extrapolation" in w for w in lines)
    t = pd.read_csv(out)
    inside = (t["peak_lr"] == 2e-4) & (t["steps"] == 1000)
    assert t.loc[inside, "extrapolation"].isna().all()  # in range: nothing recorded
    assert t.loc[~inside, "extrapolation"].notna().all()
    assert t.loc[t["peak_lr"] == 2e-3, "extrapolation"].str.contains("peak LR").all()
    assert t.loc[t["steps"] == 40000, "extrapolation"].str.contains("length").all()


def test_plan_inside_the_range_warns_nothing(ranged_fit, tmp_path, capsys):
    assert (
        main(
            _plan(ranged_fit, tmp_path / "p.csv", "--peak-lrs", "1e-4,2e-4", "--steps", "1000,2000")
        )
        == 0
    )
    assert _warnings(capsys.readouterr().err) == []


def test_plan_on_a_fit_without_its_range_says_it_is_not_checked(tmp_path, capsys):
    assert main(_plan(CPT_FIT, tmp_path / "p.csv", "--peak-lrs", "2e-4", "--steps", "1000")) == 0
    lines = _warnings(capsys.readouterr().err)
    assert len(lines) == 1 and "not checked for extrapolation" in lines[0]


# ---- item 13: a plan grid too big for memory is refused up front ----------------------------


def _limit_memory():
    cap = 6 * 1024**3  # the refusal must come long before this; a blow-up dies here
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))


def test_plan_refuses_a_grid_too_big_for_memory(tmp_path):
    import bayescpt

    code = Path(bayescpt.__file__).resolve().parents[1]  # the bayescpt under test
    env = dict(os.environ, PYTHONPATH=str(code), MPLBACKEND="Agg")
    t0 = time.perf_counter()
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "bayescpt.cli.main",
            *_plan(CPT_FIT, tmp_path / "p.csv", "--peak-lrs", "2e-4", "--steps", "1000000000"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        cwd=tmp_path,
        preexec_fn=_limit_memory,
    )
    took = time.perf_counter() - t0
    err = [line for line in r.stderr.splitlines() if line.strip()]
    assert r.returncode == 2, r.stderr[-2000:]
    assert len(err) == 1, err
    line = err[0]
    assert line.startswith("bayescpt: error:") and "GB" in line and "--steps" in line, line
    assert "available" in line
    assert not (tmp_path / "p.csv").exists()
    assert took < 60


def test_memory_estimate_grows_with_the_longest_schedule():
    from bayescpt.core import schedules as S
    from bayescpt.cpt.plan.grid import plan_grid
    from bayescpt.cpt.plan.memory import memory_estimate

    pt = S.wsd(10000, 2e-4, decay_steps=2000, warmup_steps=200)
    small = memory_estimate(pt, plan_grid([10000], ["cosine"], [2e-4], [1000]), 2000)
    big = memory_estimate(pt, plan_grid([10000], ["cosine"], [2e-4], [10**9]), 2000)
    assert big["total"] > 40e9 > 1e9 > small["total"]
    assert big["option"] == "--steps"


# ---- item 10: predict refuses model sizes a fit was made without -----------------------------


def test_predict_refuses_a_model_size_on_a_fit_without_sizes(tmp_path, capsys):
    df = pd.read_csv(CPT_DATA)
    sched = df[df["run"] == "pt@10000/wsd"].assign(model_size=1e8)
    path = tmp_path / "sched.csv"
    sched.to_csv(path, index=False)
    rc = main(["predict", str(CPT_FIT), "--schedule", str(path), "--out", str(tmp_path / "o.csv")])
    err = capsys.readouterr().err
    assert rc == 2
    line = [x for x in err.splitlines() if x.startswith("bayescpt: error:")]
    assert len(line) == 1, err
    assert str(path) in line[0] and "model_size" in line[0] and "1e+08" in line[0]
    assert "without model sizes" in line[0]
    assert not (tmp_path / "o.csv").exists()


# ---- item 16: a fit that failed its diagnostics is named by every command that uses it -------

FAILED = "failed its diagnostics when it was fitted"


def test_predict_and_plan_say_once_that_the_fit_failed_its_diagnostics(
    failed_fit, tmp_path, capsys
):
    sched = tmp_path / "sched.csv"
    df = pd.read_csv(CPT_DATA)
    df[df["run"] == "pt@10000/wsd"].to_csv(sched, index=False)
    assert (
        main(
            ["predict", str(failed_fit), "--schedule", str(sched), "--out", str(tmp_path / "o.csv")]
        )
        == 0
    )
    err = capsys.readouterr().err
    lines = [x for x in err.splitlines() if FAILED in x]
    assert len(lines) == 1, err
    assert "17 divergences" in lines[0] and "R-hat" in lines[0] and "bulk ESS" in lines[0]
    assert f"bayescpt diagnose {failed_fit}" in lines[0] and str(failed_fit) in lines[0]
    assert main(_plan(failed_fit, tmp_path / "p.csv", "--peak-lrs", "2e-4", "--steps", "1000")) == 0
    err = capsys.readouterr().err
    assert len([x for x in err.splitlines() if FAILED in x]) == 1, err


def test_a_passing_fit_gets_no_such_line(tmp_path, capsys):
    sched = tmp_path / "sched.csv"
    df = pd.read_csv(CPT_DATA)
    df[df["run"] == "pt@10000/wsd"].to_csv(sched, index=False)
    assert (
        main(["predict", str(CPT_FIT), "--schedule", str(sched), "--out", str(tmp_path / "o.csv")])
        == 0
    )
    assert main(_plan(CPT_FIT, tmp_path / "p.csv", "--peak-lrs", "2e-4", "--steps", "1000")) == 0
    assert FAILED not in capsys.readouterr().err


def test_compare_hparams_and_mixture_commands_name_a_failed_fit(failed_fit, tmp_path, capsys):
    def bad(src, name):
        def edit(idata):
            div = idata.sample_stats["diverging"].values.copy()
            div[0, :3] = True
            idata.sample_stats["diverging"] = (idata.sample_stats["diverging"].dims, div)

        return _edited(src, tmp_path / name, edit)

    assert main(["compare", str(CPT_FIT), str(failed_fit)]) == 0
    err = capsys.readouterr().err
    assert len([x for x in err.splitlines() if FAILED in x]) == 1, err
    hp = bad(MODELS / "hparams_steplaw.nc", "hp.nc")
    main(["hparams", "predict", str(hp), "--n-params", "1e8", "--tokens", "1e10"])
    err = capsys.readouterr().err
    assert len([x for x in err.splitlines() if FAILED in x]) == 1, err
    mix = bad(MODELS / "mixture_ct70m.nc", "mix.nc")
    main(["mixture", "cmr", str(mix), "--tolerance", "0", "--tokens", "10000"])
    err = capsys.readouterr().err
    assert len([x for x in err.splitlines() if FAILED in x]) == 1, err
