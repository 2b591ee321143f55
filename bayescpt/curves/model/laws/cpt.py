"""CPT learning-dynamics law (Wang, Tissue, Wang, Li, Zeng 2025, arXiv 2505.07796).

A continual pre-training (CPT) curve moves from the pre-training (PT) curve to a hidden curve::

    L(t) = L0 + A * (S1pt + S1cpt)^(-alpha) - C1 * S2pt - C2 * S2cpt
              + sign * B * (1 - (1 + E * S1cpt)^(-beta))

S1pt, S2pt are the areas of the PT schedule up to the transfer step (frozen after it); S1cpt,
S2cpt those of the CPT segment so far, whose eta_0 is the last PT learning rate (a re-warmup
gives a negative S2cpt). On PT rows the CPT areas are 0 and the law is the LR-annealing law.
``sign`` is +1 on a ``general`` validation set (the PT distribution: the loss rises) and -1 on a
``domain`` set (the CPT distribution: the loss falls); B > 0 is its magnitude. All parameters
are positive and live on the log scale. Losses in nats; areas in units of learning rate x steps.

The shift is sampled as ``Bref``, its size at the reference area ``S1cpt = shift_ref`` (setting,
default 1.0), and B = Bref / (1 - (1 + E * shift_ref)^(-beta)) is reported beside it: when
E * S1cpt >> 1 over all the data, B, E and beta lie on a curved ridge that pins only the shift
at the observed areas.

The options form a :class:`~.cpt_modes.CPTMode` (saved with the fit):

``replay`` (Eq. 8; r = share of PT data in the CPT mixture, r_cpt = 1 - r)::

    C2 -> C2 * exp(a1 * (r - r_ref)),   shift -> shift * g_k(r_cpt) / g_k(1 - r_ref),
    g_k(x) = expm1(-k x) / expm1(-k)

  ``g_k`` is the paper's two shift factors in one family (k > 0: the general set's concave
  1 - exp(-a2 r_cpt); k < 0: the domain set's convex exp(a2 r_cpt) - 1); k is per validation
  set. exp(a1 r_pt) = exp(a1) * exp(-a1 r_cpt), so with a1 of either sign and C2 free the
  paper's two readings of C2's exponent are the same family. ``r_ref`` (setting ``replay_ref``)
  is 0 except in the checkpoint form, where it is the data's median ratio.

``size_extension`` (Eq. 7; N in millions of non-embedding parameters)::

    C1 -> C1 * N^gamma1,   C2 -> C2 * N^gamma2,   + F * N^(-gamma3)

``unknown_pt``: runs without PT rows get S1pt as a parameter and S2pt = 0 (the PT is taken to
have ended at learning rate 0; L0 absorbs its constant annealing term).

``anchored`` (the PT power law around the anchor area ``s`` = setting ``anchor_s1``, the median
over runs of the PT area at the transfer, filled at fit time)::

    L0 + A * S1^(-alpha)  ->  Lr + (G * s / alpha) * ((S1 / s)^(-alpha) - 1)

  with Lr = L0 + A * s^(-alpha) the loss at s and G = A * alpha * s^(-alpha - 1) the slope
  -dL/dS1 there; L0 = Lr - G s / alpha and A = G s^(alpha + 1) / alpha are derived. The form is
  smooth as alpha -> 0 (it tends to Lr - G s log(S1 / s)).

``checkpoint`` (one PT point: every run continues the same checkpoint, chosen from the data by
:func:`~.cpt_options.cpt_law_options`)::

    L(t) = Lc + (G * S1T / alpha) * ((1 + S1cpt / S1T)^(-alpha) - 1) - C2 * S2cpt + sign * shift

  is the law rewritten around the checkpoint, S1T, S2T its PT areas (setting
  ``checkpoint_areas``, filled at fit time): Lc = L0 + A * S1T^(-alpha) - C1 * S2T is the
  checkpoint's *measured* loss per validation set (setting ``checkpoint_loss``), G = A * alpha *
  S1T^(-alpha - 1), alpha is fixed (setting ``checkpoint_alpha``, default 0.5) and beta is one
  value for all validation sets. A = G * S1T^(alpha + 1) / alpha is derived (the local power law
  at the checkpoint only); L0 and C1 are not estimated. Such a fit predicts plans from the same
  checkpoint (PT rows before the transfer are predicted as NaN) and refuses other checkpoints.
"""

from __future__ import annotations

import numpy as np

