"""The hyperparameter-grid table: one row per finished training run.

Columns (exact names)::

    model_size  float  N, non-embedding parameters (a count, e.g. 215e6)
    tokens      float  D, training tokens of the run (a count, e.g. 4e9)
    lr          float  peak learning rate (raw, e.g. 2e-3)
    batch_size  float  batch size in tokens (sequences x sequence length, e.g. 128 x 2048)
    loss        float  final validation loss in nats (> 0); diverged runs keep their (large) loss
    group       str    optional, the data set (default ``"default"``)

A *cell* is one (group, model_size, tokens): the runs of one LR x batch-size grid. Every problem
raises :class:`bayescpt.core.tables.DataError` with one line naming the file, line, column and
value.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pandas as pd

from bayescpt.core.tables import (
    MAX_RAW_LR,
    MIN_MODEL_SIZE,
    DataError,
    number_column,
    read_text_csv,
    start_table,
    where,
)

REQUIRED = ("model_size", "tokens", "lr", "batch_size", "loss")
DEFAULT_GROUP = "default"
#: batch sizes below this many tokens are taken as counts of sequences
MIN_BATCH_TOKENS = 1024
#: token budgets below this are taken as "given in billions"
MIN_TOKENS = 1e6
#: a cell needs this many distinct learning rates and batch sizes to locate its optimum
MIN_LEVELS = 3
#: the Step Law runs use sequences of this many tokens (their ``bs`` is in sequences)
STEPLAW_SEQ_LEN = 2048


def _not_positive(v: np.ndarray) -> np.ndarray:
    """Where values are not positive finite numbers."""
    return ~np.isfinite(v) | (v <= 0)


#: the value checks of every row, in order: (column, which values are bad, what is expected)
VALUE_CHECKS = (
    ("model_size", _not_positive, "a positive parameter count"),
    (
        "model_size",
        lambda v: v < MIN_MODEL_SIZE,
        "the number of non-embedding parameters (e.g. 215e6), not millions or billions",
    ),
    ("tokens", _not_positive, "a positive number of training tokens"),
    (
        "tokens",
        lambda v: v < MIN_TOKENS,
        "the number of training tokens (e.g. 4e9), not billions",
    ),
    ("lr", _not_positive, "a positive, finite raw learning rate"),
    (
        "lr",
        lambda v: v > MAX_RAW_LR,
        f"a raw learning rate (at most {MAX_RAW_LR:g}), not percent or normalised",
    ),
    ("batch_size", _not_positive, "a positive batch size in tokens"),
    (
        "batch_size",
        lambda v: v < MIN_BATCH_TOKENS,
        "the batch size in tokens (sequences x sequence length), not in sequences",
    ),
    (
        "loss",
        _not_positive,
        "a positive, finite loss in nats (keep "
        "diverged runs with their large finite loss; drop runs that crashed without one)",
    ),
)


def read_grid(path) -> pd.DataFrame:
    """Read and validate a grid CSV (see the module docstring)."""
    path = Path(path)
    raw = read_text_csv(path)
    return validate_grid(raw, source=path, _lines=True)


def validate_grid(df: pd.DataFrame, source="<DataFrame>", _lines: bool = False) -> pd.DataFrame:
    """Check a grid table; returns a clean copy sorted by cell, with float columns and ``group``."""
    df, lines = start_table(df, source, REQUIRED, "group", _lines)
    for c in REQUIRED:
        df[c] = number_column(df, c, source, lines)

    def fail(mask, column, expected):
        i = int(np.asarray(mask).argmax())
        raise DataError(
            f"{where(source, column=column, line=lines[i])}: value "
            f"{float(df[column].iloc[i])!r}; expected {expected}"
        )

    for column, bad, expected in VALUE_CHECKS:
        mask = bad(df[column].to_numpy())
        if mask.any():
            fail(mask, column, expected)

    if "group" in df.columns:
        g = df["group"].astype(str).str.strip()
        df["group"] = g.where((g != "") & df["group"].notna(), DEFAULT_GROUP)
    else:
        df["group"] = DEFAULT_GROUP

    _refuse_repeats(df, source, lines)
    _refuse_few_levels(df, source)
    return df.sort_values(
        ["group", "model_size", "tokens", "lr", "batch_size"], kind="stable"
    ).reset_index(drop=True)[
        list(REQUIRED) + ["group"] + [c for c in df.columns if c not in REQUIRED and c != "group"]
    ]


def _refuse_repeats(df: pd.DataFrame, source, lines: list) -> None:
    """Refuse a run given twice (the same group, size, tokens, lr and batch size)."""
    key = ["group", "model_size", "tokens", "lr", "batch_size"]
    dup = df.duplicated(key, keep="first").to_numpy()
    if dup.any():
        i = int(dup.argmax())
        first = int(df.duplicated(key, keep=False).to_numpy().argmax())
        first_at = f"line {lines[first]}" if lines[first] is not None else f"row {first}"
        raise DataError(
            f"{where(source, line=lines[i])}: duplicate run (group "
            f"{df['group'].iloc[i]!r}, model_size {df['model_size'].iloc[i]:g}, tokens "
            f"{df['tokens'].iloc[i]:g}, lr {df['lr'].iloc[i]:g}, batch_size "
            f"{df['batch_size'].iloc[i]:g}) also on {first_at}; average repeats first"
        )


def _refuse_few_levels(df: pd.DataFrame, source) -> None:
    """Refuse a cell with fewer than :data:`MIN_LEVELS` distinct learning rates or batch sizes."""
    for (grp, n, d), c in df.groupby(["group", "model_size", "tokens"], sort=True):
        for column in ("lr", "batch_size"):
            if c[column].nunique() < MIN_LEVELS:
                raise DataError(
                    f"{source}, cell (group {grp!r}, model_size {n:g}, tokens {d:g}): "
                    f"only {c[column].nunique()} distinct {column} value(s); expected at"
                    f" least {MIN_LEVELS} to locate the optimum"
                )


def load_steplaw(path, loss_column: str = "smooth loss") -> pd.DataFrame:
    """The Step Law grid (``steplaw/dense_lr_bs_loss.csv``) as a validated grid table.

    ``N`` -> model_size, ``D`` -> tokens, ``bs`` (sequences of 2048 tokens) -> batch_size in
    tokens, ``smooth loss`` (the authors' fit target) -> loss; ``exp_name`` is kept as ``run``.
    """
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: no such file")
    raw = pd.read_csv(path)
    need = ["N", "D", "lr", "bs", loss_column]
    missing = [c for c in need if c not in raw.columns]
    if missing:
        raise DataError(f"{path}: missing column(s) {missing}; not the Step Law grid file")
    df = pd.DataFrame(
        {
            "model_size": raw["N"].astype(float),
            "tokens": raw["D"].astype(float),
            "lr": raw["lr"].astype(float),
            "batch_size": raw["bs"].astype(float) * STEPLAW_SEQ_LEN,
            "loss": raw[loss_column].astype(float),
        }
    )
    if "exp_name" in raw.columns:
        df["run"] = raw["exp_name"].astype(str)
    return validate_grid(df, source=path)


def cells(df: pd.DataFrame) -> pd.DataFrame:
    """One row per cell: group, model_size, tokens, runs, and the empirically best run's lr,
    batch_size and loss (the grid argmin)."""
    rows = []
    for (grp, n, d), c in df.groupby(["group", "model_size", "tokens"], sort=True):
        best = c.loc[c["loss"].idxmin()]
        rows.append(
            {
                "group": grp,
                "model_size": n,
                "tokens": d,
                "runs": len(c),
                "best_lr": best["lr"],
                "best_batch_size": best["batch_size"],
                "best_loss": best["loss"],
            }
        )
    return pd.DataFrame(rows)


def grid_hash(df: pd.DataFrame) -> str:
    """A short, order-independent hash of a validated grid's content."""
    key = ["group", "model_size", "tokens", "lr", "batch_size", "loss"]
    canon = df[key].sort_values(key).to_csv(index=False, float_format="%.10g")
    return hashlib.sha256(canon.encode()).hexdigest()[:16]


def describe_grid(df: pd.DataFrame) -> str:
    """A short human summary: runs, cells, sizes, token budgets."""
    return (
        f"{len(df)} runs in {df.groupby(['group', 'model_size', 'tokens']).ngroups} cells; "
        f"model sizes {sorted({f'{x:.3g}' for x in df['model_size']}, key=float)}; tokens "
        f"{df['tokens'].min():.3g}-{df['tokens'].max():.3g}"
    )


def read_any_grid(path):
    """A grid CSV in bayescpt's columns, or the Step Law file (recognised by its header)."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: no such file")
    try:
        head = list(pd.read_csv(path, nrows=0).columns)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as err:
        raise DataError(f"{path}: not a readable CSV file ({str(err).splitlines()[0]})") from None
    if {"N", "D", "bs", "smooth loss"} <= set(head) and "model_size" not in head:
        return load_steplaw(path)
    return read_grid(path)
