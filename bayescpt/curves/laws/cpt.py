"""CPT learning-dynamics law (Wang, Tissue, Wang, Li, Zeng 2025, arXiv 2505.07796), LAWS.md section 3.

A continual pre-training (CPT) curve moves from the pre-training (PT) curve to a hidden curve::

    L(t) = L0 + A * (S1pt + S1cpt)^(-alpha) - C1 * S2pt - C2 * S2cpt
              + sign * B * (1 - (1 + E * S1cpt)^(-beta))

S1pt, S2pt are the areas of the PT schedule up to the transfer step (frozen after it); S1cpt,
S2cpt those of the CPT segment so far, whose eta_0 is the last PT learning rate (a re-warmup
gives a negative S2cpt). On PT rows the CPT areas are 0 and the law is the LR-annealing law.
``sign`` is +1 on a ``general`` validation set (the PT distribution: the loss rises) and -1 on a
``domain`` set (the CPT distribution: the loss falls); B > 0 is its magnitude, so the sign is
tied to the role by construction. All parameters are positive and live on the log scale.

The shift is sampled as ``Bref``, its size at the reference area ``S1cpt = shift_ref`` (setting,
default 1.0, about 5000 steps at 2e-4), and B = Bref / (1 - (1 + E * shift_ref)^(-beta)) is
reported beside it. When E * S1cpt >> 1 over all the data (the paper's domain set has E = 5662)
B, E and beta lie on a curved ridge that only pins their shift at the observed areas; B itself
then sampled badly (R-hat 1.09, ESS 34 on simulated Fig. 3 data), Bref does not.

Options (all of the same law; saved with the fit):

``replay`` (Eq. 8; r = share of PT data in the CPT mixture, r_cpt = 1 - r)::

    C2 -> C2 * exp(a1 * r),     shift -> shift * g_k(r_cpt),   g_k(x) = expm1(-k x) / expm1(-k)

  ``g_k`` is the paper's two shift factors in one family, rescaled so that g(1) = 1 (B keeps its
  meaning of the shift of a pure-domain CPT run): k > 0 gives the general set's concave
  (1 - exp(-a2 r_cpt)), k < 0 the domain set's convex (exp(a2 r_cpt) - 1); k is per validation
  set and the data choose its sign. *Which ratio enters C2's exponent* (the paper's text and its
  Fig. 19 caption disagree for the domain set) does not need deciding: exp(a1 r_pt) =
  exp(a1) * exp(-a1 r_cpt), so with a1 of either sign and C2 free the two readings are the same
  family; the fit reports a1 on r_pt, and a1 < 0 is the r_cpt reading with a positive exponent.

``size_extension`` (Eq. 7; N in millions of non-embedding parameters)::

    C1 -> C1 * N^gamma1,   C2 -> C2 * N^gamma2,   + F * N^(-gamma3)

``unknown_pt``: runs without PT rows (an open-source base model) get S1pt as a parameter
(shared by the validation sets, varying with model size through the hierarchy) and S2pt = 0:
the PT is taken to have ended at learning rate 0, so its annealing term is constant and L0
absorbs it (L0 is then not the irreducible loss for those runs).

``anchored`` (PT curves far from their floor, as the CPU lab's ~1000-step runs; asked for, not
chosen from the data)::

    L0 + A * S1^(-alpha)  ->  Lr + (G * s / alpha) * ((S1 / s)^(-alpha) - 1)

  is the same power law written around the anchor area ``s`` (setting ``anchor_s1``, filled at fit
  time with the median over runs of the PT area at the transfer): Lr = L0 + A * s^(-alpha) is its
  loss there and G = A * alpha * s^(-alpha - 1) its slope -dL/dS1. L0 and A are derived. On the
  lab grid (25 runs, 3 sizes) sampling L0, A, alpha did not converge (R-hat 1.17-1.31, ESS 5-18;
  L0-A correlation -0.9, L0-alpha +0.5 to +0.8, 219 leapfrog steps per draw): the PT curves are
  nearly straight in log S1 (alpha ~ 0.01-0.2), which leaves L0 anywhere below the data. Lr and G
  are pinned by the data (posterior sd 0.2-0.4 % and 3-8 %), alpha is only the curvature at s, per
  group around a population value with a LogNormal prior around 0.3 (sd 0.7 on the log scale),
  group spread around 0.3 and no size slope; alpha -> 0 is smooth (the law tends to
  Lr - G s log(S1 / s)). On the lab grid alpha goes to ~0.01-0.02 in every group. One alpha for
  all groups sampled the lab grid a little better but split the chains on simulated Fig. 3 data,
  whose two sets have alpha 0.50 and 0.68 (R-hat 1.83); per group, the lab fit passes at the
  default settings (4 x 1000 after 1000: R-hat 1.004, ESS 818, 0 divergences, 247 s).
  Two more defaults of this option, each measured on the lab grid: runs that differ only in the
  replay ratio share their schedule-level deviations (setting ``replay_deviation`` False; with a
  deviation per ratio, the domain set's k and the Bref deviation at ratio 0.5 correlated at 0.8,
  ESS 24), and k ~ N(0, 2) with group sd 2 (N(0, 4) / 3 let k wander to 12, where the shift no
  longer depends on the ratio). **Not interpretable with this option** when alpha is near 0: L0
  and A (derived; L0 goes far below 0 as alpha -> 0). Estimated: Lr, G, C1, C2, the shift, a1, k.

``checkpoint`` (data with one PT point: every run continues the same checkpoint and the only PT
loss is the checkpoint's own, as in the mixing-laws experiment; chosen from the data by
:func:`bayescpt.cpt.cpt_law_options`)::

    L(t) = Lc + (G * S1T / alpha) * ((1 + S1cpt / S1T)^(-alpha) - 1) - C2 * S2cpt + sign * shift

  is the law above rewritten around the checkpoint: with S1T, S2T the PT areas at the transfer,
  Lc = L0 + A * S1T^(-alpha) - C1 * S2T is the loss at the checkpoint and
  G = A * alpha * S1T^(-alpha - 1) the PT power law's slope -dL/dS1 there. One PT point fixes only
  Lc: C1 * S2T is a constant that L0 absorbs, and the CPT covers S1 in [S1T, S1T + S1cpt] only
  (on the mixing-law data S1cpt / S1T <= 0.28), where the power law is nearly a straight line of
  slope G. What the mode does, and why (each measured on the mixing-law data, 2-4 chains):

  * L0, A, alpha, C1 -> G: sampling them did not converge (R-hat 1.06-1.19, ESS 18-82); alpha is
    fixed at the setting ``checkpoint_alpha`` (default 0.5; the paper's Fig. 3 values are
    0.50 / 0.68): free, it went to 6 and bent the power law into a second shift.
  * Lc is the checkpoint's *measured* loss per validation set (setting ``checkpoint_loss``,
    filled from the data at fit time; its evaluation noise, ~0.07 % here, is ignored). Sampled,
    the domain set's chains found a second mode that treats the checkpoint as an outlier of the
    Student-t likelihood (Lc 1.65 against the measured 1.838).
  * beta: one value for all validation sets with a tight prior at the paper's values (LogNormal
    around 0.17, sd 0.3 on the log scale): with one CPT schedule beta -> 0, E -> infinity leave
    the observed shift unchanged, and a per-set beta with the default prior gave R-hat 1.21.
  * replay: Bref and C2 are defined at the data's median replay ratio (setting ``replay_ref``)
    rather than at r = 0, an extrapolation; k gets a N(0, 1.5) prior (N(0, 4) let it wander to 8,
    where the shift no longer depends on the ratio and the runs' own deviations carry it: R-hat
    1.25); the per-run deviations of C2 and Bref get a tau prior centred at 0.02 (0.04 elsewhere),
    as they trade off with a1 and k. B (derived) is still the pure-domain shift's asymptote.
  * C2 is pooled tightly across validation sets (group sd 0.1 on the log scale; the paper's two
    sets have 0.298 / 0.324): with the default 0.3 the domain set's C2 and G, both describing
    the slow decline after the shift, traded off (R-hat 1.011, ESS 470).

  **Not interpretable in this mode:** L0 and C1 (not estimated), alpha (fixed), A (reported,
  derived as G * S1T^(alpha + 1) / alpha: only the local power law at the checkpoint), beta
  (mostly its prior) and through it B and E. Estimated: G, C2, Bref, E given beta, a1, k.
  A fit in this mode predicts CPT plans *from the same checkpoint* (any schedule, length or replay
  ratio, on the fitted validation sets; PT rows before the transfer are predicted as NaN); plans
  from another checkpoint are refused.
"""

