"""The paper's law of the CMR across CPT budgets, R_CMR(T) = a4 T^s4 + b3 (T in the data's token
unit), fitted by least squares: through one column of a CMR-vs-budget table
(:func:`fit_cmr_law`, e.g. the median CMRs of :func:`bayescpt.mixture.decide.cmr_vs_tokens`) and
to each posterior draw's CMR path (:func:`fit_cmr_law_draws`, paths from
:func:`bayescpt.mixture.decide.cmr_paths`), with a flag when a4 and b3 are not identified.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def _fit_power(T: np.ndarray, y: np.ndarray):
    """(a, s, b) of y = a (T / T.max())^s + b by least squares, None when it fails."""
    from scipy.optimize import curve_fit

    scale = T.max()
    try:
        (a, s, b), _ = curve_fit(
            lambda t, a, s, b: a * (t / scale) ** s + b,
            T,
            y,
            p0=(y[-1] - y[0], 0.5, y[0]),
            maxfev=20000,
        )
    except (RuntimeError, ValueError):
        return None
    return a, s, b


def fit_cmr_law(table: pd.DataFrame, column: str = "median") -> dict | None:
    """Least squares of the paper's R_CMR(T) = a4 T^s4 + b3 through ``table[column]`` (needs four
    or more budgets with 0 < CMR < 1); None when it cannot be fitted."""
    x = table[(table[column] > 0) & (table[column] < 1)]
    if len(x) < 4:
        return None
    T, y = x["tokens"].to_numpy(), x[column].to_numpy()
    got = _fit_power(T, y)
    if got is None:
        return None
    a, s, b = got
    scale = T.max()
    # back to the paper's form in the data's token unit: a4 T^s4 with a4 = a / scale^s
    return {
        "a4": float(a / scale**s),
        "s4": float(s),
        "b3": float(b),
        "rmse": float(np.sqrt(np.mean((a * (T / scale) ** s + b - y) ** 2))),
    }


def fit_cmr_law_draws(
    budgets, paths: np.ndarray, prob: float = 0.9, max_draws: int = 400, seed: int = 0
) -> dict | None:
    """The paper's R_CMR(T) = a4 T^s4 + b3 fitted to each draw's path (:func:`cmr_paths`; a
    random subset of ``max_draws``): median and central interval of a4, s4, b3, and the share of
    draws where the fit was possible (four or more budgets with 0 < CMR < 1). None when under
    half of the draws allow a fit."""
    T = np.asarray(budgets, float)
    rng = np.random.default_rng(seed)
    idx = rng.choice(len(paths), size=min(max_draws, len(paths)), replace=False)
    got = []
    scale = T.max()
    for y in paths[idx]:
        ok = (y > 0) & (y < 1)
        if ok.sum() < 4 or np.ptp(y[ok]) == 0:
            continue
        r = _fit_power(T[ok], y[ok])
        if r is not None and np.all(np.isfinite(r)):
            a, s, b = r
            got.append((a / scale**s, s, b))
    if len(got) < len(idx) / 2:
        return None
    got = np.array(got)
    q = [(1 - prob) / 2, 0.5, (1 + prob) / 2]
    out = {
        k: dict(zip(("lower", "median", "upper"), map(float, np.quantile(got[:, i], q))))
        for i, k in enumerate(("a4", "s4", "b3"))
    }
    out["fitted_share"] = round(len(got) / len(idx), 4)
    # on a short range of budgets a4 and b3 trade off along s4 -> 0 (a4 T^s4 + b3 ~ a4 + b3 +
    # a4 s4 log T): flag intervals more than ten times wider than the median's size
    out["identified"] = bool(
        all(out[k]["upper"] - out[k]["lower"] <= 10 * abs(out[k]["median"]) for k in ("a4", "b3"))
    )
    return out
