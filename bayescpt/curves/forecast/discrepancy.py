"""A run's smooth discrepancy from its law: the model prefix forecasts weight and forecast with.

A real run's log loss leaves the fitted law smoothly, hundreds of logged losses leaning one way
together. For losses y_i at steps s_i past the warmup (x_i = ln s_i, x0 = ln(warmup steps)) of a
run of model size N on a schedule with learning rate lr(s), and a law curve mu(s)::

    ln y_i - ln mu(s_i) = d(x_i) + e_i,      e_i ~ N(0, noise^2) iid
    d ~ GP(0, k),  k(x, x') = sd(x) sd(x') exp(-|x - x'| / length)   (Ornstein-Uhlenbeck in ln s)
    sd(x)^2 = scale_N^2                                   (the late level, per model size)
            + early^2 exp(-(x - x0) / early_length)      (larger just after warmup)
            + lr_scale^2 c(s)^2                           (larger just after an LR drop)
    c(s) = (max over s' in [s exp(-lr_window), s] of lr(s') - lr(s)) / max lr

c(s) is the drop of the LR over the last ``lr_window`` in ln step, as a share of the peak LR (0 on a
constant stretch, up to 1 just after a drop to zero): abrupt LR changes are where the laws misfit
for a while. scale_N: ``scale`` for every size when ``size_scales`` is empty (fits stored before
it existed); else the size's own from ``size_scales`` (pairs (N, scale_N)), ln scale_N
interpolated linearly in ln N between the learned sizes and held at the end ones outside them.
A fit stored without ``lr_scale`` / ``size_scales`` reads them as 0 / empty: the model above
without those terms, as before.

:class:`Discrepancy` holds (``scale``, ``length``, ``noise``, ``early``, ``early_length``,
``lr_scale``, ``lr_window``, ``size_scales``), all on ln loss (0.001 = 0.1 % of the loss) except
the lengths and ``lr_window`` (ln step). :func:`learn_discrepancy` fits them by maximum
likelihood to a fit's own training residuals (each training curve's posterior-mean residual under
its fitted parameters, :func:`training_residuals`): the stationary part (``scale``, ``length``,
``noise``, with ``lr_scale`` when the training schedules drop their LR) on all curves first, then
``early`` with the others fixed, then (a fit of several sizes, ``per_size``) each size's
scale_N on that size's curves alone with everything else fixed. :class:`Conditioner` is the
process at a prefix's steps: its Gaussian log likelihood of residuals and its conditional mean
and variance at later steps (one Cholesky factor of K + noise^2 I for every particle; with
Student-t white noise, :meth:`Conditioner.student_t`, K + noise^2 diag(1 / u)). How prefix
forecasts use it: :mod:`bayescpt.curves.forecast.prefix`.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
from scipy import linalg, optimize, stats

from bayescpt.core.tables import DataError
from bayescpt.curves.data.table import schedules_of
from bayescpt.curves.model.fit import Fit
from bayescpt.curves.model.hierarchy import prepare

#: the smallest correlated scale the maximum-likelihood search sees, as a share of the
#: residuals' sd (a smaller one is no discrepancy; :func:`learn_from_residuals`)
SCALE_FLOOR = 1e-6


#: White-noise sds (ln loss) a run in progress may show, besides the fit's learned one: 0.0025 %
#: to 1.28 % of the loss, a factor 2 apart (:meth:`Discrepancy.noise_levels`).
RUN_NOISE_LEVELS = 2.5e-5 * 2.0 ** np.arange(10)


#: The most a prefix point's white-noise variance is scaled by Student-t noise
#: (:meth:`Conditioner.student_t`): its sd at most 10 times the level's.
MAX_NOISE_SCALE = 100.0


@dataclass(frozen=True)
class Discrepancy:
    """The smooth discrepancy of a run's log loss from the law, plus white noise (module doc).

    d is an Ornstein-Uhlenbeck process in x = ln(step) (correlation exp(-|x - x'| / length))
    of standard deviation sqrt(scale^2 + early^2 exp(-(x - x0) / early_length)
    + lr_scale^2 c^2) at x, x0 = ln(the run's warmup steps), c the run's recent LR drop there
    (:func:`lr_drop`): ``scale`` the late level (per size: :meth:`for_size`), ``early`` the
    extra just after the warmup, ``lr_scale`` the extra per unit of LR drop; ``noise`` the sd of
    the white part e (all on log loss)."""

    scale: float
    length: float
    noise: float
    early: float = 0.0
    early_length: float = 0.1
    lr_scale: float = 0.0
    lr_window: float = 0.1
    size_scales: tuple = ()

    def for_size(self, size) -> Discrepancy:
        """The model of a run of ``size`` parameters: ``scale`` replaced by that size's (ln scale
        linear in ln size between the learned sizes, the end ones' outside; as is without
        ``size_scales`` or a size)."""
        if not self.size_scales or size is None or not np.isfinite(size) or size <= 0:
            return self
        n, sc = np.log(np.array(sorted(self.size_scales), dtype=float)).T
        scale = float(np.exp(np.interp(np.log(float(size)), n, sc)))
        return Discrepancy(
            scale,
            self.length,
            self.noise,
            self.early,
            self.early_length,
            self.lr_scale,
            self.lr_window,
        )

    def noise_levels(self) -> np.ndarray:
        """The white-noise sds a new run's own evaluations may have (ln loss, ascending): the
        learned ``noise`` and :data:`RUN_NOISE_LEVELS`. A run is evaluated on its own eval set,
        batch count and logging cadence, so its noise need not be the training curves' (smooth
        published curves give ``noise`` ~ 0; a live run's eval loss is rarely that smooth); a
        prefix forecast weighs every level by the prefix's likelihood (equal prior weights)."""
        return np.unique(np.append(RUN_NOISE_LEVELS, self.noise))

    def sd(self, x: np.ndarray, x0: float, c: np.ndarray | None = None) -> np.ndarray:
        v = self.scale**2 + self.early**2 * np.exp(-np.maximum(x - x0, 0.0) / self.early_length)
        if c is not None and self.lr_scale:
            v = v + (self.lr_scale * c) ** 2
        return np.sqrt(v)

    def kernel(
        self,
        xa: np.ndarray,
        xb: np.ndarray,
        x0: float = 0.0,
        ca: np.ndarray | None = None,
        cb: np.ndarray | None = None,
    ) -> np.ndarray:
        """Covariance of d between ln steps ``xa`` (m,) and ``xb`` (n,) (LR drops ``ca``,
        ``cb`` there): shape (m, n)."""
        return np.outer(self.sd(xa, x0, ca), self.sd(xb, x0, cb)) * np.exp(
            -np.abs(xa[:, None] - xb[None, :]) / self.length
        )

    def to_json(self) -> str:
        d = asdict(self)
        d["size_scales"] = [[float(n), float(v)] for n, v in self.size_scales]
        return json.dumps(d)

    @classmethod
    def from_json(cls, text) -> Discrepancy:
        d = json.loads(text) if isinstance(text, str) else dict(text)
        sizes = tuple((float(n), float(v)) for n, v in d.pop("size_scales", None) or ())
        return cls(**{k: float(v) for k, v in d.items()}, size_scales=sizes)


def lr_drop(schedule, steps: np.ndarray, window: float) -> np.ndarray:
    """The LR's drop over the last ``window`` in ln step before each of ``steps``, as a share of
    the schedule's peak: (max of lr on [s exp(-window), s] - lr(s)) / max lr, in [0, 1]."""
    lr = np.asarray(schedule.lr, dtype=float)
    peak = lr.max()
    if not peak > 0:
        return np.zeros(len(steps))
    steps = np.minimum(np.asarray(steps, dtype=np.int64), len(lr) - 1)
    lo = np.floor(steps * np.exp(-window)).astype(np.int64)
    # max of lr[lo:s + 1] per step: reduceat over the pairs (lo, s + 1), every other result
    # (a sentinel makes s + 1 a valid index at the schedule's last step)
    bounds = np.column_stack([lo, steps + 1]).ravel()
    out = np.maximum.reduceat(np.append(lr, -np.inf), bounds)[::2] if len(steps) else np.zeros(0)
    return np.clip((out - lr[steps]) / peak, 0.0, 1.0)


class Conditioner:
    """The discrepancy's Gaussian process conditioned on a prefix at ln steps ``x`` (n,), the
    run's LR drops ``c`` there (or None), white noise of sd ``noise`` (None: the model's own):
    one Cholesky factor shared by every particle (:mod:`bayescpt.curves.forecast.prefix`, module doc).
    ``scales`` (n,) multiply each point's noise variance (1: all alike); :meth:`student_t`
    sets them for heavy-tailed white noise."""

    def __init__(
        self,
        disc: Discrepancy,
        x: np.ndarray,
        x0: float,
        c: np.ndarray | None = None,
        noise: float | None = None,
        scales: np.ndarray | None = None,
    ):
        self.disc, self.x, self.x0, self.c = disc, x, x0, c
        self.noise = disc.noise if noise is None else float(noise)
        self.scales = np.ones(len(x)) if scales is None else np.asarray(scales, dtype=float)
        self.nu = None  # white noise Normal; Student-t with nu degrees (student_t)
        self.offset = 0.0  # added to every log likelihood (student_t)
        K = disc.kernel(x, x, x0, c, c)
        K[np.diag_indices_from(K)] += self.noise**2 * self.scales + 1e-10 * disc.sd(x, x0, c) ** 2
        self.L = linalg.cholesky(K, lower=True)
        self.logdet = 2.0 * np.log(np.diag(self.L)).sum()

    def _noise_part(self, r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The white noise's conditional mean and variance at each prefix point given the
        residual ``r`` (n,)."""
        D = self.noise**2 * self.scales + 1e-300
        e = D * linalg.cho_solve((self.L, True), r, check_finite=False)
        Linv = linalg.solve_triangular(self.L, np.eye(len(r)), lower=True, check_finite=False)
        return e, np.maximum(D - D**2 * np.einsum("ij,ij->j", Linv, Linv), 0.0)

    def student_t(self, r: np.ndarray, nu: float, iters: int = 20) -> Conditioner:
        """This process with Student-t white noise (``nu`` degrees of freedom, scale ``noise``)
        instead of Normal, for a prefix whose residual is about ``r`` (n,).

        The t noise of point i is a scale mixture, N(0, noise^2 / u_i) with u_i ~ Gamma(nu/2,
        rate nu/2); u is set to its expectation given ``r`` by EM, u_i = (nu + 1) / (nu +
        E[e_i^2 | r] / noise^2), so a spike (one logged loss many noise sds off) is read as
        noise, not as a smooth departure of the run that its forecast would carry on. The log
        likelihood then replaces the Gaussian density of the white noise at its conditional
        mean e by the t density (``offset``: sum_i log t_nu(e_i; noise) - log N(e_i; 0,
        noise^2 / u_i), the same for every particle), so that noise levels compare as under t
        noise. A point's variance grows at most ``MAX_NOISE_SCALE`` times (its sd 10 times):
        a prefix far off the fit everywhere stays evidence against it (a degenerate update,
        tempered in the prefix forecast), not noise. One factor still serves every particle: ``r`` is a representative residual (the
        weighted mean of the particles'), the particles differ from it smoothly."""
        cd, r = self, np.asarray(r, dtype=float)
        s2 = max(self.noise**2, 1e-300)
        for _ in range(iters):
            e, v = cd._noise_part(r)
            scales = np.minimum((nu + (e**2 + v) / s2) / (nu + 1.0), MAX_NOISE_SCALE)
            if np.allclose(scales, cd.scales, rtol=1e-3):
                break
            try:
                cd = Conditioner(self.disc, self.x, self.x0, self.c, self.noise, scales)
            except linalg.LinAlgError:
                break
        e, _ = cd._noise_part(r)
        sd = np.sqrt(self.noise**2 * cd.scales + 1e-300)
        cd.nu = float(nu)
        cd.offset = float(
            np.sum(
                stats.t.logpdf(e / np.sqrt(s2), nu)
                - 0.5 * np.log(s2)
                - stats.norm.logpdf(e / sd)
                + np.log(sd)
            )
        )
        return cd

    def loglik(self, R: np.ndarray) -> np.ndarray:
        """Gaussian log likelihood of each particle's residuals ``R`` (P, n) (plus ``offset``):
        shape (P,)."""
        Z = linalg.solve_triangular(self.L, R.T, lower=True, check_finite=False)
        n = len(self.x)
        return (
            -0.5 * np.einsum("ij,ij->j", Z, Z)
            - 0.5 * self.logdet
            - 0.5 * n * np.log(2 * np.pi)
            + self.offset
        )

    def predict(
        self, xt: np.ndarray, R: np.ndarray, ct: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Conditional mean (P, m) and variance (m,) of d at ln steps ``xt`` (LR drops ``ct``)
        given residuals ``R`` (P, n)."""
        k = self.disc.kernel(xt, self.x, self.x0, ct, self.c)
        A = linalg.cho_solve((self.L, True), k.T, check_finite=False)  # (n, m)
        var = self.disc.sd(xt, self.x0, ct) ** 2 - np.einsum("mn,nm->m", k, A)
        return R @ A, np.maximum(var, 0.0)


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
                lambda p: _neg_loglik(model(float(np.exp(p)), early), mine),
                bounds=(np.log(s) - 3, np.log(s) + 3),
                method="bounded",
                options={"xatol": 1e-2},
            )
            by_size.append((float(n), float(np.exp(r.x))))
    return Discrepancy(s, ell, e, early, early_length, lr, lr_window, tuple(by_size))


def resolve_discrepancy(fit: Fit, discrepancy) -> Discrepancy | None:
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
