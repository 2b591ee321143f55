"""Helpers every input table of the package is validated with (curves, hyperparameter grids,
mixtures): one-line errors and hashing.

* :class:`DataError` and :func:`where`: a one-line error naming the file, line, run, column,
  step and value; :class:`DataWarning` the same for suspicious but possible values.
* :func:`read_text_csv` reads a CSV as text columns (every row with as many fields as the header,
  no duplicated column names, each row's line number kept); :func:`parse_numeric` parses one
  column in plain decimal notation only (:data:`PLAIN_NUMBER`), naming the first bad cell;
  :func:`start_table` checks required columns and that rows exist.
* :func:`data_hash`: a 16-hex-digit sha256 of a validated table's content, independent of row
  order (stored in fit attrs to tell which data a fit saw).
* :data:`MAX_RAW_LR` (0.1) and :data:`MIN_MODEL_SIZE` (1e4 parameters) catch unit mistakes: a
  learning rate in percent or normalised to its peak, a model size given in millions.
"""

from __future__ import annotations

import bz2
import csv
import gzip
import hashlib
import io
import lzma
import math
import re
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd

#: learning rates above this are taken as a unit mistake (percent, normalised to peak = 1, ...)
MAX_RAW_LR = 0.1


#: model sizes below this are taken as "given in millions"
MIN_MODEL_SIZE = 1e4


#: the only number syntax a table may use: optional sign, ASCII digits with an optional decimal
#: point, optional exponent (``3.5``, ``-2e-4``, ``.5``), or ``nan``/``inf`` (rejected later with a
#: column-specific message). ``float()`` alone would also take ``3_5`` (as 35) or non-ASCII digits.
PLAIN_NUMBER = re.compile(
    r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
    r"|[+-]?(?:inf|infinity|nan)",
    re.IGNORECASE,
)


class DataError(ValueError):
    """Bad input data; the message is one line naming the file, run, column and value."""


class DataWarning(UserWarning):
    """Suspicious but possible input data (e.g. a loss far from its neighbours); the message is
    one line naming the file, line, run, column and value. The command line prints it as
    ``bayescpt: warning: ...``."""


def plain(value, nan_as_none: bool = False):
    """``value`` with NumPy scalars and arrays, also inside dicts and lists (tuples become
    lists), as plain Python; with ``nan_as_none`` a NaN or infinite float becomes None."""
    if isinstance(value, dict):
        return {k: plain(v, nan_as_none) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v, nan_as_none) for v in value]
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        return plain(value.tolist(), nan_as_none)
    if nan_as_none and isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def shown(value) -> str:
    """A value as a message shows it (a cell, a config value): text quoted (``'abc'``), numbers
    plain (``-50``, ``-1.0``; not NumPy's ``np.int64(-50)``), also inside dicts and lists."""
    return repr(plain(value))


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


def refuse_first(bad: pd.Series, df: pd.DataFrame, column: str, at, with_step: bool, text: str):
    """Raise :class:`DataError` at the first row where ``bad`` holds, if any: ``"<where>: value
    <shown value>" + text``, the place named by :func:`where` from ``at = (source, runs, lines)``
    (the table's source, each row's run name and file line) and, ``with_step``, the row's step."""
    if not bad.any():
        return
    source, runs, lines = at
    i = int(bad.idxmax())
    step = df["step"][i] if with_step else None
    raise DataError(
        f"{where(source, runs[i], column, step, lines[i])}: value {shown(df[column][i])}{text}"
    )


def parse_numeric(
    raw: pd.Series, column: str, source, runs: pd.Series, lines: pd.Series, allow_empty: bool
) -> pd.Series:
    """Strings -> floats, one clear error for the first cell that is not a number."""
    text = raw.astype(str).str.strip()
    empty = (text == "") | raw.isna()

    def num(t):
        return float(t) if PLAIN_NUMBER.fullmatch(t) else None

    parsed = [num(t) if not e else float("nan") for t, e in zip(text, empty)]
    bad = pd.Series([p is None for p in parsed], index=raw.index)
    values = pd.Series([np.nan if p is None else p for p in parsed], index=raw.index)
    if bad.any():
        i = bad.idxmax()
        raise DataError(
            f"{where(source, runs[i], column, line=lines[i])}: value {shown(raw[i])} "
            "is not a number"
        )
    if not allow_empty and empty.any():
        i = empty.idxmax()
        raise DataError(
            f"{where(source, runs[i], column, line=lines[i])}: empty; "
            f"every row needs a value in {column!r}"
        )
    return values.astype(float)


def number_column(
    df: pd.DataFrame, column: str, source, lines, run_column: str | None = None
) -> pd.Series:
    """A column that must hold a number in every row, as floats; the first empty or non-numeric
    cell is one :class:`DataError` naming the file, line, run (``run_column``) and column."""
    text = df[column].astype(str).str.strip()
    values = pd.to_numeric(text.where(text != ""), errors="coerce")
    bad = values.isna()
    if bad.any():
        i = int(bad.to_numpy().argmax())
        what = (
            "empty"
            if text.iloc[i] in ("", "nan", "None")
            else f"value {shown(df[column].iloc[i])} is not a number"
        )
        run = None if run_column is None else df[run_column].iloc[i]
        raise DataError(f"{where(source, run, column, line=lines[i])}: {what}; expected a number")
    return values.astype(float)


