"""The power-law part L0 + A * S1^(-alpha) shared by the annealing and multi-power laws.

S1 is the forward area (sum of raw learning rates over steps 1..t). Its parameters, with the
same priors in both laws (:func:`params`), its design column ``log_S1`` = ln S1 per point
(:func:`design`) and S1^(-alpha) over an array namespace ``xp`` (:func:`s1_power`).
"""

from __future__ import annotations

import numpy as np

from bayescpt.curves.model.laws.base import Param


def design(s1: np.ndarray) -> np.ndarray:
    """ln S1 per point, the design column ``log_S1`` of the power-law term (:func:`s1_power`)."""
    with np.errstate(divide="ignore"):  # S1 = 0 (no step taken): ln 0 = -inf, S1^-alpha = inf
        return np.log(np.asarray(s1, dtype=float))


def s1_power(xp, alpha, X: dict):
    """S1^(-alpha) of the annealing and multi-power laws, as exp(-alpha ln S1).

    ln S1 is design data (``log_S1``, :func:`design`), computed once per fit, so a gradient
    evaluates one exp per point where ``S1 ** -alpha`` evaluated a pow (a log and an exp) and its
    derivative a second log: 16-18 % of the annealing law's gradient (``benchmarks/RESULTS.md``,
    "exp for pow"). A design without ``log_S1`` (built by hand) gets ln S1 here."""
    log_s1 = X["log_S1"] if "log_S1" in X else xp.log(X["S1"])
    return xp.exp(-alpha * log_s1)


def params(alpha_doc: str) -> tuple:
    """L0, A and alpha of the power-law part L0 + A * S1^(-alpha) shared by the annealing and
    multi-power laws, with the same priors in both (``alpha_doc``: each law's word for alpha).
    A schedule-level deviation (run_sd) on A only: a deviation of alpha as well cost accuracy on
    unseen schedules without improving calibration."""
    return (
        Param("L0", True, np.log(2.5), 0.5, 0.1, 0.1, 0.0, "irreducible loss (nats)"),
        Param("A", True, np.log(0.5), 1.0, 0.3, 0.3, 0.04, "power-law amplitude"),
        Param("alpha", True, np.log(0.5), 0.5, 0.2, 0.2, 0.0, alpha_doc),
    )
