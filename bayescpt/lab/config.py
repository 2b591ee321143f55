"""The lab's experiment file (TOML): model sizes, corpora, the PT schedule and its transfer
points, the CPT grid, and pre-training-only runs. See ``bayescpt/lab/configs/grid.toml`` (CPT)
and ``bayescpt/lab/configs/pt_schedules.toml`` (PT runs under many schedules) for commented
examples.

A config has CPT runs (``[pt] steps, schedule`` and ``[[cpt.grid]]`` blocks), PT-only runs
(``[pt.schedules.NAME]`` tables and ``[[pt.grid]]`` blocks of ``sizes, schedules, steps``: each
run trains a size from its initialisation under one schedule), or both.

Every problem raises ``ValueError`` with one line naming the file and the key. Learning-rate
schedules are tables ``{kind = BUILDER, ...}`` whose other keys are the keyword arguments of the
builder of that name in :mod:`bayescpt.core.schedules` (``constant``, ``cosine``, ``wsd``,
``rewarmup``, ``multistep``, ``cyclic``); ``total_steps`` comes from the run. A CPT ``rewarmup``
starts from the PT learning rate at the transfer step.
"""

from __future__ import annotations

import copy
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from bayescpt.core import schedules as S
from bayescpt.lab.config_values import names, number, table, whole
from bayescpt.lab.grids import CptRun, PtRun, cpt_grid, pt_grid

BUILDERS = ("constant", "cosine", "wsd", "rewarmup", "multistep", "cyclic")
ROLES = ("general", "domain", "other")
TRAIN_DEFAULTS = {
    "seq_len": 64,
    "batch_size": 16,
    "weight_decay": 0.1,
    "beta1": 0.9,
    "beta2": 0.95,
    "eps": 1e-8,
    "grad_clip": 1.0,
    "eval_every": 25,
    "eval_sequences": 64,
    "eval_cpt_early": [],
}


@dataclass
class LabConfig:
    source: str
    name: str
    seed: int
    threads: int
    train: dict
    sizes: dict  # name -> {d_model, n_layers, n_heads}
    corpora: dict  # name -> corpus table (with role)
    pt_steps: int
    pt_schedule: dict
    cpt_schedules: dict  # name -> schedule table
    runs: list  # [CptRun]
    heldout_schedules: list = field(default_factory=list)
    heldout_replay: list = field(default_factory=list)
    raw: dict = field(default_factory=dict)
    pt_schedules: dict = field(default_factory=dict)  # name -> schedule table (PT-only runs)
    pt_runs: list = field(default_factory=list)  # [PtRun]
    pt_heldout: list = field(default_factory=list)  # PT schedule names held out

    def corpus_with_role(self, role: str) -> str:
        return next(n for n, c in self.corpora.items() if c["role"] == role)

    def transfers(self, size: str) -> list[int]:
        return sorted({r.transfer for r in self.runs if r.size == size})

    def sizes_in_use(self) -> list[str]:
        return [s for s in self.sizes if any(r.size == s for r in self.runs + self.pt_runs)]

    def pt_run_schedule(self, run: PtRun) -> S.Schedule:
        """The per-step LR of a PT-only run (index 0 is the initialisation)."""
        return build_schedule(
            self.pt_schedules[run.schedule],
            run.steps,
            where=f"{self.source}: [pt.schedules.{run.schedule}]",
        )

    def pt_schedule_built(self) -> S.Schedule:
        return build_schedule(self.pt_schedule, self.pt_steps, where=f"{self.source}: [pt]")

    def full_schedule(self, run: CptRun) -> S.Schedule:
        """The per-step LR of ``run`` from the start of PT: PT up to the transfer, then CPT."""
        pt = self.pt_schedule_built()
        prefix = S.Schedule(pt.lr[: run.transfer + 1], min(pt.warmup_steps, run.transfer), "pt")
        seg = build_schedule(
            self.cpt_schedules[run.schedule],
            run.steps,
            where=f"{self.source}: [cpt.schedules.{run.schedule}]",
            start=prefix,
        )
        return prefix.then(seg, name=run.name)


def build_schedule(spec: dict, total_steps: int, where: str, start: S.Schedule | None = None):
    """A :class:`~bayescpt.core.schedules.Schedule` from a ``{kind = ..., ...}`` table."""
    spec = dict(spec)
    kind = spec.pop("kind", None)
    if kind not in BUILDERS:
        raise ValueError(f"{where}: schedule kind {kind!r}; expected one of {BUILDERS}")
    if kind == "rewarmup":
        spec.setdefault("start_lr", start if start is not None else 0.0)
    try:
        return getattr(S, kind)(total_steps, **spec)
    except TypeError as err:
        raise ValueError(f"{where}: {err}") from None
    except ValueError as err:
        raise ValueError(f"{where}: {err}") from None


def load_config(path) -> LabConfig:
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{path}: a directory, not a TOML config file")
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"{path}: no such config file") from None
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not UTF-8 text; a TOML config file is UTF-8") from None
    except tomllib.TOMLDecodeError as err:
        raise ValueError(f"{path}: not valid TOML ({err})") from None
    return parse_config(raw, source=str(path))


