"""What a fit learned about the schedule level: how far a new schedule's curve departs from its
group's, in % of the loss, and how much of that the training runs decided rather than the prior.

The hierarchy (:mod:`bayescpt.curves.model.hierarchy`) gives each schedule s a deviation
u_ps = u_pg + tau_p z_ps, z ~ N(0, 1), on every parameter p that has a schedule level; a new run
draws a fresh z. Its width on an unseen schedule is set by tau_p, whose prior is
LogNormal(ln run_sd, run_sd_spread) by default. With the few schedules of a typical ladder (3 per
size) the data say little about tau, so a band on a new schedule is mostly the prior's choice; a
user cannot see that from the band. :func:`schedule_level` measures it on the fit's own training
curves, at each curve's last loss point x_c (the law's design there):

    d_c = ln mu(u_g + tau z; x_c) - ln mu(u_g; x_c)      per posterior draw, z ~ N(0, 1) fresh

* ``loss_rms``: the median over training curves of sqrt(mean d_c^2) (ln loss; 0.003 = 0.3 % of
  the loss): the typical size of a new schedule's departure from its group's curve;
  ``loss_q90``: the median over curves of the 90 % quantile of |d_c|;
* ``prior_rms``: the same with tau drawn from its prior instead of the posterior (the group
  levels u_g kept at their posterior draws): what the band would be had the data said nothing;
* per tau_p: prior and posterior medians and the ratio of the posterior's to the prior's sd of
  ln tau_p (``spread_ratio``; 1 = the data taught nothing about it, 0 = fully pinned).

The verdict words (:meth:`ScheduleLevel.text`) go by the mean spread ratio r over the tau's:
r >= 0.8 "mostly the prior's", 0.5 <= r < 0.8 "partly learned", r < 0.5 "learned from the
data". Units: ln loss throughout (reported as % of the loss). It is computed once when a fit is
made (stored in the fit's attrs as ``schedule_level``, JSON) and printed by ``bayescpt fit`` and
``bayescpt predict``; a fit stored before it existed has none (``Fit.meta`` without the key).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

import numpy as np

from bayescpt.curves.model.hierarchy import parameter_draws

#: spread ratio (posterior / prior sd of ln tau) at or above which tau is "mostly the prior's"
MOSTLY_PRIOR = 0.8
#: below it (and above LEARNED) "partly learned"; below LEARNED "learned from the data"
LEARNED = 0.5


@dataclass(frozen=True)
class ScheduleLevel:
    """The schedule level a fit learned (module doc); all sizes in ln loss."""

    n_schedules: int
    n_curves: int
    loss_rms: float
    loss_q90: float
    prior_rms: float
    taus: dict  # name -> {"prior_median", "posterior_median", "spread_ratio"}

    @property
    def spread_ratio(self) -> float:
        return float(np.mean([t["spread_ratio"] for t in self.taus.values()]))

    def verdict(self) -> str:
        r = self.spread_ratio
        return (
            "mostly the prior's"
            if r >= MOSTLY_PRIOR
            else "partly learned"
            if r >= LEARNED
            else "learned from the data"
        )

    def text(self) -> str:
        """A few lines for people: the size, where it came from, what to do about it."""
        r = self.spread_ratio
        n = f"{self.n_schedules} schedule{'s' if self.n_schedules != 1 else ''}"
        taus = ", ".join(
            f"{k} {v['posterior_median']:.3g} (prior {v['prior_median']:.3g})"
            for k, v in self.taus.items()
        )
        moved = self.loss_rms / self.prior_rms if self.prior_rms > 0 else 1.0
        s = (
            f"schedule level: a new schedule's curve departs from its model size's by ~"
            f"{100 * self.loss_rms:.2g} % of the loss (rms at the training runs' last steps, 90 % "
            f"within +-{100 * self.loss_q90:.2g} %; the prior alone says ~"
            f"{100 * self.prior_rms:.2g} %): {self.verdict()}, from {n} (posterior/prior spread "
            f"of ln tau {r:.2f}; {taus})"
        )
        if r >= LEARNED and not 0.8 <= moved <= 1.25:
            s += f"; the training runs moved it to {moved:.2f}x the prior's" + (
                " without pinning it" if r >= MOSTLY_PRIOR else ""
            )
        if r >= MOSTLY_PRIOR:
            s += (
                f". {n.capitalize()} say little about how far an unseen schedule departs, so "
                "bands on new schedules are about as wide as the prior (priors.P.run_sd) makes "
                "them: check them on a run you hold out"
            )
        return s

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> ScheduleLevel:
        return cls(**json.loads(text))


def _prior_draws(prior, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` draws of a positive scalar prior (``pymc_extras`` Prior): numpy for the default
    LogNormal with plain numbers, else PyMC's ``draw``."""
    par = prior.parameters
    if prior.distribution == "LogNormal" and all(isinstance(v, (int, float)) for v in par.values()):
        return np.exp(par["mu"] + par["sigma"] * rng.standard_normal(n))
    import pymc as pm

    with pm.Model():
        v = prior.create_variable("t")
    return np.asarray(pm.draw(v, draws=n, random_seed=int(rng.integers(2**31))), float)


