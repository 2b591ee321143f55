"""Read and validate a tidy loss-curve table (:mod:`bayescpt.curves.data.table` lists its columns).

:func:`read_curves` reads a CSV and :func:`validate_curves` checks it, the one place a loss-curve
table is validated: first each column is parsed cell by cell (run, step, lr, loss, model_size,
``_noise_scale``, the CPT columns), then the rows are checked together, per run
(:func:`~bayescpt.curves.data.checks.check_runs`) and per (run, validation set) curve
(:func:`~bayescpt.curves.data.checks.check_losses`). The generic cell parsers and error wording
are :mod:`bayescpt.core.tables`'. Each problem raises :class:`~bayescpt.core.tables.DataError`
with one line naming the file, the CSV line (header = line 1) where the table came from a file,
the run, column and step; values are printed as plain numbers.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from bayescpt.core.tables import (
    MAX_RAW_LR,
    MIN_MODEL_SIZE,
    DataError,
    parse_numeric,
    read_text_csv,
    refuse_first,
    shown,
    start_table,
    where,
)
from bayescpt.curves.data.checks import check_losses, check_runs
from bayescpt.curves.data.table import DEFAULT_VAL_SET, NOISE_SCALE, PHASES, VAL_ROLES

REQUIRED = ("run", "step", "lr", "loss")


#: steps at or above this are refused: a float holds every whole number only up to 2**53
MAX_STEP = 2**53


def read_curves(path, max_lr: float = MAX_RAW_LR, need_loss: bool = True) -> pd.DataFrame:
    """Read and validate a tidy loss-curve CSV (see the module docstring).

    ``need_loss=False`` accepts a schedule without losses (for prediction): the ``loss`` column may
    then be missing or empty.
    """
    path = Path(path)
    raw = read_text_csv(path)
    return validate_curves(raw, source=path, max_lr=max_lr, need_loss=need_loss, _from_text=True)


def validate_curves(
    df: pd.DataFrame,
    source="<DataFrame>",
    max_lr: float = MAX_RAW_LR,
    need_loss: bool = True,
    _from_text: bool = False,
) -> pd.DataFrame:
    """Check a loss-curve table and return a clean copy with proper dtypes, sorted by
    (run, val_set, step). The input is not modified.

    With a DataFrame (rather than a CSV) a NaN loss means "no loss logged at this step"; in a CSV
    only an empty cell means that, and a written ``nan``/``inf`` is an error.
    """
    df = df.rename(columns=lambda c: str(c).strip())
    if not need_loss and "loss" not in df.columns:
        df["loss"] = "" if _from_text else np.nan
    df, lines = start_table(df, source, REQUIRED, "val_set, model_size", _from_text)
    lines = pd.Series(lines)
    runs = df["run"].astype(str).str.strip()
    if (runs == "").any() or df["run"].isna().any():
        i = int(((runs == "") | df["run"].isna()).idxmax())
        raise DataError(f"{where(source, column='run', line=lines[i])}: empty run name")
    df["run"] = runs

    if "val_set" in df.columns:
        vs = df["val_set"].astype(str).str.strip()
        df["val_set"] = vs.where(
            (vs != "") & (vs.str.lower() != "nan") & df["val_set"].notna(), DEFAULT_VAL_SET
        )
    else:
        df["val_set"] = DEFAULT_VAL_SET

    _parse_step_lr(df, source, runs, lines)
    _parse_loss(df, source, runs, lines, _from_text)
    _parse_model_size(df, source, runs, lines)
    _parse_noise_scale(df, source, runs, lines, _from_text)

    _validate_cpt_columns(df, source, runs, lines)

    check_runs(df, source, lines, max_lr, need_loss)
    check_losses(df, source, lines)
    return df.sort_values(["run", "val_set", "step"], kind="stable").reset_index(drop=True)


def _parse_step_lr(df: pd.DataFrame, source, runs, lines) -> None:
    """Parse ``step`` (whole, >= 0, below 2**53) and ``lr`` (finite, >= 0) in place."""
    step = parse_numeric(df["step"], "step", source, runs, lines, allow_empty=False)
    bad = ~np.isfinite(step) | (step < 0) | (step != np.round(step)) | (step >= MAX_STEP)
    refuse_first(
        bad,
        df,
        "step",
        (source, runs, lines),
        False,
        "; expected a non-negative whole number of optimizer steps (below 2**53)",
    )
    df["step"] = step.astype(np.int64)

    lr = parse_numeric(df["lr"], "lr", source, runs, lines, allow_empty=False)
    bad = ~np.isfinite(lr) | (lr < 0)
    refuse_first(
        bad,
        df,
        "lr",
        (source, runs, lines),
        True,
        "; expected a finite, non-negative raw learning rate",
    )
    df["lr"] = lr


def _parse_loss(df: pd.DataFrame, source, runs, lines, from_text: bool) -> None:
    """Parse ``loss`` in place: empty (a CSV's empty cell, a DataFrame's NaN) or positive and
    finite, in nats."""
    if from_text:
        loss = parse_numeric(df["loss"], "loss", source, runs, lines, allow_empty=True)
        given = df["loss"].astype(str).str.strip() != ""
    else:
        loss = pd.to_numeric(df["loss"], errors="coerce").astype(float)
        notnum = loss.isna() & df["loss"].notna()
        if notnum.any():
            i = int(notnum.idxmax())
            raise DataError(
                f"{where(source, runs[i], 'loss', df['step'][i])}: value "
                f"{shown(df['loss'][i])} is not a number"
            )
        given = loss.notna()
    bad = given & (~np.isfinite(loss) | (loss <= 0))
    refuse_first(
        bad,
        df,
        "loss",
        (source, runs, lines),
        True,
        "; expected a positive, finite loss in nats "
        "(leave the cell empty on rows that only give the learning rate)",
    )
    df["loss"] = loss.where(given)


def _parse_model_size(df: pd.DataFrame, source, runs, lines) -> None:
    """Parse ``model_size`` where present (in place): a positive count of parameters."""
    if "model_size" in df.columns:
        ms = parse_numeric(df["model_size"], "model_size", source, runs, lines, allow_empty=False)
        bad = ~np.isfinite(ms) | (ms <= 0)
        refuse_first(
            bad,
            df,
            "model_size",
            (source, runs, lines),
            False,
            "; expected a positive parameter count",
        )
        small = ms < MIN_MODEL_SIZE
        refuse_first(
            small,
            df,
            "model_size",
            (source, runs, lines),
            False,
            " looks like millions or billions; "
            "expected the number of non-embedding parameters (e.g. 25e6)",
        )
        df["model_size"] = ms


def _parse_noise_scale(df: pd.DataFrame, source, runs, lines, from_text: bool) -> None:
    """Parse :data:`NOISE_SCALE` where present (in place): positive where a loss is given, empty
    means 1."""
    if NOISE_SCALE in df.columns:
        ns = (
            parse_numeric(df[NOISE_SCALE], NOISE_SCALE, source, runs, lines, allow_empty=True)
            if from_text
            else pd.to_numeric(df[NOISE_SCALE], errors="coerce").astype(float)
        )
        bad = df["loss"].notna() & (
            (ns.notna() & (~np.isfinite(ns) | (ns <= 0)))
            | (
                ns.isna()
                & df[NOISE_SCALE].notna()
                & (df[NOISE_SCALE].astype(str).str.strip() != "")
            )
        )
        refuse_first(
            bad,
            df,
            NOISE_SCALE,
            (source, runs, lines),
            True,
            "; expected a positive noise scale "
            "(a loss's noise sd relative to one logged loss; empty means 1)",
        )
        df[NOISE_SCALE] = ns.fillna(1.0)


def _validate_cpt_columns(df: pd.DataFrame, source, runs, lines) -> None:
    """Normalise and check ``phase``, ``val_role`` and ``replay_ratio`` where present (in place)."""

    def text(col):
        t = df[col].astype(str).str.strip().str.lower()
        return t.where(df[col].notna() & ~t.isin(["", "nan", "none"]), "")

    if "phase" in df.columns:
        ph = text("phase")
        bad = ~ph.isin(PHASES)
        refuse_first(
            bad, df, "phase", (source, runs, lines), True, "; expected 'pt' or 'cpt' on every row"
        )
        df["phase"] = ph
        for r, g in df.groupby("run", sort=False):
            pt_steps, cpt_steps = (
                g.loc[ph[g.index] == "pt", "step"],
                g.loc[ph[g.index] == "cpt", "step"],
            )
            if len(pt_steps) and len(cpt_steps) and cpt_steps.min() <= pt_steps.max():
                raise DataError(
                    f"{where(source, r, 'phase', int(cpt_steps.min()))}: a CPT row "
                    f"at or before the end of the run's PT (step {int(pt_steps.max())}); "
                    "steps count from the start of PT and the CPT segment follows it"
                )
    if "val_role" in df.columns:
        role = text("val_role")
        bad = ~role.isin(VAL_ROLES + ("",))
        refuse_first(
            bad,
            df,
            "val_role",
            (source, runs, lines),
            False,
            f"; expected one of {list(VAL_ROLES)}",
        )
        df["val_role"] = role
        for vs, g in df[role != ""].groupby("val_set"):
            if g["val_role"].nunique() > 1:
                raise DataError(
                    f"{where(source, column='val_role')}: validation set {vs!r} has "
                    f"several roles {sorted(g['val_role'].unique())}; give it one"
                )
        known = set(df.loc[role != "", "val_set"])
        lost = df["loss"].notna() & (role == "") & ~df["val_set"].isin(known)
        if lost.any():
            i = int(lost.idxmax())
            raise DataError(
                f"{where(source, runs[i], 'val_role', df['step'][i], lines[i])}: "
                f"a loss for validation set {df['val_set'][i]!r}, which has no role; "
                f"expected one of {list(VAL_ROLES)}"
            )
        role = role.mask(
            role == "",
            df["val_set"].map(df[role != ""].groupby("val_set")["val_role"].first()).fillna(""),
        )
        df["val_role"] = role
    if "replay_ratio" in df.columns:
        rr = parse_numeric(
            df["replay_ratio"], "replay_ratio", source, runs, lines, allow_empty=True
        )
        bad = rr.notna() & ((rr < 0) | (rr > 1))
        refuse_first(
            bad,
            df,
            "replay_ratio",
            (source, runs, lines),
            False,
            "; expected the share of PT data in the CPT mixture, between 0 and 1 (not percent)",
        )
        per_run = rr.groupby(runs).nunique()
        if (per_run > 1).any():
            r = per_run.index[per_run > 1][0]
            raise DataError(
                f"{where(source, r, 'replay_ratio')}: several values "
                f"{sorted(rr[runs == r].dropna().unique())}; a run has one replay ratio"
            )
        df["replay_ratio"] = rr.groupby(runs).transform("first")
