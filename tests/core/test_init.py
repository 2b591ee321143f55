"""Chains start around the posterior mode (bayescpt.core.init), for every sampler.

The test posterior has two modes 10 sds apart whose log densities differ by 30 nats: the major
one at x = +5, a minor one at x = -5. Each sampler's own start (the support point 0 plus
U(-1, 1) jitter) puts a chain in whichever basin its jitter falls in, and NUTS never crosses;
multi-start optimisation finds the major mode and every chain starts there.
"""

import json

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest

from bayescpt.core.diagnostics import summarize
from bayescpt.core.init import ModelStarts, StartReport
from bayescpt.core.sampling import resolve_settings, sample_model

pytestmark = pytest.mark.filterwarnings("ignore")

MAJOR, MINOR, SD, GAP = 5.0, -5.0, 0.3, 30.0


def two_modes():
    with pm.Model() as model:
        x = pm.Normal("x", 0.0, 10.0)
        comp = pt.stack([-0.5 * ((x - MAJOR) / SD) ** 2, -GAP - 0.5 * ((x - MINOR) / SD) ** 2])
        pm.Potential("modes", pt.logsumexp(comp))
        pm.Normal("y", x, 1e3, observed=[0.0])  # samplers store a log likelihood: give them one
    return model


def chain_means(idata):
    return idata.posterior["x"].mean("draw").values


def test_multistart_finds_the_major_mode_and_reports_the_minor():
    starts = ModelStarts(two_modes(), n_starts=8).starts(4, seed=3)
    x = starts.owner.to_point(starts.mode)["x"]
    assert abs(float(x) - MAJOR) < 0.05
    rep = starts.report
    assert rep.starts == 8 and rep.failed == 0 and len(rep.finished) == 2
    # each start: its own point around the mode, within a few of the mode's sds
    pts = [float(starts.point(s)["x"]) for s in starts.chain_seeds(4, 3)]
    assert len(set(pts)) == 4 and all(abs(p - MAJOR) < 5 * SD for p in pts)
    # the report round-trips through the fit file's attrs
    assert StartReport.from_json(rep.to_json()).best == pytest.approx(rep.best, abs=1e-3)
    assert "chains started around the posterior mode" in rep.text()


def test_same_seed_same_starts_other_seed_other_starts():
    ms = ModelStarts(two_modes())
    a, b, c = ms.starts(4, 0), ms.starts(4, 0), ms.starts(4, 1)
    assert a.initvals(4, 0) == b.initvals(4, 0)
    assert [p["x"] for p in a.initvals(4, 0)] != [p["x"] for p in c.initvals(4, 1)]


def test_a_minor_basin_is_reported_when_the_finished_optimisations_disagree():
    rep = StartReport(
        best=100.0, finished=[100.0, 40.0], starts=8, failed=1, grad_evals=10, seconds=0.1
    )
    assert rep.minor_gaps == [60.0]
    assert "1 ended 60 nats lower: the posterior has a minor mode" in rep.text()
    assert "1 starts had no finite log density" in rep.text()


# the JAX back ends' starts: the slow tier (the default tier samples them in test_jax_nuts)
JAX_SLOW = pytest.mark.slow


@pytest.mark.parametrize(
    "sampler",
    [
        "nutpie",
        "pymc",
        pytest.param("numpyro", marks=JAX_SLOW),
        pytest.param("blackjax", marks=JAX_SLOW),
    ],
)
def test_every_sampler_starts_all_chains_in_the_major_mode(sampler, jax_x64_restored):
    """With ``init="jitter"`` (the samplers' own starts) some chain of seed 0..5 lands in the
    minor mode, which shows the model can fail; with the default ``init="map"`` none does."""
    model = two_modes()
    cores = 1 if sampler == "pymc" else None
    stuck = 0
    for seed in range(6):
        s = resolve_settings(None, sampler, chains=4, draws=100, tune=200, seed=seed, init="jitter")
        stuck += int(np.sum(chain_means(sample_model(model, s, cores=cores)) < 0))
        if stuck:
            break
    assert stuck, "the samplers' own starts never found the minor mode: the test shows nothing"
    s = resolve_settings(None, sampler, chains=4, draws=100, tune=200, seed=seed)
    idata = sample_model(model, s, cores=cores)
    assert np.all(np.abs(chain_means(idata) - MAJOR) < 1.0), chain_means(idata)
    init = json.loads(idata.sample_stats.attrs["init"])
    # log density at the major mode: the prior's N(5; 0, 10) and y's N(0; 5, 1e3) (the Potential
    # is ~0 there)
    const = -0.5 * np.log(2 * np.pi)
    assert init["best"] == pytest.approx(-0.125 - np.log(10) + 2 * const - np.log(1e3), abs=0.05)
    assert "warmup_posterior" not in idata.groups()
    diag = summarize(idata, ["x"])
    assert diag.start is not None and "start: chains started around" in diag.to_text()


def test_unknown_init_is_a_clear_error():
    with pytest.raises(ValueError, match="init = 'prior'"):
        resolve_settings(None, "nutpie", init="prior")
