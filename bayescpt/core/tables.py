"""Helpers every input table of the package is validated with (curves, hyperparameter grids,
mixtures): one-line errors and hashing.

* :class:`DataError` and :func:`where`: a one-line error naming the file, line, run, column,
  step and value.
* :func:`read_text_csv` reads a CSV as text columns; :func:`parse_numeric` parses one column,
  naming the first bad cell; :func:`start_table` checks required columns and that rows exist.
* :func:`data_hash`: a 16-hex-digit sha256 of a validated table's content, independent of row
  order (stored in fit attrs to tell which data a fit saw).
* :data:`MAX_RAW_LR` (0.1) and :data:`MIN_MODEL_SIZE` (1e4 parameters) catch unit mistakes: a
  learning rate in percent or normalised to its peak, a model size given in millions.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pandas as pd

#: learning rates above this are taken as a unit mistake (percent, normalised to peak = 1, ...)
MAX_RAW_LR = 0.1


#: model sizes below this are taken as "given in millions"
MIN_MODEL_SIZE = 1e4


class DataError(ValueError):
    """Bad input data; the message is one line naming the file, run, column and value."""


def where(source, run=None, column=None, step=None, line=None) -> str:
    parts = [str(source)]
    if line is not None:
        parts.append(f"line {line}")
    if run is not None:
        parts.append(f"run {run!r}")
    if column is not None:
        parts.append(f"column {column!r}")
    if step is not None:
        parts.append(f"step {step}")
    return ", ".join(parts)


def parse_numeric(raw: pd.Series, column: str, source, runs: pd.Series, lines: pd.Series,
                   allow_empty: bool) -> pd.Series:
    """Strings -> floats, one clear error for the first cell that is not a number."""
    text = raw.astype(str).str.strip()
    empty = (text == "") | raw.isna()
    def num(t):
        try:
            return float(t)
        except ValueError:
            return None
    parsed = [num(t) if not e else float("nan") for t, e in zip(text, empty)]
    bad = pd.Series([p is None for p in parsed], index=raw.index)
    values = pd.Series([np.nan if p is None else p for p in parsed], index=raw.index)
    if bad.any():
        i = bad.idxmax()
        raise DataError(f"{where(source, runs[i], column, line=lines[i])}: value {raw[i]!r} "
                        "is not a number")
    if not allow_empty and empty.any():
        i = empty.idxmax()
        raise DataError(f"{where(source, runs[i], column, line=lines[i])}: empty; "
                        f"every row needs a value in {column!r}")
    return values.astype(float)


def read_text_csv(path) -> pd.DataFrame:
    """A CSV file as text columns (validation parses them), or a one-line DataError."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: no such file")
    try:
        raw = pd.read_csv(path, dtype=str, keep_default_na=False, skipinitialspace=True)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as err:
        raise DataError(f"{path}: not a readable CSV file ({str(err).splitlines()[0]})") from None
    return raw


def start_table(df: pd.DataFrame, source, required, optional: str = "",
                from_text: bool = False) -> tuple[pd.DataFrame, list]:
    """The checks every input table starts with: a copy with stripped column names, the
    ``required`` columns present, at least one row. Returns the copy (index 0..n-1) and each row's
    CSV line number (header = line 1; None when the table did not come from a file)."""
    df = df.copy()
    df.columns = [str(c).strip() for c in df.columns]
    missing = [c for c in required if c not in df.columns]
    if missing:
        raise DataError(f"{source}: missing column(s) {missing}; found {list(df.columns)}; "
                        f"expected {list(required)}" + (f" (+ optional {optional})" if optional
                                                        else ""))
    if df.empty:
        raise DataError(f"{source}: no rows")
    df = df.reset_index(drop=True)
    return df, list(np.arange(len(df)) + 2) if from_text else [None] * len(df)


def data_hash(df: pd.DataFrame) -> str:
    """A short, order-independent hash of a validated table's content."""
    cols = [c for c in ("run", "val_set", "step", "lr", "loss", "model_size", "phase", "val_role",
                        "replay_ratio") if c in df.columns]
    canon = df[cols].sort_values(["run", "val_set", "step"]).to_csv(index=False,
                                                                     float_format="%.10g")
    return hashlib.sha256(canon.encode()).hexdigest()[:16]