def parse_config(raw: dict, source: str = "<config>") -> LabConfig:
    raw = copy.deepcopy(raw)
    unknown = set(raw) - {"name", "seed", "threads", "train", "sizes", "corpora", "pt", "cpt"}
    if unknown:
        raise ValueError(f"{source}: unknown top-level key(s) {sorted(unknown)}")
    for key, minimum in (("seed", 0), ("threads", 1)):
        if key in raw:
            whole(raw, key, source, minimum)
    if not isinstance(raw.get("name", ""), str):
        raise ValueError(f"{source}: 'name' = {raw['name']!r}; expected a string")
    train = _train(raw, source)
    sizes, corpora = _sizes(raw, source), _corpora(raw, source)

    pt = table(raw.get("pt"), "pt", source)
    extra = set(pt) - {"steps", "schedule", "schedules", "grid", "heldout_schedules"}
    if extra:
        raise ValueError(
            f"{source}: [pt] unknown key(s) {sorted(extra)}; known: steps, "
            "schedule, schedules, grid, heldout_schedules"
        )
    pt_scheds = table(pt.get("schedules"), "pt.schedules", source, of_tables=True)
    pt_runs = pt_grid(pt, pt_scheds, sizes, source)
    if "cpt" not in raw and not pt_runs:
        raise ValueError(
            f"{source}: no runs; add [[cpt.grid]] blocks (CPT runs, with [pt] steps "
            "and schedule) or [[pt.grid]] blocks (PT-only runs)"
        )
    cpt_wanted = "cpt" in raw
    pt_steps = 0
    if cpt_wanted:
        pt_steps = whole(pt, "steps", f"{source}: [pt]")
        if not isinstance(pt.get("schedule"), dict):
            raise ValueError(
                f"{source}: [pt] needs a 'schedule' table, e.g. "
                '{kind = "wsd", peak = 2e-3, decay_steps = 300, warmup_steps = 50}'
            )

    runs, held, cpt, scheds = [], [], {}, {}
    if cpt_wanted:
        runs, held, cpt, scheds = cpt_grid(raw, sizes, pt_steps, source)
    pt_held = pt.get("heldout_schedules", [])
    if pt_held:
        names(pt_held, pt_scheds, "heldout_schedules", f"{source}: [pt]")
    cfg = LabConfig(
        source,
        str(raw.get("name", Path(source).stem)),
        int(raw.get("seed", 0)),
        int(raw.get("threads", 1)),
        train,
        sizes,
        corpora,
        pt_steps,
        pt.get("schedule", {}),
        scheds,
        runs,
        list(cpt.get("heldout_schedules", [])),
        [float(r) for r in held],
        raw,
        pt_scheds,
        pt_runs,
        list(pt_held),
    )
    if cpt_wanted:
        names(
            cfg.heldout_schedules or list(scheds)[:1],
            scheds,
            "heldout_schedules",
            f"{source}: [cpt]",
        )
        cfg.pt_schedule_built()
    for run in runs:  # build every schedule now: errors before any training
        cfg.full_schedule(run)
    for run in pt_runs:
        cfg.pt_run_schedule(run)
    return cfg


def _train(raw: dict, source: str) -> dict:
    """The ``[train]`` table over :data:`TRAIN_DEFAULTS`, checked (known keys, whole numbers,
    numbers, ``eval_cpt_early`` a list of CPT steps >= 1)."""
    train = dict(TRAIN_DEFAULTS)
    extra = set(table(raw.get("train"), "train", source)) - set(TRAIN_DEFAULTS)
    if extra:
        raise ValueError(
            f"{source}: [train] unknown key(s) {sorted(extra)}; known: {sorted(TRAIN_DEFAULTS)}"
        )
    train.update(raw.get("train", {}))
    for k in ("seq_len", "batch_size", "eval_every", "eval_sequences"):
        whole(train, k, f"{source}: [train]")
    for k in ("weight_decay", "beta1", "beta2", "eps", "grad_clip"):
        number(train, k, f"{source}: [train]")
    early = train["eval_cpt_early"]
    if not isinstance(early, list) or any(not isinstance(j, int) or j < 1 for j in early):
        raise ValueError(
            f"{source}: [train] 'eval_cpt_early' = {early!r}; expected a list of "
            "CPT steps (>= 1) with an extra evaluation, e.g. [1, 2, 4, 8, 16]"
        )
    return train


def _sizes(raw: dict, source: str) -> dict:
    """The ``[sizes.NAME]`` tables (at least one; whole d_model, n_layers, n_heads, d_model a
    multiple of n_heads)."""
    sizes = table(raw.get("sizes"), "sizes", source, of_tables=True)
    if not sizes:
        raise ValueError(f"{source}: no [sizes.NAME] table (d_model, n_layers, n_heads)")
    for n, s in sizes.items():
        for k in ("d_model", "n_layers", "n_heads"):
            whole(s, k, f"{source}: [sizes.{n}]")
        if s["d_model"] % s["n_heads"]:
            raise ValueError(
                f"{source}: [sizes.{n}] d_model={s['d_model']} is not a multiple "
                f"of n_heads={s['n_heads']}"
            )
    return sizes


def _corpora(raw: dict, source: str) -> dict:
    """The ``[corpora.NAME]`` tables: each with a role in :data:`ROLES`, exactly one general
    (PT data) and one domain (CPT data)."""
    corpora = table(raw.get("corpora"), "corpora", source, of_tables=True)
    roles = [c.get("role") for c in corpora.values()]
    for n, c in corpora.items():
        if c.get("role") not in ROLES:
            raise ValueError(
                f"{source}: [corpora.{n}] role {c.get('role')!r}; expected one of {ROLES}"
            )
    if roles.count("general") != 1 or roles.count("domain") != 1:
        raise ValueError(
            f"{source}: expected exactly one corpus with role 'general' (PT data) "
            f"and one with role 'domain' (CPT data); found roles {roles}"
        )
    return corpora
