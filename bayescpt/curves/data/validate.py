"""Read and validate a tidy loss-curve table (:mod:`bayescpt.curves.data.table` lists its columns).

:func:`read_curves` reads a CSV and :func:`validate_curves` checks it, the one place a loss-curve
table is validated: first each column is parsed cell by cell (run, step, lr, loss, model_size,
``_noise_scale``, the CPT columns), then the rows are checked together, per run
(:func:`check_runs`) and per (run, validation set) curve (:func:`check_losses`). The generic cell
parsers and error wording are :mod:`bayescpt.core.tables`'. Each problem raises
:class:`~bayescpt.core.tables.DataError` with one line naming the file, the CSV line (header =
line 1) where the table came from a file, the run, column and step; values are printed as plain
numbers.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from numpy.lib.stride_tricks import sliding_window_view

from bayescpt.core.tables import (
    MAX_RAW_LR,
    MIN_MODEL_SIZE,
    DataError,
    DataWarning,
    parse_numeric,
    read_text_csv,
    shown,
    start_table,
    where,
)
from bayescpt.curves.data.table import DEFAULT_VAL_SET, NOISE_SCALE, PHASES, VAL_ROLES

REQUIRED = ("run", "step", "lr", "loss")


#: steps at or above this are refused: a float holds every whole number only up to 2**53
MAX_STEP = 2**53

#: a loss above this many nats is impossible for a language model (ln of a 10^8-token
#: vocabulary is 18.4): a unit mistake (x100, perplexity) or a corrupt value
MAX_LOSS = 20.0
#: an outlier is this many robust standard deviations (1.4826 MAD) of the curve's log-loss
#: residuals away from the running median of its neighbours ...
OUTLIER_MADS = 8.0
#: ... and at least this many nats from it
OUTLIER_NATS = 0.5
#: losses in the centred running median (the point and 4 neighbours on each side)
WINDOW = 9


def plain(values) -> str:
    """Numbers as plain text: ``[2.5e+07, 2.6e+07]``, never ``np.float64(...)``."""
    return "[" + ", ".join(f"{float(v):g}" for v in values) + "]"


def running_median(y: np.ndarray, half: int) -> np.ndarray:
    """Centred running median of ``y`` over ``2 * half + 1`` values; near the ends the window
    shrinks symmetrically (so the first and last values are their own median)."""
    n, med = len(y), np.array(y, dtype=float)
    if n > 2 * half:
        med[half : n - half] = np.median(sliding_window_view(y, 2 * half + 1), axis=1)
    for j in [*range(min(half, n)), *range(max(n - half, half), n)]:
        h = min(j, n - 1 - j, half)
        med[j] = np.median(y[j - h : j + h + 1])
    return med


def check_losses(df: pd.DataFrame, source, lines: pd.Series) -> None:
    """Loss plausibility, per (run, val_set) curve in step order.

    A loss above :data:`MAX_LOSS` nats is an error. A loss whose log is more than
    :data:`OUTLIER_MADS` robust standard deviations (1.4826 x the median absolute deviation of
    the curve's residuals) from the centred running median of :data:`WINDOW` losses, and more
    than :data:`OUTLIER_NATS` nats from it, is warned about (:class:`DataWarning`, one per
    table, naming the first and counting the others). A running median follows steps and ramps
    (a CPT transfer, a fast warmup), so only isolated spikes stand out; the first and last loss
    of a curve are not judged.
    """
    loss = df["loss"]
    high = loss > MAX_LOSS
    if high.any():
        i = int(high.idxmax())
        raise DataError(
            f"{where(source, df['run'][i], 'loss', int(df['step'][i]), lines[i])}: "
            f"value {loss[i]:g} nats is not a language-model loss (at most "
            f"{MAX_LOSS:g}); expected the loss in nats, not x100 or a perplexity"
        )
    found = []
    for (r, vs), g in df[loss.notna()].groupby(["run", "val_set"], sort=False):
        if len(g) < 5:
            continue
        y = np.log(g["loss"].to_numpy())
        med = running_median(y, WINDOW // 2)
        res = y - med
        scale = 1.4826 * np.median(np.abs(res - np.median(res)))
        nats = np.abs(g["loss"].to_numpy() - np.exp(med))
        bad = (np.abs(res) > OUTLIER_MADS * scale) & (nats > OUTLIER_NATS)
        found += [(g.index[j], float(np.exp(med[j]))) for j in np.flatnonzero(bad)]
    if found:
        i, m = found[0]
        more = f" ({len(found) - 1} more such loss(es) in the table)" if len(found) > 1 else ""
        warnings.warn(
            f"{where(source, df['run'][i], 'loss', int(df['step'][i]), lines[i])}: "
            f"value {loss[i]:g} is far from its neighbours (running median {m:.4g}); "
            f"check the log{more}",
            DataWarning,
            stacklevel=3,
        )


def check_runs(df: pd.DataFrame, source, lines: pd.Series, max_lr: float, need_loss: bool) -> None:
    """Run-level checks of a parsed table (``df`` indexed 0..n-1 like ``lines``).

    * one ``model_size`` per run;
    * the peak learning rate is positive (an all-zero schedule trains nothing) and at most
      ``max_lr`` (a larger one is a unit mistake);
    * with ``need_loss``, every run has a loss;
    * one learning rate per (run, step), whatever the validation set;
    * the learning rate is given from step 0 or 1, and beyond step 0;
    * steps strictly increase within each (run, val_set), in file order.
    """

    def line_of(rows) -> int | None:
        return lines[rows[0]] if len(rows) else None

    if "model_size" in df.columns:
        for r, g in df.groupby("run", sort=False):
            if g["model_size"].nunique() > 1:
                other = g.index[g["model_size"] != g["model_size"].iloc[0]]
                raise DataError(
                    f"{where(source, r, 'model_size', line=line_of(other))}: several "
                    f"values {plain(sorted(g['model_size'].unique()))}; a run has one "
                    "model size"
                )
    for r, g in df.groupby("run", sort=False):
        peak = g["lr"].max()
        if peak > max_lr:
            at = g.index[g["lr"] > max_lr]
            raise DataError(
                f"{where(source, r, 'lr', line=line_of(at))}: peak learning rate "
                f"{peak:g} looks like the wrong unit; expected raw learning rates "
                f"(e.g. 3e-4, at most {max_lr:g}), not percent or normalised to the "
                "peak"
            )
        if peak <= 0:
            raise DataError(
                f"{where(source, r, 'lr', line=line_of(g.index))}: the learning rate "
                "is 0 on every row of the run; a training run needs a schedule with a "
                "positive learning rate"
            )
        if need_loss and g["loss"].notna().sum() == 0:
            raise DataError(
                f"{where(source, r, 'loss', line=line_of(g.index))}: the run has no loss values"
            )
        lr_per_step = g.groupby("step")["lr"].agg(["min", "max"])
        clash = lr_per_step["max"] - lr_per_step["min"] > 1e-12 * lr_per_step["max"].clip(1e-30)
        if clash.any():
            s = int(lr_per_step.index[clash][0])
            at = g.index[g["step"] == s]
            other = at[g.loc[at, "lr"] != g.loc[at[0], "lr"]]
            raise DataError(
                f"{where(source, r, 'lr', s, line_of(other))}: different learning "
                f"rates {plain(sorted(g.loc[at, 'lr'].unique()))} for the same step"
            )
        first, last = int(g["step"].min()), int(g["step"].max())
        if first > 1:
            raise DataError(
                f"{where(source, r, 'lr', first, line_of(g.index))}: the learning "
                f"rate is given from step {first} on; add rows from step 0 or 1 (e.g. "
                "step=0, lr=0 with an empty loss for a linear warmup from zero)"
            )
        if last == 0:
            raise DataError(
                f"{where(source, r, 'step', 0, line_of(g.index))}: the run has rows "
                "at step 0 only; a loss curve needs its steps after 0 (the rows "
                "of every optimizer step logged, with their learning rate)"
            )
        for vs, h in g.groupby("val_set", sort=False):
            steps = h["step"].to_numpy()
            d = np.diff(steps)
            if np.any(d == 0):
                j = int(np.flatnonzero(d == 0)[0])
                at = where(source, r, "step", int(steps[j + 1]), lines[h.index[j + 1]])
                raise DataError(
                    f"{at}: duplicated step (val_set {vs!r}); each step appears once per "
                    "run and val_set"
                )
            if np.any(d < 0):
                j = int(np.flatnonzero(d < 0)[0])
                at = where(source, r, "step", int(steps[j + 1]), lines[h.index[j + 1]])
                raise DataError(
                    f"{at}: comes after step {int(steps[j])} (val_set {vs!r}); steps must "
                    "increase within a run - sort the rows by run and step"
                )


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
    if bad.any():
        i = int(bad.idxmax())
        raise DataError(
            f"{where(source, runs[i], 'step', line=lines[i])}: value "
            f"{shown(df['step'][i])}"
            "; expected a non-negative whole number of optimizer steps (below 2**53)"
        )
    df["step"] = step.astype(np.int64)

    lr = parse_numeric(df["lr"], "lr", source, runs, lines, allow_empty=False)
    bad = ~np.isfinite(lr) | (lr < 0)
    if bad.any():
        i = int(bad.idxmax())
        raise DataError(
            f"{where(source, runs[i], 'lr', df['step'][i], lines[i])}: value "
            f"{shown(df['lr'][i])}; expected a finite, non-negative raw learning rate"
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
    if bad.any():
        i = int(bad.idxmax())
        raise DataError(
            f"{where(source, runs[i], 'loss', df['step'][i], lines[i])}: value "
            f"{shown(df['loss'][i])}; expected a positive, finite loss in nats "
            "(leave the cell empty on rows that only give the learning rate)"
        )
    df["loss"] = loss.where(given)


def _parse_model_size(df: pd.DataFrame, source, runs, lines) -> None:
    """Parse ``model_size`` where present (in place): a positive count of parameters."""
    if "model_size" in df.columns:
        ms = parse_numeric(df["model_size"], "model_size", source, runs, lines, allow_empty=False)
        bad = ~np.isfinite(ms) | (ms <= 0)
        if bad.any():
            i = int(bad.idxmax())
            raise DataError(
                f"{where(source, runs[i], 'model_size', line=lines[i])}: value "
                f"{shown(df['model_size'][i])}; expected a positive parameter count"
            )
        small = ms < MIN_MODEL_SIZE
        if small.any():
            i = int(small.idxmax())
            raise DataError(
                f"{where(source, runs[i], 'model_size', line=lines[i])}: value "
                f"{shown(df['model_size'][i])} looks like millions or billions; "
                "expected the number of non-embedding parameters (e.g. 25e6)"
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
        if bad.any():
            i = int(bad.idxmax())
            raise DataError(
                f"{where(source, runs[i], NOISE_SCALE, df['step'][i], lines[i])}: "
                f"value {shown(df[NOISE_SCALE][i])}; expected a positive noise scale "
                "(a loss's noise sd relative to one logged loss; empty means 1)"
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
        if bad.any():
            i = int(bad.idxmax())
            raise DataError(
                f"{where(source, runs[i], 'phase', df['step'][i], lines[i])}: value "
                f"{shown(df['phase'][i])}; expected 'pt' or 'cpt' on every row"
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
        if bad.any():
            i = int(bad.idxmax())
            raise DataError(
                f"{where(source, runs[i], 'val_role', line=lines[i])}: value "
                f"{shown(df['val_role'][i])}; expected one of {list(VAL_ROLES)}"
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
        if bad.any():
            i = int(bad.idxmax())
            raise DataError(
                f"{where(source, runs[i], 'replay_ratio', line=lines[i])}: value "
                f"{shown(df['replay_ratio'][i])}; expected the share of PT data in "
                "the CPT mixture, between 0 and 1 (not percent)"
            )
        per_run = rr.groupby(runs).nunique()
        if (per_run > 1).any():
            r = per_run.index[per_run > 1][0]
            raise DataError(
                f"{where(source, r, 'replay_ratio')}: several values "
                f"{sorted(rr[runs == r].dropna().unique())}; a run has one replay ratio"
            )
        df["replay_ratio"] = rr.groupby(runs).transform("first")
