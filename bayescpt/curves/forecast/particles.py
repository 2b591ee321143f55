"""The particles of a run in progress: posterior draws x fresh deviations, weighted by the run's
observed prefix (:func:`curve_particles`; the model and its maths: the module docstring of
:mod:`bayescpt.curves.forecast.prefix`), and weighted quantiles of them.

Shapes: P particles (posterior draws x deviations); a prefix of n losses (nats) past the warmup;
log-likelihoods (P, run noise levels); weights normalised over all (particle, level) pairs.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from bayescpt.core.tables import DataError
from bayescpt.curves.data.table import curve_info
from bayescpt.curves.forecast.discrepancy import Conditioner, lr_drop, resolve_discrepancy
from bayescpt.curves.forecast.predict import curve_draws
from bayescpt.curves.model.fit import Fit
from bayescpt.curves.model.hierarchy import parameter_draws


class PrefixWarning(UserWarning):
    """The importance weights of a prefix forecast degenerated (low effective sample size)."""


def _iid_loglik(fit: Fit, R: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    z = R / sigma[:, None]
    noise = fit.config["noise"]
    logp = (
        stats.t.logpdf(z, noise.get("nu", 5.0))
        if noise["family"] == "studentt"
        else stats.norm.logpdf(z)
    ) - np.log(sigma)[:, None]
    return logp.sum(axis=1)


def _residuals(fit: Fit, theta: dict, X: dict, loss: np.ndarray) -> np.ndarray:
    mu = curve_draws(fit, theta, X)
    return np.log(loss)[None, :] - np.log(np.maximum(mu, 1e-6))


def _normalise(ll: np.ndarray) -> np.ndarray:
    ll = np.where(np.isfinite(ll), ll, -np.inf)
    if not np.isfinite(ll).any():
        raise DataError("no particle gives the observed losses a finite likelihood")
    w = np.exp(ll - ll.max())
    return w / w.sum()


def _temper_for(ll: np.ndarray, target: float) -> float:
    """The largest exponent t in (0, 1] of the log likelihoods ``ll`` whose weights keep an
    effective sample size of at least ``target`` (bisection in log t; ESS falls as t grows)."""

    def ess(t):
        w = _normalise(t * ll)
        return 1.0 / np.sum(w**2)

    lo, hi = -30.0, 0.0  # log t
    if ess(np.exp(lo)) < target:
        return float(np.exp(lo))
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if ess(np.exp(mid)) >= target else (lo, mid)
    return float(np.exp(lo))


def _conflict(
    log_mu: np.ndarray, loss: np.ndarray, run: str, vs: str, prob: float = 0.99
) -> str | None:
    """A message when the observed prefix ``loss`` lies outside what the fit predicts for the
    run before seeing it: the prefix's mean log loss outside the central ``prob`` range of the
    prior particles' (``log_mu``, (P, n): their curves at the prefix's steps, equal weights);
    None when it lies inside. The distance is given in nats and in % of the loss."""
    obs = np.log(loss).mean()
    prior = log_mu.mean(axis=1)
    share = np.mean(prior < obs)
    if (1 - prob) / 2 <= share <= (1 + prob) / 2:
        return None
    nats = float(np.mean(loss) - np.mean(np.exp(log_mu)))
    pct = 100 * (np.exp(obs - np.median(prior)) - 1)
    side = "above" if nats > 0 else "below"
    return (
        f"run {run!r}, {vs!r}: the run disagrees with the fit: its {len(loss)} observed "
        f"losses lie {abs(nats):.3g} nats ({abs(pct):.3g} %) {side} the fit's forecast for "
        f"it, far outside its {prob:.0%} range; the forecast from this prefix is not one the "
        "fit vouches for (another setup, data or law than the fit's)"
    )


def systematic_resample(w: np.ndarray, m: int, rng) -> np.ndarray:
    """``m`` indices of particles drawn with probabilities ``w`` (systematic resampling: one
    uniform offset, so each particle appears floor or ceil of m w_k times)."""
    u = (rng.uniform() + np.arange(m)) / m
    return np.minimum(np.searchsorted(np.cumsum(w), u), len(w) - 1)


def weighted_quantiles(values: np.ndarray, w: np.ndarray, q) -> np.ndarray:
    """Quantiles ``q`` of each column of ``values`` (P, n) under weights ``w`` (P,): shape
    (len(q), n), by the inverse of the weighted empirical CDF at the midpoints of its steps
    (particles of weight 0 take no part)."""
    pos = w > 0
    values, w = values[pos], w[pos] / w[pos].sum()
    if np.ptp(w) <= 1e-12 * w[0]:  # equal weights: the same midpoint rule, faster
        return np.quantile(values, np.atleast_1d(q), axis=0, method="hazen")
    order = np.argsort(values, axis=0)
    v = np.take_along_axis(values, order, axis=0)
    cw = np.cumsum(w[order], axis=0) - 0.5 * w[order]
    return np.stack(
        [
            np.array([np.interp(qq, cw[:, j], v[:, j]) for j in range(v.shape[1])])
            for qq in np.atleast_1d(q)
        ]
    )


@dataclass
class Particles:
    """One curve's weighted particles given its prefix: parameter draws ``theta`` (only those that
    carry weight), normalised weights ``w``, the effective sample size ``ess`` of the ``n``
    particles weighed, the prefix rows used ``obs`` and the curve's ``info``
    (:func:`~bayescpt.curves.data.table.curve_info`); with a discrepancy model, one conditioner on
    the prefix per run noise level ``conds`` (:meth:`Discrepancy.noise_levels`), each kept
    particle's noise ``level`` (an index into ``conds``) and its prefix residuals ``resid`` (P, n).
    A particle is then a (posterior draw x deviation, noise level) pair."""

    theta: dict
    w: np.ndarray
    ess: float
    n: int
    obs: pd.DataFrame
    info: dict
    conds: list[Conditioner] | None = None
    level: np.ndarray | None = None
    resid: np.ndarray | None = None
    tempered: float = 1.0


@dataclass(frozen=True)
class Weighing:
    """How a prefix weighs a curve's particles (module docstring of
    :mod:`bayescpt.curves.forecast.prefix`): the likelihood exponent ``temper`` (0 < temper <= 1),
    the effective sample size ``min_ess`` below which more deviations are drawn (and a
    :class:`PrefixWarning` given), the ``discrepancy`` model ("auto": the fit's own; None: iid
    noise) and the most deviations per posterior draw ``max_dev`` (None: 4 ``n_dev`` with a
    discrepancy model, else ``n_dev``)."""

    temper: float = 1.0
    min_ess: float = 200.0
    discrepancy: object = "auto"
    max_dev: int | None = None


@dataclass
class _Prefix:
    """A curve's prefix: its rows ``obs`` past the warmup, the law's design ``X`` and the losses
    ``loss`` (nats) there (None without losses), and the discrepancy's conditioners ``conds``."""

    obs: pd.DataFrame
    X: dict | None = None
    loss: np.ndarray | None = None
    conds: list | None = None


