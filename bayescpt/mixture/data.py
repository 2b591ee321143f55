"""The tidy mixture table, its validation, and loaders for the shared public formats.

One row per evaluated checkpoint of one run on one validation set::

    run        str    one training run: one mixture, one model (required)
    model_size float  parameters (a count, e.g. 70e6; constant per run)
    ratio      float  R = domain tokens / all CPT tokens, in [0, 1], constant per run
    tokens     float  CPT tokens seen (any consistent unit, e.g. optimizer steps), >= 0;
                      rows at tokens = 0 are the run's pre-CPT baseline (the base checkpoint)
    val_set    str    the validation set (e.g. "pile", "python")
    val_role   str    "general" (the loss to protect) or "domain" (the loss to improve);
                      constant per val_set
    loss       float  validation loss in nats (> 0, finite)

Each (run, val_set, tokens) appears once. Every problem raises :class:`DataError` with one line
naming the file, line, run, column and value and what was expected.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd

from bayescpt.core.tables import (
    MIN_MODEL_SIZE,
    DataError,
    number_column,
    read_text_csv,
    start_table,
    where,
)

COLUMNS = ("run", "model_size", "ratio", "tokens", "val_set", "val_role", "loss")
ROLES = ("general", "domain")

__all__ = [
    "COLUMNS",
    "ROLES",
    "DataError",
    "read_mixture",
    "validate_mixture",
    "mixture_hash",
    "baselines",
    "load_2mix",
    "load_ct",
    "load_cmr_table2",
    "describe",
]


def read_mixture(path) -> pd.DataFrame:
    """Read and validate a mixture CSV (see the module docstring)."""
    path = Path(path)
    raw = read_text_csv(path)
    return validate_mixture(raw, source=path, _from_text=True)


def _fail(source, df, lines, mask, col, expected, raw=None):
    i = int(np.asarray(mask).argmax())
    value = (raw if raw is not None else df)[col].iloc[i]
    if not isinstance(value, str):
        value = f"{float(value):g}" if isinstance(value, (float, np.floating)) else str(value)
    raise DataError(
        f"{where(source, df['run'].iloc[i], col, line=lines[i])}: value "
        f"{value!r}; expected {expected}"
    )


def validate_mixture(
    df: pd.DataFrame, source="<DataFrame>", _from_text: bool = False
) -> pd.DataFrame:
    """Check a mixture table and return a clean, sorted copy (run, val_set, tokens)."""
    df, lines = start_table(df, source, COLUMNS, from_text=_from_text)
    for col in ("run", "val_set", "val_role"):
        s = df[col].astype(str).str.strip()
        empty = (s == "") | df[col].isna() | (s.str.lower() == "nan")
        if empty.any():
            i = int(empty.to_numpy().argmax())
            raise DataError(
                f"{where(source, column=col, line=lines[i])}: empty; every row needs a {col}"
            )
        df[col] = s
    raw = df.copy()
    for col in ("model_size", "ratio", "tokens", "loss"):
        df[col] = number_column(df, col, source, lines, run_column="run")

    bad = ~np.isfinite(df["loss"]) | (df["loss"] <= 0)
    if bad.any():
        _fail(source, df, lines, bad, "loss", "a positive, finite loss in nats", raw)
    bad = ~np.isfinite(df["ratio"]) | (df["ratio"] < 0) | (df["ratio"] > 1)
    if bad.any():
        _fail(
            source,
            df,
            lines,
            bad,
            "ratio",
            "the domain share of the mixture, in [0, 1] (not percent)",
            raw,
        )
    bad = ~np.isfinite(df["tokens"]) | (df["tokens"] < 0)
    if bad.any():
        _fail(source, df, lines, bad, "tokens", "CPT tokens seen, finite and >= 0", raw)
    bad = ~np.isfinite(df["model_size"]) | (df["model_size"] <= 0)
    if bad.any():
        _fail(source, df, lines, bad, "model_size", "a positive parameter count (e.g. 70e6)", raw)
    bad = df["model_size"] < MIN_MODEL_SIZE
    if bad.any():
        _fail(
            source,
            df,
            lines,
            bad,
            "model_size",
            "the number of parameters (e.g. 70e6), not millions or billions",
            raw,
        )
    bad = ~df["val_role"].isin(ROLES)
    if bad.any():
        _fail(source, df, lines, bad, "val_role", f"one of {list(ROLES)}", raw)

    for col in ("model_size", "ratio"):
        n = df.groupby("run")[col].nunique()
        if (n > 1).any():
            r = n.index[n > 1][0]
            vals = sorted(df.loc[df["run"] == r, col].unique())
            raise DataError(f"{where(source, r, col)}: several values {vals}; a run has one {col}")
    n = df.groupby("val_set")["val_role"].nunique()
    if (n > 1).any():
        v = n.index[n > 1][0]
        raise DataError(
            f"{source}, val_set {v!r}, column 'val_role': both 'general' and "
            "'domain'; a validation set has one role"
        )
    dup = df.duplicated(["run", "val_set", "tokens"])
    if dup.any():
        i = int(dup.to_numpy().argmax())
        raise DataError(
            f"{where(source, df['run'].iloc[i], 'tokens', line=lines[i])}: "
            f"{df['tokens'].iloc[i]:g} appears twice for val_set "
            f"{df['val_set'].iloc[i]!r}; each (run, val_set, tokens) appears once"
        )
    trained = df[df["tokens"] > 0]
    if trained.empty:
        raise DataError(f"{source}: no rows with tokens > 0; the laws need losses after CPT")
    return df.sort_values(["run", "val_set", "tokens"], kind="stable").reset_index(drop=True)


def mixture_hash(df: pd.DataFrame) -> str:
    """A short, order-independent hash of a validated mixture table's content."""
    canon = (
        df[list(COLUMNS)]
        .sort_values(["run", "val_set", "tokens"])
        .to_csv(index=False, float_format="%.10g")
    )
    return hashlib.sha256(canon.encode()).hexdigest()[:16]