def _ln_curve(law, theta: dict, X: dict) -> np.ndarray:
    th = {k: v[:, None] for k, v in theta.items() if not k.startswith("_")}
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        return np.log(law.mean(np, th, X))[:, 0]


def schedule_level(fit, prep, seed: int = 0) -> ScheduleLevel | None:
    """:class:`ScheduleLevel` of ``fit`` (a :class:`~bayescpt.curves.model.fit.Fit`) on its training
    curves ``prep`` (:class:`~bayescpt.curves.model.hierarchy.Prepared`, the design at every point);
    None when the law has no schedule level (no ``*_tau`` in the posterior)."""
    post = fit.idata.posterior
    tau_names = [p.name for p in fit.law.params if f"{p.name}_tau" in post]
    if not tau_names:
        return None
    rng = np.random.default_rng(seed)
    priors = fit.priors
    S = post.sizes["chain"] * post.sizes["draw"]
    taus, prior_tau = {}, {}
    for name in tau_names:
        t = fit.flat(f"{name}_tau")
        tp = _prior_draws(priors[f"{name}_tau"], S, rng)
        prior_tau[name] = tp
        taus[f"{name}_tau"] = {
            "prior_median": float(np.median(tp)),
            "posterior_median": float(np.median(t)),
            "spread_ratio": float(np.std(np.log(t)) / np.std(np.log(tp))),
        }
    pts = prep.points.reset_index(drop=True)
    last = pts.groupby("curve")["step"].idxmax()
    rms, q90, prms = [], [], []
    positive = {p.name: fit.config["priors"][p.name]["positive"] for p in fit.law.params}
    for c, i in last.items():
        row = prep.curves.iloc[int(c)]
        grp = prep.groups.iloc[int(row["group"])]
        size = grp["size"]
        base = parameter_draws(
            fit,
            grp["val_set"],
            None
            if size is None or (isinstance(size, float) and np.isnan(size)) or size < 0
            else size,
            rng,
            new_run=False,
            antithetic=False,
        )
        X = {k: v[[i]] for k, v in prep.X.items()}
        y0 = _ln_curve(fit.law, base, X)

        def shifted(tau_of, base=base, X=X, y0=y0):
            th = dict(base)
            for name in tau_names:
                u = np.log(th[name]) if positive[name] else th[name]
                u = u + tau_of[name] * rng.standard_normal(S)
                th[name] = np.exp(u) if positive[name] else u
            return _ln_curve(fit.law, th, X) - y0

        d = shifted({n: fit.flat(f"{n}_tau") for n in tau_names})
        dp = shifted(prior_tau)
        ok, okp = np.isfinite(d), np.isfinite(dp)
        if ok.sum() < S / 2 or okp.sum() < S / 2:
            continue
        rms.append(np.sqrt(np.mean(d[ok] ** 2)))
        q90.append(np.quantile(np.abs(d[ok]), 0.9))
        prms.append(np.sqrt(np.mean(dp[okp] ** 2)))
    if not rms:
        return None
    return ScheduleLevel(
        n_schedules=int(post.sizes.get("schedule", 0)),
        n_curves=len(rms),
        loss_rms=float(np.median(rms)),
        loss_q90=float(np.median(q90)),
        prior_rms=float(np.median(prms)),
        taus=taus,
    )