def read_text_csv(path) -> pd.DataFrame:
    """A CSV file as text columns (validation parses them), or a one-line DataError.

    Blank lines are skipped; a row with more or fewer fields than the header, or a column name
    given twice, is an error naming the line. The CSV line number of each row (header = line 1)
    is kept in ``attrs["lines"]`` for :func:`start_table`."""
    path = Path(path)
    if path.is_dir():
        raise DataError(f"{path}: a directory, not a CSV file")
    if not path.exists():
        raise DataError(f"{path}: no such file")
    try:
        text = _read_bytes(path).decode("utf-8-sig")
        counts, lines = _field_counts(text)
    except (
        UnicodeDecodeError,
        csv.Error,
        OSError,
        EOFError,
        zipfile.BadZipFile,
        lzma.LZMAError,
    ) as err:
        raise DataError(f"{path}: not a readable CSV file ({str(err).splitlines()[0]})") from None
    if not any(counts):
        raise DataError(f"{path}: empty file; expected a header line and rows")
    first = next(i for i, n in enumerate(counts) if n)
    for n, line in zip(counts[first + 1 :], lines[first + 1 :]):
        if n and n != counts[first]:
            raise DataError(f"{where(path, line=line)}: {n} fields; the header has {counts[first]}")
    try:
        raw = pd.read_csv(
            io.StringIO(text),
            dtype=str,
            header=None,
            keep_default_na=False,
            skipinitialspace=True,
            skip_blank_lines=False,
        )
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as err:
        raise DataError(f"{path}: not a readable CSV file ({str(err).splitlines()[0]})") from None
    if len(counts) != len(raw):  # records pandas and csv count differently: plain numbering
        counts = [1] * len(raw)
        lines = list(range(1, len(raw) + 1))
    header = [str(c).strip() for c in raw.iloc[first]]
    seen = set()
    for name in header:
        if name in seen:
            raise DataError(
                f"{where(path, line=lines[first], column=name)}: the column name "
                "appears twice; give each column one header"
            )
        seen.add(name)
    keep = [i for i in range(first + 1, len(raw)) if counts[i]]
    out = raw.iloc[keep].reset_index(drop=True)
    out.columns = header
    out.attrs["lines"] = [lines[i] for i in keep]
    return out


def _read_bytes(path: Path) -> bytes:
    """The file's bytes, decompressed by suffix (.gz, .bz2, .xz, .zip with one member)."""
    suffix = path.suffix.lower()
    if suffix in _OPENERS:
        with _OPENERS[suffix](path, "rb") as fh:
            return fh.read()
    if suffix == ".zip":
        with zipfile.ZipFile(path) as z:
            names = z.namelist()
            if len(names) != 1:
                raise OSError(f"a zip archive with {len(names)} files; expected one CSV")
            return z.read(names[0])
    return path.read_bytes()


_OPENERS = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}


def _field_counts(text: str, quoted: bool | None = None) -> tuple[list, list]:
    """Fields per CSV record (0 for a blank line) and each record's first line number."""
    if quoted is None:
        quoted = '"' in text
    if not quoted:
        rows = text.split("\n")
        if rows and rows[-1] == "":
            rows.pop()
        return (
            [line.count(",") + 1 if line.strip() else 0 for line in rows],
            list(range(1, len(rows) + 1)),
        )
    counts, lines, reader = [], [], csv.reader(io.StringIO(text))
    start = 1
    for row in reader:
        counts.append(len(row) if any(c.strip() for c in row) or len(row) > 1 else 0)
        lines.append(start)
        start = reader.line_num + 1
    return counts, lines


def start_table(
    df: pd.DataFrame, source, required, optional: str = "", from_text: bool = False
) -> tuple[pd.DataFrame, list]:
    """The checks every input table starts with: a copy with stripped column names, the
    ``required`` columns present, at least one row. Returns the copy (index 0..n-1) and each row's
    CSV line number (header = line 1; None when the table did not come from a file)."""
    given_lines = df.attrs.get("lines")
    df = pd.DataFrame(df, copy=True)
    # the line numbers leave attrs here: pandas deep-copies attrs on every operation, and a list
    # of one entry per row made validating a 200k-row table take minutes instead of seconds
    df.attrs = {k: v for k, v in df.attrs.items() if k != "lines"}
    df.columns = [str(c).strip() for c in df.columns]
    twice = df.columns[df.columns.duplicated()]
    if len(twice):
        raise DataError(
            f"{where(source, column=twice[0])}: the column name appears twice; give "
            "each column one header"
        )
    missing = [c for c in required if c not in df.columns]
    if missing:
        raise DataError(
            f"{source}: missing column(s) {missing}; found {list(df.columns)}; "
            f"expected {list(required)}" + (f" (+ optional {optional})" if optional else "")
        )
    if df.empty:
        raise DataError(f"{source}: no rows")
    df = df.reset_index(drop=True)
    if not from_text:
        return df, [None] * len(df)
    if given_lines is not None and len(given_lines) == len(df):
        return df, list(given_lines)
    return df, list(np.arange(len(df)) + 2)


def data_hash(df: pd.DataFrame) -> str:
    """A short, order-independent hash of a validated table's content."""
    cols = [
        c
        for c in (
            "run",
            "val_set",
            "step",
            "lr",
            "loss",
            "model_size",
            "phase",
            "val_role",
            "replay_ratio",
        )
        if c in df.columns
    ]
    canon = (
        df[cols].sort_values(["run", "val_set", "step"]).to_csv(index=False, float_format="%.10g")
    )
    return hashlib.sha256(canon.encode()).hexdigest()[:16]