def baselines(df: pd.DataFrame) -> pd.DataFrame:
    """Pre-CPT loss per (model_size, val_set): the mean of the rows at tokens = 0 (all runs of a
    size share one base checkpoint, so these agree). Columns model_size, val_set, val_role, loss0.
    """
    b = df[df["tokens"] == 0]
    out = (
        b.groupby(["model_size", "val_set", "val_role"], as_index=False)["loss"]
        .mean()
        .rename(columns={"loss": "loss0"})
    )
    return out


def describe(df: pd.DataFrame) -> str:
    """One line: runs, sizes, ratios, validation sets by role, rows, baseline rows."""
    info = {
        "runs": int(df["run"].nunique()),
        "model_sizes": sorted(float(x) for x in df["model_size"].unique()),
        "ratios": sorted(round(float(x), 6) for x in df["ratio"].unique()),
        "val_sets": {r: sorted(df.loc[df["val_role"] == r, "val_set"].unique()) for r in ROLES},
        "rows": int(len(df)),
        "baseline_rows": int((df["tokens"] == 0).sum()),
    }
    return json.dumps(info)


# ----------------------------------------------------------------------------------------------
# Loaders for the shared formats (yegcjs/mixinglaws, Gu et al. 2024 Table 2)
# ----------------------------------------------------------------------------------------------

_VALID = re.compile(r"(?:pythia-pile\.valid\.|starcoder\.)?(.+?)(?:\.valid)?\.bin$")


