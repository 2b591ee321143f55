"""Learning-rate schedules and the S1/S2 areas every loss-curve law is built on.

A schedule is the learning rate at every optimizer step, in raw units (e.g. ``3e-4``), never
normalised. It is stored as an array ``lr`` of length ``T + 1``: ``lr[0]`` is eta_0, the learning
rate *before* the first step (0 for a warmup from zero, the last PT learning rate for a CPT
segment), and ``lr[i]`` is eta_i, the learning rate used by optimizer step ``i`` (1 <= i <= T).

Areas, for every step s = 0..T (``S1[0] = S2[0] = 0``)::

    S1(s) = sum_{i=1..s} eta_i                                    forward area
    m_i   = lam * m_{i-1} + (eta_{i-1} - eta_i),  m_0 = 0           annealing momentum
    S2(s) = sum_{i=1..s} m_i                                       annealing area

Both are computed in O(T) (a cumulative sum and a first-order linear recurrence). References:
Tissue, Wang, Wang 2024 (arXiv 2408.11029) for S1, S2 and the annealing momentum; Luo et al. 2025
(arXiv 2503.12811) for the exact-warmup convention.

Warmup conventions (``warmup=``):

* ``"peak"`` (Tissue et al. 2024): S1 and S2 are computed *as if* the learning rate had been at its
  peak during the first ``warmup_steps`` steps.
* ``"exact"`` (Luo et al. 2025, multi-power law): S1 uses the true warmup learning rates (so it
  includes the warmup area ``~ eta_max * W / 2``); S2 ignores the warmup increments (the warmup is
  clamped to the peak for S2 only).
* ``"none"``: the learning rates are used as they are, increments included. A rise of the learning
  rate makes S2 negative; this is what a CPT re-warmup must do, so only the *initial* warmup of a
  run is ever clamped.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.signal import lfilter

WARMUP_CONVENTIONS = ("peak", "exact", "none")
DECAY_SHAPES = ("linear", "cosine", "exponential", "1-sqrt")


@dataclass(frozen=True)
class Schedule:
    """Per-step learning rates ``lr`` (length ``T + 1``, ``lr[0]`` = eta_0) and the warmup length.

    ``warmup_steps`` is the number of initial steps that are a warmup (0 if none); the area
    conventions use it. ``name`` is free text for plots and tables.
    """

    lr: np.ndarray
    warmup_steps: int = 0
    name: str = field(default="", compare=False)

    def __post_init__(self):
        lr = np.asarray(self.lr, dtype=float)
        if lr.ndim != 1 or lr.size < 2:
            raise ValueError(
                "a schedule needs eta_0 and at least one step (1-D array, length >= 2)"
            )
        if not np.all(np.isfinite(lr)) or np.any(lr < 0):
            bad = int(np.flatnonzero(~np.isfinite(lr) | (lr < 0))[0])
            raise ValueError(
                f"schedule {self.name!r}: learning rate {lr[bad]!r} at step {bad}; "
                "expected a finite, non-negative raw learning rate"
            )
        if not 0 <= self.warmup_steps <= lr.size - 1:
            raise ValueError(f"warmup_steps={self.warmup_steps} outside 0..{lr.size - 1}")
        object.__setattr__(self, "lr", lr)

    @property
    def total_steps(self) -> int:
        """T, the number of optimizer steps."""
        return self.lr.size - 1

    @property
    def peak(self) -> float:
        return float(self.lr.max())

    def areas(self, lam: float = 0.999, warmup: str = "peak") -> tuple[np.ndarray, np.ndarray]:
        """(S1, S2), each of length T + 1; see :func:`areas`."""
        return areas(self.lr, lam=lam, warmup_steps=self.warmup_steps, warmup=warmup)

    def then(self, segment: Schedule, name: str | None = None) -> Schedule:
        """This schedule followed by ``segment`` (e.g. PT then CPT).

        The segment's eta_0 is replaced by this schedule's last learning rate, so a CPT re-warmup
        shows as a rise of the learning rate (negative S2 increments) and the initial warmup of the
        combined schedule is this one's.
        """
        lr = np.concatenate([self.lr, segment.lr[1:]])
        return Schedule(
            lr,
            self.warmup_steps,
            name if name is not None else f"{self.name}+{segment.name}".strip("+"),
        )


def areas(lr, lam: float = 0.999, warmup_steps: int = 0, warmup: str = "peak"):
    """S1 and S2 at every step of a per-step learning-rate array, in O(T).

    Parameters
    ----------
    lr : array, shape (T + 1,)
        eta_0, eta_1, ..., eta_T in raw units.
    lam : float
        The annealing-momentum decay lambda (0 <= lam < 1); 0.999 in the seed papers.
    warmup_steps, warmup :
        Length of the initial warmup and the convention for it (module docstring).

    Returns
    -------
    S1, S2 : arrays, shape (T + 1,), with ``S1[0] = S2[0] = 0``.
    """
    lr = np.asarray(lr, dtype=float)
    if warmup not in WARMUP_CONVENTIONS:
        raise ValueError(f"warmup convention {warmup!r}; expected one of {WARMUP_CONVENTIONS}")
    if not 0.0 <= lam < 1.0:
        raise ValueError(f"lambda={lam}; expected 0 <= lambda < 1")
    clamped = lr
    if warmup != "none" and warmup_steps > 0:
        clamped = lr.copy()
        clamped[:warmup_steps] = lr[warmup_steps]
    s1_lr = lr if warmup == "exact" else clamped
    s1 = np.concatenate([[0.0], np.cumsum(s1_lr[1:])])
    decrements = clamped[:-1] - clamped[1:]
    momentum = lfilter([1.0], [1.0, -lam], decrements)
    s2 = np.concatenate([[0.0], np.cumsum(momentum)])
    return s1, s2


# ----------------------------------------------------------------------------------------------
# Builders. Each returns a Schedule of ``total_steps`` steps. ``warmup_steps`` adds a linear warmup
# from ``warmup_from`` (default 0) to ``peak`` that ends at step ``warmup_steps``; the shape after
# it runs over the remaining steps.
# ----------------------------------------------------------------------------------------------


def _check(total_steps: int, peak: float, warmup_steps: int):
    if int(total_steps) != total_steps or total_steps < 1:
        raise ValueError(f"total_steps={total_steps}; expected a positive integer")
    if not np.isfinite(peak) or peak <= 0:
        raise ValueError(f"peak learning rate {peak}; expected a positive raw learning rate")
    if warmup_steps < 0 or warmup_steps >= total_steps:
        raise ValueError(f"warmup_steps={warmup_steps}; expected 0 <= warmup_steps < total_steps")


def _with_warmup(body: np.ndarray, peak: float, warmup_steps: int, warmup_from: float, name: str):
    """Prefix eta_0 and the warmup to ``body`` (the learning rates after the warmup)."""
    if warmup_steps:
        ramp = warmup_from + (peak - warmup_from) * np.arange(1, warmup_steps + 1) / warmup_steps
        lr = np.concatenate([[warmup_from], ramp, body])
    else:
        lr = np.concatenate([[peak], body])
    return Schedule(lr, warmup_steps, name)


def decay_curve(progress, peak: float, final: float, shape: str = "linear"):
    """Learning rate at ``progress`` in [0, 1] of a decay from ``peak`` to ``final``."""
    p = np.clip(np.asarray(progress, dtype=float), 0.0, 1.0)
    if shape == "linear":
        return peak - (peak - final) * p
    if shape == "cosine":
        return final + (peak - final) * 0.5 * (1.0 + np.cos(np.pi * p))
    if shape == "1-sqrt":
        return peak - (peak - final) * np.sqrt(p)
    if shape == "exponential":
        if final <= 0:
            raise ValueError("an exponential decay needs a positive final learning rate")
        return peak * (final / peak) ** p
    raise ValueError(f"decay shape {shape!r}; expected one of {DECAY_SHAPES}")


def constant(
    total_steps: int,
    peak: float,
    warmup_steps: int = 0,
    warmup_from: float = 0.0,
    name: str = "constant",
) -> Schedule:
    _check(total_steps, peak, warmup_steps)
    return _with_warmup(
        np.full(total_steps - warmup_steps, float(peak)), peak, warmup_steps, warmup_from, name
    )


def cosine(
    total_steps: int,
    peak: float,
    final: float = 0.0,
    warmup_steps: int = 0,
    warmup_from: float = 0.0,
    name: str = "cosine",
) -> Schedule:
    """Cosine decay from ``peak`` (right after the warmup) to ``final`` at the last step."""
    _check(total_steps, peak, warmup_steps)
    n = total_steps - warmup_steps
    body = decay_curve(np.arange(1, n + 1) / n, peak, final, "cosine")
    return _with_warmup(body, peak, warmup_steps, warmup_from, name)


def wsd(
    total_steps: int,
    peak: float,
    decay_steps: int,
    final: float = 0.0,
    shape: str = "linear",
    warmup_steps: int = 0,
    warmup_from: float = 0.0,
    name: str | None = None,
) -> Schedule:
    """Warmup-stable-decay: constant at ``peak``, then the last ``decay_steps`` steps decay to
    ``final`` with ``shape`` in ``DECAY_SHAPES``."""
    _check(total_steps, peak, warmup_steps)
    n = total_steps - warmup_steps
    if not 1 <= decay_steps <= n:
        raise ValueError(f"decay_steps={decay_steps}; expected 1..{n} (the steps after warmup)")
    stable = np.full(n - decay_steps, float(peak))
    decay = decay_curve(np.arange(1, decay_steps + 1) / decay_steps, peak, final, shape)
    return _with_warmup(
        np.concatenate([stable, decay]), peak, warmup_steps, warmup_from, name or f"wsd-{shape}"
    )


def multistep(
    total_steps: int,
    peak: float,
    milestones,
    factors,
    warmup_steps: int = 0,
    warmup_from: float = 0.0,
    name: str = "multistep",
) -> Schedule:
    """Step decay: from step ``milestones[j]`` on (1-based, inclusive) the learning rate is
    ``peak * factors[j]``. Milestones must increase."""
    _check(total_steps, peak, warmup_steps)
    milestones = np.asarray(milestones, dtype=int)
    factors = np.asarray(factors, dtype=float)
    if milestones.shape != factors.shape or np.any(np.diff(milestones) <= 0):
        raise ValueError("milestones must increase and match factors one to one")
    steps = np.arange(warmup_steps + 1, total_steps + 1)
    idx = np.searchsorted(milestones, steps, side="right")
    body = peak * np.concatenate([[1.0], factors])[idx]
    return _with_warmup(body, peak, warmup_steps, warmup_from, name)


def cyclic(
    total_steps: int,
    peak: float,
    period: int,
    low: float,
    rewarmup_steps: int = 0,
    shape: str = "cosine",
    warmup_steps: int = 0,
    warmup_from: float = 0.0,
    name: str = "cyclic",
) -> Schedule:
    """Repeated decays from ``peak`` to ``low`` over ``period`` steps, each cycle after the first
    starting with a linear re-warmup of ``rewarmup_steps`` steps from ``low`` back to ``peak``."""
    _check(total_steps, peak, warmup_steps)
    if period < 1 or not 0 <= rewarmup_steps < period:
        raise ValueError("expected period >= 1 and 0 <= rewarmup_steps < period")
    k = np.arange(total_steps - warmup_steps)
    cycle, pos = k // period, k % period
    decay_len = np.where(cycle == 0, period, period - rewarmup_steps)
    in_rewarm = (cycle > 0) & (pos < rewarmup_steps)
    rewarm = low + (peak - low) * (pos + 1) / max(rewarmup_steps, 1)
    dpos = np.where(cycle == 0, pos + 1, pos - rewarmup_steps + 1)
    body = np.where(in_rewarm, rewarm, decay_curve(dpos / decay_len, peak, low, shape))
    return _with_warmup(body, peak, warmup_steps, warmup_from, name)


def rewarmup(
    total_steps: int,
    peak: float,
    warmup_steps: int,
    final: float = 0.0,
    shape: str = "cosine",
    decay_steps: int | None = None,
    start_lr: float | Schedule = 0.0,
    name: str | None = None,
) -> Schedule:
    """A CPT segment: linear re-warmup from ``start_lr`` to ``peak`` over ``warmup_steps`` steps,
    then ``shape`` (``constant``, ``cosine``, or a WSD decay shape over the last ``decay_steps``).

    Pass the PT schedule as ``start_lr`` to re-warm from its last learning rate, and attach the
    segment with ``pt.then(segment)``: the rise counts as negative S2 increments.
    """
    if warmup_steps < 1:
        raise ValueError("a re-warmup segment needs warmup_steps >= 1")
    start = float(start_lr.lr[-1]) if isinstance(start_lr, Schedule) else float(start_lr)
    if shape == "constant":
        seg = constant(total_steps, peak, warmup_steps, start)
    elif shape == "cosine" and decay_steps is None:
        seg = cosine(total_steps, peak, final, warmup_steps, start)
    else:
        seg = wsd(
            total_steps,
            peak,
            decay_steps or total_steps - warmup_steps,
            final,
            "cosine" if shape == "cosine" else shape,
            warmup_steps,
            start,
        )
    # The segment's own warmup is a rise from the previous schedule's LR, not an initial warmup.
    return Schedule(seg.lr, 0, name or f"cpt-{shape}")


def start_lr(lrs) -> float:
    """eta_0 of a schedule whose learning rates are given from a step after 0 on (``lrs``: the
    given ones, in step order): 0 when the learning rate rises from its first given value to the
    next (a warmup, taken to start from zero), else the first given value (held back to step 0).

    The one rule for where a schedule starts, used by tidy tables, every log importer and
    ``--schedule`` alike: a table that starts at step 1 (as torch's SummaryWriter and most trainers
    log) and one that starts at step 0 with ``lr = 0`` describe the same warmup.
    """
    lrs = np.asarray(lrs, dtype=float)
    return 0.0 if lrs.size > 1 and lrs[1] > lrs[0] else float(lrs[0])


def from_points(steps, lrs, name: str = "logged") -> Schedule:
    """A schedule from logged (step, lr) pairs, by linear interpolation onto every integer step.

    ``steps`` must be increasing whole numbers that start at 0 or 1; the ``lr`` on the row of step
    ``s`` is the learning rate used by optimizer step ``s``. When they start at step 1, eta_0
    follows :func:`start_lr` (0 when the learning rate rises from step 1 to the next given step, a
    warmup; else eta_1). The warmup is then detected as the initial rise of the learning rate up
    to its first maximum, so a table starting at step 1 and the same schedule starting at step 0
    with ``lr = 0`` give the same schedule, areas and predictions. (A table that starts later is
    refused by the table checks; the log importers, which read logs sampled every N steps, add
    the step-0 row by the same :func:`start_lr` rule and say so.)
    """
    steps = np.asarray(steps, dtype=float)
    lrs = np.asarray(lrs, dtype=float)
    if steps.ndim != 1 or steps.shape != lrs.shape or steps.size == 0:
        raise ValueError("steps and lrs must be 1-D arrays of the same, non-zero length")
    if np.any(np.diff(steps) <= 0):
        raise ValueError("steps must be strictly increasing")
    if steps[0] not in (0, 1):
        raise ValueError(
            f"the learning rate is given from step {steps[0]:g} on; give it from "
            "step 0 or 1 (e.g. step 0, lr 0 for a linear warmup from zero)"
        )
    if steps[0] == 1:
        steps = np.concatenate([[0.0], steps])
        lrs = np.concatenate([[start_lr(lrs)], lrs])
    grid = np.arange(0, int(steps[-1]) + 1)
    lr = np.interp(grid, steps, lrs)
    if lr.size < 2:
        raise ValueError("a schedule needs at least one optimizer step")
    return Schedule(lr, detect_warmup(lr), name)


def detect_warmup(lr) -> int:
    """Number of initial steps during which the learning rate rises to its first plateau/peak."""
    lr = np.asarray(lr, dtype=float)
    d = np.diff(lr)
    if d.size == 0 or d[0] <= 0:
        return 0
    stop = np.flatnonzero(d <= 0)
    return int(stop[0]) if stop.size else int(lr.size - 1)
