"""The decision grid of CPT plans, and each plan's learning-rate schedule.

A plan row holds the decisions: ``transfer`` (the PT step of the checkpoint CPT starts from),
``shape`` (:data:`SHAPES`; ``linear``, ``1-sqrt`` and ``exponential`` are WSD decays),
``peak_lr`` (raw learning rate, e.g. 2e-4), ``warmup`` (re-warmup steps), ``decay_frac`` (the
share of the CPT steps the WSD decay takes, in (0, 1]; NaN for ``cosine`` and ``constant``),
``steps`` (CPT length in steps), ``final_frac`` (final LR / peak LR) and ``replay_ratio`` (share
of PT data in the CPT mixture, in [0, 1]). A plan's whole run is the PT schedule up to
``transfer``, then its CPT schedule re-warming from the PT learning rate there.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import pandas as pd

from bayescpt.core import schedules as S
from bayescpt.core.tables import DataError

SHAPES = ("cosine", "linear", "constant", "1-sqrt", "exponential")


def _check_plan(shape, peak, n, frac, r, warmup) -> None:
    """Refuse one combination of decisions (ValueError); ``peak`` None is not checked."""
    if shape not in SHAPES:
        raise ValueError(f"CPT schedule shape {shape!r}; expected one of {list(SHAPES)}")
    if peak is not None and not peak > 0:
        raise ValueError(
            f"peak learning rate {peak!r}; expected a positive number (raw LR, e.g. 2e-4)"
        )
    if peak is not None and peak > 1:
        raise ValueError(
            f"peak learning rate {peak!r} is above 1: give the raw learning rate "
            "(e.g. 2e-4), not a percentage or a multiple"
        )
    if int(n) <= warmup:
        raise ValueError(f"{n} CPT steps do not cover the {warmup}-step re-warmup")
    if not 0 <= r <= 1:
        raise ValueError(f"replay ratio {r!r}; expected a share of PT data in [0, 1]")
    if shape not in ("cosine", "constant") and not 0 < frac <= 1:
        raise ValueError(f"decay fraction {frac!r}; expected a share of the CPT steps in (0, 1]")


def plan_grid(
    transfers,
    shapes=("cosine",),
    peak_lrs=(2e-4,),
    steps=(4000,),
    decay_fracs=(0.2,),
    replay_ratios=(0.0,),
    warmup: int = 100,
    final_frac: float = 0.0,
) -> pd.DataFrame:
    """Every combination of the decisions, one row per plan (``decay_frac`` only matters for WSD
    shapes; ``cosine`` and ``constant`` plans are not repeated over it)."""
    rows = []
    for t, shape, peak, n, frac, r in itertools.product(
        transfers, shapes, peak_lrs, steps, decay_fracs, replay_ratios
    ):
        _check_plan(shape, peak, n, frac, r, warmup)
        if shape in ("cosine", "constant"):
            frac = np.nan
        rows.append(
            {
                "transfer": int(t),
                "shape": shape,
                "peak_lr": float(peak),
                "warmup": int(warmup),
                "decay_frac": frac,
                "steps": int(n),
                "final_frac": float(final_frac),
                "replay_ratio": float(r),
            }
        )
    return pd.DataFrame(rows).drop_duplicates(ignore_index=True)


@dataclass(frozen=True)
class PlanGrid:
    """The decisions to combine (:func:`plan_grid`'s): ``steps`` (CPT lengths), ``transfers``
    (PT steps; None: the end of the PT schedule), ``shapes``, ``peak_lrs`` (raw LR; None: taken
    from an hparams check's predicted optimum), ``decay_fracs``, ``replay_ratios``, ``warmup``
    (steps) and ``final_frac``. Every combination is checked on construction (ValueError)."""

    steps: tuple
    transfers: tuple | None = None
    shapes: tuple = ("cosine", "linear", "constant")
    peak_lrs: tuple | None = None
    decay_fracs: tuple = (0.2,)
    replay_ratios: tuple = (0.0,)
    warmup: int = 100
    final_frac: float = 0.0

    def __post_init__(self):
        for name in ("steps", "transfers", "shapes", "peak_lrs", "decay_fracs", "replay_ratios"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, tuple(getattr(self, name)))
        for shape, peak, n, frac, r in itertools.product(
            self.shapes, self.peak_lrs or (None,), self.steps, self.decay_fracs, self.replay_ratios
        ):
            _check_plan(shape, peak, n, frac, r, self.warmup)

    def table(self, pt_end: int) -> pd.DataFrame:
        """The plans, one row each; ``pt_end`` the transfer step when none are given."""
        return plan_grid(
            self.transfers or [pt_end],
            self.shapes,
            self.peak_lrs,
            self.steps,
            self.decay_fracs,
            self.replay_ratios,
            self.warmup,
            self.final_frac,
        )


def cpt_segment(plan, start_lr: float) -> S.Schedule:
    """The CPT schedule of one plan row, re-warming from ``start_lr``."""
    decay = (
        None
        if plan["shape"] in ("cosine", "constant")
        else max(1, int(round(plan["decay_frac"] * plan["steps"])))
    )
    return S.rewarmup(
        int(plan["steps"]),
        plan["peak_lr"],
        int(plan["warmup"]),
        final=plan["final_frac"] * plan["peak_lr"],
        shape=plan["shape"],
        decay_steps=decay,
        start_lr=start_lr,
    )


def plan_schedule(pt: S.Schedule, plan) -> S.Schedule:
    """The whole run of one plan row: ``pt`` up to the transfer step, then its CPT schedule."""
    t = int(plan["transfer"])
    if not 0 < t <= pt.total_steps:
        raise DataError(f"transfer step {t} is outside the PT schedule (1..{pt.total_steps})")
    head = S.Schedule(pt.lr[: t + 1], min(pt.warmup_steps, t), f"pt@{t}")
    return head.then(cpt_segment(plan, float(head.lr[-1])))
