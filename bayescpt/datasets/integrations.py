"""Hooks for training loops: write the evaluations of a run as it trains, in the tidy curve CSV.

:class:`EvalLogger` appends one row per call (``run, step, lr, loss, val_set`` and the optional
``val_role, phase, model_size`` given at construction), flushed at once, never truncating an
existing file (a resumed run appends to it; the later value of a step logged twice wins on
import). When every row has its learning rate and the first row is at step 0 or 1, ``bayescpt fit``
reads the file as it is; otherwise ``bayescpt import FILE --from csv`` completes it (the LR
interpolated between the rows that have one, or from ``--schedule``).

:class:`BayescptCallback` has the shape of a Hugging Face ``TrainerCallback`` (``on_evaluate``,
``on_log``; every other ``on_*`` event is a no-op) without importing transformers: pass it in
``Trainer(callbacks=[...])``.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import numpy as np
import pandas as pd

from bayescpt.core.tables import DataError, shown
from bayescpt.curves.data.table import DEFAULT_VAL_SET

BASE_COLUMNS = ("run", "step", "lr", "loss", "val_set")
OPTIONAL_COLUMNS = ("val_role", "phase", "model_size")


class EvalLogger:
    """Append evaluations of one run to ``path`` (a CSV in the tidy curve format).

    ``lr`` and ``loss`` are raw learning rates and losses in nats; ``step`` counts optimizer
    steps. The header is written when the file is new or empty; an existing file must have the
    same columns (``DataError`` otherwise), and is only ever appended to.
    """

    def __init__(
        self,
        path,
        run: str = "run",
        val_set: str = DEFAULT_VAL_SET,
        val_role: str | None = None,
        phase: str | None = None,
        model_size: float | None = None,
    ):
        self.path, self.run, self.val_set = Path(path), str(run), str(val_set)
        self.fixed = {
            k: v
            for k, v in (("val_role", val_role), ("phase", phase), ("model_size", model_size))
            if v is not None
        }
        self.columns = list(BASE_COLUMNS) + [c for c in OPTIONAL_COLUMNS if c in self.fixed]
        if self.path.exists() and self.path.stat().st_size > 0:
            with self.path.open(newline="") as fh:
                header = next(csv.reader(fh), [])
            if header != self.columns:
                raise DataError(
                    f"{self.path}: columns {', '.join(header)}; this logger writes "
                    f"{', '.join(self.columns)} (another file, or other options)"
                )
        else:
            self._write(self.columns)

    def log(
        self, step: int, loss: float, lr: float | None = None, val_set: str | None = None
    ) -> None:
        """One evaluation: the ``loss`` on ``val_set`` (default: the logger's) after ``step``."""
        self._row(step, lr, loss, val_set)

    def log_lr(self, step: int, lr: float) -> None:
        """The learning rate at ``step``, without a loss (a row with an empty loss)."""
        self._row(step, lr, None, None)

    def _row(self, step, lr, loss, val_set) -> None:
        if int(step) != step or step < 0:
            raise ValueError(f"step={step!r}; expected a non-negative whole number of steps")

        def num(v):
            return "" if v is None else repr(float(v))

        row = {
            "run": self.run,
            "step": int(step),
            "lr": num(lr),
            "loss": num(loss),
            "val_set": self.val_set if val_set is None else str(val_set),
            **self.fixed,
        }
        self._write([row[c] if c != "model_size" else num(row[c]) for c in self.columns])

    def _write(self, values) -> None:
        with self.path.open("a", newline="") as fh:  # closed, so flushed, after each row
            csv.writer(fh).writerow(values)


_EVAL_LOSS = re.compile(r"^eval_(?:(.+)_)?loss$")


class BayescptCallback:
    """A Hugging Face ``TrainerCallback``-shaped hook writing through an :class:`EvalLogger`.

    ``on_evaluate`` writes each ``eval_loss`` (``eval_<name>_loss`` for several evaluation sets:
    val_set ``<name>``) at ``state.global_step`` with the scheduler's current learning rate;
    ``on_log`` writes the logged ``learning_rate`` as an LR row. Only the main process writes.
    """

    def __init__(self, path, run: str = "run", val_set: str = DEFAULT_VAL_SET, **options):
        self.logger = EvalLogger(path, run=run, val_set=val_set, **options)
        self._lr = {}

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and "learning_rate" in logs and _main(state):
            self._lr[state.global_step] = float(logs["learning_rate"])
            self.logger.log_lr(state.global_step, logs["learning_rate"])

    def on_evaluate(self, args, state, control, metrics=None, **kwargs):
        if not metrics or not _main(state):
            return
        lr = self._lr.get(state.global_step)
        sched = kwargs.get("lr_scheduler")
        if lr is None and sched is not None and hasattr(sched, "get_last_lr"):
            lr = float(sched.get_last_lr()[0])
        for key, value in metrics.items():
            m = _EVAL_LOSS.match(key)
            if m and value is not None and np.isfinite(value):
                self.logger.log(state.global_step, value, lr, m.group(1))

    def __getattr__(self, name):
        if name.startswith("on_"):  # the Trainer's other events
            return lambda *args, **kwargs: None
        raise AttributeError(name)


def _main(state) -> bool:
    return bool(getattr(state, "is_world_process_zero", True))


def parse_steps(raw: pd.Series, source, column: str, place) -> pd.Series:
    """Logged steps (numbers or their text) as int64; the first that is not a whole number of
    steps >= 0 (``10.7``, ``'abc'``, ``True``, an empty cell) is a DataError naming ``source``,
    ``place(label)`` (e.g. ``"line 7"`` for the row labelled 5), the column and the value."""
    text = raw.map(lambda v: v.strip() if isinstance(v, str) else v)
    num = pd.to_numeric(text.where(text != ""), errors="coerce").astype(float)
    flag = raw.map(lambda v: isinstance(v, (bool, np.bool_)))
    bad = flag.to_numpy(dtype=bool) | ~np.isfinite(num.to_numpy()) | (num.to_numpy() < 0)
    bad |= np.isfinite(num.to_numpy()) & (num.to_numpy() != np.floor(num.to_numpy()))
    if bad.any():
        k = raw.index[int(np.argmax(bad))]
        raise DataError(
            f"{source}, {place(k)}, column {column!r}: value {shown(raw[k])}; "
            "expected a whole number of optimizer steps >= 0 (steps are whole "
            "numbers)"
        )
    return num.astype(np.int64)


def read_eval_csv(path) -> pd.DataFrame:
    """Read a file written by :class:`EvalLogger` (or any tidy curve CSV with gaps in ``lr``) as
    a long table ``tag, step, value`` in file order: tag ``lr`` and ``loss@<val_set>``.

    ``attrs`` carries what is constant or per step: ``run``, ``val_role`` (val_set -> role),
    ``phase`` (step -> phase) and ``model_size``.
    """
    path = Path(path)
    try:
        df = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (FileNotFoundError, pd.errors.ParserError, pd.errors.EmptyDataError) as err:
        raise DataError(f"{path}: not a readable CSV ({str(err).splitlines()[0]})") from None
    missing = [c for c in ("step", "lr", "loss") if c not in df.columns]
    if missing:
        raise DataError(
            f"{path}: no column(s) {', '.join(missing)}; columns: {', '.join(df.columns)}"
        )
    runs = sorted(set(df["run"].str.strip()) - {""}) if "run" in df.columns else []
    if len(runs) > 1:
        raise DataError(f"{path}: several runs ({', '.join(runs)}); import one file per run")
    vs = (
        df["val_set"].str.strip().replace("", DEFAULT_VAL_SET)
        if "val_set" in df.columns
        else pd.Series(DEFAULT_VAL_SET, index=df.index)
    )
    steps = parse_steps(df["step"], path, "step", lambda k: f"line {k + 2}")
    parts = []
    for col in ("lr", "loss"):
        given = df[col].str.strip() != ""
        tag = "lr" if col == "lr" else "loss@" + vs[given]
        parts.append(
            pd.DataFrame(
                {
                    "tag": tag,
                    "step": steps[given],
                    "value": pd.to_numeric(df.loc[given, col], errors="coerce"),
                    "order": np.flatnonzero(given),
                }
            )
        )
    out = pd.concat(parts).sort_values("order", kind="stable")
    out = out[["tag", "step", "value"]].reset_index(drop=True)
    out.attrs["run"] = runs[0] if runs else None
    if "val_role" in df.columns:
        roles = df.assign(vs=vs).loc[df["val_role"].str.strip() != ""]
        out.attrs["val_role"] = dict(zip(roles["vs"], roles["val_role"].str.strip()))
    if "phase" in df.columns:
        ph = df.loc[df["phase"].str.strip() != ""]
        out.attrs["phase"] = dict(zip(steps[ph.index].tolist(), ph["phase"]))
    if "model_size" in df.columns and (df["model_size"].str.strip() != "").any():
        out.attrs["model_size"] = float(
            df.loc[df["model_size"].str.strip() != "", "model_size"].iloc[-1]
        )
    return out
