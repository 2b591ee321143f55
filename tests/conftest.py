import os
import warnings
from pathlib import Path

import pytest

os.environ.setdefault("MPLBACKEND", "Agg")
warnings.filterwarnings("ignore", category=FutureWarning)

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session")
def small_curves():
    """A small simulated data set (3 sizes x 3 schedules, 30 points each) with its truth."""
    from bayescpt.curves.evaluate import simulate
    from bayescpt.curves.model.laws import get_law

    law = get_law("annealing")
    return simulate.simulate_hierarchy(
        law,
        {"L0": 2.8, "A": 0.55, "alpha": 0.5, "C": 0.45},
        {"L0": 0.05, "A": 0.15, "alpha": 0.1, "C": 0.15},
        [25e6, 100e6, 400e6],
        simulate.default_schedules(total=4000),
        points=30,
        seed=7,
    )


def built_once(tmp_path_factory, name: str, build) -> Path:
    """A folder ``name`` that ``build(folder)`` fills once per test run, shared by the xdist
    workers: the first worker to ask builds it, under a lock, in the run's common temporary
    folder; the others wait for it or find it built (a fixture fitted once, not once per worker).
    The tests only read what is in it."""
    import shutil

    from filelock import FileLock

    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent
    folder = root / name
    with FileLock(str(folder) + ".lock"):
        if not (folder / ".built").exists():
            shutil.rmtree(folder, ignore_errors=True)  # a build that failed half-way
            folder.mkdir()
            build(folder)
            (folder / ".built").touch()
    return folder


@pytest.fixture(scope="session")
def small_fit_file(tmp_path_factory, small_curves):
    """A fit of ``small_curves`` through the CLI, saved once per test run."""
    tmp = built_once(tmp_path_factory, "small_fit", lambda d: _fit_small(d, small_curves))
    return tmp / "curves.csv", tmp / "fit.nc"


def _fit_small(tmp, small_curves):
    from bayescpt.cli.main import main

    data = tmp / "curves.csv"
    small_curves[0].to_csv(data, index=False)
    out = tmp / "fit.nc"
    rc = main(
        [
            "fit",
            str(data),
            "--law",
            "annealing",
            "--out",
            str(out),
            "--chains",
            "2",
            "--draws",
            "300",
            "--tune",
            "300",
            "--seed",
            "3",
            "--quiet",
        ]
    )
    assert rc == 0


# ---- a CPT-law fit of simulated Fig. 3 runs, shared by the CPT and planning tests
OTHER_AB = (0.35, 0.7)


def _other_set(curves, seed=5):
    """An out-of-domain set logged with the others: 0.35 general + 0.7 domain + N(0, 0.004)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    wide = curves.dropna(subset=["loss"]).pivot_table(
        index=["run", "step"], columns="val_set", values="loss"
    )
    y = OTHER_AB[0] * wide["general"] + OTHER_AB[1] * wide["domain"]
    out = wide.reset_index()[["run", "step"]].assign(
        loss=y.to_numpy() + rng.normal(0, 0.004, len(y))
    )
    lr = curves.drop_duplicates(["run", "step"]).set_index(["run", "step"])
    out = out.join(lr[["lr", "phase"]], on=["run", "step"])
    return out.assign(val_set="c-headers", val_role="other")


@pytest.fixture(scope="session")
def cpt_cli_fit(tmp_path_factory):
    """Simulated Fig. 3 runs (cosine and constant CPT from two transfer steps), fitted by the CLI;
    the WSD runs are held out. 2 x 1000 draws: beta and E of the general set lie on a slow ridge
    (the law's default is 2000 draws for it); at 2 x 300 R-hat reached 1.04-1.06 (bulk ESS ~70),
    at 2 x 1000 1.011 at seeds 1 and 2, and sampling costs seconds beside the compile."""
    from bayescpt.cpt.simulate import simulate_cpt

    curves, truth = simulate_cpt(seed=3)
    return built_once(tmp_path_factory, "cpt_fit", lambda d: _fit_cpt(d, curves)), truth


def _fit_cpt(d, curves):
    import pandas as pd

    from bayescpt.cli.main import main

    curves = pd.concat([curves, _other_set(curves)], ignore_index=True)
    held = curves["run"].str.endswith("/wsd")
    curves[~held].to_csv(d / "fit.csv", index=False)
    curves[held].to_csv(d / "held.csv", index=False)
    rc = main(
        [
            "fit",
            str(d / "fit.csv"),
            "--law",
            "cpt",
            "--out",
            str(d / "fit.nc"),
            "--draws",
            "1000",
            "--tune",
            "1000",
            "--chains",
            "2",
            "--seed",
            "1",
            "--quiet",
        ]
    )
    assert rc == 0


# ---- shared by the sweep and config tests: one run of ``small_curves`` (3 curves at 100M)
@pytest.fixture(scope="module")
def tiny_csv(tmp_path_factory, small_curves):
    df = small_curves[0]
    path = tmp_path_factory.mktemp("sweepdata") / "tiny.csv"
    df[df["run"].str.startswith("100M/")].to_csv(path, index=False)
    return path


# ---- shared by the watch tests: a run the annealing reference fit has not seen
WATCH_FIT = ROOT / "models" / "annealing_multipowerlaw.nc"
WATCH_RUN = "100M/wsd_20000_24000"


@pytest.fixture(scope="module")
def plan(tmp_path_factory):
    """The planned run (its schedule as a CSV) and the fit's mean course at its evaluations."""
    import pandas as pd

    from bayescpt.curves.forecast.predict import predict_frame
    from bayescpt.curves.model.fit import Fit

    df = pd.read_csv(ROOT / "data" / "multipowerlaw.csv")
    sched = df[df["run"] == WATCH_RUN].drop(columns=["loss"]).reset_index(drop=True)
    path = tmp_path_factory.mktemp("plan") / "plan.csv"
    sched.to_csv(path, index=False)
    course = predict_frame(Fit.load(WATCH_FIT), sched, prob=0.9, seed=0)
    course = course[course["mean"].notna()][["step", "mean"]].reset_index(drop=True)
    return path, course
