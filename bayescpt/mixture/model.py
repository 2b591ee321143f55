"""Hierarchical laws of loss vs mixture ratio R and CPT tokens T, sampled with NUTS.

For a group g = (model size, validation set) with relative budget t = T / T_ref(g)
(T_ref = the group's largest token count, "the final budget")::

    L_g(R, t) = m_g + d_g * t^q_g * f_c(R)  +  sum_k A_gk * (t^-p_gk - 1)
    f_c(R)    = (h(R) - h(R_hi)) / (h(R_lo) - h(R_hi))
    h(R)      = R^c         ratio_form "power"  (Gu et al. 2024: L(R) = alpha R^s + beta, s = c)
              = exp(c R)    ratio_form "exp"    (Ye et al. 2024 Data Mixing Laws: c + k exp(t R))

At the final budget (t = 1) this is exactly the papers' ratio law, written through two numbers the
data pin down -- m = L(R_hi) and d = L(R_lo) - L(R_hi), R_lo/R_hi the smallest/largest ratio fitted
-- and a curvature c; the papers' coefficients follow: ``alpha = d / (h(R_lo) - h(R_hi))``,
``beta = m - alpha h(R_hi)``. The token terms are the CMR paper's ``dL_dom(T) = a1 T^s1 + b1`` (one
term, s1 = -p) and two-term ``dL_gen(T) = a2 T^s2 + a3 T^s3 + b2``, shifted to vanish at the final
budget; ``token_terms`` = 0 for a role fits only each run's final-budget rows (the papers' L(R)).
``t^q`` lets the ratio effect grow (q > 0) or shrink over training: in CPT it is 0 at T = 0.

Hierarchy: the dimensionless shape parameters (c, log p, q) of groups with the same role
(general/domain) share a population (mean and spread), i.e. they are pooled across model sizes and
data sets (a role with a single group gets the marginal prior instead); levels m, d and amplitudes
A (sampled as B = A (t0^-p - 1), a term's size at the group's earliest fitted budget t0) are per
group. Noise: ``log loss ~ StudentT(nu, log L,
sigma_g)`` with log sigma_g pooled over all groups (one shared sigma unless there are 3+ groups of
10+ points). Free parameters are standardised where the prior's centre is far from 0, so that
nutpie's start (near 0 unconstrained) is the prior centre.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from bayescpt.core.config import check_config
from bayescpt.mixture.data import ROLES, baselines

LAW = "mixture"
RATIO_FORMS = ("power", "exp")


def default_config() -> dict:
    """Model structure and priors (plain JSON data; saved with every fit)."""
    return {
        "ratio_form": "power",
        "token_terms": {"general": 1, "domain": 1},
        "interaction": True,
        # a per-run deviation (log scale) shared by all of a run's checkpoints: the law's error for
        # one mixture is systematic, not noise; used only where runs have several checkpoints
        "run_effect": True,
        # centred group level for the pooled shapes (c, q, logp1): the data pin each group's
        # shape much more tightly than its population spread, where the non-centred form
        # correlates the standardised z with the population mean (Table 2: R-hat 1.014, ESS 386
        # non-centred; 1.006 / 541 centred). True, False, or a list of the names to centre
        # ("run" centres the run deviations too: much worse on ct, R-hat 1.5).
        "centered": True,
        "priors": {
            "m_scale": 0.5,  # nats around the group's mean final loss
            "d_scale": 0.3,  # nats: L(R_lo) - L(R_hi)
            "c_loc": {"general": 1.0, "domain": -1.0},
            "c_scale": 2.0,
            "c_group_sd": 0.5,
            "B_scale": 0.3,  # nats: a token term's size at the earliest fitted budget
            "logp_loc": float(np.log(0.5)),
            "logp_scale": 1.0,
            "logp_group_sd": 0.3,
            "logp_gap_loc": 0.0,
            "logp_gap_scale": 1.0,  # two-term: log(p2 - p1)
            "q_loc": 0.0,
            "q_scale": 1.0,
            "q_group_sd": 0.3,
        },
        "run_sd": {"loc": float(np.log(0.002)), "scale": 0.5},
        # longer chains than the package default. Tuning: the run-deviation scale (4-5 runs per
        # role) mixes slowly; with 1000 tuning steps it missed R-hat 1.01 (1.014-1.015) on ct and
        # one of four simulated data sets, with 2000 it passes (1.003, 1.007). Draws: the noise
        # scale of a final-budget fit with few points per parameter (ct: 8 points, 7 parameters)
        # mixes at ~12 % efficiency; 1000 draws gave R-hat 1.0101 for one seed of three, 2000
        # give 1.0035 with bulk ESS 1127.
        "sampler": {"tune": 2000, "draws": 2000},
        # sigma per group (pooled) or one shared sigma; "auto": per group only with 3 or more
        # groups of 10 or more points each. Fewer points (final-budget fits) or two groups (one
        # size, general + domain) leave the spread of the sigmas to its prior, and it then mixes
        # badly with the run deviations (ct: ESS 346-540 per-group, 704 shared)
        "noise": {
            "nu": 4.0,
            "sigma_loc": float(np.log(0.003)),
            "sigma_scale": 1.5,
            "sigma_group_sd": 0.5,
            "per_group": "auto",
        },
    }


#: the numeric knobs' ranges: every scale and spread > 0 (the spreads' logs are taken)
KNOB_RANGES = {
    **{
        f"priors.{k}": "> 0"
        for k in default_config()["priors"]
        if k.endswith(("_scale", "_group_sd"))
    },
    "run_sd.scale": "> 0",
    "noise.nu": "> 0",
    "noise.sigma_scale": "> 0",
    "noise.sigma_group_sd": "> 0",
}


def make_config(override: dict | None = None) -> dict:
    """:func:`default_config` updated by ``override`` (nested dicts merged key by key), checked
    by :func:`bayescpt.core.config.check_config`: known keys and types, ``ratio_form`` one of
    RATIO_FORMS, ``token_terms`` per role 0 (final budget only), 1 or 2, numbers in
    :data:`KNOB_RANGES`."""
    return check_config(
        override,
        default_config(),
        "mixture config",
        choices={"ratio_form": RATIO_FORMS, **{f"token_terms.{r}": (0, 1, 2) for r in ROLES}},
        alternatives={
            "centered": (list, tuple),
            "priors.c_loc": (int, float),
            "noise.per_group": (bool,),
        },
        ranges=KNOB_RANGES,
    )


# ----------------------------------------------------------------------------------------------
# The mean function, written once for numpy and pytensor
# ----------------------------------------------------------------------------------------------


def ratio_shape(xp, R, c, form: str, r_lo: float, r_hi: float):
    """f_c(R): 0 at R_hi, 1 at R_lo, monotone in R for every curvature c (stable as c -> 0)."""
    if form == "power":
        x, lo, hi = xp.log(R), np.log(r_lo), np.log(r_hi)
    else:
        x, lo, hi = R, r_lo, r_hi
    c = xp.where(abs(c) < 1e-6, 1e-6, c)
    return xp.expm1(c * (x - hi)) / xp.expm1(c * (lo - hi))


def law_mean(xp, R, t, th: dict, form: str, r_lo: float, r_hi: float):
    """Expected loss (nats) at ratio R and relative budget t = T / T_ref (> 0); ``th`` holds the
    group's m, d, c and optionally q, A (list) and p (list), each broadcastable against R, t."""
    ratio = th["d"] * ratio_shape(xp, R, th["c"], form, r_lo, r_hi)
    if "q" in th:
        ratio = ratio * t ** th["q"]
    out = th["m"] + ratio
    for A, p in zip(th.get("A", []), th.get("p", [])):
        out = out + A * (t ** (-p) - 1.0)
    return out


