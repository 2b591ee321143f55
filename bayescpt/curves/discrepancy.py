"""A run's smooth discrepancy from its law: the model prefix forecasts weight and forecast with.

A real run's log loss leaves the fitted law smoothly, hundreds of logged losses leaning one way
together. For losses y_i at steps s_i past the warmup (x_i = ln s_i, x0 = ln(warmup steps)) and a
law curve mu(s)::

    ln y_i - ln mu(s_i) = d(x_i) + e_i,      e_i ~ N(0, noise^2) iid
    d ~ GP(0, k),  k(x, x') = sd(x) sd(x') exp(-|x - x'| / length)   (Ornstein-Uhlenbeck in ln s)
    sd(x)^2 = scale^2 + early^2 exp(-(x - x0) / early_length)       (larger just after warmup)

:class:`Discrepancy` holds (``scale``, ``length``, ``noise``, ``early``, ``early_length``), all on
ln loss (0.001 = 0.1 % of the loss) except the lengths (ln step). :func:`learn_discrepancy` fits
them by maximum likelihood to a fit's own training residuals (each training curve's
posterior-mean residual under its fitted parameters, :func:`training_residuals`): the stationary
part on all curves first, then ``early`` with the others fixed. :class:`Conditioner` is the
process at a prefix's steps: its Gaussian log likelihood of residuals and its conditional mean
and variance at later steps (one Cholesky factor of K + noise^2 I for every particle). How prefix
forecasts use it: :mod:`bayescpt.curves.prefix`.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
from scipy import linalg, optimize

from bayescpt.core.tables import DataError
from bayescpt.curves.data import schedules_of
from bayescpt.curves.fit import Fit
from bayescpt.curves.hierarchy import prepare


@dataclass(frozen=True)
class Discrepancy:
    """The smooth discrepancy of a run's log loss from the law, plus white noise (:mod:`bayescpt.curves.prefix`, module doc).

    d is an Ornstein-Uhlenbeck process in x = ln(step) (correlation exp(-|x - x'| / length))
    of standard deviation s(x) = sqrt(scale^2 + early^2 exp(-(x - x0) / early_length)) at x,
    x0 = ln(the run's warmup steps): ``scale`` the late level, ``early`` the extra just after
    the warmup; ``noise`` the sd of the white part e (all on log loss)."""

    scale: float
    length: float
    noise: float
    early: float = 0.0
    early_length: float = 0.1

    def sd(self, x: np.ndarray, x0: float) -> np.ndarray:
        return np.sqrt(self.scale ** 2 + self.early ** 2
                       * np.exp(-np.maximum(x - x0, 0.0) / self.early_length))

    def kernel(self, xa: np.ndarray, xb: np.ndarray, x0: float = 0.0) -> np.ndarray:
        """Covariance of d between ln steps ``xa`` (m,) and ``xb`` (n,): shape (m, n)."""
        return np.outer(self.sd(xa, x0), self.sd(xb, x0)) \
            * np.exp(-np.abs(xa[:, None] - xb[None, :]) / self.length)

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text) -> "Discrepancy":
        d = json.loads(text) if isinstance(text, str) else dict(text)
        return cls(**{k: float(v) for k, v in d.items()})


class Conditioner:
    """The discrepancy's Gaussian process conditioned on a prefix at ln steps ``x`` (n,): one
    Cholesky factor shared by every particle (:mod:`bayescpt.curves.prefix`, module doc)."""

    def __init__(self, disc: Discrepancy, x: np.ndarray, x0: float):
        self.disc, self.x, self.x0 = disc, x, x0
        K = disc.kernel(x, x, x0)
        K[np.diag_indices_from(K)] += disc.noise ** 2 + 1e-10 * disc.sd(x, x0) ** 2
        self.L = linalg.cholesky(K, lower=True)
        self.logdet = 2.0 * np.log(np.diag(self.L)).sum()

    def loglik(self, R: np.ndarray) -> np.ndarray:
        """Gaussian log likelihood of each particle's residuals ``R`` (P, n): shape (P,)."""
        Z = linalg.solve_triangular(self.L, R.T, lower=True, check_finite=False)
        n = len(self.x)
        return (-0.5 * np.einsum("ij,ij->j", Z, Z) - 0.5 * self.logdet
                - 0.5 * n * np.log(2 * np.pi))

    def predict(self, xt: np.ndarray, R: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Conditional mean (P, m) and variance (m,) of d at ln steps ``xt`` given residuals
        ``R`` (P, n)."""
        k = self.disc.kernel(xt, self.x, self.x0)
        A = linalg.cho_solve((self.L, True), k.T, check_finite=False)    # (n, m)
        var = self.disc.sd(xt, self.x0) ** 2 - np.einsum("mn,nm->m", k, A)
        return R @ A, np.maximum(var, 0.0)


def training_residuals(fit: Fit, table: pd.DataFrame) -> list[tuple[np.ndarray, np.ndarray, float]]:
    """Each training curve's residual from the law, ``(x, r, x0)``: ln steps (n,), the
    posterior-mean residual ln y - ln mu (n,) under the curve's own fitted parameters, and ln of
    its warmup steps; ``table`` is the fit's training table (its loss rows past the warmup must
    be the fit's observed points)."""
    df, _ = fit.law.split_data(table)
    prep = prepare(df, fit.law, dict(fit.config["settings"]), size_ref=fit.size_ref)
    y = fit.idata.observed_data["y"].values
    if len(y) != len(prep.y) or not np.allclose(y, prep.y):
        raise DataError("the table is not the fit's training table (its losses differ from the "
                        "fit's observed points)")
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
    out = []
    for c, g in prep.points.assign(r=r).groupby("curve"):
        warm = sched[prep.curves["run"].iloc[c]].warmup_steps
        out.append((np.log(g["step"].to_numpy(dtype=float)), g["r"].to_numpy(),
                    float(np.log(max(warm, 1)))))
    return out


def _neg_loglik(disc: Discrepancy, curves) -> float:
    total = 0.0
    for x, r, x0 in curves:
        try:
            total -= Conditioner(disc, x, x0).loglik(r[None, :])[0]
        except linalg.LinAlgError:
            return np.inf
    return total


def learn_discrepancy(fit: Fit, table: pd.DataFrame, early_length: float = 0.1) -> Discrepancy:
    """The discrepancy model of ``fit``, learned by maximum likelihood from its training
    residuals (:func:`training_residuals` of its training ``table``): first the stationary
    process (``scale``, ``length``, ``noise``) on every residual, then the ``early`` extra sd
    just after the warmup (decaying over ``early_length`` in ln step) with those fixed."""
    curves = training_residuals(fit, table)
    sd = float(np.std(np.concatenate([r for _, r, _ in curves])))

    def stationary(p):
        s, ell, e = np.exp(p)
        return _neg_loglik(Discrepancy(s, ell, e), curves)

    res = optimize.minimize(stationary, np.log([sd, 0.3, sd / 3]), method="Nelder-Mead",
                            options={"xatol": 1e-3, "fatol": 1e-2, "maxfev": 3000})
    s, ell, e = (float(v) for v in np.exp(res.x))

    def early(p):
        return _neg_loglik(Discrepancy(s, ell, e, float(np.exp(p)), early_length), curves)

    res = optimize.minimize_scalar(early, bounds=(np.log(sd) - 7, np.log(sd) + 3),
                                   method="bounded", options={"xatol": 1e-2})
    return Discrepancy(s, ell, e, float(np.exp(res.x)), early_length)


def resolve_discrepancy(fit: Fit, discrepancy) -> "Discrepancy | None":
    """The discrepancy model a prefix forecast uses: ``"auto"`` the fit's own (learned from its
    training residuals, stored with it), else none (iid); ``"iid"`` or None: none; a
    :class:`Discrepancy` (or its JSON) as given."""
    if isinstance(discrepancy, Discrepancy):
        return discrepancy
    if discrepancy is None or discrepancy == "iid":
        return None
    if discrepancy == "auto":
        stored = fit.meta.get("discrepancy")
        return Discrepancy.from_json(stored) if stored else None
    return Discrepancy.from_json(discrepancy)
