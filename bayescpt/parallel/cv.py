"""Cross-validation of a loss-curve law's predictions on the user's own runs, fitted as a sweep.

The question a planner asks before trusting a law: *how well does it predict a schedule (a run, a
model size) it has not seen, on my curves?* Rows are grouped ``by``

    schedule     the ``schedule`` column where the table has one, else the run name after its last
                 "/" (the bundled ladders name runs SIZE/SCHEDULE, so one schedule spans sizes)
    run          the run name
    model_size   the model size (held out, a size is predicted as a new group of the hierarchy)

and each fold fits the law (:func:`bayescpt.parallel.engine.run_sweep`: one sweep fit per fold, so
folds run in parallel on Dask, resume after a crash, and reuse compiled models on a worker) on the
rows of every other group, then predicts the held-out rows
(:func:`bayescpt.curves.forecast.predict.predict_frame`, the ``prob`` predictive interval) and
scores them (:func:`bayescpt.curves.evaluate.scores.score`: mean/worst relative error, coverage,
relative width and interval score). By default every group is held out once (leave-one-group-out);
``train`` names the groups of one fold that trains on them and holds out all the others (e.g. the
benchmarks' multi-power-law protocol). Fold tables are written to ``DIR/folds/``, fits to
``DIR/fits/``, then ``DIR/cv.csv`` (per fold, held-out group and model size), ``DIR/cv_by_size.csv``
(all held-out points of a size pooled) and ``DIR/predictions.csv.gz``.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from bayescpt.core.outputs import write_outputs
from bayescpt.core.tables import DataError
from bayescpt.curves.data.validate import read_curves
from bayescpt.curves.evaluate.scores import score
from bayescpt.curves.forecast.predict import predict_frame
from bayescpt.curves.model.fit import Fit
from bayescpt.parallel.engine import LOCAL_CLUSTER, Cluster
from bayescpt.parallel.spec import StudyFit, check_fit_config, fit_law_options

GROUPINGS = ("schedule", "run", "model_size")


def group_labels(df: pd.DataFrame, by: str) -> pd.Series:
    """The cross-validation group of every row of ``df`` (see the module doc), as strings."""
    if by == "schedule":
        if "schedule" in df.columns:
            return df["schedule"].astype(str)
        return df["run"].astype(str).str.rsplit("/", n=1).str[-1]
    if by == "run":
        return df["run"].astype(str)
    if by == "model_size":
        if "model_size" not in df.columns:
            raise DataError("--by model_size: the table has no model_size column")
        return df["model_size"].map(lambda s: f"{float(s) / 1e6:g}M")
    raise ValueError(f"by={by!r}; expected one of {GROUPINGS}")


@dataclass(frozen=True)
class Fold:
    """One fit of a cross-validation: its name and the groups it holds out."""

    name: str
    held_out: tuple[str, ...]


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.=-]+", "-", text).strip("-") or "group"


def make_folds(labels: pd.Series, by: str, train: list[str] | None = None) -> list[Fold]:
    """Leave-one-group-out folds over the groups of ``labels``; with ``train``, one fold that
    trains on those groups and holds out the rest."""
    groups = list(dict.fromkeys(labels))
    if len(groups) < 2:
        raise DataError(
            f"--by {by}: the data have one {by} ({groups[0]!r}); cross-validation "
            "needs at least two groups"
        )
    if train:
        unknown = [g for g in train if g not in groups]
        if unknown:
            raise DataError(f"--train: no {by} {unknown[0]!r} in the data (known: {groups})")
        held = tuple(g for g in groups if g not in train)
        if not held:
            raise DataError("--train names every group; nothing is left to hold out")
        return [Fold("train-" + "+".join(_safe(g) for g in train), held)]
    return [Fold("out-" + _safe(g), (g,)) for g in groups]


@dataclass
class CVResult:
    """``table``: per fold, held-out group and model size; ``by_size``: per model size over all
    held-out points; ``predictions``: every held-out row with its prediction; ``fits``: the
    sweep's summary (one row per fold); ``notes``: extrapolation warnings, one line each."""

    table: pd.DataFrame
    by_size: pd.DataFrame
    predictions: pd.DataFrame
    fits: pd.DataFrame
    notes: list[str]


def run_cv(
    data,
    out_dir,
    study: StudyFit,
    by: str = "schedule",
    train: list[str] | None = None,
    prob: float = 0.9,
    cluster: Cluster = LOCAL_CLUSTER,
    force: bool = False,
    say=lambda msg: None,
) -> CVResult:
    """Cross-validate ``study.law`` (its options, config, sampler settings; its seed for every
    fold's fit and prediction) on the curve table in file ``data`` (see the module doc)."""
    data, out_dir = Path(data), Path(out_dir)
    df = read_curves(data)
    labels = group_labels(df, by)
    folds = make_folds(labels, by, train)
    # the options and config as every fold's fit takes them: a bad one is refused here, before
    # anything is written or Dask starts
    law = study.law
    check_fit_config(
        "curves",
        law,
        fit_law_options("curves", law, dict(study.options or {}), df),
        dict(study.config or {}),
    )
    (out_dir / "folds").mkdir(parents=True, exist_ok=True)
    specs, tests = [], {}
    for fold in folds:
        held = labels.isin(fold.held_out)
        specs.append(
            study.spec(f"cv__{fold.name}", out_dir / "folds" / f"{fold.name}.csv", df[~held])
        )
        tests[fold.name] = df[held]
    say(f"cv: {len(folds)} fold(s) by {by}; {law} law")
    fits = cluster.sweep(specs, out_dir / "fits", force, say)
    failed = fits[~fits["status"].isin(("ok", "diagnostics", "done"))]
    if len(failed):
        r = failed.iloc[0]
        raise RuntimeError(f"cv: the fit of fold {r['name']} failed: {r['error']}")
    preds, notes = [], []
    for fold, (_, row) in zip(folds, fits.iterrows()):
        fit = Fit.load(row["output"])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            pred = predict_frame(fit, tests[fold.name], prob=prob, seed=study.seed)
        notes.extend(
            f"fold {fold.name}: {w.message}"
            for w in caught
            if "Extrapolation" in type(w.message).__name__
        )
        pred.insert(0, "fold", fold.name)
        pred.insert(1, "group", group_labels(pred, by).to_numpy())
        preds.append(pred)
    predictions = pd.concat(preds, ignore_index=True)
    if "model_size" not in predictions.columns:
        predictions["model_size"] = np.nan  # one size: scored as one group ("-")
    table = score(predictions, prob, by=["fold", "group", "model_size"])
    by_size = score(predictions, prob)
    result = CVResult(table, by_size, predictions, fits, notes)
    write_outputs(
        {
            out_dir / "cv.csv": lambda tmp: table.to_csv(tmp, index=False),
            out_dir / "cv_by_size.csv": lambda tmp: by_size.to_csv(tmp, index=False),
            out_dir / "predictions.csv.gz": lambda tmp: predictions.to_csv(
                tmp, index=False, compression="gzip"
            ),
        }
    )
    return result