# ----------------------------------------------------------------------------------------------
# Preparing the table
# ----------------------------------------------------------------------------------------------


@dataclass
class Prepared:
    """Fitted rows (``points``: loss rows with tokens > 0, plus group index ``g`` and relative
    budget ``t``), the group table (model_size, val_set, val_role, t_ref, ybar, loss0) and the
    reference ratios."""

    points: pd.DataFrame
    groups: pd.DataFrame
    r_lo: float
    r_hi: float

    @property
    def run_effect(self) -> bool:
        """Whether runs have several checkpoints per group (else a run deviation is noise)."""
        return bool(self.points.groupby(["run", "g"]).size().max() > 1)


def prepare(df: pd.DataFrame, cfg: dict) -> Prepared:
    """Index a validated mixture table for the model (see :class:`Prepared`)."""

    pts = df[df["tokens"] > 0].copy()
    final = pts.groupby(["run", "val_set"])["tokens"].transform("max")
    keep = np.ones(len(pts), bool)
    for role in ROLES:
        if cfg["token_terms"].get(role, 1) == 0:
            keep &= ~((pts["val_role"] == role) & (pts["tokens"] < final)).to_numpy()
    pts = pts[keep]
    groups = pts.groupby(["model_size", "val_set", "val_role"], as_index=False).agg(
        t_ref=("tokens", "max"),
        t_first=("tokens", "min"),
        ybar=("loss", "mean"),
        n=("loss", "size"),
    )
    b = baselines(df)
    groups = groups.merge(b, on=["model_size", "val_set", "val_role"], how="left")
    groups = groups.sort_values(["val_role", "val_set", "model_size"]).reset_index(drop=True)
    key = dict(zip(zip(groups["model_size"], groups["val_set"]), groups.index))
    pts["g"] = [key[k] for k in zip(pts["model_size"], pts["val_set"])]
    pts["t"] = pts["tokens"] / groups["t_ref"].to_numpy()[pts["g"]]
    groups["t_min"] = groups["t_first"] / groups["t_ref"]
    pts["curve"] = pts.groupby(["run", "g"]).ngroup()
    ratios = np.sort(pts["ratio"].unique())
    if len(ratios) < 2:
        raise ValueError(
            f"the data have one mixture ratio ({ratios[0]:g}); a ratio law needs "
            "runs at two or more ratios (three or more to fit its curvature)"
        )
    if cfg["ratio_form"] == "power" and ratios[0] <= 0:
        raise ValueError(
            "ratio 0 (no domain data) cannot enter the power form R^s; use "
            "ratio_form 'exp' (config) or leave those runs out"
        )
    return Prepared(pts.reset_index(drop=True), groups, float(ratios[0]), float(ratios[-1]))