def _read_mixinglaws(path) -> pd.DataFrame:
    """A mixinglaws result file: tab-separated ``checkpoint_path, validation_file, loss``, no
    header. Adds ``run`` (the second-to-last path component), ``ckpt`` (the last one) and
    ``subset`` (validation file name without prefix/suffix, e.g. ``Pile-CC``, ``python``)."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: no such file")
    f = pd.read_csv(
        path,
        sep="\t",
        header=None,
        names=["ckpt_path", "valid_file", "loss"],
        dtype={"loss": float},
    )
    if f.isna().any().any() or f.shape[1] != 3:
        raise DataError(
            f"{path}: expected 3 tab-separated columns (checkpoint, validation file, "
            "loss) on every line"
        )
    parts = f["ckpt_path"].str.rstrip("/").str.split("/")
    f["run"] = parts.str[-2]
    f["ckpt"] = parts.str[-1]
    f["subset"] = f["valid_file"].str.split("/").str[-1].str.extract(_VALID)[0]
    return f


def _size_of(name: str) -> float:
    m = re.match(r"^(\d+(?:\.\d+)?)([MB])", name)
    if not m:
        raise DataError(f"{name}: cannot read the model size from the name")
    return float(m.group(1)) * (1e6 if m.group(2) == "M" else 1e9)


def load_2mix(root, sizes=("70M", "160M")) -> pd.DataFrame:
    """Data Mixing Laws' two-domain experiment (``mixinglaws/2Mix/{size}.txt``, Ye et al. 2024).

    Pythia-style models *pre-trained from scratch* on Github + Pile-CC. Run directories are named
    ``{size}_base2_{i}-{github share}-{pile-cc share}``: the first share is Github's (its loss
    falls as that share grows, which confirms the order). Here Github is the ``domain`` val_set,
    ``ratio`` its share, Pile-CC the ``general`` one; ``tokens`` are optimizer steps (10K-30K;
    batch size not published). There is no pre-CPT baseline (no rows at tokens = 0): the table
    supports the loss laws but not CMR decisions.
    """
    root = Path(root)
    frames = []
    for size in sizes:
        f = _read_mixinglaws(root / f"{size}.txt")
        shares = f["run"].str.extract(r"_\d+-([0-9.]+)-([0-9.]+)$").astype(float)
        if shares.isna().any().any():
            raise DataError(
                f"{root / (size + '.txt')}: run names must end in '_{{i}}-{{github}}-{{pile-cc}}'"
            )
        role = f["subset"].map({"Github": "domain", "Pile-CC": "general"})
        if role.isna().any():
            raise DataError(
                f"{root / (size + '.txt')}: unexpected validation set "
                f"{f.loc[role.isna(), 'subset'].iloc[0]!r}"
            )
        frames.append(
            pd.DataFrame(
                {
                    "run": f["run"],
                    "model_size": _size_of(size),
                    "ratio": shares[0],
                    "tokens": f["ckpt"].astype(float),
                    "val_set": f["subset"],
                    "val_role": role,
                    "loss": f["loss"],
                }
            )
        )
    return validate_mixture(pd.concat(frames, ignore_index=True), source=root)


def load_ct(path, weights, keep_subsets: bool = False) -> pd.DataFrame:
    """Data Mixing Laws' continual pre-training experiment (``mixinglaws/ct/70M.txt``).

    Pythia-70M's step-20000 checkpoint continued on Pile + Python code. Run directories are named
    ``70M_ct_{i}-{pile share}-{python share}`` (the data README: "Pile fraction 0.125/.../0.5");
    ``ratio`` is the *domain* (Python) share = 1 - Pile share. ``tokens`` are CPT optimizer steps
    (1K-10K; batch size not published). The base checkpoint's rows become each run's rows at
    tokens = 0. The general loss is the Pile loss: the 22 Pile subsets averaged with the weights
    in ``weights`` (``valid_weight.json``, the subsets' token shares in the Pile validation set,
    summing to 1), as val_set ``pile``; the domain loss is ``python`` (``starcoder.python.valid``).
    ``keep_subsets`` adds the 22 subsets as their own ``general`` val_sets too.

    The file repeats one row (run 9, step 10000, Pile-CC) with an identical loss; exact repeats
    are dropped, conflicting ones are an error.
    """
    path = Path(path)
    w = json.loads(Path(weights).read_text())
    f = _read_mixinglaws(path)
    f = f.drop_duplicates(["ckpt_path", "subset", "loss"])
    dup = f.duplicated(["ckpt_path", "subset"])
    if dup.any():
        r = f[dup].iloc[0]
        raise DataError(
            f"{path}: run {r['run']!r}, checkpoint {r['ckpt']}: two different losses "
            f"for {r['subset']!r}"
        )
    base = f["ckpt_path"].str.contains("model_configs")
    runs = f.loc[~base, "run"].unique()
    size = _size_of(path.stem)
    trained = f[~base].copy()
    trained["tokens"] = trained["ckpt"].astype(float)
    pile = trained["run"].str.extract(r"_\d+-([0-9.]+)-([0-9.]+)$")[0].astype(float)
    trained["ratio"] = 1.0 - pile
    b = f[base]
    rows = [trained]
    for run in runs:
        r = trained.loc[trained["run"] == run, "ratio"].iloc[0]
        rows.append(b.assign(run=run, tokens=0.0, ratio=r))
    g = pd.concat(rows, ignore_index=True)
    missing = set(w) - set(g["subset"])
    if missing:
        raise DataError(
            f"{path}: no losses for Pile subset(s) {sorted(missing)} named in {weights}"
        )
    g["w"] = g["subset"].map(w)
    pile_rows = g[g["w"].notna()]
    counts = pile_rows.groupby(["run", "tokens"])["w"].count()
    if (counts != len(w)).any():
        (run, tok) = counts.index[(counts != len(w)).to_numpy().argmax()]
        raise DataError(
            f"{path}: run {run!r}, tokens {tok:g}: {counts[(run, tok)]} of the "
            f"{len(w)} Pile subsets; cannot form the weighted Pile loss"
        )
    agg = (
        pile_rows.assign(wl=pile_rows["w"] * pile_rows["loss"])
        .groupby(["run", "tokens", "ratio"], as_index=False)[["wl", "w"]]
        .sum()
    )
    agg["loss"] = agg["wl"] / agg["w"]
    out = [agg.assign(val_set="pile", val_role="general")]
    py = g[g["subset"] == "python"]
    if py.empty:
        raise DataError(f"{path}: no 'starcoder.python.valid' rows (the domain loss)")
    out.append(py.assign(val_set="python", val_role="domain"))
    if keep_subsets:
        out.append(pile_rows.assign(val_set="pile/" + pile_rows["subset"], val_role="general"))
    res = pd.concat(out, ignore_index=True)
    res["model_size"] = size
    return validate_mixture(res[list(COLUMNS)], source=path)


def load_cmr_table2(path) -> pd.DataFrame:
    """Gu et al. 2024 Table 2 (``paper-figures/cmr_table2_domain_loss_vs_ratio.csv``): final
    domain loss vs domain ratio for 460M/940M/1.6B/3.1B (rows ``observed`` at R = 1, 0.75, 0.5,
    0.333 and ``observed_gt`` at R = 0.25). The paper does not state the budget of this table; we
    set ``tokens`` = 1 (one unit: "the final budget"), which only the final-budget laws use.
    Returns all five ratios; split off R = 0.25 for the paper's check. ``0.333`` is the paper's
    rounding of 1/3 and is kept as printed.
    """
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: no such file")
    t = pd.read_csv(path)
    t = t[t["row_type"].isin(["observed", "observed_gt"])]
    rows = []
    for col in [c for c in t.columns if c.startswith("loss_")]:
        name = col[len("loss_") :]
        for _, r in t.iterrows():
            rows.append(
                {
                    "run": f"{name}/R={r['domain_ratio']:g}",
                    "model_size": _size_of(name),
                    "ratio": float(r["domain_ratio"]),
                    "tokens": 1.0,
                    "val_set": "domain",
                    "val_role": "domain",
                    "loss": float(r[col]),
                }
            )
    return validate_mixture(pd.DataFrame(rows), source=path)
