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
    from bayescpt import simulate
    from bayescpt.laws import get_law

    law = get_law("annealing")
    return simulate.simulate_hierarchy(
        law, {"L0": 2.8, "A": 0.55, "alpha": 0.5, "C": 0.45},
        {"L0": 0.05, "A": 0.15, "alpha": 0.1, "C": 0.15}, [25e6, 100e6, 400e6],
        simulate.default_schedules(total=4000), points=30, seed=7)


@pytest.fixture(scope="session")
def small_fit_file(tmp_path_factory, small_curves):
    """A fit of ``small_curves`` through the CLI, saved once per session."""
    from bayescpt.cli import main

    tmp = tmp_path_factory.mktemp("fit")
    data = tmp / "curves.csv"
    small_curves[0].to_csv(data, index=False)
    out = tmp / "fit.nc"
    rc = main(["fit", str(data), "--law", "annealing", "--out", str(out), "--chains", "2",
               "--draws", "300", "--tune", "300", "--seed", "3", "--quiet"])
    assert rc == 0
    return data, out
