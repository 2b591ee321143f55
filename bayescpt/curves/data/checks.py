"""The row checks of a parsed loss-curve table: per run and per (run, validation set) curve.

:func:`check_runs` checks what the rows of one run must agree on (model size, learning rate per
step, where the steps start and their order); :func:`check_losses` judges each curve's losses
(impossible values are errors, isolated spikes are warned about). Both run after the cells were
parsed (:func:`bayescpt.curves.data.validate.validate_curves`) and raise
:class:`~bayescpt.core.tables.DataError` with one line naming the file, CSV line, run, column
and step.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from numpy.lib.stride_tricks import sliding_window_view

from bayescpt.core.tables import DataError, DataWarning, where

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
    for _, g in df[loss.notna()].groupby(["run", "val_set"], sort=False):
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
    if "model_size" in df.columns:
        for r, g in df.groupby("run", sort=False):
            _check_one_size(g, r, source, lines)
    for r, g in df.groupby("run", sort=False):
        _check_peak_lr(g, r, source, lines, max_lr)
        if need_loss and g["loss"].notna().sum() == 0:
            raise DataError(
                f"{where(source, r, 'loss', line=_line_of(lines, g.index))}: the run has no "
                "loss values"
            )
        _check_lr_per_step(g, r, source, lines)
        _check_step_range(g, r, source, lines)
        for vs, h in g.groupby("val_set", sort=False):
            _check_step_order(h, r, vs, source, lines)


def _line_of(lines: pd.Series, rows) -> int | None:
    """The CSV line of the first of ``rows`` (None without rows)."""
    return lines[rows[0]] if len(rows) else None


def _check_one_size(g: pd.DataFrame, r, source, lines: pd.Series) -> None:
    """Run ``r`` (rows ``g``) has one ``model_size``."""
    if g["model_size"].nunique() > 1:
        other = g.index[g["model_size"] != g["model_size"].iloc[0]]
        raise DataError(
            f"{where(source, r, 'model_size', line=_line_of(lines, other))}: several "
            f"values {plain(sorted(g['model_size'].unique()))}; a run has one "
            "model size"
        )


def _check_peak_lr(g: pd.DataFrame, r, source, lines: pd.Series, max_lr: float) -> None:
    """Run ``r``'s peak learning rate is positive and at most ``max_lr``."""
    peak = g["lr"].max()
    if peak > max_lr:
        at = g.index[g["lr"] > max_lr]
        raise DataError(
            f"{where(source, r, 'lr', line=_line_of(lines, at))}: peak learning rate "
            f"{peak:g} looks like the wrong unit; expected raw learning rates "
            f"(e.g. 3e-4, at most {max_lr:g}), not percent or normalised to the "
            "peak"
        )
    if peak <= 0:
        raise DataError(
            f"{where(source, r, 'lr', line=_line_of(lines, g.index))}: the learning rate "
            "is 0 on every row of the run; a training run needs a schedule with a "
            "positive learning rate"
        )


def _check_lr_per_step(g: pd.DataFrame, r, source, lines: pd.Series) -> None:
    """Run ``r`` has one learning rate per step, whatever the validation set."""
    lr_per_step = g.groupby("step")["lr"].agg(["min", "max"])
    clash = lr_per_step["max"] - lr_per_step["min"] > 1e-12 * lr_per_step["max"].clip(1e-30)
    if clash.any():
        s = int(lr_per_step.index[clash][0])
        at = g.index[g["step"] == s]
        other = at[g.loc[at, "lr"] != g.loc[at[0], "lr"]]
        raise DataError(
            f"{where(source, r, 'lr', s, _line_of(lines, other))}: different learning "
            f"rates {plain(sorted(g.loc[at, 'lr'].unique()))} for the same step"
        )


def _check_step_range(g: pd.DataFrame, r, source, lines: pd.Series) -> None:
    """Run ``r``'s learning rate is given from step 0 or 1, and beyond step 0."""
    first, last = int(g["step"].min()), int(g["step"].max())
    if first > 1:
        raise DataError(
            f"{where(source, r, 'lr', first, _line_of(lines, g.index))}: the learning "
            f"rate is given from step {first} on; add rows from step 0 or 1 (e.g. "
            "step=0, lr=0 with an empty loss for a linear warmup from zero)"
        )
    if last == 0:
        raise DataError(
            f"{where(source, r, 'step', 0, _line_of(lines, g.index))}: the run has rows "
            "at step 0 only; a loss curve needs its steps after 0 (the rows "
            "of every optimizer step logged, with their learning rate)"
        )


def _check_step_order(h: pd.DataFrame, r, vs, source, lines: pd.Series) -> None:
    """The steps of run ``r`` on validation set ``vs`` (rows ``h``) strictly increase."""
    steps = h["step"].to_numpy()
    d = np.diff(steps)
    if np.any(d == 0):
        j = int(np.flatnonzero(d == 0)[0])
        at = where(source, r, "step", int(steps[j + 1]), lines[h.index[j + 1]])
        raise DataError(
            f"{at}: duplicated step (val_set {vs!r}); each step appears once per run and val_set"
        )
    if np.any(d < 0):
        j = int(np.flatnonzero(d < 0)[0])
        at = where(source, r, "step", int(steps[j + 1]), lines[h.index[j + 1]])
        raise DataError(
            f"{at}: comes after step {int(steps[j])} (val_set {vs!r}); steps must "
            "increase within a run - sort the rows by run and step"
        )
