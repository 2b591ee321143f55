"""The planner's files: the PT schedule read from a curve table (``run, step, lr [, phase]``;
learning rates raw, steps counted from the start of PT), and the plans written as CSV, one row per
plan with its decisions (:data:`DECISIONS`) and outcomes (:data:`OUTCOMES`; losses in nats)."""

from __future__ import annotations

import pandas as pd

from bayescpt.core import schedules as S
from bayescpt.core.tables import DataError
from bayescpt.curves.data.table import schedules_of

DECISIONS = [
    "transfer",
    "loss_potential",
    "shape",
    "peak_lr",
    "warmup",
    "decay_frac",
    "steps",
    "final_frac",
    "replay_ratio",
]
#: what a plans CSV holds after the decision columns (the optional ones where present)
OUTCOMES = [
    "domain_mean",
    "domain_lower",
    "domain_upper",
    "general_rise_mean",
    "general_rise_upper",
    "peak_rise_mean",
    "p_turn",
    "turning_median",
    "p_within_tolerance",
    "p_mixture_feasible",
    "mixture_ok",
    "lr_over_opt",
    "lr_in_opt_interval",
    "extrapolation",
    "feasible",
    "pareto",
    "chosen",
]


def write_plans(table: pd.DataFrame, path) -> None:
    """One row per plan: its decisions and outcomes (:data:`OUTCOMES`), as CSV."""
    cols = [c for c in DECISIONS + OUTCOMES if c in table.columns]
    table[cols].to_csv(path, index=False, float_format="%.6g")


def pt_schedule_from_table(df: pd.DataFrame, run: str | None = None) -> S.Schedule:
    """The PT schedule of a run of a CPT table (its ``pt`` rows; the only run when ``run`` is
    None), to plan CPT from its checkpoints."""

    if "phase" in df.columns:
        df = df[df["phase"] == "pt"]
    runs = sorted(df["run"].unique())
    if run is None:
        if len(runs) != 1:
            raise DataError(
                f"the PT table has runs {runs[:5]}{'...' if len(runs) > 5 else ''}; "
                "name the one to plan from (--pt-run)"
            )
        run = runs[0]
    if run not in runs:
        raise DataError(f"run {run!r} has no PT rows in the table (runs with PT rows: {runs[:5]})")
    return schedules_of(df[df["run"] == run])[run]
