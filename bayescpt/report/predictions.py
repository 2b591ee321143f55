"""The predictions and extrapolation sections of a fit, per family, from the package's plots.

* a loss-curve fit with a schedule table (run, step, lr [, loss]): the posterior mean, credible
  band and predictive interval of every run
  (:func:`bayescpt.curves.forecast.predict.predict_frame`,
  :func:`bayescpt.curves.evaluate.plots.plot_predictions`) over the table's losses; the
  extrapolation warnings the prediction raised, and the training range the fit records;
* an hparams fit: the loss surface, optima and fitted laws over its grid
  (:func:`bayescpt.hparams.plots.plot_fit`; the grid rebuilt from the file or given as a table);
* a mixture fit: loss against mixture ratio with band and interval per group at the largest
  fitted budget (:func:`bayescpt.mixture.plots.plot_loss_vs_ratio`), the fitted ratio range.

Each function returns ``(prediction blocks, extrapolation blocks)``.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd

from bayescpt.core.plotting import pyplot
from bayescpt.curves.data.validate import read_curves
from bayescpt.curves.evaluate.plots import plot_predictions
from bayescpt.curves.forecast.extrapolation import (
    ExtrapolationWarning,
    RangeUnknownWarning,
    range_of_fit,
    unknown_note,
)
from bayescpt.curves.forecast.predict import check_sizes, predict_frame
from bayescpt.curves.model.fit import Fit
from bayescpt.hparams.data import read_grid, validate_grid
from bayescpt.hparams.fit import HparamsFit
from bayescpt.hparams.plots import plot_fit
from bayescpt.mixture.fit import MixtureFit
from bayescpt.mixture.plots import plot_loss_vs_ratio
from bayescpt.report import blocks as B


def predictions(fit, label: str, table=None, prob: float = 0.9, seed: int = 0) -> tuple:
    """The family's predictions and extrapolation blocks; ``table`` a CSV path (schedule for a
    curve fit, grid for an hparams fit) or None."""
    if isinstance(fit, Fit):
        return curve_predictions(fit, label, table, prob, seed)
    if isinstance(fit, HparamsFit):
        return hparams_predictions(fit, label, table, prob)
    if isinstance(fit, MixtureFit):
        return mixture_predictions(fit, label, prob)
    return [B.text(f"{label}: no prediction for a {type(fit).__name__}.")], []


def training_range(fit) -> list[dict]:
    """The range a curve fit was trained on, and what it does not record."""
    rng = range_of_fit(fit)
    shown = {
        k: (", ".join(f"{s:.3g}" for s in v) if isinstance(v, list) else v) for k, v in rng.items()
    }
    out = [
        B.table(
            pd.DataFrame([shown]), caption="training range the fit records (empty: not recorded)"
        )
    ]
    note = unknown_note(rng)
    return out + ([B.text(note)] if note else [])


def curve_predictions(fit: Fit, label: str, table, prob: float, seed: int) -> tuple:
    """Predicted curves for the runs of the schedule ``table`` (None: no prediction)."""
    extra = training_range(fit)
    if table is None:
        return (
            [
                B.text(
                    f"{label}: no schedule given, so no curve is predicted; pass a "
                    "schedule table (run, step, lr [, loss]), e.g. the fit's data, to "
                    "draw the predicted curves over its losses."
                )
            ],
            extra + [B.text("No schedule was predicted, so nothing was extrapolated.")],
        )
    sched = read_curves(table, need_loss=False)
    check_sizes(fit, sched, str(table))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ExtrapolationWarning)
        warnings.simplefilter("always", RangeUnknownWarning)
        pred = predict_frame(fit, sched, prob=prob, seed=seed)
    said = [
        str(w.message)
        for w in caught
        if issubclass(w.category, (ExtrapolationWarning, RangeUnknownWarning))
    ]
    n_runs = pred["run"].nunique()
    fig = plot_predictions(
        pred,
        prob=prob,
        title=f"{label}: {fit.law.name} law, posterior "
        f"mean, {prob:.0%} credible band and predictive interval",
    )
    held = pred[pred["loss"].notna()] if "loss" in pred.columns else pred.iloc[:0]
    inside = ((held["loss"] >= held["lower"]) & (held["loss"] <= held["upper"])).mean()
    words = f"{n_runs} runs of {table} predicted ({len(pred)} rows)" + (
        f"; {inside:.0%} of its {len(held)} losses lie inside the {prob:.0%} predictive interval."
        if len(held)
        else "; the table has no losses to compare."
    )
    blocks = [
        B.text(words),
        B.image(fig, f"{label}: predicted curves with their bands over the observed losses"),
    ]
    warned = (
        [B.text(f"Predicting {table} raised {len(said)} warning(s):"), B.bullets(said)]
        if said
        else [B.text(f"Every run of {table} lies inside the training range.")]
    )
    return blocks, warned + extra


def grid_of(fit: HparamsFit, table=None) -> pd.DataFrame:
    """The grid an hparams fit was fitted on: ``table`` when given, else its observed runs."""
    if table is not None:
        return read_grid(table)
    obs = fit.idata.observed_data
    var = obs[list(obs.data_vars)[0]]
    df = pd.DataFrame(
        {c: np.asarray(var[c].values) for c in ("model_size", "tokens", "lr", "batch_size")}
    )
    groups = fit.cells["group"].unique()
    if len(groups) != 1:
        raise ValueError(
            "the fit's grid has several groups, which its file does not label per "
            "run: pass the grid CSV with the fit"
        )
    return validate_grid(df.assign(loss=np.asarray(var.values, float), group=groups[0]))


def hparams_predictions(fit: HparamsFit, label: str, table, prob: float) -> tuple:
    grid = grid_of(fit, table)
    fig = plot_fit(fit, grid, prob=prob)
    cells = fit.cells
    words = (
        f"{len(grid)} runs in {len(cells)} cells (model size x tokens); the fitted laws "
        "give the optimal learning rate and batch size per cell."
    )
    ext = [
        B.text(
            f"Fitted range: model sizes {cells['model_size'].min():.3g} - "
            f"{cells['model_size'].max():.3g}, tokens {cells['tokens'].min():.3g} - "
            f"{cells['tokens'].max():.3g}; optima predicted beyond it are "
            "extrapolations (`bayescpt hparams predict` says so per run)."
        )
    ]
    return [
        B.text(words),
        B.image(
            fig, f"{label}: loss surface, optima per cell and the fitted laws with their bands"
        ),
    ], ext


def mixture_predictions(fit: MixtureFit, label: str, prob: float) -> tuple:
    g = fit.groups
    n = len(g)
    plt = pyplot()
    fig, axes = plt.subplots(1, n, figsize=(4.5 * n, 3.4), squeeze=False)
    for ax, row in zip(axes.flat, g.itertuples()):
        tokens = float(fit.points.loc[fit.points["val_set"] == row.val_set, "tokens"].max())
        plot_loss_vs_ratio(
            fit,
            row.model_size,
            row.val_set,
            tokens,
            prob=prob,
            ax=ax,
            title=f"{row.val_set} ({row.val_role}), {row.model_size / 1e6:g}M, T = {tokens:g}",
        )
    fig.tight_layout()
    words = (
        f"{len(fit.points)} observed losses of {n} groups; each panel the law's "
        f"{prob:.0%} band and predictive interval against the mixture ratio at the largest "
        "fitted budget."
    )
    ext = [
        B.text(
            f"Fitted mixture ratios {fit.r_lo:g} - {fit.r_hi:g}; ratios outside are "
            f"extrapolations. Config: {json.dumps(fit.config.get('token_terms'))} token "
            "terms."
        )
    ]
    return [B.text(words), B.image(fig, f"{label}: loss against mixture ratio with bands")], ext