# ----------------------------------------------------------------------------------------------
# The PyMC model
# ----------------------------------------------------------------------------------------------


def _pooled(pm, name, roles, loc, scale, group_sd, centered=False):
    """Per-group parameter whose population (mean, spread) is shared per role; non-centred
    (``name_z`` standard normal) unless ``centered``. Where every role has a single group the
    population is not identified (it is its prior): the groups then get the marginal prior
    Normal(loc, sqrt(scale^2 + group_sd^2)) directly, without the funnel of a population spread
    that no data inform."""
    loc = np.broadcast_to(np.asarray(loc, float), (int(roles.max()) + 1,))
    if np.bincount(roles).max() < 2:
        return pm.Normal(name, mu=loc[roles], sigma=float(np.hypot(scale, group_sd)), dims="group")
    mu = pm.Normal(f"{name}_mu", mu=loc, sigma=scale, dims="role")
    sd = pm.LogNormal(f"{name}_sd", mu=np.log(group_sd), sigma=0.5, dims="role")
    if centered:
        return pm.Normal(name, mu=mu[roles], sigma=sd[roles], dims="group")
    z = pm.Normal(f"{name}_z", 0.0, 1.0, dims="group")
    return pm.Deterministic(name, mu[roles] + sd[roles] * z, dims="group")


