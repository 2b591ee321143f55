"""Scores of predicted loss curves against observed ones, per model size.

:func:`score` takes a prediction table (``loss`` observed, ``mean`` the posterior-mean curve,
``lower``/``upper`` its 90 % central interval) and gives per model size: the mean and worst
relative error |mean / loss - 1|, R^2 = 1 - SS_res / SS_tot, and the coverage (share of observed
points inside the interval). :func:`percent_text` prints such a table with errors and coverage
in percent.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def score(pred: pd.DataFrame) -> pd.DataFrame:
    """Per model size: mean/worst relative error of the posterior mean, R^2, 90 % coverage."""
    rows = []
    h = pred[pred["loss"].notna() & pred["mean"].notna()]   # no prediction inside the warmup
    for size, g in h.groupby("model_size"):
        rel = np.abs(g["mean"] / g["loss"] - 1)
        ss_res = np.sum((g["loss"] - g["mean"]) ** 2)
        ss_tot = np.sum((g["loss"] - g["loss"].mean()) ** 2)
        inside = (g["loss"] >= g["lower"]) & (g["loss"] <= g["upper"])
        rows.append({"model_size": f"{size / 1e6:g}M", "points": len(g),
                     "mean_rel_err": rel.mean(), "worst_rel_err": rel.max(),
                     "r2": 1 - ss_res / ss_tot, "coverage": inside.mean()})
    return pd.DataFrame(rows)


def percent_text(table: pd.DataFrame, digits: int = 3) -> str:
    """A score table as text, the relative errors (and their MCSE) and coverages in percent.

    Works on :func:`score`'s table and on the benchmarks' wider ones (``*_point`` columns beside
    the Bayesian ones, ``mre_mcse``); ``digits`` decimals for the errors, 1 for coverage.
    """
    shown = table.copy()
    pct = [c for c in shown.columns if "rel_err" in c or "mcse" in c or c.startswith("coverage")]
    shown[pct] = shown[pct] * 100
    fmt = {c: (lambda v: f"{v:.1f}") if c.startswith("coverage") else (lambda v: f"{v:.{digits}f}")
           for c in pct}
    fmt.update({c: (lambda v: f"{v:.4f}") for c in shown.columns if c.startswith("r2")})
    return shown.rename(columns={c: c + "_%" for c in pct}).to_string(
        index=False, formatters={c + "_%" if c in pct else c: f for c, f in fmt.items()})
