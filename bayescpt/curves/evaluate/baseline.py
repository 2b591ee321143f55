"""The practitioner's baseline: a multi-start L-BFGS point fit on a Huber loss, and its bootstrap.

This is how the seed papers fit their laws (Huber loss with delta 1e-3 on log loss, L-BFGS from a
grid of starts, one parameter set per fit). It is used as the reference in benchmarks and tests;
nothing Bayesian depends on it.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize
from scipy.special import huber

from bayescpt.curves.model.laws.base import Law


def _unpack(law: Law, z):
    return {p.name: (np.exp(v) if p.positive else v) for p, v in zip(law.params, z)}


def huber_objective(law: Law, X: dict, y: np.ndarray, delta: float = 1e-3, weights=None):
    """Sum of Huber losses of log-loss residuals, as a function of the unconstrained parameters."""
    w = np.ones_like(y) if weights is None else weights

    def f(z):
        with np.errstate(all="ignore"):
            pred = law.mean(np, _unpack(law, z), X)
        if not np.all(np.isfinite(pred)) or np.any(pred <= 0):
            return 1e10
        return float(np.sum(w * huber(delta, np.log(pred) - y)))

    return f


def point_fit(
    law: Law,
    X: dict,
    y: np.ndarray,
    n_starts: int = 16,
    seed: int = 0,
    delta: float = 1e-3,
    weights=None,
    starts=None,
):
    """Multi-start L-BFGS-B. ``y`` is log loss. Returns (theta dict, unconstrained vector)."""
    rng = np.random.default_rng(seed)
    loc = np.array([p.loc for p in law.params])
    scale = np.array([p.scale for p in law.params])
    if starts is None:
        starts = loc + 0.5 * scale * rng.standard_normal((n_starts, loc.size))
        starts[0] = loc
    f = huber_objective(law, X, y, delta, weights)
    best = None
    for z0 in starts:
        r = minimize(f, z0, method="L-BFGS-B")
        if best is None or r.fun < best.fun:
            best = r
    return _unpack(law, best.x), best.x


def bootstrap(
    law: Law,
    X: dict,
    y: np.ndarray,
    n_boot: int = 100,
    n_starts: int = 4,
    seed: int = 0,
    z_hat=None,
):
    """Point fits on ``n_boot`` resamples of the points (with replacement).

    Each resample starts from the full-data optimum ``z_hat`` plus ``n_starts - 1`` jittered starts.
    Returns an array (n_boot, n_params) of unconstrained parameters.
    """
    rng = np.random.default_rng(seed)
    n = y.size
    if z_hat is None:
        _, z_hat = point_fit(law, X, y, seed=seed)
    scale = np.array([p.scale for p in law.params])
    out = []
    for _ in range(n_boot):
        w = np.bincount(rng.integers(0, n, n), minlength=n).astype(float)
        starts = z_hat + 0.1 * scale * rng.standard_normal((n_starts, z_hat.size))
        starts[0] = z_hat
        _, z = point_fit(law, X, y, weights=w, starts=starts)
        out.append(z)
    return np.array(out)
