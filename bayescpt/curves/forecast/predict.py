"""Posterior predictive loss curves for any schedule, with numpy over the stored draws.

For a schedule of a *new* run in group g (validation set x model size), each posterior draw gives
the run's parameters u = u_g + tau * w with a fresh deviation w ~ N(0, 1) (the curve level of the
hierarchy), and the law's mean function on the schedule's design gives that draw's curve. An
observed loss adds the residual noise (its stationary marginal: Normal or Student-t on log loss). A
group the fit has not seen (a new model size for a known validation set) draws its own group
deviation too.

Outputs, per requested point: the mean and median of the curve over draws, the credible band of the
curve (``curve_lower``, ``curve_upper``) and the predictive interval of an observed loss
(``lower``, ``upper``), both central at probability ``prob``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import xarray as xr

from bayescpt.core.tables import DataError
from bayescpt.curves.data.table import curve_info, schedules_of
from bayescpt.curves.forecast.extrapolation import (
    ImpossiblePrediction,
    check_extrapolation,
    check_possible,
    range_of_fit,
    range_warnings,
    unknown_note,
)
from bayescpt.curves.model.fit import Fit
from bayescpt.curves.model.hierarchy import parameter_draws

CHUNK_ELEMENTS = 4_000_000
OUTPUT_COLUMNS = ["mean", "median", "lower", "upper", "curve_lower", "curve_upper"]

__all__ = [
    "check_sizes",
    "curve_draws",
    "other_draws",
    "predict_draws",
    "predict_frame",
    "predictive_idata",
]


def curve_draws(fit: Fit, theta: dict, X: dict) -> np.ndarray:
    """The law's mean loss for every draw and point: shape (S, n), evaluated in chunks."""
    n = len(next(iter(X.values())))
    k = max((v.shape[1] for v in X.values() if v.ndim == 2), default=1)
    S = theta["_sigma"].shape[0]
    step = max(1, CHUNK_ELEMENTS // max(n * k, 1))
    out = np.empty((S, n))
    for a in range(0, S, step):
        th = {name: v[a : a + step, None] for name, v in theta.items() if not name.startswith("_")}
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            out[a : a + step] = fit.law.mean(np, th, X)
    return out


def predict_frame(fit: Fit, df: pd.DataFrame, prob: float = 0.9, seed: int = 0) -> pd.DataFrame:
    """Predictions for every row of ``df`` (validated table; loss may be empty) with step >= 1.

    Returns ``df``'s columns (run, step, lr, val_set, model_size, loss where given) plus ``mean,
    median, lower, upper, curve_lower, curve_upper``. Rows inside a run's initial warmup are left
    empty when the fit excluded such losses (``settings.skip_warmup``, the default): the laws do
    not describe them (the forward area is near zero there, and the power law blows up).

    Every run that leaves the fit's training range (peak LR, length, forward area S1, model size;
    :mod:`bayescpt.curves.forecast.extrapolation`) gives an ``ExtrapolationWarning`` through
    :func:`warnings.warn`; the list of them is also in the result's ``attrs["extrapolation"]``.
    A predicted loss that is not finite and positive (outside the warmup rows left empty) raises
    ``ImpossiblePrediction`` (a DataError) naming the run and step: it is never returned.
    The draws it summarises: :func:`predict_draws` (same ``seed``, same numbers).
    """
    return _predict(fit, df, prob, seed, None)


def check_sizes(fit: Fit, df: pd.DataFrame, source: str = "the schedule") -> None:
    """Raise DataError when ``df`` (from ``source``) gives a model size to a fit made without
    model sizes: the size would be a group the fit never saw, its curve drawn from nowhere."""
    if "model_size" not in df.columns or fit.groups["size"].notna().any():
        return
    given = df[df["model_size"].notna()]
    if len(given):
        row = given.iloc[0]
        raise DataError(
            f"{source}: column model_size, value {float(row['model_size']):g} (run "
            f"{row['run']!r}): the fit was made without model sizes, so it cannot "
            "predict for one; drop the column (or refit on runs with model sizes)"
        )


def _predict(fit, df, prob, seed, kept) -> pd.DataFrame:
    """:func:`predict_frame`; with ``kept`` a list, each run's draws are appended to it."""
    if not 0 < prob < 1:
        raise ValueError(f"prob={prob}; expected a probability strictly between 0 and 1")
    check_sizes(fit, df)
    rng = np.random.default_rng(seed)
    sched = schedules_of(df)
    has_size = "model_size" in df.columns
    if not has_size and fit.groups["size"].nunique() > 1:
        raise DataError(
            "the schedule has no model_size column; the fit has several model sizes "
            f"({sorted(fit.groups['size'].unique())})"
        )
    others = fit.law.side_sets(fit.meta)
    trained = range_of_fit(fit)
    found = check_extrapolation(trained, df, sched)

    def tell():  # after the input passed its checks: with the result, or with the refusal
        for w in range_warnings(unknown_note(trained), found):
            warnings.warn(w, stacklevel=4)

    try:
        pieces = _predict_runs(fit, df, sched, has_size, others, prob, rng, kept)
    except ImpossiblePrediction:
        tell()
        raise
    tell()
    if not pieces:
        raise DataError("nothing to predict: no rows with step >= 1")
    out = pd.concat(pieces).sort_index()
    out.attrs["extrapolation"] = found
    return out


def _predict_runs(fit, df, sched, has_size, others, prob, rng, kept=None) -> list:
    """:func:`predict_frame`'s table of each (run, val_set), a list; with ``kept`` a list, the
    (rows, curve draws, loss draws) of each run's predicted rows (warmup left out) are added."""
    q = [(1 - prob) / 2, (1 + prob) / 2]
    nu = fit.config["noise"].get("nu", 5.0)
    student = fit.config["noise"]["family"] == "studentt"
    pieces = []
    for (run, vs), g in df[df["step"] >= 1].groupby(["run", "val_set"], sort=False):
        size = (
            g["model_size"].iloc[0]
            if has_size
            else (fit.groups["size"].iloc[0] if fit.groups["size"].nunique() == 1 else None)
        )
        info = curve_info(df, run, vs)
        info["model_size"] = None if size is None else float(size)
        if vs in others:
            curves, y_rep = other_draws(
                fit, vs, others[vs], sched[run], g["step"].to_numpy(), info, rng
            )
        else:
            theta = parameter_draws(fit, vs, size, rng)
            if info["val_role"] is None and "val_role" in fit.groups.columns:
                info["val_role"] = fit.groups.loc[fit.groups["val_set"] == vs, "val_role"].iloc[0]
            X = fit.law.design(sched[run], g["step"].to_numpy(), fit.config["settings"], info)
            curves = curve_draws(fit, theta, X)
            noise = (
                rng.standard_t(nu, size=curves.shape)
                if student
                else rng.standard_normal(curves.shape)
            )
            y_rep = curves * np.exp(theta["_sigma"][:, None] * noise)
        res = g.copy()
        with np.errstate(invalid="ignore"):  # inf curves: refused just below
            res["mean"] = curves.mean(axis=0)
            res["median"] = np.median(curves, axis=0)
            res["lower"], res["upper"] = np.quantile(y_rep, q, axis=0)
            res["curve_lower"], res["curve_upper"] = np.quantile(curves, q, axis=0)
        if fit.config["settings"].get("skip_warmup", True):
            warm = (res["step"] < sched[run].warmup_steps).to_numpy()
            res.loc[warm, OUTPUT_COLUMNS] = np.nan
            check_possible(res[~warm], OUTPUT_COLUMNS)
        else:
            warm = np.zeros(len(res), dtype=bool)
            check_possible(res, OUTPUT_COLUMNS)
        pieces.append(res)
        if kept is not None:
            kept.append((res[~warm], curves[:, ~warm], y_rep[:, ~warm]))
    return pieces


def other_draws(
    fit: Fit, vs: str, spec: dict, schedule, steps, info: dict, rng: np.random.Generator
):
    """Curve and observation draws of an ``other`` set: a * general + b * domain + c (+ noise)."""
    parts = {}
    for role in ("general", "domain"):
        name = spec[f"{role}_set"]
        theta = parameter_draws(fit, name, info["model_size"], rng)
        X = fit.law.design(
            schedule, steps, fit.config["settings"], dict(info, val_set=name, val_role=role)
        )
        parts[role] = curve_draws(fit, theta, X)
    post = fit.idata.posterior
    coef = post["other_coef"].sel(other_set=vs).stack(sample=("chain", "draw"))
    coef = coef.transpose("sample", "coef").values
    sigma = post["other_sigma"].sel(other_set=vs).stack(sample=("chain", "draw")).values
    reps = parts["general"].shape[0] // coef.shape[0]  # antithetic draws use each twice
    coef, sigma = np.tile(coef, (reps, 1)), np.tile(sigma, reps)
    curves = coef[:, :1] * parts["general"] + coef[:, 1:2] * parts["domain"] + coef[:, 2:3]
    return curves, curves + sigma[:, None] * rng.standard_normal(curves.shape)


def predict_draws(
    fit: Fit, df: pd.DataFrame, prob: float = 0.9, seed: int = 0
) -> tuple[xr.Dataset, pd.DataFrame]:
    """The draws behind :func:`predict_frame`, as xarray, with its table: ``(draws, table)``.

    ``table`` is exactly ``predict_frame(fit, df, prob, seed)`` (same warnings and refusals).
    ``draws`` has the variables ``loss`` (the predictive draws of an observed loss: curve x
    noise) and ``curve`` (the law's mean), dims ``(chain, draw, point)``: one point per row
    of ``table`` with a prediction (rows inside a run's warmup, left empty there, are not
    points), in the table's order; ``point`` is indexed by (run, val_set, step[, model_size]),
    so ``draws.sel(run="wsd-30k", step=30000)`` works. Each posterior draw is used twice, with
    the new run's deviation z and with -z (antithetic, see :func:`parameter_draws`): draw d
    < D of a chain uses its posterior draw d with +z, draw D + d the same draw with -z.
    """
    kept: list = []
    table = _predict(fit, df, prob, seed, kept)
    rows = pd.concat([k[0] for k in kept])
    # the table's row order (predict_frame sorts by index), repeated with positions
    order = pd.Series(np.arange(len(rows)), index=rows.index).sort_index().to_numpy()
    post = fit.idata.posterior
    C, D = post.sizes["chain"], post.sizes["draw"]

    def shaped(i):
        a = np.concatenate([k[i] for k in kept], axis=1)[:, order]
        reps = a.shape[0] // (C * D)
        return a.reshape(reps, C, D, -1).transpose(1, 0, 2, 3).reshape(C, reps * D, -1)

    rows = rows.iloc[order]
    levels = [c for c in ("run", "val_set", "step", "model_size") if c in rows.columns]
    index = pd.MultiIndex.from_frame(rows[levels].reset_index(drop=True))
    dims = ("chain", "draw", "point")
    curve, loss = shaped(1), shaped(2)
    ds = xr.Dataset(
        {"loss": (dims, loss), "curve": (dims, curve)},
        coords={"chain": post["chain"].values, "draw": np.arange(curve.shape[1])},
    )
    ds = ds.assign_coords(xr.Coordinates.from_pandas_multiindex(index, "point"))
    ds["loss"].attrs["description"] = "predictive draws of an observed loss (curve x noise)"
    ds["curve"].attrs["description"] = "the law's mean loss (the curve) per draw"
    ds.attrs.update(
        law=fit.law.name,
        data_hash=str(fit.meta.get("data_hash")),
        seed=int(seed),
        antithetic="draw d < D: posterior draw d with the new run's deviation z; "
        "draw D + d: the same with -z",
    )
    return ds, table


def predictive_idata(draws: xr.Dataset, table: pd.DataFrame):
    """An ArviZ InferenceData of :func:`predict_draws`'s result, ready for NetCDF: the
    ``posterior_predictive`` group holds ``loss``, ``predictions`` holds ``curve``, and
    ``observed_data`` the table's ``loss`` at the points (NaN where a row has none) when any
    row carries one. NetCDF holds no MultiIndex: the point's run, val_set, step (and
    model_size) are plain coordinates; ``.set_index(point=["run", "val_set", "step"])``
    restores the index for ``.sel``."""
    import arviz as az

    flat = draws.reset_index("point")
    levels = [c for c in ("run", "val_set", "step", "model_size") if c in flat.coords]
    rows = table[table["mean"].notna()]
    for c in levels:
        if not np.array_equal(rows[c].to_numpy(), flat[c].values):
            raise ValueError(
                f"the table's {c} column does not match the draws' points: pass "
                "the table predict_draws returned with them"
            )
    groups = {"posterior_predictive": flat[["loss"]], "predictions": flat[["curve"]]}
    if "loss" in rows.columns and rows["loss"].notna().any():
        obs = xr.Dataset(
            {"loss": ("point", rows["loss"].to_numpy(dtype=float))},
            coords={c: ("point", flat[c].values) for c in levels},
        )
        groups["observed_data"] = obs
    idata = az.InferenceData(**groups)
    for g in groups:
        idata[g].attrs.update(draws.attrs)
    return idata