def build_model(prep: Prepared, cfg: dict):
    """The PyMC model of :mod:`bayescpt.mixture.model` for a prepared table."""
    import pymc as pm
    import pytensor.tensor as pt

    pr, nz = cfg["priors"], cfg["noise"]
    roles = [r for r in ROLES if r in set(prep.groups["val_role"])]
    role_idx = np.array([roles.index(r) for r in prep.groups["val_role"]])
    coords = {
        "group": [
            f"{v}|{s / 1e6:g}M" for v, s in zip(prep.groups["val_set"], prep.groups["model_size"])
        ],
        "role": roles,
        "obs": np.arange(len(prep.points)),
    }
    g = prep.points["g"].to_numpy()
    R = prep.points["ratio"].to_numpy()
    t = prep.points["t"].to_numpy()
    terms = np.array([cfg["token_terms"].get(r, 1) for r in prep.groups["val_role"]])
    c_loc = (
        np.array([pr["c_loc"][r] for r in roles])
        if isinstance(pr["c_loc"], dict)
        else np.full(len(roles), pr["c_loc"])
    )
    with pm.Model(coords=coords) as model:
        # Priors whose centre is far from 0 are written as centre + scale * N(0, 1): nutpie starts
        # its chains near 0 on the unconstrained scale, i.e. at the prior centre this way. A start
        # at m = 0 or run_sd = 1 let the run deviations absorb the ratio effect, and one chain of
        # four stayed in that local mode (two simulated sizes: R-hat 1.54).
        m = pm.Deterministic(
            "m",
            prep.groups["ybar"].to_numpy()
            + pr["m_scale"] * pm.Normal("m_z", 0.0, 1.0, dims="group"),
            dims="group",
        )
        d = pm.Normal("d", 0.0, pr["d_scale"], dims="group")
        cen = cfg.get("centered", True)
        cen = (
            set(cen) if isinstance(cen, (list, tuple)) else ({"c", "q", "logp1"} if cen else set())
        )
        c = _pooled(pm, "c", role_idx, c_loc, pr["c_scale"], pr["c_group_sd"], "c" in cen)
        th = {"m": m[g], "d": d[g], "c": c[g]}
        if cfg.get("interaction", True) and terms.max() > 0:
            q = _pooled(pm, "q", role_idx, pr["q_loc"], pr["q_scale"], pr["q_group_sd"], "q" in cen)
            # groups fitted at the final budget only have t = 1, where q has no effect
            th["q"] = pt.where(terms[g] > 0, q[g], 0.0)
        A_list, p_list = _token_terms(pm, pt, prep, pr, terms, role_idx, cen)
        th["A"], th["p"] = [A[g] for A in A_list], [p[g] for p in p_list]
        mu = law_mean(pt, R, t, th, cfg["ratio_form"], prep.r_lo, prep.r_hi)
        log_mu = pt.log(mu)
        if cfg.get("run_effect", True) and prep.run_effect:
            log_mu = log_mu + _run_deviation(
                pm, pt, model, prep, cfg["run_sd"], role_idx[g], terms[g] > 0, "run" in cen
            )
        sigma = _noise_scale(pm, pt, prep, nz)
        pm.StudentT(
            "y",
            nu=nz["nu"],
            mu=log_mu,
            sigma=sigma[g],
            observed=np.log(prep.points["loss"].to_numpy()),
            dims="obs",
        )
    return model


