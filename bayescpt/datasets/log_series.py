"""One run's logged scalars -> its loss and learning-rate series for :mod:`bayescpt.datasets.logs`:
the values of each tag by step (a step logged twice keeps its later value), the loss tags and
the LR tag picked by the format's defaults (:data:`LOSS_TAGS`, :data:`LR_TAGS`) or as asked,
non-finite values dropped and values that are no number refused, and the logged LR at every loss
step (linear between logged steps). Problems raise :class:`~bayescpt.core.tables.DataError`
naming the file; what is dropped or assumed warns with :class:`LogWarning`.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from bayescpt.core.schedules import start_lr
from bayescpt.core.tables import DataError
from bayescpt.datasets.log_readers import LogWarning

LOSS_TAGS = {
    "tensorboard": ("eval/loss", "val_loss", "val/loss", "loss", "train/loss"),
    "hf-trainer": ("eval_loss", "loss"),
    "wandb-csv": ("eval/loss", "val_loss", "val/loss", "loss", "train/loss"),
    "lightning-csv": ("val_loss", "val/loss", "loss", "train_loss"),
    "csv": ("loss@*",),
}
LR_TAGS = {
    "tensorboard": ("train/learning_rate", "learning_rate", "lr", "lr-*"),
    "hf-trainer": ("learning_rate",),
    "wandb-csv": ("train/learning_rate", "learning_rate", "lr", "lr-*"),
    "lightning-csv": ("lr-*", "lr", "learning_rate"),
    "csv": ("lr",),
}


def scalars(long: pd.DataFrame, source: str) -> dict[str, pd.Series]:
    """tag -> values indexed by step (sorted, unique); a step logged twice keeps its later value
    and warns once naming ``source`` and the steps."""
    out, twice = {}, set()
    for tag, g in long.groupby("tag", sort=False):
        steps = pd.to_numeric(g["step"], errors="coerce")
        g = g[steps.notna()].assign(step=steps[steps.notna()].astype(np.int64))
        dup = g["step"].duplicated(keep="last")
        twice |= set(g.loc[dup, "step"].tolist())
        s = g[~dup].set_index("step")["value"].astype(float).sort_index()
        out[str(tag)] = s
    if twice:
        st = sorted(twice)
        shown = ", ".join(map(str, st[:8])) + (f", ... ({len(st)} steps)" if len(st) > 8 else "")
        warnings.warn(
            f"{source}: step(s) {shown} logged more than once (a restart); kept the later values",
            LogWarning,
            stacklevel=3,
        )
    return out


def _finite(s: pd.Series, tag: str, source: str) -> pd.Series:
    bad = ~np.isfinite(s.to_numpy())
    if bad.any():
        steps = ", ".join(map(str, s.index[bad][:5])) + (" ..." if bad.sum() > 5 else "")
        warnings.warn(
            f"{source}: {int(bad.sum())} non-finite value(s) of {tag!r} dropped (step(s) {steps})",
            LogWarning,
            stacklevel=4,
        )
    return s[~bad]


def _pick(tags: dict, wanted, defaults, what: str, source: str):
    cands = [wanted] if wanted else list(defaults)
    for c in cands:
        if c.endswith("*"):  # e.g. lr-* : LearningRateMonitor's lr-AdamW[/pg1], not momentum
            hits = [
                t
                for t in tags
                if t.startswith(c[:-1]) and "momentum" not in t and "weight_decay" not in t
            ]
        else:
            hits = [t for t in tags if t == c]
        if hits:
            return sorted(hits)[0]
    if wanted is None and what == "lr":
        return None
    listed = ", ".join(sorted(tags)) or "none"
    raise DataError(f"{source}: no {what} tag {' or '.join(cands)}; tags: {listed}")


def _lr_rows(lr: pd.Series, steps: np.ndarray) -> pd.Series:
    """The logged LR plus its linear interpolation at ``steps`` (and step 0 when missing)."""
    lr = lr[lr.index >= 0]
    if lr.index.min() > 1:
        lr = pd.concat([pd.Series([start_lr(lr.to_numpy())], index=[0]), lr])
    extra = np.setdiff1d(steps, lr.index.to_numpy())
    at = np.interp(extra, lr.index.to_numpy(), lr.to_numpy())
    return pd.concat([lr, pd.Series(at, index=extra)]).sort_index()


def run_losses(
    tags: dict, not_numbers: dict, fmt: str, loss_tag: str | None, val_set: str, source: str
) -> tuple[list, dict]:
    """The loss tags of one run and their finite values: ([(tag, val_set)], {val_set: values
    by step}); for ``csv`` without ``loss_tag`` every ``loss@VAL_SET`` tag."""
    if fmt == "csv" and loss_tag is None:  # every validation set of the file
        pairs = [(t, t[5:]) for t in sorted(tags) if t.startswith("loss@")]
        if not pairs:
            raise DataError(f"{source}: no loss values")
    else:
        t = _pick(tags, loss_tag, LOSS_TAGS[fmt], "loss", source)
        pairs = [(t, t[5:] if fmt == "csv" and t.startswith("loss@") else val_set)]
    _numbers_only([t for t, _ in pairs], not_numbers)
    losses = {vs: _finite(tags[t], t, source) for t, vs in pairs}
    if any(v.empty for v in losses.values()):
        raise DataError(f"{source}: tag(s) {', '.join(t for t, _ in pairs)}: no finite values")
    return pairs, losses


def logged_lr(
    tags: dict, not_numbers: dict, fmt_tag: tuple, steps: np.ndarray, name: str, source: str
) -> tuple[pd.Series, str]:
    """The learning rate of one run from its LR tag (``fmt_tag``: the format and the tag asked
    for, None: the format's default), at its logged steps and the loss ``steps``; returns (lr
    by step, the tag). Warns when the LR log ends before the losses."""
    fmt, lr_tag = fmt_tag
    ltr = _pick(tags, lr_tag, LR_TAGS[fmt], "lr", source)
    if ltr is None:
        raise DataError(
            f"{source}: no learning-rate tag ({', '.join(LR_TAGS[fmt])}); "
            f"give --lr-tag or --schedule; tags: {', '.join(sorted(tags))}"
        )
    _numbers_only([ltr], not_numbers)
    lr_log = _finite(tags[ltr], ltr, source)
    if lr_log.empty:
        raise DataError(f"{source}: tag {ltr!r} has no finite values")
    if lr_log.index.max() < steps.max():
        warnings.warn(
            f"{source}: run {name!r}: the learning-rate log {ltr!r} ends at step "
            f"{int(lr_log.index.max())}, the losses at step {int(steps.max())}; "
            f"the LR after step {int(lr_log.index.max())} is taken as constant "
            f"({float(lr_log.iloc[-1]):g}); give --schedule if it changed",
            LogWarning,
            stacklevel=3,
        )
    return _lr_rows(lr_log, steps), ltr


def _numbers_only(used: list, not_numbers: dict) -> None:
    """Refuse a tag that is used (loss or LR) and was logged with a value that is no number."""
    for t in used:
        if t in not_numbers:
            raise DataError(not_numbers[t])
