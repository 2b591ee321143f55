"""Forecasts of a run in progress: its observed prefix updates the run's own deviations.

The fit's population (group parameters, the spread tau of schedule deviations, the noise sigma)
is the prior of a new run; the losses the run has logged so far are evidence about its own
deviation w. Particles k = 1..P are posterior draws x ``n_dev`` fresh deviations w ~ N(0, tau)
each (the draws :func:`~bayescpt.curves.model.hierarchy.parameter_draws` makes for an unseen
schedule; P = 2 S n_dev with S stored draws, antithetic), each with its law curve mu_k(s)
(nats).

**Model of a run's residual** (the fit's own discrepancy model, when it has one). A real run's
log loss leaves the law smoothly: hundreds of logged losses lean one way together. For the n
prefix losses y_i at steps s_i past the warmup, x_i = ln s_i, x0 = ln(warmup steps)::

    r_ki = ln y_i - ln mu_k(s_i) = d(x_i) + e_i,      e_i ~ N(0, noise^2) iid
    d ~ GP(0, k),  k(x, x') = sd(x) sd(x') exp(-|x - x'| / length)   (Ornstein-Uhlenbeck in ln s)
    sd(x)^2 = scale_N^2 + early^2 exp(-(x - x0) / early_length)     (larger just after warmup)
              + lr_scale^2 c(s)^2                  (larger just after an LR drop; c in [0, 1])

with (``scale_N`` of the run's model size N, ``length``, ``noise``, ``early``, ``lr_scale``) a
:class:`Discrepancy` learned by maximum likelihood from the fit's own training residuals
(:func:`~bayescpt.curves.forecast.discrepancy_fit.learn_discrepancy`; each training curve's
posterior-mean residual under its fitted parameters; c(s) the LR's drop over the last
``lr_window`` in ln step as a share of its peak, from the run's planned schedule:
:mod:`bayescpt.curves.forecast.discrepancy`, module doc) and stored with the fit
(``fit.meta["discrepancy"]``, JSON; a fit stored before ``lr_scale`` and the per-size scales
existed gets neither term). With Sigma_j = K + noise_j^2 I (n x n; the same for every
particle at the run noise level j, below)::

    log w_kj = log N(r_k; 0, Sigma_j) = -1/2 r_k' Sigma_j^-1 r_k - 1/2 log det(2 pi Sigma_j),
    sum w = 1

(one Cholesky factor of Sigma_j, one triangular solve with P right-hand sides): a dense prefix of
smooth residuals counts as about (its span in ln step) / ``length`` independent pieces, not n.
**The run's own noise.** A run is evaluated on its own eval set and cadence, so its white noise
need not be the training curves' (published curves are smoothed: ``noise`` ~ 0). The noise sd is
unknown per run, with equal prior weight on each of :meth:`Discrepancy.noise_levels` (the learned
one and 0.0025 %-1.28 % of the loss, a factor 2 apart): a particle is a (draw x deviation, level
j) pair weighted by N(r_k; 0, K + noise_j^2 I) (one Cholesky factor per level). The prefix
decides the level: white noise does not shrink between close evaluations, the OU part does.
Without this, a run noisier than the training curves reads its last few noisy losses as a
departure that persists, and its 99 % band at the next evaluation is as narrow as the OU
increment (a watch false alarm; measured in ``benchmarks/RESULTS.md``, 'Runs in progress').
**Heavy-tailed noise.** When the fit's noise is Student-t (``noise.family``, ``nu``), so is the
run's white noise: e_i ~ t_nu(0, noise_j), a scale mixture N(0, noise_j^2 / u_i) whose u_i are set
by EM from the particles' weighted mean residual (:meth:`Conditioner.student_t`; the factor stays
shared), and the forecast's fresh noise z' is t_nu. Otherwise one spike of that noise (a logged
loss 8 noise sds off, as the fit's own t noise draws now and then) is read as a smooth departure
that the forecast carries on with a band as narrow as the noise: a watch false alarm (issue 50).
**Forecast** at steps s_t (x_t = ln s_t) for particle k: the law curve times the discrepancy's
conditional given the prefix residual, plus fresh noise::

    d(x_t) | r_k ~ N(m_kt, v_t),    m_kt = k(x_t, x)' Sigma_j^-1 r_k,
                                    v_t = sd(x_t)^2 - k(x_t, x)' Sigma_j^-1 k(x, x_t)
    curve_kt = mu_k(s_t) exp(m_kt + sqrt(v_t) z),  y_kt = curve_kt exp(noise_j z'),  z, z' ~ N(0, 1)
    (z' ~ t_nu with the fit's Student-t noise; Sigma_j's diagonal then noise_j^2 / u_i)

so the last residual decays into the future over ``length`` (in ln step) and its conditional
variance widens the band back to the stationary sd(x_t). ``mean`` is sum_k w_k mu_k exp(m_k);
bands are weighted quantiles of curve_k (``curve_lower/upper``) and y_k (``lower/upper``).
Without a discrepancy model (``discrepancy="iid"``, or a fit that has none stored) the weights
are the fit's own iid noise model (Normal or Student-t on log loss, scale sigma_k)::

    log w_k = sum_i log p( (log y_i - log mu_k(s_i)) / sigma_k ) - n log sigma_k

which over-counts a dense, autocorrelated prefix (measured in ``benchmarks/RESULTS.md``: ESS
1-4 of 16000, 90 % bands covering 18-63 %); ``temper`` in (0, 1] then discounts it (the
likelihood's exponent: ``temper = 1 / k`` counts every k logged losses as one).

Importance weighting was chosen over a small conditional NUTS fit because it costs one evaluation
of the law per particle and point (no compile, no sampler) and keeps the fitted population
exactly; its failure is measurable: the effective sample size ESS = 1 / sum_k w_k^2. With a
discrepancy model, while ESS < ``min_ess`` another ``n_dev`` deviations per draw are added (up to
``max_dev``, default 4 ``n_dev``: the proposal stays the prior, so the weights stay exact); a
:class:`PrefixWarning` says when ESS stays low (the prefix is far from anything the fit expects).
A degenerate update (ESS below ``min_ess / 4``) falls back to a tempered one: the likelihood raised
to the largest power t <= 1 that keeps ESS at ``min_ess / 4`` (wider bands, said in the warning),
never a band of one draw; a prefix whose mean log loss lies outside the central 99 % of the fit's
forecast for the run is said as a disagreement with the fit, by how much (nats, %).
For the bands, at most ``n_forecast`` particles are drawn from the weighted ones (systematic
resampling). Losses inside the initial warmup are not evidence (as in the fit,
``settings.skip_warmup``). Units: steps are optimizer steps, losses nats, residuals and all
:class:`Discrepancy` scales on ln loss (0.001 = 0.1 % of the loss).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from bayescpt.core.tables import DataError
from bayescpt.curves.data.table import schedules_of
from bayescpt.curves.forecast.discrepancy import lr_drop, resolve_discrepancy
from bayescpt.curves.forecast.particles import (
    PrefixWarning,
    Weighing,
    curve_particles,
    systematic_resample,
    weighted_quantiles,
)
from bayescpt.curves.forecast.predict import OUTPUT_COLUMNS, curve_draws
from bayescpt.curves.model.fit import Fit
from bayescpt.curves.model.other_sets import other_sets


def forecast_with_prefix(
    fit: Fit,
    df: pd.DataFrame,
    prob: float = 0.9,
    seed: int = 0,
    n_dev: int = 8,
    min_ess: float = 200.0,
    temper: float = 1.0,
    discrepancy="auto",
    max_dev: int | None = None,
    n_forecast: int = 4000,
) -> pd.DataFrame:
    """Predictions for every row (step >= 1) of ``df``, each curve conditioned on its own
    logged losses (the rows of ``df`` with a loss: the prefix of a run in progress).

    ``df`` is a validated table (:func:`~bayescpt.curves.data.validate.validate_curves`) listing
    each run's whole schedule. Returns :func:`~bayescpt.curves.forecast.predict.predict_frame`'s
    columns plus ``ess`` (the curve's effective sample size out of ``n_points`` particles) and
    ``observed`` (the row's loss is part of the prefix). A curve without losses gets the plain
    forecast. ``n_dev`` fresh deviations per posterior draw (each antithetic pair counted twice),
    ``temper`` the likelihood exponent (module docstring).
    """
    if not 0 < temper <= 1:
        raise ValueError(f"temper={temper}; expected 0 < temper <= 1")
    if not 0 < prob < 1:
        raise ValueError(f"prob={prob}; expected a probability strictly between 0 and 1")
    rng = np.random.default_rng(seed)
    sched = schedules_of(df)
    q = [(1 - prob) / 2, (1 + prob) / 2]
    skip = fit.config["settings"].get("skip_warmup", True)
    has_size = "model_size" in df.columns
    if not has_size and fit.groups["size"].nunique() > 1:
        raise DataError("the table has no model_size column; the fit has several model sizes")
    others = other_sets(fit.meta)
    if (
        isinstance(discrepancy, str)
        and discrepancy == "auto"
        and df["loss"].notna().any()
        and resolve_discrepancy(fit, "auto") is None
    ):
        warnings.warn(
            "the fit carries no discrepancy model, so the prefix is weighted as iid "
            "noise, which over-counts a dense log of a real run (bands too narrow: "
            "benchmarks/RESULTS.md, 'Runs in progress'); fit with 'bayescpt fit "
            "--discrepancy' or store learn_discrepancy(fit, table) in it",
            PrefixWarning,
            stacklevel=2,
        )
    weighing = Weighing(temper, min_ess, discrepancy, max_dev)
    pieces = []
    for (run, vs), g in df[df["step"] >= 1].groupby(["run", "val_set"], sort=False):
        if vs in others:
            raise DataError(
                f"run {run!r}: validation set {vs!r} is an 'other' set; prefix "
                "forecasts cover the law's own validation sets"
            )
        part = curve_particles(fit, df, run, vs, g, sched[run], rng, n_dev, weighing)
        res = _curve_forecast(fit, g, sched[run], part, rng, n_forecast, q)
        if skip:
            res.loc[res["step"] < sched[run].warmup_steps, OUTPUT_COLUMNS] = np.nan
        res["ess"] = part.ess
        res["n_points"] = part.n
        res["observed"] = res.index.isin(part.obs.index)
        pieces.append(res)
    if not pieces:
        raise DataError("nothing to predict: no rows with step >= 1")
    return pd.concat(pieces).sort_index()


def _curve_forecast(
    fit: Fit, g: pd.DataFrame, schedule, part, rng, n_forecast: int, q: list
) -> pd.DataFrame:
    """The rows ``g`` of one curve (on ``schedule``) with the forecast of its weighted particles
    ``part``: mean, median, the predictive band lower/upper at quantiles ``q`` and the curve's
    band curve_lower/curve_upper (nats); resampled to ``n_forecast`` equal-weight particles
    where it has more and a prefix."""
    th, wk, resid, level = part.theta, part.w, part.resid, part.level
    if len(part.obs) and len(wk) > n_forecast:  # equal-weight particles for the bands
        idx = systematic_resample(wk, n_forecast, rng)
        th = {k: v[idx] for k, v in th.items()}
        resid = None if resid is None else resid[idx]
        level = None if level is None else level[idx]
        wk = np.full(n_forecast, 1.0 / n_forecast)
    steps = g["step"].to_numpy()
    X = fit.law.design(schedule, steps, fit.config["settings"], part.info)
    curves = curve_draws(fit, th, X)
    sigma = th["_sigma"][:, None]
    if part.conds is None:
        noise = fit.config["noise"]
        eps = (
            rng.standard_t(noise.get("nu", 5.0), size=curves.shape)
            if noise["family"] == "studentt"
            else rng.standard_normal(curves.shape)
        )
        y_rep = curves * np.exp(sigma * eps)
        mean_curve = curves
    else:
        xt = np.log(steps.astype(float))
        ct = lr_drop(schedule, steps, part.conds[0].disc.lr_window)
        m, sd = np.empty_like(curves), np.empty_like(curves)
        for j in np.unique(level):  # each run noise level's conditional
            at = level == j
            m[at], v = part.conds[j].predict(xt, resid[at], ct)
            sd[at] = np.sqrt(v)
        mean_curve = curves * np.exp(m)
        curves = mean_curve * np.exp(sd * rng.standard_normal(curves.shape))
        noise_k = np.array([cd.noise for cd in part.conds])[level][:, None]
        nu = part.conds[0].nu  # the white noise's law: the fit's Student-t or Normal
        y_rep = curves * np.exp(
            noise_k
            * (
                rng.standard_normal(curves.shape)
                if nu is None
                else rng.standard_t(nu, curves.shape)
            )
        )
    res = g.copy()
    res["mean"] = wk @ mean_curve
    res["median"] = weighted_quantiles(curves, wk, [0.5])[0]
    res["lower"], res["upper"] = weighted_quantiles(y_rep, wk, q)
    res["curve_lower"], res["curve_upper"] = weighted_quantiles(curves, wk, q)
    return res
