"""Run a lab config: pre-train each model size, branch CPT runs from its checkpoints, train the
PT-only runs (each from the size's initialisation under its own schedule), and write
``curves.csv`` (the CPT data model), ``runs.csv`` (one row per run with its factors) and
``manifest.json`` (config, seed, versions, corpora hashes, timings). Needs torch.

Determinism: one thread, ``torch.use_deterministic_algorithms``, and every random stream seeded
from the config's ``seed`` and a fixed purpose string. The PT batches are the same for every
model size; every CPT run sees the same domain batches in the same order (common random
numbers), so differences between runs come from the schedule, the checkpoint, the replay ratio
and the size, not from data-order noise. PT-only runs of a size share its initialisation and
the PT batch stream too: two of them differ only in their learning-rate schedule. A replay ratio
r puts ``floor(r*B*j) - floor(r*B*(j-1))`` PT sequences in the batch of CPT step j (B the batch
size): exactly r of the sequences on average.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

import bayescpt
from bayescpt.core.outputs import write_text
from bayescpt.lab import require_torch
from bayescpt.lab.config import LabConfig
from bayescpt.lab.corpora import Corpus, load_corpus
from bayescpt.lab.train import Batches, Trainer, check_finite, derive_seed, fixed_windows, pretrain

COLUMNS = [
    "run",
    "step",
    "lr",
    "loss",
    "val_set",
    "val_role",
    "phase",
    "replay_ratio",
    "model_size",
]


def _rows(
    run: str,
    lr: np.ndarray,
    phase: np.ndarray,
    losses: dict,
    roles: dict,
    general: str,
    replay: float,
    size: float,
) -> pd.DataFrame:
    """Rows of one run: a ``general`` row at every step (the LR; the loss where evaluated) and a
    row per other validation set at evaluated steps."""
    steps = np.arange(lr.size)
    frames = []
    for vs, role in roles.items():
        at = np.array(sorted(losses), dtype=np.int64)
        val = np.array([losses[s][vs] for s in at])
        if vs == general:
            loss = np.full(lr.size, np.nan)
            loss[at] = val
            keep = steps
        else:
            loss, keep = val, at
        frames.append(
            pd.DataFrame(
                {
                    "run": run,
                    "step": keep,
                    "lr": lr[keep],
                    "loss": loss,
                    "val_set": vs,
                    "val_role": role,
                    "phase": phase[keep],
                    "replay_ratio": replay,
                    "model_size": size,
                }
            )
        )
    df = pd.concat(frames, ignore_index=True)
    return df.sort_values(
        ["step", "val_role"],
        kind="stable",
        key=lambda c: c.map({"general": 0, "domain": 1, "other": 2}) if c.name == "val_role" else c,
    )


@dataclass
class _Lab:
    """What every run of one lab shares: torch, the config, the corpora and their validation
    windows, the corpus roles (and the general and domain corpus), the log, the PT schedule of
    the CPT grid (None without CPT runs), and the timings and ``runs.csv`` rows collected so far.
    """

    torch: object
    cfg: LabConfig
    corpora: dict
    val: dict
    roles: dict
    general: str
    domain: str
    log: object
    pt_schedule: object
    timings: dict = field(default_factory=dict)
    run_info: list = field(default_factory=list)


def run_lab(cfg: LabConfig, out_dir, force: bool = False, log=lambda msg: None) -> dict:
    """Train everything in ``cfg`` and write the outputs to ``out_dir``; returns the manifest."""
    out_dir = Path(out_dir)
    curves_path = out_dir / "curves.csv"
    if curves_path.exists() and not force:
        raise FileExistsError(f"{curves_path} exists; choose another --out or pass --force")
    torch = require_torch()
    torch.set_num_threads(cfg.threads)
    torch.use_deterministic_algorithms(True)
    t_start, cpu_start = time.perf_counter(), time.process_time()
    tr = cfg.train

    corpora: dict[str, Corpus] = {n: load_corpus(n, spec) for n, spec in cfg.corpora.items()}
    for c in corpora.values():
        log(
            f"corpus {c.name}: {len(c.files)} files, {c.train.size / 1e6:.2f} MB train, "
            f"{c.val.size / 1e6:.2f} MB validation, sha256 {c.sha256[:16]}"
        )
    lab = _Lab(
        torch,
        cfg,
        corpora,
        {n: fixed_windows(c.val, tr["seq_len"], tr["eval_sequences"]) for n, c in corpora.items()},
        {n: spec["role"] for n, spec in cfg.corpora.items()},
        cfg.corpus_with_role("general"),
        cfg.corpus_with_role("domain"),
        log,
        cfg.pt_schedule_built() if cfg.runs else None,
    )

    frames, sizes_info = _train_sizes(lab)
    curves = pd.concat(frames, ignore_index=True)[COLUMNS]
    out_dir.mkdir(parents=True, exist_ok=True)
    text = curves.to_csv(index=False, float_format="%.8g", lineterminator="\n")
    _atomic_write(curves_path, text)
    _atomic_write(
        out_dir / "runs.csv", pd.DataFrame(lab.run_info).to_csv(index=False, lineterminator="\n")
    )
    manifest = _manifest(lab, text, len(curves), sizes_info, (t_start, cpu_start))
    _atomic_write(out_dir / "manifest.json", json.dumps(manifest, indent=1) + "\n")
    return manifest


def _train_sizes(lab: _Lab) -> tuple[list, dict]:
    """Train every size in use: its PT-only runs, then its CPT grid; returns (their rows, one
    frame per run; per size its shape and parameter counts)."""
    torch, cfg = lab.torch, lab.cfg
    frames, sizes_info = [], {}
    for size in cfg.sizes_in_use():
        trainer = Trainer(torch, cfg, size, lab.val)
        n_params = trainer.model.non_embedding_params()
        sizes_info[size] = {
            **cfg.sizes[size],
            "non_embedding_params": n_params,
            "params": sum(p.numel() for p in trainer.model.parameters()),
        }
        for prun in (r for r in cfg.pt_runs if r.size == size):
            frames.append(_pt_run(lab, prun, n_params))
        if any(r.size == size for r in cfg.runs):
            frames += _cpt_grid(lab, trainer, size, n_params)
    return frames, sizes_info


def _manifest(lab: _Lab, text: str, rows: int, sizes_info: dict, started: tuple) -> dict:
    """The run's ``manifest.json``: config, seed, versions, corpora, sizes, held-out schedules and
    replay ratios, the curves' hash (``text``) and row count, timings since ``started`` (wall and
    CPU clock)."""
    torch, cfg, corpora = lab.torch, lab.cfg, lab.corpora
    return {
        "config_name": cfg.name,
        "config_source": cfg.source,
        "config": cfg.raw,
        "seed": cfg.seed,
        "versions": {
            "bayescpt": bayescpt.__version__,
            "torch": torch.__version__,
            "numpy": np.__version__,
            "pandas": pd.__version__,
            "python": sys.version.split()[0],
            "platform": platform.platform(),
        },
        "threads": cfg.threads,
        "corpora": {n: {**c.describe(), "role": lab.roles[n]} for n, c in corpora.items()},
        "sizes": sizes_info,
        "runs": len(lab.run_info),
        "heldout_schedules": cfg.heldout_schedules,
        "heldout_replay": cfg.heldout_replay,
        "pt_heldout_schedules": cfg.pt_heldout,
        "curves_sha256": hashlib.sha256(text.encode()).hexdigest(),
        "rows": rows,
        "timings_s": {
            "total": round(time.perf_counter() - started[0], 1),
            "total_cpu": round(time.process_time() - started[1], 1),
            **lab.timings,
        },
        "cpu": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
    }


def _cpt_grid(lab: _Lab, trainer: Trainer, size: str, n_params: int) -> list[pd.DataFrame]:
    """Pre-train ``size`` up to its last transfer (snapshots at every transfer), then train each
    of its CPT runs from its transfer's snapshot; returns their rows, one frame per run."""
    cfg, tr = lab.cfg, lab.cfg.train
    pt_sched = lab.pt_schedule
    transfers = cfg.transfers(size)
    last = max(transfers)
    pt_batches = Batches(lab.corpora[lab.general].train, tr["seq_len"], derive_seed(cfg.seed, "pt"))
    pt_losses = {0: trainer.evaluate()}
    t0 = time.perf_counter()
    snaps = pretrain(
        trainer,
        pt_sched.lr,
        last,
        pt_batches,
        tr["batch_size"],
        tr["eval_every"],
        set(transfers),
        pt_losses,
        f"PT of size {size!r}",
        snapshot=True,
    )
    lab.timings[f"{size}/pt"] = round(time.perf_counter() - t0, 2)
    lab.log(
        f"size {size} ({n_params:,} non-embedding params): PT {last} steps in "
        f"{lab.timings[f'{size}/pt']:.0f} s; general loss {pt_losses[last][lab.general]:.3f}"
    )
    frames = []
    for run in (r for r in cfg.runs if r.size == size):
        frames.append(_cpt_run(lab, trainer, run, snaps[run.transfer], pt_losses, n_params))
    return frames