from __future__ import annotations

import numpy as np

from bayescpt.core.schedules import Schedule, areas
from bayescpt.curves.data import schedules_of
from bayescpt.curves.laws.base import Law, Param, check_steps, size_in_millions

ROLE_SIGN = {"general": 1.0, "domain": -1.0}


class CPTLaw(Law):
    name = "cpt"
    default_settings = {"lam": 0.999, "warmup": "exact", "shift_ref": 1.0}

    @property
    def derived_names(self):
        if self.anchored:
            return ("B", "L0", "A")
        return ("B", "A") if self.checkpoint else ("B",)

    def __init__(self, replay: bool = False, size_extension: bool = False,
                 unknown_pt: bool = False, checkpoint: bool = False, anchored: bool = False):
        self.replay = bool(replay)
        self.size_extension = bool(size_extension)
        self.unknown_pt = bool(unknown_pt)
        self.checkpoint = bool(checkpoint)
        self.anchored = bool(anchored)
        if self.checkpoint and (self.unknown_pt or self.size_extension):
            raise ValueError("the cpt law's checkpoint mode (one PT point, a known checkpoint) "
                             "does not combine with unknown_pt or size_extension")
        if self.checkpoint and self.anchored:
            raise ValueError("the cpt law's anchored option is for data with PT curves; the "
                             "checkpoint mode already anchors the law at its one PT point")
        # Priors centred on the paper's fitted values (wang2025_cpt_fitted_parameters.csv, raw LR
        # with peak 2e-4) and wide enough for the mixing-law data; group spreads are between
        # validation sets (and sizes), where the paper's L0, B and E differ most.
        params = (
            Param("L0", True, np.log(2.5), 0.7, 0.5, 0.1, 0.0, "irreducible loss (nats)"),
            Param("A", True, np.log(0.5), 1.0, 0.3, 0.3, 0.0, "power-law amplitude"),
            Param("alpha", True, np.log(0.5), 0.5, 0.2, 0.2, 0.0, "power-law exponent in S1"),
            Param("C1", True, np.log(0.3), 1.0, 0.3, 0.3, 0.0, "PT annealing coefficient"),
            Param("C2", True, np.log(0.3), 1.0, 0.3, 0.3, 0.04, "CPT annealing coefficient"),
            Param("Bref", True, np.log(0.3), 1.5, 0.7, 0.3, 0.04,
                  "distribution shift at S1cpt = shift_ref (sign from the set's role)"),
            Param("E", True, np.log(100.0), 2.0, 1.5, 0.3, 0.0, "shift rate in S1cpt"),
            Param("beta", True, np.log(0.2), 1.0, 0.5, 0.2, 0.0, "shift exponent"),
        )
        if self.checkpoint:
            # Lc replaces L0, G replaces A, C1 is dropped (see the module docstring). G's prior:
            # the paper's Fig. 3 values give 0.01-0.1 per unit of S1 at their transfer areas.
            # C2 and Bref keep their per-run deviations, with a tau prior centred at 0.02 instead
            # of 0.04: with one checkpoint and one CPT schedule they trade off with the replay
            # terms a1 and k (ESS 260-310 for k and the taus; 360-430 at 0.02).
            # C2 is pooled tightly across validation sets (group sd 0.1; the paper's two sets have
            # 0.298 / 0.324): with 0.3 the domain set's C2 traded off with its G (R-hat 1.011).
            keep = {"C2", "Bref", "E"}
            over = {"C2": 0.02, "Bref": 0.02}
            pool = {"C2": 0.1}
            self.default_settings = dict(CPTLaw.default_settings, checkpoint_alpha=0.5)
            # G and C2 both describe the slow decline after the shift and mix slowly together:
            # at 1000 + 1000 the joint mixing-law fit sat at R-hat 1.011. The domain set's G has
            # a thin tail (~8 % of the mass: low G, high C2, low beta) that chains visit unevenly:
            # at 2000 + 2000 one of the five held-out-share fits still sat at R-hat 1.0108 (ESS
            # 803), at 3000 draws 1.0076 (ESS 1141). Sampler options override this.
            self.default_sampler = {"draws": 3000, "tune": 2000}
            params = (
                Param("G", True, np.log(0.02), 1.5, 0.5, 0.3, 0.0,
                      "slope -dL/dS1 of the PT power law at the checkpoint"),
            ) + tuple(Param(p.name, p.positive, p.loc, p.scale, pool.get(p.name, p.group_sd),
                            p.size_slope_sd, over.get(p.name, p.run_sd), p.doc)
                      for p in params if p.name in keep) + (
                Param("beta", True, np.log(0.17), 0.3, 0.0, 0.0, 0.0,
                      "shift exponent (one value for all sets, near the paper's 0.15-0.19)"),)
        if self.anchored:
            # L0, A -> Lr, G at the anchor area S1 = anchor_s1 (inside the PT data); alpha is
            # then only the curvature there, per group without a size slope (module docstring).
            # Runs that differ only in the replay ratio share their schedule deviations: with a
            # deviation per ratio, the domain set's k and the deviation of Bref at ratio 0.5
            # (shared by the sizes) correlated at 0.8 on the lab grid (k's ESS 24).
            self.default_settings = dict(CPTLaw.default_settings, anchor_s1=None,
                                         replay_deviation=False)
            anchor = {
                "L0": Param("Lr", True, np.log(2.5), 0.7, 0.5, 0.1, 0.0,
                            "PT power-law loss L0 + A * S1^-alpha at S1 = anchor_s1"),
                "A": Param("G", True, np.log(0.1), 2.0, 0.5, 0.3, 0.0,
                           "slope -dL/dS1 of the PT power law at S1 = anchor_s1"),
                "alpha": Param("alpha", True, np.log(0.3), 0.7, 0.3, 0.0, 0.0,
                               "power-law exponent in S1 (the curvature at the anchor)"),
            }
            params = tuple(anchor.get(p.name, p) for p in params)
        if self.replay:
            # checkpoint mode: a tighter prior on k. With N(0, 4) k wandered to 8, where the shift
            # no longer depends on the ratio and the runs' own deviations carry it (R-hat 1.25).
            # anchored: k ~ N(0, 2), group sd 2 (N(0, 4) / 3 let the domain set's k wander to
            # 12 on the lab grid, where the shift no longer depends on the ratio: ESS 27)
            ks = (1.5, 1.5) if self.checkpoint else (2.0, 2.0) if self.anchored else (4.0, 3.0)
            params += (
                Param("a1", False, 0.0, 1.0, 0.5, 0.0, 0.0, "replay exponent of C2 (on r_pt)"),
                Param("k", False, 0.0, ks[0], ks[1], 0.0, 0.0, "curvature of the shift in r_cpt"),
            )
        if self.size_extension:
            params += (
                Param("gamma1", False, 0.0, 0.2, 0.1, 0.0, 0.0, "size exponent of C1"),
                Param("gamma2", False, 0.0, 0.2, 0.1, 0.0, 0.0, "size exponent of C2"),
                Param("F", True, np.log(3.0), 1.0, 0.2, 0.0, 0.0, "size amplitude"),
                Param("gamma3", True, np.log(0.2), 0.7, 0.2, 0.0, 0.0, "size exponent"),
            )
        if self.unknown_pt:
            params += (Param("S1pt", True, np.log(5.0), 1.5, 0.0, 0.5, 0.0,
                             "PT forward area of a base model with unknown history"),)
        self.params = params

    def derived(self, xp, theta, settings):
        """B, the shift's asymptotic magnitude, from Bref, E and beta."""
        ref = settings.get("shift_ref", 1.0)
        out = {"B": theta["Bref"] / (1.0 - (1.0 + theta["E"] * ref) ** (-theta["beta"]))}
        r_ref = settings.get("replay_ref") or 0.0
        if self.replay and r_ref:
            # Bref is the shift at the reference ratio; B that of a pure-domain CPT (g(1) = 1)
            k = xp.where(xp.abs(theta["k"]) < 1e-6, 1e-6, theta["k"])
            out["B"] = out["B"] * xp.expm1(-k) / xp.expm1(-k * (1.0 - r_ref))
        if self.anchored and settings.get("anchor_s1"):
            s1r, al, g = float(settings["anchor_s1"]), theta["alpha"], theta["G"]
            out["A"] = g * s1r ** (al + 1.0) / al
            out["L0"] = theta["Lr"] - g * s1r / al
        if self.checkpoint and settings.get("checkpoint_areas"):
            s1t = settings["checkpoint_areas"][0]
            al = settings.get("checkpoint_alpha", 0.5)
            out["A"] = theta["G"] * s1t ** (al + 1.0) / al
        return out

    def design(self, schedule: Schedule, steps, settings, info=None):
        steps = check_steps(schedule, steps)
        info = info or {}
        role = info.get("val_role")
        if role not in ROLE_SIGN:
            raise ValueError(f"validation set {info.get('val_set')!r}: the cpt law needs a "
                             f"val_role of 'general' or 'domain', got {role!r} ('other' sets are "
                             "fitted as a combination of the two: bayescpt.cpt.fit_other)")
        lam = settings.get("lam", 0.999)
        t_pt = int(info.get("pt_end") or 0)
        if t_pt > 0:
            s1p, s2p = Schedule(schedule.lr[:t_pt + 1], min(schedule.warmup_steps, t_pt)).areas(
                lam=lam, warmup=settings.get("warmup", "exact"))
        else:
            s1p = s2p = np.zeros(1)
        s1c, s2c = areas(schedule.lr[t_pt:], lam=lam, warmup="none")
        in_pt = steps <= t_pt
        k_pt = np.minimum(steps, t_pt)
        k_cpt = np.where(in_pt, 0, steps - t_pt)
        n = steps.size
        if self.checkpoint:
            self._check_checkpoint(s1p[-1], s2p[-1], t_pt, steps, settings, info)
        X = {"S1pt": s1p[k_pt], "S2pt": s2p[k_pt], "S1cpt": s1c[k_cpt], "S2cpt": s2c[k_cpt],
             "sign": np.full(n, ROLE_SIGN[role]), "pt_known": np.full(n, float(t_pt > 0)),
             "shift_ref": np.full(n, float(settings.get("shift_ref", 1.0)))}
        if self.replay:
            r = info.get("replay_ratio")
            X["r_pt"] = np.full(n, 0.0 if r is None else float(r))
            X["r_ref"] = np.full(n, float(settings.get("replay_ref") or 0.0))
        if self.size_extension:
            X["n_millions"] = np.full(n, size_in_millions(info, self.name))
        if self.anchored:
            s1r = settings.get("anchor_s1")
            if not s1r or not np.isfinite(s1r) or s1r <= 0:
                raise ValueError(f"the cpt law's anchored option needs a positive anchor_s1 "
                                 f"setting (the PT area where Lr and G are defined), got {s1r!r}")
            X["anchor_s1"] = np.full(n, float(s1r))
        if self.checkpoint:
            X["before"] = (steps < t_pt).astype(float)   # no law there: predicted as NaN
            X["alpha"] = np.full(n, float(settings.get("checkpoint_alpha", 0.5)))
            lc = (settings.get("checkpoint_loss") or {}).get(str(info.get("val_set")))
            if lc is None:
                raise ValueError(f"run {info.get('run')!r}: no loss at the checkpoint for "
                                 f"validation set "
                                 f"{info.get('val_set')!r}; the cpt law's checkpoint mode starts "
                                 "every curve from the checkpoint's measured loss")
            X["Lc"] = np.full(n, float(lc))
        return X

    def settings_from_data(self, df, settings):
        """Checkpoint mode with replay: Bref and C2 are defined at the data's median replay ratio.

        Defined at r_pt = 0 (a pure-domain CPT, the paper's convention) they are extrapolations
        from the observed ratios (0.125-0.5 on the mixing-law data) and correlate with a1 and k
        along a curved ridge. Other fits keep ``replay_ref`` = 0 unless the config sets it.
        Anchored option: ``anchor_s1`` is the median over runs of the PT area at the transfer.
        """
        if self.anchored and not settings.get("anchor_s1"):
            settings["anchor_s1"] = anchor_area(df, settings)
        if self.checkpoint and not settings.get("checkpoint_loss"):
            pt = df[(df["phase"] == "pt") & df["loss"].notna()]
            settings["checkpoint_loss"] = {
                str(v): float(g.loc[g["step"] == g["step"].max(), "loss"].mean())
                for v, g in pt.groupby("val_set")}
        if not (self.replay and self.checkpoint) or settings.get("replay_ref") is not None:
            return
        if "replay_ratio" in df.columns and df["replay_ratio"].notna().any():
            ratios = df.groupby("run")["replay_ratio"].first().dropna()
            settings["replay_ref"] = float(np.median(ratios))

    def check_fit_design(self, X, points):
        """Refuse losses the law cannot describe (checkpoint mode: PT before the transfer)."""
        if self.checkpoint and X["before"].any():
            i = int(np.argmax(X["before"]))
            run, step = points["run"].iloc[i], int(points["step"].iloc[i])
            raise ValueError(f"run {run!r}, step {step}: a PT loss before the transfer step; "
                             "the cpt law's checkpoint mode is for data whose only PT loss is "
                             "the checkpoint's (fit without it)")

    def _check_checkpoint(self, s1t, s2t, t_pt, steps, settings, info):
        """Checkpoint mode: a known PT, no PT loss before the transfer, one checkpoint per fit.

        The first curve designed (at fit time) records the checkpoint's areas in ``settings``
        (saved with the fit); every later curve, and every plan predicted, must share them.
        """
        name = f"run {info.get('run')!r}" if info.get("run") is not None else "a curve"
        if t_pt <= 0:
            raise ValueError(f"{name}: the cpt law's checkpoint mode needs the PT schedule up to "
                             "the transfer (phase 'pt' rows)")
        ck = settings.get("checkpoint_areas")
        if ck is None:
            settings["checkpoint_areas"] = [float(s1t), float(s2t)]
        elif not np.allclose([s1t, s2t], ck, rtol=1e-6, atol=1e-12):
            raise ValueError(f"{name}: starts from a checkpoint with PT areas S1 {s1t:.6g}, S2 "
                             f"{s2t:.6g}, but this checkpoint-mode fit knows only the checkpoint "
                             f"with S1 {ck[0]:.6g}, S2 {ck[1]:.6g}")

    def mean(self, xp, theta, X):
        if self.checkpoint:
            return self._mean_checkpoint(xp, theta, X)
        s1pt = X["S1pt"]
        if self.unknown_pt:
            s1pt = s1pt + (1.0 - X["pt_known"]) * theta["S1pt"]
        c1, c2 = theta["C1"], theta["C2"]
        shift = self._replay(xp, theta, X, self._shift(xp, theta, X))
        if self.replay:
            c2 = c2 * xp.exp(theta["a1"] * (X["r_pt"] - X["r_ref"]))
        if self.anchored:
            # Lr + (G s/alpha) ((S1/s)^-alpha - 1), smooth as alpha -> 0 (-G s log(S1/s))
            s1r, al = X["anchor_s1"], theta["alpha"]
            loss = theta["Lr"] + _power_around(xp, theta["G"], s1r,
                                               xp.log((s1pt + X["S1cpt"]) / s1r), al)
        else:
            loss = theta["L0"] + theta["A"] * (s1pt + X["S1cpt"]) ** (-theta["alpha"])
        if self.size_extension:
            nm = X["n_millions"]
            c1 = c1 * nm ** theta["gamma1"]
            c2 = c2 * nm ** theta["gamma2"]
            loss = loss + theta["F"] * nm ** (-theta["gamma3"])
        return loss - c1 * X["S2pt"] - c2 * X["S2cpt"] + X["sign"] * shift

    def _shift(self, xp, theta, X):
        # (1 - (1 + E s)^-beta) / (1 - (1 + E s_ref)^-beta), written so that beta -> 0 is smooth
        # (the limit is log(1 + E s) / log(1 + E s_ref))
        b = theta["beta"]
        num = xp.expm1(-b * xp.log1p(theta["E"] * X["S1cpt"]))
        return theta["Bref"] * num / xp.expm1(-b * xp.log1p(theta["E"] * X["shift_ref"]))

    def _replay(self, xp, theta, X, shift):
        if not self.replay:
            return shift
        k = theta["k"]
        k = xp.where(xp.abs(k) < 1e-6, 1e-6, k)
        return shift * xp.expm1(-k * (1.0 - X["r_pt"])) / xp.expm1(-k * (1.0 - X["r_ref"]))

    def _mean_checkpoint(self, xp, theta, X):
        s1t, al = X["S1pt"], X["alpha"]
        power = _power_around(xp, theta["G"], s1t, xp.log1p(X["S1cpt"] / s1t), al)
        c2 = theta["C2"]
        if self.replay:
            c2 = c2 * xp.exp(theta["a1"] * (X["r_pt"] - X["r_ref"]))
        shift = self._replay(xp, theta, X, self._shift(xp, theta, X))
        out = X["Lc"] + power - c2 * X["S2cpt"] + X["sign"] * shift
        return xp.where(X["before"] > 0, np.nan, out) if xp is np else out


