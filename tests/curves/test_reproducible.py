"""Same seed, same draws, whatever the state of PyTensor's compile cache (issue 17: a Dask worker
compiles in a fresh folder of its own, a user's later fit loads the cached code)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import ROOT

FIT = """
import sys, warnings
import numpy as np
import pytest
warnings.simplefilter("ignore")
from bayescpt.curves.evaluate import simulate
from bayescpt.curves.model.fit import Fit
from bayescpt.curves.model.laws import get_law

df, _ = simulate.simulate_hierarchy(
    get_law("annealing"), {"L0": 2.8, "A": 0.55, "alpha": 0.5, "C": 0.45},
    {"L0": 0.05, "A": 0.15, "alpha": 0.1, "C": 0.15}, [25e6, 100e6, 400e6],
    simulate.default_schedules(total=2000), points=15, seed=3)
fit = Fit.run(df, law="annealing", chains=2, draws=200, tune=200, seed=0, warn=False, cores=2)
post = fit.idata.posterior
np.save(sys.argv[1], np.concatenate([post[v].values.reshape(2, 200, -1)
                                     for v in sorted(post.data_vars)], axis=2))
"""


# the slow tier (pytest -m slow, run by .ci/run after the default tier): two full fits, one
# compiling from an empty cache
pytestmark = pytest.mark.slow


def test_a_fresh_and_a_cached_compile_give_the_same_draws(tmp_path):
    """The first fit compiles the model in an empty compile folder, the second loads it from
    there. With numba's fastmath on (PyTensor's default) LLVM reorders floating-point sums
    differently in the two cases and the draws differ (bayescpt.core.sampling.compile_nutpie).

    The numba cache (``base_compiledir/numba``, where that difference lives) starts empty; the
    C modules PyTensor compiled for this session (its ``compiledir``, which every fit shares and
    which take minutes to rebuild) are copied in, so the test does not pay for them."""
    import pytensor

    base = tmp_path / "compiledir"
    c_cache = Path(pytensor.config.compiledir)
    if c_cache.is_dir():
        try:
            shutil.copytree(c_cache, base / c_cache.name, ignore=shutil.ignore_patterns("lock_dir"))
        except shutil.Error:
            pass  # another test process renamed a module mid-copy: it is compiled again
    assert not (base / "numba").exists()
    flags = os.environ.get("PYTENSOR_FLAGS", "")
    env = dict(
        os.environ, PYTENSOR_FLAGS=",".join(x for x in (flags, f"base_compiledir={base}") if x)
    )
    draws = {}
    for run in ("fresh", "cached"):
        out = tmp_path / f"{run}.npy"
        subprocess.run(
            [sys.executable, "-c", FIT, str(out)],
            env=env,
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
        draws[run] = np.load(out)
    assert draws["fresh"].shape == (2, 200, draws["fresh"].shape[2])
    assert np.array_equal(draws["fresh"], draws["cached"])
