"""Training-log readers: one source file -> a long table ``tag, step, value`` in logging order
(TensorBoard event files, a Trainer's trainer_state.json, a W&B history export, a Lightning
CSVLogger metrics.csv). :mod:`bayescpt.datasets.logs` turns them into the tidy table."""

from __future__ import annotations

import json
import logging
import warnings
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd

from bayescpt.core.tables import DataError, shown
from bayescpt.datasets.integrations import parse_steps, read_eval_csv

_WANDB_STEPS = ("train/global_step", "_step", "step", "Step")
_NOT_TAGS = {
    "step",
    "epoch",
    "_step",
    "_runtime",
    "_timestamp",
    "train/global_step",
    "train/epoch",
    "Step",
    "total_flos",
}


class LogWarning(UserWarning):
    """A repaired oddity of a training log (e.g. steps logged twice after a restart)."""


# --- Readers: one source -> long table (tag, step, value) in logging order ---


def read_tensorboard(path) -> pd.DataFrame:
    """Scalars of the TensorBoard event files directly in the directory ``path`` (or one file).

    Uses tensorboard's own ``EventAccumulator`` (all events kept, no purge of restarted steps);
    scalar summaries and 0-d tensor summaries are read. Rows are ordered by wall time; float32
    values are given as the shortest decimal that is the same float32.
    """
    try:
        from tensorboard.backend.event_processing import event_accumulator as ea
        from tensorboard.util import tensor_util
    except ImportError:
        raise DataError(
            f"{path}: reading TensorBoard logs needs tensorboard, the 'logs' extra: "
            "pip install 'bayescpt[logs]' (in a clone: pip install -e '.[logs]')"
        ) from None
    acc = ea.EventAccumulator(
        str(path), size_guidance={ea.SCALARS: 0, ea.TENSORS: 0}, purge_orphaned_data=False
    )
    with _stopped_files() as stopped:
        acc.Reload()
    for f in stopped:
        _say_stopped(Path(f))
    rows = []
    tags = acc.Tags()
    if not tags.get("scalars") and not tags.get("tensors"):
        files = sorted(Path(path).glob("*tfevents*")) if Path(path).is_dir() else [Path(path)]
        raise DataError(
            f"{path}: no scalar values in its TensorBoard event file(s) "
            f"({', '.join(f.name for f in files) or 'none'})"
        )
    for tag in tags.get("scalars", []):
        rows += [(e.wall_time, tag, e.step, _f32(e.value)) for e in acc.Scalars(tag)]
    for tag in tags.get("tensors", []):
        for e in acc.Tensors(tag):
            arr = tensor_util.make_ndarray(e.tensor_proto)
            if arr.size == 1 and np.issubdtype(arr.dtype, np.number):
                v = arr.reshape(-1)[0]
                rows.append(
                    (e.wall_time, tag, e.step, _f32(v) if arr.dtype == np.float32 else float(v))
                )
    df = pd.DataFrame(rows, columns=["wall_time", "tag", "step", "value"])
    df = df.sort_values("wall_time", kind="stable")
    return df[["tag", "step", "value"]].reset_index(drop=True)


