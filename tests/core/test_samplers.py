"""Every sampler runs the same model on CPU and agrees on the posterior (JAX ones = GPU path)."""

import numpy as np
import pytest

from bayescpt.curves.model.fit import Fit

pytestmark = [pytest.mark.filterwarnings("ignore"), pytest.mark.xdist_group("core/test_samplers")]


@pytest.fixture(scope="module")
def tiny(small_curves):
    df, truth = small_curves
    keep = df["run"].str.startswith("100M/")
    return df[keep].reset_index(drop=True), truth


# the default sampler in the default tier; the other back ends' recovery in the slow tier (each
# back end still samples in the default tier: test_init's major-mode starts)
@pytest.mark.parametrize(
    "sampler",
    ["nutpie"] + [pytest.param(s, marks=pytest.mark.slow) for s in ("pymc", "numpyro", "blackjax")],
)
def test_sampler_recovers_the_single_group(tiny, sampler):
    df, truth = tiny
    fit = Fit.run(
        df, law="annealing", sampler=sampler, chains=2, draws=300, tune=400, seed=11, warn=False
    )
    assert fit.config["sampler"]["sampler"] == sampler
    assert "log_likelihood" in fit.idata.groups() and "observed_data" in fit.idata.groups()
    post = fit.idata.posterior
    row = truth.set_index("group").loc["default|100M"]
    for p in ("L0", "A", "alpha", "C"):
        draws = post[p].values.ravel()
        lo, hi = np.quantile(draws, [0.005, 0.995])
        assert lo <= row[p] <= hi, (sampler, p, row[p], lo, hi)
    assert fit.diagnostics().max_rhat < 1.05


def test_unknown_sampler_is_a_clear_error(tiny):
    with pytest.raises(ValueError, match="sampler 'stan'"):
        Fit.run(tiny[0], sampler="stan")