def curve_particles(
    fit: Fit,
    df: pd.DataFrame,
    run: str,
    vs: str,
    g: pd.DataFrame,
    schedule,
    rng,
    n_dev: int = 8,
    weighing: Weighing | None = None,
) -> Particles:
    """The particles of the curve (``run``, ``vs``) of ``df`` (its rows ``g``, on ``schedule``)
    weighted by its logged losses past the warmup (:mod:`bayescpt.curves.forecast.prefix`), with
    ``n_dev`` fresh deviations per posterior draw at a time, as ``weighing`` says
    (:class:`Weighing`; default: its defaults); a :class:`PrefixWarning` when the effective
    sample size falls below ``min_ess``."""
    wg = weighing or Weighing()
    disc = resolve_discrepancy(fit, wg.discrepancy)
    info, size = _curve_info(fit, df, run, vs, g)
    warm = schedule.warmup_steps if fit.config["settings"].get("skip_warmup", True) else 0
    pre = _Prefix(g[g["loss"].notna() & (g["step"] >= warm)])
    if disc is not None:  # the size's own scale, where the model has one per size
        disc = disc.for_size(info["model_size"])
    max_dev = wg.max_dev
    if max_dev is None:  # more deviations only where the weights are honest
        max_dev = 4 * n_dev if disc is not None else n_dev
    max_dev = max(int(max_dev), n_dev)
    if len(pre.obs):
        steps = pre.obs["step"].to_numpy()
        pre.X = fit.law.design(schedule, steps, fit.config["settings"], info)
        pre.loss = pre.obs["loss"].to_numpy(dtype=float)
        if disc is not None:
            x, x0 = np.log(steps.astype(float)), np.log(max(schedule.warmup_steps, 1))
            c = lr_drop(schedule, steps, disc.lr_window)
            pre.conds = [Conditioner(disc, x, x0, c, noise=s) for s in disc.noise_levels()]
    theta, lls, lls_resid = _weigh(fit, vs, size, rng, pre, n_dev, max_dev, wg)
    w, ess, tempered = _settle(np.concatenate(lls).ravel(), pre, wg.min_ess, run, vs)
    if len(pre.obs):
        conflict = _conflict(np.concatenate(lls_resid), pre.loss, run, vs) if lls_resid else None
        if conflict is not None:
            warnings.warn(conflict, PrefixWarning, stacklevel=3)
    keep = np.flatnonzero(w > 1e-12 * w.max())  # particles that carry any weight
    draw, level = np.divmod(keep, lls[0].shape[1])
    theta = {k: v[draw] for k, v in theta.items()}
    conds = pre.conds
    resid = None if conds is None else _residuals(fit, theta, pre.X, pre.loss)
    return Particles(
        theta,
        w[keep] / w[keep].sum(),
        ess,
        w.size,
        pre.obs,
        info,
        conds,
        None if conds is None else level,
        resid,
        tempered,
    )


