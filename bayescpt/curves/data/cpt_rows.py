"""Continual pre-training (CPT) runs as rows of the CPT curve table.

:func:`cpt_rows` writes a PT schedule + a CPT segment as rows of the CPT data model
(:mod:`bayescpt.curves.data.table`: run, step, raw lr, loss in nats or empty, val_set, val_role,
phase ``pt``/``cpt``, optional model_size and replay_ratio), for simulations and for plans to
predict.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from bayescpt.core.schedules import Schedule


def cpt_rows(
    run: str,
    pt: Schedule | None,
    cpt: Schedule,
    val_roles: dict,
    loss_steps=None,
    losses: dict | None = None,
    model_size: float | None = None,
    replay_ratio: float | None = None,
    lr_every: int = 25,
) -> pd.DataFrame:
    """One run of PT ``pt`` (None: unknown PT history) then the CPT segment ``cpt``, as rows.

    ``cpt.lr[0]`` is replaced by the last PT learning rate (``pt.then``). ``val_roles`` maps each
    validation set to its role; ``losses`` (optional) maps a validation set to the losses at
    ``loss_steps`` (global steps, counted from the start of PT; none: a plan, with every
    validation set on the schedule's rows). The learning rate is written every
    ``lr_every`` steps and wherever it bends (warmup, decay start, transfer), so linear
    interpolation gives the schedule back exactly where it matters.
    """
    full = pt.then(cpt) if pt is not None else cpt
    t_pt = pt.total_steps if pt is not None else 0
    lr = full.lr
    steps = np.arange(lr.size)
    bend = np.zeros(lr.size, bool)
    bend[1:-1] = np.abs(lr[:-2] - 2 * lr[1:-1] + lr[2:]) > 1e-6 * max(lr.max(), 1e-30)
    keep = (
        (steps % lr_every == 0)
        | bend
        | (steps <= full.warmup_steps + 1)
        | (np.abs(steps - t_pt) <= 1)
        | (steps == steps[-1])
    )
    loss_steps = np.asarray([] if loss_steps is None else loss_steps, dtype=int)
    vsets = list(val_roles)
    frames = []
    for j, vs in enumerate(vsets):
        # without loss steps (a plan to predict) every set gets the schedule's rows
        at = np.union1d(steps[keep], loss_steps) if j == 0 or not loss_steps.size else loss_steps
        f = pd.DataFrame(
            {
                "run": run,
                "step": at,
                "lr": lr[at],
                "loss": np.nan,
                "val_set": vs,
                "val_role": val_roles[vs],
            }
        )
        if losses is not None and vs in losses:
            f.loc[np.isin(at, loss_steps), "loss"] = np.asarray(losses[vs], dtype=float)
        frames.append(f)
    out = pd.concat(frames, ignore_index=True)
    out["phase"] = np.where(out["step"] <= t_pt, "pt", "cpt") if t_pt > 0 else "cpt"
    if model_size is not None:
        out["model_size"] = float(model_size)
    if replay_ratio is not None:
        out["replay_ratio"] = float(replay_ratio)
    return out
