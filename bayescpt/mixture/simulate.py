"""Simulated CPT mixture experiments with a known law, for recovery tests and examples."""

from __future__ import annotations

import numpy as np
import pandas as pd

from bayescpt.mixture.data import validate_mixture
from bayescpt.mixture.model import law_mean

#: a CPT setting like the Data Mixing Laws one (loss in nats; tokens in steps)
DEFAULT_TRUTH = {
    "general": {"m": 2.95, "d": -0.12, "c": 2.0, "q": 0.3, "A": [0.02], "p": [0.6], "loss0": 2.87},
    "domain": {"m": 1.36, "d": 0.08, "c": -0.5, "q": 0.15, "A": [0.08], "p": [0.3], "loss0": 1.84},
}


def simulate_cpt(
    truth: dict | None = None,
    ratios=(0.2, 0.4, 0.6, 0.8),
    tokens=tuple(range(1000, 10001, 1000)),
    model_size: float = 70e6,
    ratio_form: str = "power",
    run_sd: float = 0.001,
    sigma: float = 0.002,
    seed: int = 0,
) -> pd.DataFrame:
    """A mixture table: one run per ratio, checkpoints at ``tokens`` and the baseline at 0.

    Losses are ``law * exp(run deviation + noise)`` (log-normal; deviations per run and role).
    ``truth[role]`` holds the law's m, d, c, q, A, p (see :func:`bayescpt.mixture.model.law_mean`,
    with R_lo/R_hi the smallest/largest ratio and T_ref the largest token count) and ``loss0``.
    """
    truth = truth or DEFAULT_TRUTH
    rng = np.random.default_rng(seed)
    R = np.asarray(ratios, float)
    T = np.asarray(tokens, float)
    rows = []
    for role, th in truth.items():
        vs = "gen" if role == "general" else "dom"
        for r in R:
            mu = law_mean(np, r, T / T.max(), th, ratio_form, R.min(), R.max())
            dev = rng.normal(0, run_sd)
            y = mu * np.exp(dev + rng.normal(0, sigma, T.size))
            run = f"{model_size / 1e6:g}M/R={r:g}"
            rows.append(
                pd.DataFrame(
                    {"run": run, "tokens": np.r_[0.0, T], "loss": np.r_[th["loss0"], y]}
                ).assign(ratio=r, val_set=vs, val_role=role, model_size=model_size)
            )
    return validate_mixture(pd.concat(rows, ignore_index=True))


def true_cmr(
    truth: dict,
    tokens: float,
    t_ref: float,
    r_lo: float,
    r_hi: float,
    tolerance: float,
    relative: bool = False,
    ratio_form: str = "power",
    grid=None,
) -> float:
    """The CMR of the known law (no run deviation): largest R on ``grid`` with the general loss
    within tolerance and the domain loss below its baseline."""
    grid = np.linspace(0.005, 1, 2000) if grid is None else np.asarray(grid)
    t = tokens / t_ref
    gen = law_mean(np, grid, t, truth["general"], ratio_form, r_lo, r_hi)
    dom = law_mean(np, grid, t, truth["domain"], ratio_form, r_lo, r_hi)
    L0 = truth["general"]["loss0"]
    limit = L0 * (1 + tolerance) if relative else L0 + tolerance
    ok = (gen <= limit) & (dom < truth["domain"]["loss0"])
    return float(grid[ok].max()) if ok.any() else 0.0