def _curve_info(fit: Fit, df: pd.DataFrame, run: str, vs: str, g: pd.DataFrame):
    """(the curve's :func:`~bayescpt.curves.data.table.curve_info`, its model size): the size
    from its rows ``g`` (else the fit's one size), the role from the fit where the table has
    none."""
    size = g["model_size"].iloc[0] if "model_size" in df.columns else fit.groups["size"].iloc[0]
    info = curve_info(df, run, vs)
    info["model_size"] = None if size is None or pd.isna(size) else float(size)
    if info["val_role"] is None and "val_role" in fit.groups.columns:
        info["val_role"] = fit.groups.loc[fit.groups["val_set"] == vs, "val_role"].iloc[0]
    return info, size


def _weigh(fit: Fit, vs: str, size, rng, pre: _Prefix, n_dev: int, max_dev: int, wg: Weighing):
    """Draw ``n_dev`` deviations per posterior draw at a time and weigh them by the prefix
    until the effective sample size reaches ``wg.min_ess`` or ``max_dev`` deviations are drawn
    (``pre.conds`` take the fit's Student-t noise scales on the first batch). Returns (all the
    particles' theta, the log-likelihoods per batch (P, noise levels), the prior particles' log
    curves at the prefix)."""
    noise = fit.config["noise"]
    nu = noise.get("nu", 5.0) if noise["family"] == "studentt" else None
    parts, lls, lls_resid = [], [], []
    done = 0
    while True:
        batch = [parameter_draws(fit, vs, size, rng) for _ in range(n_dev)]
        theta = {k: np.concatenate([p[k] for p in batch]) for k in batch[0]}
        parts.append(theta)
        done += n_dev
        if pre.X is None:
            lls.append(np.zeros((theta["_sigma"].shape[0], 1)))
        else:  # (P, levels): each particle at each run noise level
            R = _residuals(fit, theta, pre.X, pre.loss)
            if not lls_resid:  # the prior's particles (equal weights): their curves
                lls_resid.append(np.log(np.maximum(curve_draws(fit, theta, pre.X), 1e-6)))
            if pre.conds is not None and nu is not None and not lls:
                # the fit's Student-t noise: each level's EM noise scales, from the residual of
                # the particles weighted as under Normal noise (Conditioner.student_t)
                w0 = _normalise(np.column_stack([cd.loglik(R) for cd in pre.conds]).ravel())
                rbar = w0.reshape(R.shape[0], -1).sum(axis=1) @ R
                pre.conds = [cd.student_t(rbar, nu) for cd in pre.conds]
            lls.append(
                wg.temper
                * (
                    _iid_loglik(fit, R, theta["_sigma"])[:, None]
                    if pre.conds is None
                    else np.column_stack([cd.loglik(R) for cd in pre.conds])
                )
            )
        w = _normalise(np.concatenate(lls).ravel())
        ess = 1.0 / np.sum(w**2)
        if ess >= wg.min_ess or done + n_dev > max_dev or pre.X is None:
            break
    theta = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    return theta, lls, lls_resid


def _settle(ll: np.ndarray, pre: _Prefix, min_ess: float, run: str, vs: str):
    """The particles' weights from their log-likelihoods ``ll``: (w, ess, tempered), tempered
    where the update is degenerate (ess below ``min_ess`` / 4), with a :class:`PrefixWarning`
    there or where ess stays below ``min_ess``."""
    w = _normalise(ll)
    ess = 1.0 / np.sum(w**2)
    n_part = w.size
    tempered = 1.0
    if ess < min_ess / 4 and pre.X is not None:  # degenerate: tempered until it is not
        tempered = _temper_for(ll, min(min_ess / 4, n_part / 4))
        w = _normalise(tempered * ll)
        full, ess = ess, 1.0 / np.sum(w**2)
        warnings.warn(
            f"run {run!r}, {vs!r}: the prefix of {len(pre.obs)} losses left an effective "
            f"sample size of {full:.0f} of {n_part} particles; the update is tempered "
            f"(its likelihood raised to the power {tempered:.2g}, effective sample size "
            f"{ess:.0f}), so the forecast is wider than a full update would be",
            PrefixWarning,
            stacklevel=4,
        )
    elif ess < min_ess:
        warnings.warn(
            f"run {run!r}, {vs!r}: the prefix of {len(pre.obs)} losses leaves an "
            f"effective sample size of {ess:.0f} of {n_part} particles; the "
            "forecast rests on few draws (thin the prefix or raise n_dev)",
            PrefixWarning,
            stacklevel=4,
        )
    return w, ess, tempered