def anchor_area(df, settings) -> float:
    """The anchored option's reference area: the median over runs of S1 at the transfer step
    (the PT's end; for CPT-only data, 1.0)."""

    if "phase" not in df.columns or not (df["phase"] == "pt").any():
        return 1.0
    ends = df[df["phase"] == "pt"].groupby("run")["step"].max()
    sched = schedules_of(df[df["run"].isin(ends.index)])
    lam = settings.get("lam", 0.999)
    vals = []
    for run, t in ends.items():
        t = int(t)
        if t <= 0:
            continue
        s = sched[run]
        s1, _ = Schedule(s.lr[:t + 1], min(s.warmup_steps, t)).areas(
            lam=lam, warmup=settings.get("warmup", "exact"))
        vals.append(float(s1[-1]))
    return float(np.median(vals)) if vals else 1.0


def _power_around(xp, G, s, log_ratio, alpha):
    """The PT power law A * S1^-alpha relative to its value at an anchor area s, written with its
    slope G = -dL/dS1 there: (G s / alpha) * ((S1 / s)^-alpha - 1), ``log_ratio`` = log(S1 / s);
    smooth as alpha -> 0 (-G s log(S1 / s)). Used by the checkpoint mode and the anchored option."""
    return G * s * xp.expm1(-alpha * log_ratio) / alpha


def with_bref(theta: dict, shift_ref: float = 1.0) -> dict:
    """Parameters as published (with B) -> the law's parameters (Bref added, B kept)."""
    out = dict(theta)
    if "Bref" not in out:
        out["Bref"] = out["B"] * (1.0 - (1.0 + out["E"] * shift_ref) ** (-out["beta"]))
    return out
