"""Learning a fit's discrepancy model by maximum likelihood from its training residuals.

The model is :class:`~bayescpt.curves.forecast.discrepancy.Discrepancy` (its module doc has the
maths). :func:`learn_discrepancy` fits it to a fit's own training residuals (each training
curve's posterior-mean residual under its fitted parameters, :func:`training_residuals`): the
stationary part (``scale``, ``length``, ``noise``, with ``lr_scale`` when the training schedules
drop their LR) on all curves first, then ``early`` with the others fixed, then (a fit of several
sizes, ``per_size``) each size's scale_N on that size's curves alone with everything else fixed.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import linalg, optimize

from bayescpt.core.tables import DataError
from bayescpt.curves.data.table import schedules_of
from bayescpt.curves.forecast.discrepancy import Conditioner, Discrepancy, lr_drop
from bayescpt.curves.model.fit import Fit
from bayescpt.curves.model.hierarchy import prepare

#: the smallest correlated scale the maximum-likelihood search sees, as a share of the
#: residuals' sd (a smaller one is no discrepancy; :func:`learn_from_residuals`)
SCALE_FLOOR = 1e-6


def training_residuals(fit: Fit, table: pd.DataFrame, lr_window: float = 0.1) -> list[tuple]:
    """Each training curve's residual from the law, ``(x, r, x0, c, size)``: ln steps (n,), the
    posterior-mean residual ln y - ln mu (n,) under the curve's own fitted parameters, ln of its
    warmup steps, its LR drop over ``lr_window`` at each step (:func:`lr_drop`, (n,)) and its
    model size; ``table`` is the fit's training table (its loss rows past the warmup must be the
    fit's observed points)."""
    df, _ = fit.law.split_data(table)
    prep = prepare(df, fit.law, dict(fit.config["settings"]), size_ref=fit.size_ref)
    y = fit.idata.observed_data["y"].values
    if len(y) != len(prep.y) or not np.allclose(y, prep.y):
        raise DataError(
            "the table is not the fit's training table (its losses differ from the "
            "fit's observed points)"
        )
    pri, cen = fit.config["priors"], fit.config.get("centered", {})
    post = fit.idata.posterior
    gidx, sidx = prep.curves["group"].to_numpy(), prep.curves["sched_idx"].to_numpy()
    cidx = prep.points["curve"].to_numpy()
    theta = {}
    for p in fit.law.params:
        u = fit.flat(f"{p.name}_u")[:, gidx]
        if f"{p.name}_w" in post:
            w = fit.flat(f"{p.name}_w")[:, sidx]
            if not (cen.get("schedule", True) and pri[p.name].get("run_centered", True)):
                w = w * fit.flat(f"{p.name}_tau")[:, None]
            u = u + w
        theta[p.name] = (np.exp(u) if pri[p.name]["positive"] else u)[:, cidx]
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        mu = fit.law.mean(np, theta, prep.X)
    r = (prep.y[None, :] - np.log(np.maximum(mu, 1e-6))).mean(axis=0)
    sched = schedules_of(df)
    sizes = fit.groups["size"].to_numpy()
    out = []
    for c, g in prep.points.assign(r=r).groupby("curve"):
        run = prep.curves["run"].iloc[c]
        steps = g["step"].to_numpy(dtype=np.int64)
        size = sizes[prep.curves["group"].iloc[c]]
        out.append(
            (
                np.log(steps.astype(float)),
                g["r"].to_numpy(),
                float(np.log(max(sched[run].warmup_steps, 1))),
                lr_drop(sched[run], steps, lr_window),
                None if size is None or pd.isna(size) else float(size),
            )
        )
    return out


def _neg_loglik(disc: Discrepancy, curves) -> float:
    total = 0.0
    for x, r, x0, c, *_ in curves:
        try:
            total -= Conditioner(disc, x, x0, c).loglik(r[None, :])[0]
        except linalg.LinAlgError:
            return np.inf
    return total


def learn_discrepancy(
    fit: Fit,
    table: pd.DataFrame,
    early_length: float = 0.1,
    lr_window: float = 0.1,
    per_size: bool = True,
    lr_term: bool = True,
) -> Discrepancy:
    """The discrepancy model of ``fit``, learned by maximum likelihood from its training
    residuals (:func:`training_residuals` of its training ``table``; module doc): first the
    stationary process (``scale``, ``length``, ``noise``; with ``lr_term`` and training
    schedules that drop their LR by at least 5 % of the peak within ``lr_window``, also
    ``lr_scale``) on every residual, then the ``early`` extra sd just after the warmup (decaying
    over ``early_length`` in ln step) with those fixed, then with ``per_size`` and several sizes
    each size's ``scale`` on its own curves, the rest fixed (``size_scales``)."""
    return learn_from_residuals(
        training_residuals(fit, table, lr_window), early_length, lr_window, per_size, lr_term
    )


def learn_from_residuals(
    curves,
    early_length: float = 0.1,
    lr_window: float = 0.1,
    per_size: bool = True,
    lr_term: bool = True,
) -> Discrepancy:
    """:func:`learn_discrepancy` on residual curves ``(x, r, x0, c, size)`` (the tuples of
    :func:`training_residuals`; ``c`` the LR drops over ``lr_window``)."""
    sd = float(np.std(np.concatenate([cv[1] for cv in curves])))
    with_lr = lr_term and max(float(cv[3].max()) for cv in curves) >= 0.05

    # The correlated part's scale can have its maximum likelihood at 0 (residuals that the noise
    # and the LR term explain): the likelihood is then flat in ln scale, and the search may drift
    # until exp underflows to 0, leaving the per-size search below no finite range. Below
    # SCALE_FLOOR x the residuals' sd a scale changes nothing, so the search sees at least that.
    floor = np.log(sd * SCALE_FLOOR)

    def stationary(p):
        s, ell, e = np.exp(np.r_[max(p[0], floor), p[1:3]])
        lr = float(np.exp(p[3])) if with_lr else 0.0
        return _neg_loglik(Discrepancy(s, ell, e, lr_scale=lr, lr_window=lr_window), curves)

    start = [sd, 0.3, sd / 3] + ([sd] if with_lr else [])
    res = optimize.minimize(
        stationary,
        np.log(start),
        method="Nelder-Mead",
        options={"xatol": 1e-3, "fatol": 1e-2, "maxfev": 4000 if with_lr else 3000},
    )
    s, ell, e = (float(v) for v in np.exp(np.r_[max(res.x[0], floor), res.x[1:3]]))
    lr = float(np.exp(res.x[3])) if with_lr else 0.0

    def model(scale=s, early=0.0):
        return Discrepancy(scale, ell, e, early, early_length, lr, lr_window)

    res = optimize.minimize_scalar(
        lambda p: _neg_loglik(model(early=float(np.exp(p))), curves),
        bounds=(np.log(sd) - 7, np.log(sd) + 3),
        method="bounded",
        options={"xatol": 1e-2},
    )
    early = float(np.exp(res.x))
    sizes = sorted({cv[4] for cv in curves if cv[4] is not None})
    by_size = []
    if per_size and len(sizes) > 1:
        for n in sizes:
            mine = [cv for cv in curves if cv[4] == n]
            r = optimize.minimize_scalar(
                lambda p, mine=mine: _neg_loglik(model(float(np.exp(p)), early), mine),
                bounds=(np.log(s) - 3, np.log(s) + 3),
                method="bounded",
                options={"xatol": 1e-2},
            )
            by_size.append((float(n), float(np.exp(r.x))))
    return Discrepancy(s, ell, e, early, early_length, lr, lr_window, tuple(by_size))
