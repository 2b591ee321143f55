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
the lengths and ``lr_window`` (ln step); :mod:`bayescpt.curves.forecast.discrepancy_fit`
learns them from a fit's own training residuals. :class:`Conditioner` is the process at a
prefix's steps: its Gaussian log likelihood of residuals and its conditional mean and variance
at later steps (one Cholesky factor of K + noise^2 I for every particle; with Student-t white
noise, :meth:`Conditioner.student_t`, K + noise^2 diag(1 / u)). How prefix forecasts use it:
:mod:`bayescpt.curves.forecast.prefix`.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

import numpy as np
from scipy import linalg, stats

from bayescpt.curves.model.fit import Fit

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
    one Cholesky factor shared by every particle (:mod:`bayescpt.curves.forecast.prefix`, module
    doc). ``scales`` (n,) multiply each point's noise variance (1: all alike); :meth:`student_t`
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
        tempered in the prefix forecast), not noise. One factor still serves every particle:
        ``r`` is a representative residual (the weighted mean of the particles'), the particles
        differ from it smoothly."""
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