def _cpt_run(
    lab: _Lab, trainer: Trainer, run, snap, pt_losses: dict, n_params: int
) -> pd.DataFrame:
    """Train CPT run ``run`` from its transfer's checkpoint ``snap``: each step's batch mixes
    replayed PT sequences (the replay ratio) with domain ones; evaluate every ``eval_every`` steps,
    at the ``eval_cpt_early`` steps and at the end. Returns its rows (its PT part from
    ``pt_losses``); appends to the lab's timings and run rows."""
    cfg, tr, general, domain = lab.cfg, lab.cfg.train, lab.general, lab.domain
    B, k = tr["batch_size"], tr["eval_every"]
    t0 = time.perf_counter()
    trainer.restore(snap)
    full = cfg.full_schedule(run)
    cpt_batches = Batches(lab.corpora[domain].train, tr["seq_len"], derive_seed(cfg.seed, "cpt"))
    replay_batches = Batches(
        lab.corpora[general].train, tr["seq_len"], derive_seed(cfg.seed, "replay")
    )
    losses = {s: v for s, v in pt_losses.items() if s <= run.transfer}
    early = set(tr["eval_cpt_early"])
    for j in range(1, run.steps + 1):
        s = run.transfer + j
        n_pt = int(np.floor(run.replay * B * j) - np.floor(run.replay * B * (j - 1)))
        parts = [replay_batches.take(n_pt)] if n_pt else []
        batch = np.concatenate(parts + [cpt_batches.take(B - n_pt)])
        lr = float(full.lr[s])
        check_finite(trainer.step(batch, lr), f"run {run.name!r}", s, lr)
        if j % k == 0 or j == run.steps or j in early:
            losses[s] = trainer.evaluate()
    phase = np.where(np.arange(full.lr.size) <= run.transfer, "pt", "cpt")
    rows = _rows(run.name, full.lr, phase, losses, lab.roles, general, run.replay, float(n_params))
    lab.timings[run.name] = round(time.perf_counter() - t0, 2)
    end = losses[run.transfer + run.steps]
    lab.log(
        f"  {run.name}: {lab.timings[run.name]:.0f} s; general "
        f"{losses[run.transfer][general]:.3f} -> {end[general]:.3f}, domain "
        f"{losses[run.transfer][domain]:.3f} -> {end[domain]:.3f}"
    )
    lab.run_info.append(
        {
            "run": run.name,
            "size": run.size,
            "model_size": n_params,
            "transfer": run.transfer,
            "schedule": run.schedule,
            "cpt_steps": run.steps,
            "replay_ratio": run.replay,
            "cpt_peak_lr": float(full.lr[run.transfer + 1 :].max()),
            "pt_final_lr": float(full.lr[run.transfer]),
            "loss_potential": float(full.lr[run.transfer] / lab.pt_schedule.peak),
            "heldout_schedule": run.schedule in cfg.heldout_schedules,
            "heldout_replay": run.replay in cfg.heldout_replay,
        }
    )
    return rows


