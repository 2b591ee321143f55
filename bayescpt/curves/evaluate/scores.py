"""Scores of predicted loss curves against observed ones, per model size.

:func:`score` takes a prediction table (``loss`` observed, ``mean`` the posterior-mean curve,
``lower``/``upper`` its 90 % central interval) and gives per model size: the mean and worst
relative error |mean / loss - 1|, R^2 = 1 - SS_res / SS_tot, the coverage (share of observed
points inside the interval), and the interval's sharpness and a proper score of it, both relative
to the observed loss y so sizes and sets compare:

    rel_width       mean of (upper - lower) / y
    interval_score  mean of [(upper - lower) + (2 / a) (lower - y)+ + (2 / a) (y - upper)+] / y

with a = 1 - prob (Gneiting & Raftery 2007, eq. 43: the interval score of a central (1 - a)
interval; lower is better, and a band cannot improve it by being wider than it needs to be).
:func:`percent_text` prints such a table with errors, widths, scores and coverage in percent.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def score(pred: pd.DataFrame, prob: float = 0.9, by: str | list = "model_size") -> pd.DataFrame:
    """Per model size (or per the columns ``by``): mean/worst relative error of the posterior
    mean, R^2, coverage of the ``prob`` interval, its relative width and interval score (see the
    module doc)."""
    rows = []
    h = pred[pred["loss"].notna() & pred["mean"].notna()]  # no prediction inside the warmup
    keys = [by] if isinstance(by, str) else list(by)
    for key, g in h.groupby(keys, sort=True, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        rows.append({**{k: _label(k, v) for k, v in zip(keys, key)}, **_scores(g, prob)})
    return pd.DataFrame(rows)


def _label(column, value):
    if column != "model_size":
        return value
    return "-" if pd.isna(value) else f"{value / 1e6:g}M"


def _scores(g: pd.DataFrame, prob: float) -> dict:
    y, lo, hi = g["loss"], g["lower"], g["upper"]
    rel = np.abs(g["mean"] / y - 1)
    ss_res = np.sum((y - g["mean"]) ** 2)
    ss_tot = np.sum((y - y.mean()) ** 2)
    a = 1.0 - prob
    interval = (hi - lo) + (2 / a) * np.maximum(lo - y, 0) + (2 / a) * np.maximum(y - hi, 0)
    return {
        "points": len(g),
        "mean_rel_err": rel.mean(),
        "worst_rel_err": rel.max(),
        "r2": 1 - ss_res / ss_tot if ss_tot > 0 else np.nan,
        "coverage": ((y >= lo) & (y <= hi)).mean(),
        "rel_width": ((hi - lo) / y).mean(),
        "interval_score": (interval / y).mean(),
    }


def percent_text(table: pd.DataFrame, digits: int = 3) -> str:
    """A score table as text, the relative errors (and their MCSE) and coverages in percent.

    Works on :func:`score`'s table and on the benchmarks' wider ones (``*_point`` columns beside
    the Bayesian ones, ``mre_mcse``); ``digits`` decimals for the errors, 1 for coverage.
    """
    shown = table.copy()
    pct = [
        c
        for c in shown.columns
        if "rel_err" in c
        or "mcse" in c
        or c.startswith(("coverage", "rel_width", "interval_score"))
    ]
    shown[pct] = shown[pct] * 100
    fmt = {
        c: (lambda v: f"{v:.1f}") if c.startswith("coverage") else (lambda v: f"{v:.{digits}f}")
        for c in pct
    }
    fmt.update({c: (lambda v: f"{v:.4f}") for c in shown.columns if c.startswith("r2")})
    return shown.rename(columns={c: c + "_%" for c in pct}).to_string(
        index=False, formatters={c + "_%" if c in pct else c: f for c, f in fmt.items()}
    )
