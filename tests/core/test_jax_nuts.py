"""The JAX samplers from the mode on whitened coordinates (``bayescpt.core.jax_nuts``).

A Gaussian posterior with one near-exact redundancy, as in the loss laws (only ``a + b`` meets
the data; ``a - b`` is held by the priors alone; correlation -0.9999, scales 0.005 and 0.71):
its posterior is known in closed form. On it, numpyro and blackjax from the mode must recover the
posterior means and sds, store ``lp`` as the model's log density at each draw (not the potential
energy), and need shallow trees, where their own diagonal adaptation (``init="jitter"``) needs
many more leapfrog steps per draw.
"""

import numpy as np
import pymc as pm
import pytest

from bayescpt.core.chains import chain_stats
from bayescpt.core.sampling import resolve_settings, sample_model

pytestmark = pytest.mark.filterwarnings("ignore")
pytest.importorskip("numpyro")
pytest.importorskip("blackjax")

Y, NOISE, N = 1.3, 0.05, 400  # N observations of a + b with sd NOISE


def ridge_model():
    rng = np.random.default_rng(0)
    y = Y + NOISE * rng.standard_normal(N)
    with pm.Model() as model:
        a = pm.Normal("a", 0.0, 1.0)
        b = pm.Normal("b", 0.0, 1.0)
        pm.Normal("y", a + b, NOISE, observed=y)
    # closed form: precision P = I + (N / NOISE^2) [[1, 1], [1, 1]],
    # mean = P^-1 (N ybar / NOISE^2) 1
    prec = np.eye(2) + N / NOISE**2 * np.ones((2, 2))
    cov = np.linalg.inv(prec)
    mean = cov @ (np.ones(2) * y.sum() / NOISE**2)
    return model, mean, np.sqrt(np.diag(cov))


@pytest.mark.slow  # a recovery study of both JAX back ends (each still samples in the default tier)
@pytest.mark.parametrize("sampler", ["numpyro", "blackjax"])
def test_whitened_jax_samplers_recover_a_ridge_with_shallow_trees(sampler, jax_x64_restored):
    model, mean, sd = ridge_model()
    s = resolve_settings(None, sampler, chains=2, draws=400, tune=300, seed=5)
    idata = sample_model(model, s)
    post = idata.posterior
    for i, name in enumerate(("a", "b")):
        draws = post[name].values.ravel()
        # Monte Carlo error of the mean with ESS >= 200: < sd / 14; 4 of them allowed
        assert abs(draws.mean() - mean[i]) < 4 * sd[i] / np.sqrt(200), (name, draws.mean(), mean[i])
        assert draws.std() == pytest.approx(sd[i], rel=0.2)
    assert int(idata.sample_stats["diverging"].sum()) == 0
    # lp is the model's log density at the draw (the sign NUTS samples), not its negative
    logp = model.compile_logp()
    for c, d in ((0, 0), (1, 17)):
        point = {"a": float(post["a"][c, d]), "b": float(post["b"][c, d])}
        assert float(idata.sample_stats["lp"][c, d]) == pytest.approx(float(logp(point)), abs=1e-6)
    whitened = chain_stats(idata)["grad_evals"].mean() / s["draws"]
    assert whitened < 8, whitened
    assert "Laplace at the mode (dense)" in idata.posterior.attrs["mass_matrix"]

    own = sample_model(
        model, resolve_settings(None, sampler, chains=2, draws=400, tune=300, seed=5, init="jitter")
    )
    point = {"a": float(own.posterior["a"][1, 3]), "b": float(own.posterior["b"][1, 3])}
    assert float(own.sample_stats["lp"][1, 3]) == pytest.approx(float(logp(point)), abs=1e-6)
    diagonal = chain_stats(own)["grad_evals"].mean() / s["draws"]
    # the test shows something: the sampler's own diagonal adaptation needs far longer trees
    assert diagonal > 3 * whitened, (diagonal, whitened)


def test_same_seed_same_draws(jax_x64_restored):
    model, _, _ = ridge_model()
    s = resolve_settings(None, "numpyro", chains=2, draws=50, tune=50, seed=9)
    a, b = sample_model(model, s), sample_model(model, s)
    np.testing.assert_array_equal(a.posterior["a"].values, b.posterior["a"].values)
