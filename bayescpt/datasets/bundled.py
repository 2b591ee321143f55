"""The bundled quick-start data and reference fits (package data under ``bayescpt/resources``).

* :func:`bundled_multipowerlaw`: the multi-power-law authors' curves (27 runs: 25M/100M/400M x 9
  schedules), and :func:`split` into the training schedules :data:`TRAIN_SCHEDULES` and the
  held-out rest.
* :data:`CPT_REFERENCE` / :data:`CPT_DATA`: the reference CPT-law fit and its simulated PT -> CPT
  runs; :data:`PLAN`: the demo's planning question on it.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from bayescpt.curves.data.validate import read_curves

TRAIN_SCHEDULES = ("cosine_24000", "constant_24000", "wsdcon_9")


#: the package data: bundled tables (``data/``) and reference fits (``models/``)
RESOURCES = Path(__file__).resolve().parent.parent / "resources"


BUNDLED = RESOURCES / "data" / "multipowerlaw.csv"


MODELS = RESOURCES / "models"


CPT_REFERENCE = MODELS / "cpt_simulated.nc"


CPT_DATA = RESOURCES / "data" / "cpt_simulated.csv"


#: the demo's planning question: keep the general loss within 0.05 nats of the checkpoint's with
#: 90 % probability, choosing among these CPT decisions
PLAN = {
    "tolerance": 0.05,
    "risk": 0.1,
    "transfers": [8000, 10000],
    "shapes": ["cosine", "linear", "constant"],
    "peak_lrs": [2.5e-5, 5e-5, 1e-4, 2e-4],
    "steps": [1000, 2000, 4000, 8000],
}


def bundled_multipowerlaw() -> pd.DataFrame:
    """The bundled multi-power-law curves (validated)."""

    if not BUNDLED.exists():
        raise FileNotFoundError(f"{BUNDLED}: bundled data missing")
    return read_curves(BUNDLED)


def split(df: pd.DataFrame, train=TRAIN_SCHEDULES):
    """(train, test) tables by schedule name (the part of ``run`` after the '/')."""
    is_train = df["run"].str.split("/").str[-1].isin(train)
    return df[is_train].reset_index(drop=True), df[~is_train].reset_index(drop=True)


#: every reference fit (``models/NAME.nc``) -> the bundled table its predicted curves are drawn
#: over (its data, or the data it was split from), None where the repository bundles none
REFERENCE_TABLES = {
    "annealing_multipowerlaw": BUNDLED,
    "multipower_multipowerlaw": BUNDLED,
    "annealing_olmo_c4": None,
    "cpt_simulated": CPT_DATA,
    "hparams_steplaw": None,
    "mixture_ct70m": None,
}


def reference_inputs(name: str) -> list[Path]:
    """A reference fit's file and, where bundled, its table (what its report shows)."""
    table = REFERENCE_TABLES[name]
    return [MODELS / f"{name}.nc"] + ([table] if table is not None else [])
