"""A smooth model discrepancy in log S1: a Gaussian process, Hilbert-space approximated.

The law's error on a curve is systematic and smooth in training progress. Modelling it as
``log y = log L_law + f_g(log S1) + noise`` with ``f_g ~ GP(0, amp^2 * ExpQuad(ls))`` per group g
(Kennedy & O'Hagan's model discrepancy) keeps the law's parameters from being over-constrained by
dense, autocorrelated points, and makes a prediction beyond the trained range of S1 carry the
discrepancy's prior spread: the further the extrapolation, the wider the interval.

The GP uses the Hilbert-space approximation (Solin & Saerkkae 2020; Riutort-Mayol et al. 2023):
``f(x) = sum_j phi_j(x) * sqrt(S(omega_j)) * beta_j`` with ``beta_j ~ N(0, 1)`` on ``[-L, L]``,
where ``x = log S1 - center``. The same numpy/pytensor code is used in the model and for prediction.
"""

from __future__ import annotations

import numpy as np

DEFAULT_DISCREPANCY = {"m": 30, "c": 3.0, "amp_scale": 0.005, "ls_loc": 0.0, "ls_scale": 0.5}


def domain(log_s1: np.ndarray, c: float) -> tuple[float, float]:
    """(center, L) of the approximation domain from the training points' log S1."""
    lo, hi = float(np.min(log_s1)), float(np.max(log_s1))
    center = 0.5 * (lo + hi)
    return center, c * max(0.5 * (hi - lo), 0.5)


def basis(x, L: float, m: int) -> np.ndarray:
    """Eigenfunctions phi_j(x), j = 1..m, at centred inputs ``x``: shape (n, m)."""
    j = np.arange(1, m + 1)
    return np.sqrt(1.0 / L) * np.sin(np.pi * j * (np.asarray(x)[:, None] + L) / (2.0 * L))


def sqrt_spd(xp, amp, ls, L: float, m: int):
    """sqrt of the ExpQuad spectral density at the m frequencies; ``amp``/``ls`` broadcast
    against a trailing axis of length m (pass ``amp[..., None]`` for draws)."""
    omega = np.pi * np.arange(1, m + 1) / (2.0 * L)
    return amp * xp.sqrt(np.sqrt(2.0 * np.pi) * ls) * xp.exp(-0.25 * (ls * omega) ** 2)
