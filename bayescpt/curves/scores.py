"""The quick start on bundled data, end to end: fit -> diagnose -> predict -> compare -> plan.

1. fits the law on the multi-power-law authors' training split (``cosine_24000, constant_24000,
   wsdcon_9`` at 25M/100M/400M) with NUTS; saves the fit;
2. prints and draws its diagnostics (rank plots, energy, the most correlated pair);
3. predicts the six other schedules per size with 90 % intervals, reports error and coverage,
   draws the curves;
4. compares it with the other LR-schedule law's reference fit of the same runs
   (``models/``): forest plot of the shared parameters and PSIS-LOO;
5. plans a CPT run on the reference CPT-law fit (``models/cpt_simulated.nc``): the
   chance-constrained choice among schedule shapes, peak LRs, lengths and checkpoints, its
   Pareto front as CSV and plot.
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
