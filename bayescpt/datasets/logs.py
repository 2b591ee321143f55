"""Training logs -> the tidy loss-curve table (:mod:`bayescpt.curves.data.table`) that ``fit``
reads.

Formats (``fmt``) and the tags taken by default (the first one present; ``loss_tag``/``lr_tag``
choose another; an LR tag ending in ``*`` matches by prefix)::

    tensorboard    event files (a run directory, or a folder of them)  loss: eval/loss, val_loss,
                   val/loss, loss, train/loss   lr: train/learning_rate, learning_rate, lr, lr-*
    hf-trainer     trainer_state.json (its log_history; a folder: the file in it or in its last
                   checkpoint-N)                loss: eval_loss, loss   lr: learning_rate
    wandb-csv      a W&B history export (step: train/global_step, else _step)
                                                loss: eval/loss, val_loss, loss, train/loss
                                                lr: train/learning_rate, learning_rate, lr
    lightning-csv  a Lightning CSVLogger metrics.csv (a folder: its metrics.csv, else the ones
                   of its version_N folders, a run resumed in order)
                                                loss: val_loss, val/loss, loss, train_loss
                                                lr: lr-* (LearningRateMonitor), lr, learning_rate
    csv            a tidy curve CSV with gaps, e.g. from :class:`~bayescpt.datasets.integrations.
                   EvalLogger`                  loss: every val_set (tag loss@<val_set>)   lr: lr

Readers return the scalars in the order they were logged, as a long table ``tag, step, value``
(restarts included). A step logged twice (a run resumed from a checkpoint logs some steps again)
keeps its later value and warns once per file with :class:`LogWarning`. Steps are whole numbers:
a step such as ``10.7``, ``'abc'`` or ``-5`` is refused (file, line or ``log_history`` entry,
column, value). A NaN or infinite value (in a trainer_state.json also one written as text,
``"NaN"``, or ``null``) is dropped with a warning giving the count and the first steps; a used
tag logged with a value that is no number (``true``, ``"abc"``) is refused. A TensorBoard event
file that ends in a cut or corrupt record warns naming the file and the last step read (its
later events are lost); one that has not a single readable record is refused. The same log given
twice (two SRC arguments, or a glob and a path) is refused. The learning rate between
logged steps is linear in the step (the tidy table's convention) and constant after the last one;
an LR log that ends before the losses do warns (naming the run, where each ends: give
``schedule`` when the LR changed after the end of its log);
when the first LR is logged after step 1, a row at step 0 is added by the rule every table follows
(:func:`~bayescpt.core.schedules.start_lr`: ``lr = 0`` when the logged LR first rises, a warmup
from zero, else the first logged LR; a log from step 1 is left to it). A log without an LR needs
``schedule``
(a :class:`~bayescpt.core.schedules.Schedule`, e.g. from
:func:`bayescpt.datasets.schedule_spec.parse_schedule_spec`); then its learning rate at every
step is used (one row per knot of its piecewise-linear shape).
"""

from __future__ import annotations

import glob
import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from bayescpt.core.schedules import Schedule
from bayescpt.core.tables import DataError
from bayescpt.curves.data.table import DEFAULT_VAL_SET
from bayescpt.curves.data.validate import validate_curves
from bayescpt.datasets.log_readers import (  # noqa: F401 - the readers, importable from here
    READERS,
    LogWarning,
    read_hf_trainer,
    read_lightning_csv,
    read_tensorboard,
    read_wandb_csv,
)
from bayescpt.datasets.log_series import logged_lr, run_losses, scalars

FORMATS = ("tensorboard", "hf-trainer", "wandb-csv", "lightning-csv", "csv")


class PastScheduleError(DataError):
    """Losses logged after the end of the ``--schedule``; ``last`` is the last logged step."""

    def __init__(self, msg: str, last: int):
        super().__init__(msg)
        self.last = int(last)


# --- Sources: paths and globs -> runs -> files ---


def _natural(p: Path):
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", str(p))]


