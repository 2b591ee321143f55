"""A run in progress: its losses logged so far, read and checked (:func:`read_observed`) and put
into its planned schedule (:func:`merge_observed`), for prefix forecasts and the live watch."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from bayescpt.core.tables import DataError, read_text_csv, shown, where
from bayescpt.curves.data.table import DEFAULT_VAL_SET, schedules_of
from bayescpt.curves.data.validate import validate_curves


def read_observed(path) -> pd.DataFrame:
    """A run's losses logged so far from the CSV ``path``: columns ``run, step, loss`` and
    optionally ``val_set`` (others, e.g. ``lr``, are ignored: the planned schedule gives the LR);
    rows with an empty loss are dropped. A missing column, an empty file, a step that is not a
    non-negative integer, a loss that is not a positive number or a step given twice for a run
    (and validation set) is a DataError naming the file, line, run, column and value."""
    path = Path(path)
    df = read_text_csv(path)
    lines = df.attrs.get("lines") or list(range(2, len(df) + 2))
    missing = [c for c in ("run", "step", "loss") if c not in df.columns]
    if missing:
        raise DataError(
            f"{path}: no column(s) {', '.join(missing)}; expected run, step, loss "
            f"[, val_set] (it has {', '.join(map(str, df.columns))})"
        )
    df["run"] = df["run"].str.strip()
    for col, ok, what in (
        ("step", lambda v: v.notna() & (v >= 0) & (v % 1 == 0), "a non-negative integer step"),
        ("loss", lambda v: v.isna() | ((v > 0) & np.isfinite(v)), "a positive loss (nats)"),
    ):
        text = df[col].str.strip()
        v = pd.to_numeric(text.where(text != ""), errors="coerce")
        bad = ~ok(v) | (v.isna() & (text != ""))
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            raise DataError(
                f"{where(path, df['run'].iloc[i], col, line=lines[i])}: value "
                f"{shown(df[col].iloc[i])}; expected {what}"
            )
        df[col] = v
    if "val_set" in df.columns:
        vs = df["val_set"].str.strip()
        df["val_set"] = vs.where(vs != "", DEFAULT_VAL_SET)
    cols = ["run", "step", "loss"] + (["val_set"] if "val_set" in df.columns else [])
    out = df.loc[df["loss"].notna(), cols].copy()
    out["step"] = out["step"].astype(np.int64)
    twice = out.duplicated(["run", "step"] + cols[3:], keep=False)
    if twice.any():
        i, j = np.flatnonzero(twice.to_numpy())[:2]
        r, st = out["run"].iloc[i], int(out["step"].iloc[i])
        raise DataError(
            f"{where(path, r, 'step', st, line=lines[out.index[j]])}: a loss is "
            f"given twice for this step (lines {lines[out.index[i]]} and "
            f"{lines[out.index[j]]}); give each step of a run once"
        )
    return out


def merge_observed(schedule: pd.DataFrame, observed: pd.DataFrame) -> pd.DataFrame:
    """The validated ``schedule`` (each run's planned rows to its last step) with the losses of
    ``observed`` (rows ``run, step, loss [, val_set]``; NaN: a step to predict only) put in at
    their steps, the planned LR there (the schedule's, interpolated linearly between its rows).
    A run or validation set that the schedule does not plan, or a step past its last, is a
    DataError naming it."""
    sched = schedule.copy()
    sched["loss"] = np.nan
    runs = schedules_of(sched)
    obs = observed.copy()
    if "val_set" not in obs.columns:
        obs["val_set"] = DEFAULT_VAL_SET
    rows = []
    for (run, vs), g in obs.groupby(["run", "val_set"], sort=False):
        proto = sched[(sched["run"] == run) & (sched["val_set"] == vs)].iloc[:1]
        if proto.empty:
            raise DataError(
                f"observed losses of run {run!r}, validation set {vs!r}: the "
                f"schedule does not plan it (it plans {sorted(set(sched['run']))})"
            )
        steps = g["step"].to_numpy(dtype=np.int64)
        if steps.max() > runs[run].total_steps:
            raise DataError(
                f"run {run!r}: an observed loss at step {int(steps.max())}, past the "
                f"planned schedule's last step {runs[run].total_steps}"
            )
        add = pd.DataFrame({c: proto[c].iloc[0] for c in proto.columns}, index=g.index)
        add["step"], add["lr"] = steps, runs[run].lr[steps]
        if "phase" in sched.columns:  # a CPT run: pt up to its transfer, cpt after
            pt = sched.loc[(sched["run"] == run) & (sched["phase"] == "pt"), "step"]
            add["phase"] = np.where(steps <= (pt.max() if len(pt) else -1), "pt", "cpt")
        add["loss"] = g["loss"].to_numpy(dtype=float)
        rows.append(add)
    table = pd.concat([sched] + rows, ignore_index=True)
    table = table.drop_duplicates(["run", "val_set", "step"], keep="last")  # a loss replaces
    table = table.sort_values(["run", "val_set", "step"], kind="stable", ignore_index=True)
    return validate_curves(table, need_loss=False)