def _token_terms(
    pm, pt, prep: Prepared, pr: dict, terms: np.ndarray, role_idx: np.ndarray, cen: set
) -> tuple[list, list]:
    """The token terms' amplitudes A_k and exponents p_k per group (lists of per-group tensors;
    empty when no group has a token term). A group with ``terms`` < k has A_k = 0."""
    A_list, p_list = [], []
    if terms.max() >= 1:
        # Each token term is sampled as B = A (t0^-p - 1): its size at the group's earliest
        # fitted budget t0, which the data pin directly. Sampling A itself ties A and p in a
        # funnel where a term is small (p is then free): ct Pile loss, R-hat 1.08, ESS 37.
        t0 = np.minimum(prep.groups["t_min"].to_numpy(), 0.5)
        on1 = (terms >= 1).astype(float)
        B1 = pm.Normal("B1", 0.0, pr["B_scale"], dims="group")
        logp1 = _pooled(
            pm,
            "logp1",
            role_idx,
            pr["logp_loc"],
            pr["logp_scale"],
            pr["logp_group_sd"],
            "logp1" in cen,
        )
        p1 = pt.exp(logp1)
        A1 = pm.Deterministic("A1", on1 * B1 / pt.expm1(-p1 * np.log(t0)), dims="group")
        A_list.append(A1)
        p_list.append(p1)
        if terms.max() >= 2:
            on2 = (terms >= 2).astype(float)
            B2 = pm.Normal("B2", 0.0, pr["B_scale"], dims="group")
            gap = pm.LogNormal(
                "p_gap", mu=pr["logp_gap_loc"], sigma=pr["logp_gap_scale"], dims="group"
            )
            p2 = p1 + gap
            A2 = pm.Deterministic("A2", on2 * B2 / pt.expm1(-p2 * np.log(t0)), dims="group")
            A_list.append(A2)
            p_list.append(p2)
    return A_list, p_list


def _run_deviation(
    pm,
    pt,
    model,
    prep: Prepared,
    rs: dict,
    point_role: np.ndarray,
    has_terms: np.ndarray,
    centered: bool,
):
    """Each point's run deviation on the log loss: one per curve (run x group), sd ``run_sd`` per
    role (``rs``: loc, scale of its log), zero for groups fitted at the final budget only
    (``has_terms`` False: one point per run)."""
    curve = prep.points["curve"].to_numpy()
    curve_role = np.zeros(curve.max() + 1, int)
    curve_role[curve] = point_role
    model.add_coord("curve", np.arange(curve.max() + 1))
    tau = pm.Deterministic(
        "run_sd",
        pt.exp(rs["loc"] + rs["scale"] * pm.Normal("run_sd_z", 0.0, 1.0, dims="role")),
        dims="role",
    )
    if centered:
        dev = pm.Normal("run_dev", 0.0, tau[curve_role], dims="curve")
    else:
        dev = tau[curve_role] * pm.Normal("run_dev_z", 0.0, 1.0, dims="curve")
    # groups fitted at the final budget only have one point per run: no run deviation
    return has_terms * dev[curve]


def _noise_scale(pm, pt, prep: Prepared, nz: dict):
    """The Student-t scale of the log loss per group: exp(log_sigma_mu), with a per-group
    spread when ``per_group`` (``auto``: three or more groups of ten or more points each)."""
    G = len(prep.groups)
    ls_mu = pm.Deterministic(
        "log_sigma_mu", nz["sigma_loc"] + nz["sigma_scale"] * pm.Normal("log_sigma_mu_z", 0.0, 1.0)
    )
    per_group = nz.get("per_group", "auto")
    if per_group == "auto":
        per_group = G >= 3 and int(prep.groups["n"].min()) >= 10
    if per_group:
        ls_sd = pm.LogNormal("log_sigma_sd", np.log(nz["sigma_group_sd"]), 0.5)
        ls_z = pm.Normal("log_sigma_z", 0.0, 1.0, dims="group")
        return pm.Deterministic("sigma", pt.exp(ls_mu + ls_sd * ls_z), dims="group")
    return pm.Deterministic("sigma", pt.exp(ls_mu) * pt.ones(G), dims="group")