def _pt_run(lab: _Lab, run, n_params: int) -> pd.DataFrame:
    """Train one PT-only run from the size's initialisation on the PT batch stream (the general
    corpus's training bytes, drawn with the same seed as the CPT grid's PT); evaluate every
    ``eval_every`` steps and at the end. Returns its rows; appends to the lab's timings and run
    rows."""
    cfg, general = lab.cfg, lab.general
    tr, t0 = cfg.train, time.perf_counter()
    trainer = Trainer(lab.torch, cfg, run.size, lab.val)
    sched = cfg.pt_run_schedule(run)
    batches = Batches(lab.corpora[general].train, tr["seq_len"], derive_seed(cfg.seed, "pt"))
    losses = {0: trainer.evaluate()}
    pretrain(
        trainer,
        sched.lr,
        run.steps,
        batches,
        tr["batch_size"],
        tr["eval_every"],
        {run.steps},
        losses,
        f"run {run.name!r}",
    )
    lab.timings[run.name] = round(time.perf_counter() - t0, 2)
    lab.log(
        f"  {run.name}: {lab.timings[run.name]:.0f} s; general {losses[0][general]:.3f} -> "
        f"{losses[run.steps][general]:.3f}"
    )
    lab.run_info.append(
        {
            "run": run.name,
            "size": run.size,
            "model_size": n_params,
            "schedule": run.schedule,
            "pt_steps": run.steps,
            "pt_peak_lr": float(sched.lr.max()),
            "pt_final_lr": float(sched.lr[-1]),
            "heldout_schedule": run.schedule in cfg.pt_heldout,
        }
    )
    phase = np.full(sched.lr.size, "pt", dtype=object)
    return _rows(run.name, sched.lr, phase, losses, lab.roles, general, 0.0, float(n_params))


def _atomic_write(path: Path, text: str):
    """``text`` to ``path`` through a unique synced temporary (:mod:`bayescpt.core.outputs`)."""
    write_text(path, text)