def find_runs(src, fmt: str) -> list[tuple[str, list[Path]]]:
    """The runs in ``src`` (a path, a glob, or a list of them): ``[(name, files)]``.

    A run is named after its directory (a W&B or ``csv`` file: after the file; a file inside
    ``checkpoint-N`` or ``version_N``: after the folder above); ``files`` are in logging order
    (for TensorBoard: the run directories). Names that clash get their path from the common folder.
    """
    if fmt not in FORMATS:
        raise DataError(f"unknown log format {fmt!r}; expected one of {', '.join(FORMATS)}")
    srcs = [src] if isinstance(src, (str, Path)) else list(src)
    paths = []
    for s in srcs:
        hits = sorted((Path(h) for h in glob.glob(str(s))), key=_natural)
        if not hits:
            raise DataError(f"{s}: no such file or directory")
        paths += [(h, s) for h in hits]
    runs, given = [], {}
    for p, s in paths:
        for name, files in _runs_in(p, fmt):
            for f in files:
                if f in given:
                    as_ = (
                        f"SRC {s} twice"
                        if str(s) == str(given[f])
                        else f"SRC {given[f]} and SRC {s}"
                    )
                    raise DataError(
                        f"{f}: the same source was given twice ({as_}); give each log once"
                    )
                given[f] = s
            runs.append((name, files))
    if not runs:
        raise DataError(f"{', '.join(map(str, srcs))}: no {fmt} log found")
    names = [n for n, _ in runs]
    if len(set(names)) < len(names):
        keys = [_run_path(f[0], fmt) for _, f in runs]
        common = Path(os.path.commonpath(keys))
        common = common.parent if common in keys else common
        names = [str(k.relative_to(common)) for k in keys]
    return [(n, files) for n, (_, files) in zip(names, runs)]


def log_files(src, fmt: str) -> list[Path]:
    """Every file :func:`import_logs` reads for ``src`` (a path, a glob, or a list of them): the
    files of each run :func:`find_runs` finds, and for TensorBoard the event files (a name with
    "tfevents", as tensorboard's loader takes them) in each run's directory. An output must
    never be one of them. Raises :class:`DataError` as :func:`find_runs` does."""
    files = [f for _, fs in find_runs(src, fmt) for f in fs]
    if fmt == "tensorboard":
        files = [
            e
            for d in files
            for e in sorted(d.iterdir(), key=_natural)
            if "tfevents" in e.name and e.is_file()
        ]
    return files


def _run_path(f: Path, fmt: str) -> Path:
    """The path that names the run of file (or TensorBoard folder) ``f``."""
    if fmt == "tensorboard" or f.is_dir():
        return f
    if fmt in ("wandb-csv", "csv"):
        return f.with_suffix("")
    up = f.parent
    return up.parent if re.fullmatch(r"(checkpoint|version)[-_]\d+", up.name) else up


def _runs_in(p: Path, fmt: str) -> list[tuple[str, list[Path]]]:
    p = p.resolve()
    if fmt == "tensorboard":
        if p.is_file():
            return [(p.parent.name, [p.parent])]
        dirs = sorted({f.parent for f in p.rglob("*tfevents*") if f.is_file()}, key=_natural)
        return [(p.name if d == p else str(d.relative_to(p)), [d]) for d in dirs]
    if p.is_file():
        return [(_run_path(p, fmt).name, [p])]
    if fmt in ("hf-trainer", "lightning-csv"):
        here = _one_run(p, fmt)
        if here:
            return [(p.name, here)]
        subs = [(d.name, _one_run(d, fmt)) for d in sorted(p.iterdir(), key=_natural) if d.is_dir()]
        return [(n, f) for n, f in subs if f]
    return [(f.stem, [f]) for f in sorted(p.glob("*.csv"), key=_natural)]


def _one_run(d: Path, fmt: str) -> list[Path]:
    """The files of the run in folder ``d``: HF: its trainer_state.json or its last checkpoint's
    (which holds the whole history); Lightning: its metrics.csv or its version_N/metrics.csv, a
    run resumed in order."""
    name = "trainer_state.json" if fmt == "hf-trainer" else "metrics.csv"
    if (d / name).is_file():
        return [d / name]
    if fmt == "hf-trainer":
        ckpts = sorted(d.glob("checkpoint-*/trainer_state.json"), key=_natural)
        return ckpts[-1:]
    return sorted(d.glob("version_*/metrics.csv"), key=_natural)


# --- import_logs ---


def _schedule_rows(schedule: Schedule, steps: np.ndarray, source: str) -> pd.Series:
    T = schedule.total_steps
    if len(steps) and steps.max() > T:
        raise PastScheduleError(
            f"{source}: losses logged up to step {int(steps.max())}, after "
            f"the end of the --schedule ({T} steps)",
            int(steps.max()),
        )
    lr = schedule.lr
    bend = np.flatnonzero(np.abs(np.diff(lr, 2)) > 1e-9 * max(schedule.peak, 1e-30)) + 1
    knots = np.union1d(np.union1d([0, T], bend), steps.astype(np.int64))
    return pd.Series(lr[knots], index=knots)


@dataclass(frozen=True)
class RunLabels:
    """Columns :func:`import_logs` sets on every row, over what the logs say (None: the log's
    own value where it has one): the validation role (``general``/``domain``), the phase
    (``pt``/``cpt``) and the model size (non-embedding parameters)."""

    val_role: str | None = None
    phase: str | None = None
    model_size: float | None = None