from bayescpt.core.schedules import Schedule, areas
from bayescpt.curves.data.table import curve_info, schedules_of
from bayescpt.curves.model.laws.base import Law, check_steps, size_in_millions
from bayescpt.curves.model.laws.cpt_modes import BASE_SETTINGS, CPT_OPTIONS, CPTMode
from bayescpt.curves.model.laws.cpt_options import cpt_law_options
from bayescpt.curves.model.laws.registry import register_law
from bayescpt.curves.model.other_sets import other_sets, split_other

ROLE_SIGN = {"general": 1.0, "domain": -1.0}


@register_law
class CPTLaw(Law):
    """The cpt law in one :class:`~.cpt_modes.CPTMode` (given as options or as ``mode``)."""

    name = "cpt"
    default_settings = BASE_SETTINGS
    options = CPT_OPTIONS

    def __init__(
        self,
        replay: bool = False,
        size_extension: bool = False,
        unknown_pt: bool = False,
        checkpoint: bool = False,
        anchored: bool = False,
        mode: CPTMode | None = None,
    ):
        self.mode = (
            mode
            if mode is not None
            else CPTMode(
                replay=replay,
                size_extension=size_extension,
                unknown_pt=unknown_pt,
                checkpoint=checkpoint,
                anchored=anchored,
            )
        )
        self.params = self.mode.params()
        self.default_settings = self.mode.default_settings()
        self.default_sampler = self.mode.default_sampler()
        self.derived_names = self.mode.derived_names()

    replay = property(lambda self: self.mode.replay)
    size_extension = property(lambda self: self.mode.size_extension)
    unknown_pt = property(lambda self: self.mode.unknown_pt)
    checkpoint = property(lambda self: self.mode.checkpoint)
    anchored = property(lambda self: self.mode.anchored)

    @classmethod
    def resolve_options(cls, df, given):
        """Given options kept, the others chosen from the data (:func:`cpt_law_options`)."""
        return cpt_law_options(df, **given)

    def split_data(self, df):
        """``other`` validation sets are fitted after the law, as combinations of its curves."""
        return split_other(df)

    def side_sets(self, meta):
        """The fit's ``other`` sets (:func:`~bayescpt.curves.model.other_sets.other_sets`)."""
        return other_sets(meta)

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
            raise ValueError(
                f"validation set {info.get('val_set')!r}: the cpt law needs a "
                f"val_role of 'general' or 'domain', got {role!r} ('other' sets are "
                "fitted as a combination of the two: bayescpt.cpt.fit_other)"
            )
        lam = settings.get("lam", 0.999)
        t_pt = int(info.get("pt_end") or 0)
        if t_pt > 0:
            s1p, s2p = pt_areas(schedule, t_pt, settings)
        else:
            s1p = s2p = np.zeros(1)
        s1c, s2c = areas(schedule.lr[t_pt:], lam=lam, warmup="none")
        in_pt = steps <= t_pt
        k_pt = np.minimum(steps, t_pt)
        k_cpt = np.where(in_pt, 0, steps - t_pt)
        n = steps.size
        if self.checkpoint:
            _check_checkpoint(s1p[-1], s2p[-1], t_pt, settings, info)
        X = {
            "S1pt": s1p[k_pt],
            "S2pt": s2p[k_pt],
            "S1cpt": s1c[k_cpt],
            "S2cpt": s2c[k_cpt],
            "sign": np.full(n, ROLE_SIGN[role]),
            "pt_known": np.full(n, float(t_pt > 0)),
            "shift_ref": np.full(n, float(settings.get("shift_ref", 1.0))),
        }
        if self.replay:
            r = info.get("replay_ratio")
            X["r_pt"] = np.full(n, 0.0 if r is None else float(r))
            X["r_ref"] = np.full(n, float(settings.get("replay_ref") or 0.0))
        if self.size_extension:
            X["n_millions"] = np.full(n, size_in_millions(info, self.name))
        if self.anchored:
            s1r = settings.get("anchor_s1")
            if not s1r or not np.isfinite(s1r) or s1r <= 0:
                raise ValueError(
                    f"the cpt law's anchored option needs a positive anchor_s1 "
                    f"setting (the PT area where Lr and G are defined), got {s1r!r}"
                )
            X["anchor_s1"] = np.full(n, float(s1r))
        if self.checkpoint:
            X["before"] = (steps < t_pt).astype(float)  # no law there: predicted as NaN
            X["alpha"] = np.full(n, float(settings.get("checkpoint_alpha", 0.5)))
            lc = (settings.get("checkpoint_loss") or {}).get(str(info.get("val_set")))
            if lc is None:
                raise ValueError(
                    f"run {info.get('run')!r}: no loss at the checkpoint for "
                    f"validation set "
                    f"{info.get('val_set')!r}; the cpt law's checkpoint mode starts "
                    "every curve from the checkpoint's measured loss"
                )
            X["Lc"] = np.full(n, float(lc))
        return X

    def settings_from_data(self, df, settings):
        """Settings from the fitted table, saved with the fit (given ones are kept).

        Anchored: ``anchor_s1``, the median over runs of the PT area at the transfer.
        Checkpoint: ``checkpoint_areas`` [S1T, S2T] (:func:`checkpoint_areas`), the measured
        ``checkpoint_loss`` per validation set (nats) and, with replay, ``replay_ref``, the data's
        median replay ratio (Bref and C2 are defined there). Other fits keep ``replay_ref`` = 0.
        """
        if self.anchored and not settings.get("anchor_s1"):
            settings["anchor_s1"] = anchor_area(df, settings)
        if self.checkpoint and not settings.get("checkpoint_areas"):
            ck = checkpoint_areas(df, settings)
            if ck is not None:
                settings["checkpoint_areas"] = ck
        if self.checkpoint and not settings.get("checkpoint_loss"):
            pt = df[(df["phase"] == "pt") & df["loss"].notna()]
            settings["checkpoint_loss"] = {
                str(v): float(g.loc[g["step"] == g["step"].max(), "loss"].mean())
                for v, g in pt.groupby("val_set")
            }
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
            raise ValueError(
                f"run {run!r}, step {step}: a PT loss before the transfer step; "
                "the cpt law's checkpoint mode is for data whose only PT loss is "
                "the checkpoint's (fit without it)"
            )

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
            loss = theta["Lr"] + _power_around(
                xp, theta["G"], s1r, xp.log((s1pt + X["S1cpt"]) / s1r), al
            )
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