class _Stopped(logging.Handler):
    """Collects the event files tensorboard's loader stopped reading early: it swallows a
    truncated or corrupt record (DataLossError) with a debug message and reads no further."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.files = []

    def emit(self, record):
        if str(record.msg).startswith("Truncated record in") and record.args:
            self.files.append(str(record.args[0]))


@contextmanager
def _stopped_files():
    logger = logging.getLogger("tensorboard")
    handler, level, propagate = _Stopped(), logger.level, logger.propagate
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False  # its debug messages are for us only
    try:
        yield handler.files
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        logger.propagate = propagate


def _say_stopped(f: Path) -> None:
    """A file the loader stopped reading early: refused when not one event of it could be read
    (not a TensorBoard event file), else a warning naming the last step read."""
    from tensorboard.backend.event_processing import event_file_loader

    with _stopped_files():
        last = None
        for event in event_file_loader.EventFileLoader(str(f)).Load():
            last = int(event.step)
    if last is None:
        raise DataError(
            f"{f}: not a readable TensorBoard event file (its first record is corrupt or cut short)"
        )
    warnings.warn(
        f"{f}: the event file is truncated or corrupt after step {last} (the last step "
        "read); the events after it are lost",
        LogWarning,
        stacklevel=3,
    )


def _f32(v) -> float:
    """A float32 summary value as the shortest decimal that reads back as it (3e-4, not
    0.0003000000142)."""
    return float(str(np.float32(v)))


def read_hf_trainer(path) -> pd.DataFrame:
    """The ``log_history`` of a Hugging Face ``trainer_state.json``: each numeric key of each entry
    is a tag logged at the entry's ``step`` (the global optimizer step)."""
    path = Path(path)
    try:
        state = json.loads(path.read_text())
    except json.JSONDecodeError as err:
        raise DataError(f"{path}: not valid JSON ({err})") from None
    hist = state.get("log_history") if isinstance(state, dict) else None
    if not isinstance(hist, list):
        raise DataError(f"{path}: no log_history list; expected a Hugging Face trainer_state.json")
    at = [i for i, entry in enumerate(hist) if isinstance(entry, dict) and "step" in entry]
    steps = parse_steps(
        pd.Series([hist[i]["step"] for i in at], index=at, dtype=object),
        path,
        "step",
        lambda i: f"log_history[{i}]",
    )
    rows, not_numbers = [], {}
    for i, step in steps.items():
        for k, v in hist[i].items():
            if k in _NOT_TAGS:
                continue
            if isinstance(v, str) and v.strip().lower() in _JSON_NONFINITE:
                v = float(v.strip().lower().replace("infinity", "inf"))  # a NaN written as text
            elif v is None:
                v = float("nan")  # null: no value, dropped with a warning
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                rows.append((k, step, v))
            elif k not in not_numbers:
                not_numbers[k] = (
                    f"{path}, log_history[{i}] (step {step}), key {k!r}: value "
                    f"{shown(v)} is not a number"
                )
    out = pd.DataFrame(rows, columns=["tag", "step", "value"])
    out.attrs["not_numbers"] = not_numbers  # refused if the tag is used
    return out


_JSON_NONFINITE = ("nan", "-nan", "inf", "+inf", "-inf", "infinity", "+infinity", "-infinity")


def read_wandb_csv(path) -> pd.DataFrame:
    """A W&B history export (one row per ``wandb.log`` call, empty cells for metrics not logged
    then). The step is ``train/global_step`` (the Hugging Face integration's optimizer step) when
    present, else W&B's own ``_step``."""
    path = Path(path)
    df = _read_csv(path)
    step_col = next((c for c in _WANDB_STEPS if c in df.columns and df[c].notna().any()), None)
    if step_col is None:
        raise DataError(
            f"{path}: no step column (expected one of {', '.join(_WANDB_STEPS)}); "
            f"columns: {', '.join(map(str, df.columns))}"
        )
    return _wide_to_long(df, step_col, path)


def read_lightning_csv(path) -> pd.DataFrame:
    """A Lightning ``CSVLogger`` ``metrics.csv``: a ``step`` column and one column per metric
    (empty where that metric was not logged in the row)."""
    path = Path(path)
    df = _read_csv(path)
    if "step" not in df.columns:
        raise DataError(f"{path}: no 'step' column; columns: {', '.join(map(str, df.columns))}")
    return _wide_to_long(df, "step", path)


READERS = {
    "tensorboard": read_tensorboard,
    "hf-trainer": read_hf_trainer,
    "wandb-csv": read_wandb_csv,
    "lightning-csv": read_lightning_csv,
    "csv": read_eval_csv,
}


def _read_csv(path: Path) -> pd.DataFrame:
    try:
        return pd.read_csv(path, low_memory=False)
    except FileNotFoundError:
        raise DataError(f"{path}: no such file") from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as err:
        raise DataError(f"{path}: not a readable CSV ({str(err).splitlines()[0]})") from None


def _wide_to_long(df: pd.DataFrame, step_col: str, path: Path) -> pd.DataFrame:
    df = df[df[step_col].notna()]
    df = df.assign(
        **{
            step_col: parse_steps(
                df[step_col],
                path,
                step_col,  # header: line 1
                lambda k: f"line {k + 2}",
            )
        }
    )
    parts = []
    for c in df.columns:
        if c in _NOT_TAGS or c == step_col or str(c).startswith("Unnamed:"):
            continue
        v = pd.to_numeric(df[c], errors="coerce")
        keep = v.notna()
        if keep.any():
            parts.append(
                pd.DataFrame(
                    {
                        "tag": str(c),
                        "step": df.loc[keep, step_col].to_numpy(),
                        "value": v[keep].to_numpy(),
                        "order": np.flatnonzero(keep),
                    }
                )
            )
    if not parts:
        return pd.DataFrame(columns=["tag", "step", "value"])
    out = pd.concat(parts).sort_values("order", kind="stable")
    return out[["tag", "step", "value"]].reset_index(drop=True)
