"""The tidy loss-curve table: its columns, and the per-curve views the laws need.

One row per logged step of one run (and validation set)::

    run        str    the training run (one LR schedule); required
    step       int    optimizer steps done (>= 0), strictly increasing within (run, val_set)
    lr         float  raw learning rate used at that step (e.g. 3e-4, never normalised); required
    loss       float  validation/training loss in nats (> 0); empty on rows that only give the LR
    val_set    str    optional, the validation set (default ``"default"``)
    model_size float  optional, non-embedding parameters (a count, e.g. 25e6), constant per run

The learning rate between logged steps is taken as linear in the step (the multi-power-law authors'
convention); give a dense ``lr`` (rows without loss) where that is not good enough, e.g. a row
``step=0, lr=0`` for a linear warmup from zero. Other columns are kept as they are; one is read by
the fits: ``_noise_scale`` (float > 0, default 1), a loss's noise sd relative to one logged loss,
which :func:`bayescpt.curves.data.thinning.thin_long_curves` writes on the points it averages from
windows of logged losses.

Continual pre-training (CPT) runs add, all optional for the other laws and required by the CPT law::

    phase        str    ``pt`` or ``cpt``; a run lists its PT rows, then its CPT rows (steps count
                        from the start of PT; the last PT step is the transfer point). A run with
                        no ``pt`` rows is a base model with unknown PT history.
    val_role     str    per validation set: ``general`` (the PT distribution), ``domain`` (the CPT
                        distribution) or ``other`` (out of domain); every loss needs one
    replay_ratio float  share of PT data in the CPT mixture, in [0, 1], constant per run

:func:`training_range` is the range of a table a fit records (peak LRs, longest run, largest
forward area S1 = sum of raw LRs over steps 1..t, model sizes; read back by
:mod:`bayescpt.curves.forecast.extrapolation`).

A table is read and validated by :mod:`bayescpt.curves.data.validate` (every problem raises
:class:`DataError` with one line naming the file, run, column and value), and thinned by
:mod:`bayescpt.curves.data.thinning`.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from bayescpt.core.schedules import Schedule, from_points
from bayescpt.core.tables import DataError

DEFAULT_VAL_SET = "default"

#: the column with a loss's noise sd relative to one logged loss (set where losses are averaged)
NOISE_SCALE = "_noise_scale"


PHASES = ("pt", "cpt")


VAL_ROLES = ("general", "domain", "other")


def curve_info(df: pd.DataFrame, run: str, val_set: str) -> dict:
    """What a law may need to know about one curve (see :meth:`Law.design`).

    ``pt_end`` is the last step of the run's PT rows (0 when it has none: unknown PT history, or
    a plain pre-training table without a ``phase`` column, whose whole run is then "CPT").
    """
    rows = df[df["run"] == run]
    vs_rows = rows[rows["val_set"] == val_set]
    size = rows["model_size"].iloc[0] if "model_size" in rows.columns else None
    role = None
    if "val_role" in rows.columns:
        given = df.loc[(df["val_set"] == val_set) & (df["val_role"] != ""), "val_role"]
        role = given.iloc[0] if len(given) else None
    pt_end = 0
    if "phase" in rows.columns and (rows["phase"] == "pt").any():
        pt_end = int(rows.loc[rows["phase"] == "pt", "step"].max())
    replay = None
    if "replay_ratio" in rows.columns and rows["replay_ratio"].notna().any():
        replay = float(rows["replay_ratio"].dropna().iloc[0])
    return {
        "model_size": None if size is None or pd.isna(size) else float(size),
        "run": run,
        "val_set": val_set,
        "val_role": role,
        "pt_end": pt_end,
        "replay_ratio": replay,
        "n_rows": int(len(vs_rows)),
    }


def schedules_of(df: pd.DataFrame) -> dict[str, Schedule]:
    """The per-step schedule of every run, from all its (step, lr) rows by linear interpolation."""
    out = {}
    for r, g in df.groupby("run", sort=False):
        pts = g.groupby("step")["lr"].first()
        try:
            out[r] = from_points(pts.index.to_numpy(), pts.to_numpy(), name=r)
        except ValueError as err:
            raise DataError(
                f"run {r!r}: {err} (a table to predict must list the run's whole "
                "schedule, not only the rows to score)"
            ) from None
    return out


def schedule_ids(
    df: pd.DataFrame, rtol: float = 0.05, schedules: dict[str, Schedule] | None = None
) -> dict[str, str]:
    """Which runs share a learning-rate schedule: run -> schedule id.

    Uses the ``schedule`` column when the table has one; otherwise runs whose per-step learning
    rates agree on the steps both ran (every step within ``rtol`` of the peak; one run may be
    logged for longer) share the id of the first such run (``schedules``, from
    :func:`schedules_of`, saves recomputing them). Runs of one schedule at several model sizes
    then share their schedule deviation in
    the hierarchy.
    """
    if "schedule" in df.columns:
        per_run = df.groupby("run")["schedule"].first().astype(str)
        return per_run.to_dict()
    sched = schedules if schedules is not None else schedules_of(df)
    rep_of, reps = {}, []
    for run, sch in sched.items():
        for rep in reps:
            other = sched[rep]
            m = min(other.lr.size, sch.lr.size)
            if np.max(np.abs(other.lr[:m] - sch.lr[:m])) <= rtol * max(other.peak, sch.peak):
                rep_of[run] = rep
                break
        else:
            reps.append(run)
            rep_of[run] = run
    short = {rep: rep.split("/")[-1] for rep in reps}
    counts = pd.Series(list(short.values())).value_counts()
    name = {rep: short[rep] if counts[short[rep]] == 1 else rep for rep in reps}
    return {run: name[rep] for run, rep in rep_of.items()}


def describe(df: pd.DataFrame) -> str:
    """A short human summary: runs, validation sets, sizes, loss rows."""
    info = {
        "runs": df["run"].nunique(),
        "val_sets": sorted(df["val_set"].unique()),
        "loss_rows": int(df["loss"].notna().sum()),
    }
    if "model_size" in df.columns:
        info["model_sizes"] = sorted(float(x) for x in df["model_size"].unique())
    return json.dumps(info)


def s1_end(schedule: Schedule, step: int) -> float:
    """S1 at ``step``: the sum of the learning rates of steps 1..step (raw units x steps)."""
    return float(schedule.lr[1 : int(step) + 1].sum())


def training_range(df: pd.DataFrame, schedules: dict[str, Schedule]) -> dict:
    """The range a fit sees in the validated table ``df`` (runs with at least one loss)."""
    fitted = df[df["loss"].notna()]
    runs = list(dict.fromkeys(fitted["run"]))
    peaks = [schedules[r].peak for r in runs]
    last = fitted.groupby("run")["step"].max()
    sizes = (
        sorted(float(s) for s in fitted["model_size"].dropna().unique())
        if "model_size" in fitted.columns
        else []
    )
    return {
        "lr_min": float(min(peaks)),
        "lr_max": float(max(peaks)),
        "max_steps": int(last.max()),
        "max_s1": max(s1_end(schedules[r], last[r]) for r in runs),
        "sizes": sizes,
    }