def pt_areas(schedule: Schedule, t_pt: int, settings: dict):
    """S1, S2 of the PT schedule up to the transfer step ``t_pt`` (> 0), arrays of length
    t_pt + 1, with the law's lambda and warmup convention."""
    return Schedule(schedule.lr[: t_pt + 1], min(schedule.warmup_steps, t_pt)).areas(
        lam=settings.get("lam", 0.999), warmup=settings.get("warmup", "exact")
    )


def checkpoint_areas(df, settings) -> list[float] | None:
    """[S1T, S2T], the PT areas at the transfer of the first run (in table order) with PT rows;
    None when no run has any. The checkpoint form checks every curve against them."""
    runs = (
        df.loc[df["loss"].notna(), "run"].unique() if "loss" in df.columns else df["run"].unique()
    )
    for run in runs:
        t_pt = curve_info(df, run, df.loc[df["run"] == run, "val_set"].iloc[0])["pt_end"]
        if t_pt > 0:
            s1, s2 = pt_areas(schedules_of(df[df["run"] == run])[run], t_pt, settings)
            return [float(s1[-1]), float(s2[-1])]
    return None


def _check_checkpoint(s1t, s2t, t_pt, settings, info) -> None:
    """Checkpoint form: a known PT, and the checkpoint of the fit (``checkpoint_areas``)."""
    name = f"run {info.get('run')!r}" if info.get("run") is not None else "a curve"
    if t_pt <= 0:
        raise ValueError(
            f"{name}: the cpt law's checkpoint mode needs the PT schedule up to "
            "the transfer (phase 'pt' rows)"
        )
    ck = settings.get("checkpoint_areas")
    if ck is None:
        raise ValueError(
            f"{name}: the cpt law's checkpoint mode needs the setting "
            "checkpoint_areas (the checkpoint's PT areas S1, S2; filled from the "
            "data at fit time)"
        )
    if not np.allclose([s1t, s2t], ck, rtol=1e-6, atol=1e-12):
        raise ValueError(
            f"{name}: starts from a checkpoint with PT areas S1 {s1t:.6g}, S2 "
            f"{s2t:.6g}, but this checkpoint-mode fit knows only the checkpoint "
            f"with S1 {ck[0]:.6g}, S2 {ck[1]:.6g}"
        )


def anchor_area(df, settings) -> float:
    """The anchored option's reference area: the median over runs of S1 at the transfer step
    (the PT's end; for CPT-only data, 1.0)."""

    if "phase" not in df.columns or not (df["phase"] == "pt").any():
        return 1.0
    ends = df[df["phase"] == "pt"].groupby("run")["step"].max()
    sched = schedules_of(df[df["run"].isin(ends.index)])
    vals = []
    for run, t in ends.items():
        t = int(t)
        if t <= 0:
            continue
        s1, _ = pt_areas(sched[run], t, settings)
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
