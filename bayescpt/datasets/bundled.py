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

from pathlib import Path

import pandas as pd

from bayescpt.curves.data import read_curves

TRAIN_SCHEDULES = ("cosine_24000", "constant_24000", "wsdcon_9")


#: the package data: bundled tables (``data/``) and reference fits (``models/``)
RESOURCES = Path(__file__).resolve().parent.parent / "resources"


BUNDLED = RESOURCES / "data" / "multipowerlaw.csv"


MODELS = RESOURCES / "models"


CPT_REFERENCE = MODELS / "cpt_simulated.nc"


CPT_DATA = RESOURCES / "data" / "cpt_simulated.csv"


#: the demo's planning question: keep the general loss within 0.05 nats of the checkpoint's with
#: 90 % probability, choosing among these CPT decisions
PLAN = {"tolerance": 0.05, "risk": 0.1, "transfers": [8000, 10000],
        "shapes": ["cosine", "linear", "constant"], "peak_lrs": [2.5e-5, 5e-5, 1e-4, 2e-4],
        "steps": [1000, 2000, 4000, 8000]}


def bundled_multipowerlaw() -> pd.DataFrame:
    """The bundled multi-power-law curves (validated)."""

    if not BUNDLED.exists():
        raise FileNotFoundError(f"{BUNDLED}: bundled data missing")
    return read_curves(BUNDLED)


def split(df: pd.DataFrame, train=TRAIN_SCHEDULES):
    """(train, test) tables by schedule name (the part of ``run`` after the '/')."""
    is_train = df["run"].str.split("/").str[-1].isin(train)
    return df[is_train].reset_index(drop=True), df[~is_train].reset_index(drop=True)