def import_logs(
    src,
    fmt: str,
    loss_tag: str | None = None,
    lr_tag: str | None = None,
    run: str | None = None,
    val_set: str = DEFAULT_VAL_SET,
    labels: RunLabels = RunLabels(),
    schedule: Schedule | None = None,
    log=None,
) -> pd.DataFrame:
    """Read training logs into the tidy loss-curve table, validated as ``fit`` reads it.

    ``src``: a run directory or file, a glob, or a list of them (one run per directory; with
    ``run``, all of them are one run, resumed in order, later files winning). Columns: ``run,
    step, lr, loss, val_set`` and ``val_role, phase, model_size`` when given in ``labels`` (or,
    for ``csv``, in the file). Rows where only the LR is logged have an empty loss. ``log(msg)``
    receives one line per run naming the tags used. Problems raise :class:`DataError` naming the
    file.
    """
    runs = find_runs(src, fmt)
    if run is not None:
        runs = [(run, [f for _, files in runs for f in files])]
    tables, sources = [], []
    for name, files in runs:
        source = ", ".join(map(str, files))
        parts = [READERS[fmt](f) for f in files]
        meta = {k: v for part in parts for k, v in part.attrs.items() if v}  # later files win
        name = meta.get("run", name) if run is None else name
        tags = scalars(pd.concat(parts, ignore_index=True), source)
        not_numbers = {t: m for part in parts for t, m in part.attrs.get("not_numbers", {}).items()}
        pairs, losses = run_losses(tags, not_numbers, fmt, loss_tag, val_set, source)
        steps = np.unique(np.concatenate([v.index.to_numpy() for v in losses.values()]))
        if schedule is not None:
            lr, said = (
                _schedule_rows(schedule, steps, source),
                f"lr from the schedule {schedule.name}",
            )
        else:
            lr, ltr = logged_lr(tags, not_numbers, (fmt, lr_tag), steps, name, source)
            said = f"lr from {ltr!r}"
        if log is not None:
            n = sum(len(v) for v in losses.values())
            log(
                f"{name}: {n} losses from {', '.join(repr(t) for t, _ in pairs)}, {said} ({source})"
            )
        tables.append(_run_table(name, losses, lr, meta, labels))
        sources.append(source)
    out = pd.concat(tables, ignore_index=True)
    for col in ("val_role", "phase", "model_size"):
        if getattr(labels, col) is not None:
            out[col] = getattr(labels, col)
    cols = ["run", "step", "lr", "loss", "val_set"] + [
        c for c in ("val_role", "phase", "model_size") if c in out
    ]
    given = [src] if isinstance(src, (str, Path)) else list(src)
    try:
        return validate_curves(out[cols], source=", ".join(map(str, given)))
    except DataError:
        # a bad value is reported with the file it came from: the first run that fails alone
        for table, source in zip(tables, sources):
            validate_curves(table, source=source)
        raise


def _run_table(
    name: str, losses: dict, lr: pd.Series, meta: dict, labels: RunLabels
) -> pd.DataFrame:
    """One run's rows: per validation set its loss steps with their LR (the rows where only
    the LR is logged once, in the first set), and the log's own ``val_role``, ``phase`` and
    ``model_size`` where ``labels`` leaves them open."""
    frames = []
    for i, (vs, loss) in enumerate(losses.items()):  # LR-only rows once, in the first set
        keep = lr.index.isin(loss.index) | (i == 0)
        df = pd.DataFrame(
            {
                "run": name,
                "step": lr.index[keep].astype(np.int64),
                "lr": lr.to_numpy()[keep],
                "val_set": vs,
            }
        )
        df["loss"] = loss.reindex(df["step"]).to_numpy()
        if labels.val_role is None and meta.get("val_role"):
            df["val_role"] = df["val_set"].map(meta["val_role"]).fillna("")
        if labels.phase is None and meta.get("phase"):
            df["phase"] = _fill_phase(df["step"], meta["phase"])
        if labels.model_size is None and meta.get("model_size"):
            df["model_size"] = meta["model_size"]
        frames.append(df)
    return pd.concat(frames, ignore_index=True)


def _fill_phase(steps: pd.Series, known: dict) -> np.ndarray:
    """Each step's phase: that of the nearest logged step at or before it (else the first)."""
    k = np.array(sorted(known))
    i = np.clip(np.searchsorted(k, steps.to_numpy(), side="right") - 1, 0, len(k) - 1)
    return np.array([known[x] for x in k[i]])
