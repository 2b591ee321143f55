"""The runs of a lab config: its ``[[cpt.grid]]`` blocks (CPT runs: size x transfer step x
schedule x steps x replay ratio) and ``[[pt.grid]]`` blocks (PT-only runs: size x schedule x
steps), each combination once, in the blocks' order; every problem one ``ValueError`` line.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from bayescpt.lab.config_values import names, table


@dataclass(frozen=True)
class CptRun:
    """One CPT run: model size, PT transfer step, CPT schedule name, CPT steps, replay ratio."""

    size: str
    transfer: int
    schedule: str
    steps: int
    replay: float

    @property
    def name(self) -> str:
        return f"{self.size}/pt{self.transfer}/{self.schedule}-{self.steps}/r{self.replay:g}"


@dataclass(frozen=True)
class PtRun:
    """One pre-training-only run: model size, PT schedule name, steps."""

    size: str
    schedule: str
    steps: int

    @property
    def name(self) -> str:
        return f"{self.size}/pt/{self.schedule}-{self.steps}"


def pt_grid(pt: dict, scheds: dict, sizes: dict, source: str) -> list:
    """The PT-only runs of the ``[[pt.grid]]`` blocks (``sizes``, ``schedules``, ``steps``)."""
    grid = pt.get("grid") or []
    if not isinstance(grid, list) or any(not isinstance(b, dict) for b in grid):
        raise ValueError(f"{source}: 'pt.grid' = {grid!r}; expected [[pt.grid]] blocks")
    if grid and not scheds:
        raise ValueError(f"{source}: [[pt.grid]] needs [pt.schedules.NAME] tables")
    runs, seen = [], set()
    for i, block in enumerate(grid):
        where = f"{source}: [[pt.grid]] #{i + 1}"
        extra = set(block) - {"sizes", "schedules", "steps"}
        if extra:
            raise ValueError(
                f"{where}: unknown key(s) {sorted(extra)}; known: sizes, schedules, steps"
            )
        sz = names(block.get("sizes"), sizes, "sizes", where)
        sc = names(block.get("schedules"), scheds, "schedules", where)
        lengths = block.get("steps")
        if (
            not isinstance(lengths, list)
            or not lengths
            or any(not isinstance(t, int) or isinstance(t, bool) or t < 2 for t in lengths)
        ):
            raise ValueError(f"{where}: 'steps' = {lengths!r}; expected a list of PT lengths >= 2")
        for combo in itertools.product(sz, sc, lengths):
            run = PtRun(*combo)
            if run not in seen:
                seen.add(run)
                runs.append(run)
    return runs


def cpt_grid(raw: dict, sizes: dict, pt_steps: int, source: str):
    """(runs, held-out replay ratios, the [cpt] table, its schedules) of the [[cpt.grid]]."""
    cpt = table(raw.get("cpt"), "cpt", source)
    scheds = table(cpt.get("schedules"), "cpt.schedules", source, of_tables=True)
    grid = cpt.get("grid") or []
    if not isinstance(grid, list) or any(not isinstance(b, dict) for b in grid):
        raise ValueError(f"{source}: 'cpt.grid' = {grid!r}; expected [[cpt.grid]] blocks")
    if not scheds:
        raise ValueError(f"{source}: no [cpt.schedules.NAME] table")
    runs, seen = [], set()
    for i, block in enumerate(grid):
        where = f"{source}: [[cpt.grid]] #{i + 1}"
        sz = names(block.get("sizes"), sizes, "sizes", where)
        sc = names(block.get("schedules"), scheds, "schedules", where)
        transfers = block.get("transfers")
        if (
            not isinstance(transfers, list)
            or not transfers
            or any(not isinstance(t, int) or not 1 <= t <= pt_steps for t in transfers)
        ):
            raise ValueError(
                f"{where}: 'transfers' = {transfers!r}; expected PT steps in 1..{pt_steps}"
            )
        lengths = block.get("steps")
        if (
            not isinstance(lengths, list)
            or not lengths
            or any(not isinstance(t, int) or t < 2 for t in lengths)
        ):
            raise ValueError(f"{where}: 'steps' = {lengths!r}; expected a list of CPT lengths")
        replay = block.get("replay", [0.0])
        if (
            not isinstance(replay, list)
            or not replay
            or any(
                not isinstance(r, (int, float)) or isinstance(r, bool) or not 0 <= r < 1
                for r in replay
            )
        ):
            raise ValueError(
                f"{where}: 'replay' = {replay!r}; expected shares of PT data in [0, 1)"
            )
        for combo in itertools.product(sz, transfers, sc, lengths, replay):
            run = CptRun(combo[0], combo[1], combo[2], combo[3], float(combo[4]))
            if run not in seen:
                seen.add(run)
                runs.append(run)
    if not runs:
        raise ValueError(
            f"{source}: no runs; add a [[cpt.grid]] block (CPT runs) "
            "or [[pt.grid]] blocks (PT-only runs)"
        )
    held = cpt.get("heldout_replay", [])
    if not isinstance(held, list) or any(
        not isinstance(r, (int, float)) or isinstance(r, bool) or not 0 <= r < 1 for r in held
    ):
        raise ValueError(
            f"{source}: [cpt] 'heldout_replay' = {held!r}; expected a list of "
            "shares of PT data in [0, 1)"
        )
    if not isinstance(cpt.get("heldout_schedules", []), list):
        raise ValueError(
            f"{source}: [cpt] 'heldout_schedules' = "
            f"{cpt['heldout_schedules']!r}; expected a list of schedule names"
        )
    return runs, held, cpt, scheds
