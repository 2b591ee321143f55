"""How much memory a plan grid's evaluation needs, estimated before anything is allocated, and
the refusal of a grid that would not fit (``bayescpt plan --steps 1000000000`` grew to 22.7 GB
and was killed by the kernel; now it is one line naming the estimate, the limit and the option to
reduce)."""

from __future__ import annotations

import os
import resource

import pandas as pd

from bayescpt.core import schedules as S
from bayescpt.core.tables import DataError

#: bytes per step of a plan's whole schedule while its design is built (the learning rates, the
#: areas S1 and S2 and their temporaries; measured with tracemalloc: 6 float64 arrays)
SCHEDULE_BYTES_PER_STEP = 6 * 8
#: float64 arrays of (draws, plans) alive at once: the five outcomes, and decide's quantiles
OUTCOME_ARRAYS = 8
#: float64 arrays of one evaluation chunk alive at once (the law's element-wise temporaries)
CHUNK_ARRAYS = 12


def memory_estimate(
    pt: S.Schedule,
    plans: pd.DataFrame,
    n_draws: int,
    points: int = 48,
    chunk_elements: int = 1_000_000,
) -> dict:
    """What evaluating ``plans`` from ``pt`` will hold in memory at most, in bytes, by part:
    ``schedule`` (the longest plan's whole schedule, built one plan at a time), ``designs``
    (every plan's design at ``points`` steps), ``outcomes`` (per draw and plan), ``chunk``
    (one evaluation chunk); ``total``; ``option``: the command-line option that reduces the
    largest part."""
    n_plans = len(plans)
    longest = int((plans["transfer"] + plans["steps"]).max()) + 1 if n_plans else 0
    parts = {
        "schedule": longest * SCHEDULE_BYTES_PER_STEP,
        "designs": n_plans * points * 8 * 16 * 2,  # ~8 features per role, two roles, stacked
        "outcomes": n_plans * int(n_draws) * 8 * OUTCOME_ARRAYS,
        # a chunk is a whole number of plans, at least one, at most all of them (evaluate's step)
        "chunk": (
            max(1, min(n_plans, chunk_elements // max(int(n_draws) * points, 1)))
            * int(n_draws)
            * points
            * 8
            * CHUNK_ARRAYS
        ),
    }
    worst = max(parts, key=parts.get)
    longest_cpt = int(plans["steps"].max()) if n_plans else 0
    option = {
        "schedule": "--steps" if longest_cpt >= longest / 2 else "--transfers",
        "designs": "--points or the number of plans",
        "outcomes": "the number of plans (fewer values in --transfers, --shapes, "
        "--peak-lrs, --steps, --decay-fracs, --replay-ratios)",
        "chunk": "--points",
    }[worst]
    return dict(
        parts,
        total=sum(parts.values()),
        largest=worst,
        option=option,
        longest_steps=longest - 1,
        plans=n_plans,
        draws=int(n_draws),
    )


def available_memory() -> int | None:
    """Bytes this process may still allocate: the memory the system has available (Linux's
    MemAvailable, else free pages), or the address-space limit (``ulimit -v``) when lower; None
    when unknown."""
    avail = None
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    avail = int(line.split()[1]) * 1024
                    break
    except OSError:
        pass
    if avail is None:
        try:
            avail = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            avail = None
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft not in (resource.RLIM_INFINITY, -1) and soft > 0:
        avail = soft if avail is None else min(avail, soft)
    return avail


def check_memory(
    fit,
    pt: S.Schedule,
    plans: pd.DataFrame,
    points: int = 48,
    chunk_elements: int = 1_000_000,
    limit: int | None = None,
) -> dict:
    """Refuse (DataError, one line: the estimate, the limit and the option to reduce) a plan
    grid whose evaluation would not fit in memory (:func:`memory_estimate` against ``limit``,
    default :func:`available_memory`), before anything is allocated. Returns the estimate."""
    post = fit.idata.posterior
    est = memory_estimate(
        pt, plans, post.sizes["chain"] * post.sizes["draw"], points, chunk_elements
    )
    limit = available_memory() if limit is None else limit
    if limit is not None and est["total"] > limit:
        what = {
            "schedule": f"the longest plan's schedule, {est['longest_steps']:,} steps",
            "designs": f"{est['plans']:,} plans x {points} points",
            "outcomes": f"{est['plans']:,} plans x {est['draws']:,} posterior draws",
            "chunk": f"{est['draws']:,} draws x {points} points",
        }[est["largest"]]
        raise DataError(
            f"the plan grid needs about {est['total'] / 1e9:.3g} GB of memory "
            f"(mostly {what}), more than the {limit / 1e9:.3g} GB available: "
            f"reduce {est['option']}"
        )
    return est
