"""The hierarchical PyMC model shared by every loss-curve law.

Levels (``u`` is a parameter on its natural scale, or its log when the parameter is positive)::

    population  mu_p ~ Normal(loc_p, scale_p)
    group g     u_pg ~ Normal(mu_p + slope_p * x_g, sd_p)      g = validation set x model size,
                                                                x_g = standardised log N
    schedule s  u_pc = u_p,g(c) + w_ps,   w_ps ~ Normal(0, tau_p)   shared by every model size
                                                                that ran schedule s
    point i     log y_i ~ StudentT(nu, log L(theta_c(i), design_i), sigma_g(i))

Positive parameters are sampled as u = log(parameter). The group level is centred (non-centred,
u_g = loc_g + sd * z_g, for a parameter whose prior says ``group_centered`` False, or for all
with config ``centered.group`` False; the schedule level likewise with ``run_centered`` and
``centered.schedule``); group spreads
sd_p, schedule spreads tau_p and the spread of log sigma have boundary-avoiding LogNormal priors
(around ``group_sd``, ``run_sd`` and ``sigma_group_sd``) by default. Each of these top-level
priors is a ``pymc_extras`` ``Prior`` (:func:`~bayescpt.curves.model.config.node_priors`); a config
replaces any of them by
another PyMC family, hyper-priors nested (``priors.A.sd_prior = {"dist": "HalfNormal",
"kwargs": {"sigma": 0.2}}``; checked by :mod:`bayescpt.core.priorspec`), and a fit file stores
the priors it was sampled with (attr ``priors``). ``nu`` = 3 by default (robust to the
first, badly fitted points after warmup). A parameter without group, size or schedule level
enters the law's mean as one scalar, and the law may add to its design what evaluates terms of
such parameters once (:meth:`~bayescpt.curves.model.laws.base.Law.model_design`).
:func:`parameter_draws` draws the same levels with numpy for a new run (a fresh schedule
deviation) or a new group (a new model size).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from bayescpt.core.tables import DataError
from bayescpt.curves.data.table import NOISE_SCALE, curve_info, schedule_ids, schedules_of
from bayescpt.curves.model.config import node_priors
from bayescpt.curves.model.laws.base import Law


def is_multi_size(groups: pd.DataFrame) -> bool:
    """Whether the size slope is fitted: three or more distinct model sizes in the group table
    (its standardised log sizes ``x``)."""
    return np.unique(groups["x"].to_numpy(dtype=float)).size >= 3


@dataclass
class Prepared:
    """Observed points and their index structure, ready for the model.

    points: one row per loss observation (run, val_set, step, loss, curve, group; and
        ``_noise_scale``, the noise sd relative to one logged loss, where thinning averaged)
    curves: one row per (run, val_set) curve with its group index
    groups: one row per (val_set, model_size) with ``x`` the standardised log size
    X: the law's design at the points (numpy)
    size_ref: (mean, sd) of log model size used for ``x``
    """

    points: pd.DataFrame
    curves: pd.DataFrame
    groups: pd.DataFrame
    X: dict
    size_ref: tuple

    @property
    def y(self) -> np.ndarray:
        return np.log(self.points["loss"].to_numpy())


def group_label(val_set: str, size) -> str:
    if size is None or (isinstance(size, float) and np.isnan(size)):
        return str(val_set)
    return f"{val_set}|{size / 1e6:g}M"


def prepare(df: pd.DataFrame, law: Law, settings: dict, size_ref=None) -> Prepared:
    """Index the loss rows of a validated table and compute the law's design at them."""
    has_size = "model_size" in df.columns
    law.settings_from_data(df, settings)  # settings from the fitted data (saved with the fit)
    sched = schedules_of(df)
    # a loss logged at step 0 is the initial model's, before any training the laws describe
    pts = df[df["loss"].notna() & (df["step"] >= 1)].copy()
    if settings.get("skip_warmup", True):
        # The laws describe training after the initial warmup; losses logged during it are not
        # evidence about their parameters (on the OLMo ladder they were off by 3-8 %).
        warm = {r: s.warmup_steps for r, s in sched.items()}
        pts = pts[pts["step"] >= pts["run"].map(warm)]
    if "phase" in pts.columns:
        # Several CPT runs from one checkpoint each list the same PT losses: count them once.
        pt_dup = (pts["phase"] == "pt") & pts.duplicated(
            [c for c in ("val_set", "model_size", "step", "loss") if c in pts.columns]
        )
        pts = pts[~pt_dup]
    pts["size"] = pts["model_size"] if has_size else np.nan
    groups = (
        pts[["val_set", "size"]]
        .drop_duplicates()
        .sort_values(["val_set", "size"])
        .reset_index(drop=True)
    )
    groups["label"] = [
        group_label(v, s if has_size else None) for v, s in zip(groups["val_set"], groups["size"])
    ]
    logn = np.log(groups["size"].to_numpy(dtype=float)) if has_size else np.zeros(len(groups))
    if size_ref is None:
        sizes = np.unique(logn)
        size_ref = (float(sizes.mean()), float(sizes.std()) if sizes.size > 1 else 1.0)
    groups["x"] = (logn - size_ref[0]) / size_ref[1] if has_size else 0.0
    curves = (
        pts[["run", "val_set", "size"]].drop_duplicates(["run", "val_set"]).reset_index(drop=True)
    )
    gkey = {(v, s): i for i, (v, s) in enumerate(zip(groups["val_set"], groups["size"].fillna(-1)))}
    curves["group"] = [gkey[(v, s)] for v, s in zip(curves["val_set"], curves["size"].fillna(-1))]
    curves["label"] = curves["run"] + ":" + curves["val_set"]
    sid = schedule_ids(df, schedules=sched)
    infos = [curve_info(df, r, v) for r, v in zip(curves["run"], curves["val_set"])]
    # A replay ratio is a schedule of its own for the deviations, unless the law's settings say
    # the replay extension alone describes it (``replay_deviation`` False: runs that differ only
    # in the ratio share their deviations, which otherwise ridge with the replay terms).
    by_ratio = settings.get("replay_deviation", True)
    curves["schedule"] = [
        sid[r]
        if i["replay_ratio"] is None or not by_ratio
        else f"{sid[r]}|replay={i['replay_ratio']:g}"
        for r, i in zip(curves["run"], infos)
    ]
    if "val_role" in df.columns:
        roles = dict(zip(curves["val_set"], [i["val_role"] for i in infos]))
        groups["val_role"] = groups["val_set"].map(roles)
    skeys = {k: i for i, k in enumerate(dict.fromkeys(zip(curves["schedule"], curves["val_set"])))}
    curves["sched_idx"] = [skeys[k] for k in zip(curves["schedule"], curves["val_set"])]
    key = {(r, v): i for i, (r, v) in enumerate(zip(curves["run"], curves["val_set"]))}
    pts["curve"] = [key[(r, v)] for r, v in zip(pts["run"], pts["val_set"])]
    pts["group"] = curves["group"].to_numpy()[pts["curve"].to_numpy()]
    pts = pts.sort_values(["curve", "step"], kind="stable").reset_index(drop=True)
    designs = []
    for i, c in curves.iterrows():
        steps = pts.loc[pts["curve"] == i, "step"].to_numpy()
        designs.append(law.design(sched[c["run"]], steps, settings, infos[i]))
    X = law.stack_designs(designs)
    law.check_fit_design(X, pts)
    cols = ["run", "val_set", "step", "loss", "curve", "group"]
    if NOISE_SCALE in pts.columns and not np.allclose(pts[NOISE_SCALE].to_numpy(float), 1.0):
        cols.append(NOISE_SCALE)  # averaged points (thinning): their own noise scale
    return Prepared(pts[cols], curves, groups, X, tuple(size_ref))


def build_model(law: Law, prep: Prepared, config: dict):
    """The PyMC model of ``law`` on ``prep`` with ``config`` (see
    :func:`~bayescpt.curves.model.config.default_config`)."""
    import pymc as pm
    import pytensor.tensor as pt

    centered = config.get("centered", {"group": True, "schedule": True})
    G = len(prep.groups)
    sched_labels = (
        prep.curves.drop_duplicates("sched_idx")
        .sort_values("sched_idx")
        .apply(lambda r: f"{r['schedule']}:{r['val_set']}", axis=1)
        .tolist()
    )
    coords = {
        "group": prep.groups["label"].tolist(),
        "schedule": sched_labels,
        "obs": np.arange(len(prep.points)),
    }
    index = {
        "G": G,
        "x": prep.groups["x"].to_numpy(dtype=float),
        "group": prep.curves["group"].to_numpy(),
        "sched": prep.curves["sched_idx"].to_numpy(),
    }
    cidx = prep.points["curve"].to_numpy()
    priors = node_priors(law, config, G, is_multi_size(prep.groups))
    with pm.Model(coords=coords) as model:
        theta_curve, shared = {}, {}
        for p in law.params:
            theta_curve[p.name], one = _law_parameter(
                p, config["priors"][p.name], priors, index, centered
            )
            if one is not None:
                shared[p.name] = one
        for name, value in law.derived(
            pt, {p.name: model[p.name] for p in law.params}, config["settings"]
        ).items():
            pm.Deterministic(name, value, dims="group")
        theta = {k: shared[k] if k in shared else v[cidx] for k, v in theta_curve.items()}
        X = {
            k: pt.as_tensor_variable(v)
            for k, v in law.model_design(prep.X, frozenset(shared)).items()
        }
        _likelihood(law.mean(pt, theta, X), prep, priors, config["noise"], G)
    return model


def _law_parameter(p, c: dict, priors: dict, index: dict, centered: dict):
    """Parameter ``p``'s population, group and schedule nodes (config ``c``, its top-level
    ``priors``), created in the current model; ``index``: ``G`` groups, their standardised log
    sizes ``x``, each curve's ``group`` and ``sched`` (schedule) index. Returns (its value per
    curve, its scalar where it has one value at every point, else None)."""
    import pymc as pm
    import pytensor.tensor as pt

    G, x = index["G"], index["x"]
    shared = None
    mu = priors[f"{p.name}_mu"].create_variable(f"{p.name}_mu")
    loc_g = mu
    if f"{p.name}_slope" in priors:
        slope = priors[f"{p.name}_slope"].create_variable(f"{p.name}_slope")
        loc_g = mu + slope * x
    if f"{p.name}_sd" in priors:
        # Boundary-avoiding LogNormal prior around group_sd: with a handful of groups the
        # data cannot tell sd = 0 from a small sd, and prior mass near 0 makes a funnel
        # in (mu, slope, sd) when the group values are sharply determined.
        sd = priors[f"{p.name}_sd"].create_variable(f"{p.name}_sd")
        if centered.get("group", True) and c.get("group_centered", True):
            u_g = pm.Normal(f"{p.name}_u", loc_g * np.ones(G), sd, dims="group")
        else:
            z = pm.Normal(f"{p.name}_z", 0.0, 1.0, dims="group")
            u_g = pm.Deterministic(f"{p.name}_u", loc_g + sd * z, dims="group")
    else:
        u_g = pm.Deterministic(f"{p.name}_u", loc_g * np.ones(G), dims="group")
        if c["run_sd"] <= 0 and loc_g is mu:
            # one value at every point: the law gets a scalar (no gather to the points,
            # no scatter-add in the gradient; the law may evaluate terms of it once)
            shared = pt.exp(mu) if c["positive"] else mu
    u_c = u_g[index["group"]]
    if c["run_sd"] > 0:
        # Boundary-avoiding too: a few schedules cannot pin tau, and its prior encodes how
        # much the law's parameters move between schedules (the seed papers' errors on
        # unseen schedules, 0.15-0.36 %, correspond to tau ~ 0.05 on A, alpha and C).
        tau = priors[f"{p.name}_tau"].create_variable(f"{p.name}_tau")
        # one deviation per schedule (and val set), shared by the model sizes that ran it
        if centered.get("schedule", True) and c.get("run_centered", True):
            dev = pm.Normal(f"{p.name}_w", 0.0, tau, dims="schedule")
        else:
            dev = tau * pm.Normal(f"{p.name}_w", 0.0, 1.0, dims="schedule")
        u_c = u_c + dev[index["sched"]]
    pm.Deterministic(p.name, pt.exp(u_g) if c["positive"] else u_g, dims="group")
    return (pt.exp(u_c) if c["positive"] else u_c), shared


def _likelihood(mean, prep: Prepared, priors: dict, noise: dict, G: int) -> None:
    """The noise nodes (log sigma per group) and the observed ``y`` = log loss around
    log(``mean``), created in the current model."""
    import pymc as pm
    import pytensor.tensor as pt

    log_sigma_mu = priors["log_sigma_mu"].create_variable("log_sigma_mu")
    if "log_sigma_sd" in priors:
        s_sd = priors["log_sigma_sd"].create_variable("log_sigma_sd")
        log_sigma = pm.Normal("log_sigma", log_sigma_mu * np.ones(G), s_sd, dims="group")
    else:
        log_sigma = pm.Deterministic("log_sigma", log_sigma_mu * np.ones(G), dims="group")
    sigma = pt.exp(log_sigma)[prep.points["group"].to_numpy()]
    if NOISE_SCALE in prep.points.columns:
        # a point averaged from a window of logged losses (thin_long_curves): its noise sd
        # is sigma (one logged loss's) times its scale; data, so a compiled model can refit
        sigma = sigma * pm.Data("y_scale", prep.points[NOISE_SCALE].to_numpy(float), dims="obs")
    mu_y = pt.log(pt.maximum(mean, 1e-6))
    y_obs = pm.Data("y_obs", prep.y, dims="obs")  # data, so a compiled model can refit
    if noise["family"] == "studentt":
        pm.StudentT("y", nu=noise["nu"], mu=mu_y, sigma=sigma, observed=y_obs, dims="obs")
    elif noise["family"] == "normal":
        pm.Normal("y", mu=mu_y, sigma=sigma, observed=y_obs, dims="obs")
    else:
        raise ValueError(f"noise family {noise['family']!r}; expected 'studentt' or 'normal'")


def parameter_draws(
    fit,
    val_set: str,
    model_size,
    rng: np.random.Generator,
    new_run: bool = True,
    antithetic: bool = True,
) -> dict:
    """Per-draw parameters (natural scale) of a new run in group (``val_set``, ``model_size``).

    The numpy counterpart of :func:`build_model`'s levels, over the posterior draws of ``fit``
    (a :class:`~bayescpt.curves.model.fit.Fit`): for a fitted group g, u = u_g; for a new group (a
    new model size of a fitted validation set) u = mu + slope * x + sd * z_g with x its
    standardised log size; with ``new_run`` the schedule level adds tau * z_s; z ~ N(0, 1).
    Positive parameters are exp(u). ``_sigma`` is the residual scale on log loss (group
    log_sigma, or a new group's draw around log_sigma_mu).

    Returns {parameter: array}, shape (S,) over the S stored draws, or (2S,) with
    ``antithetic``: every draw is used with z and with -z, which removes most of the Monte
    Carlo noise the random deviations would add to the mean curve.
    """
    gi = fit.group_index(model_size, val_set)
    pri = fit.config["priors"]
    post = fit.idata.posterior
    out = {}
    if gi is None:
        if val_set not in set(fit.groups["val_set"]):
            raise DataError(
                f"validation set {val_set!r} is not in the fit "
                f"(known: {sorted(fit.groups['val_set'].unique())})"
            )
        if model_size is None or pd.isna(model_size):
            raise DataError(f"validation set {val_set!r}: give model_size; the fit has several")
        x = (np.log(float(model_size)) - fit.size_ref[0]) / fit.size_ref[1]

    def dev(n):
        z = rng.standard_normal(n)
        return np.concatenate([z, -z]) if antithetic else z

    def dup(a):
        return np.concatenate([a, a]) if antithetic else a

    for p in fit.law.params:
        c = pri[p.name]
        if gi is not None:
            u = fit.flat(f"{p.name}_u")[:, gi]
        else:
            u = fit.flat(f"{p.name}_mu")
            if f"{p.name}_slope" in post:
                u = u + fit.flat(f"{p.name}_slope") * x
        S = u.shape[0]
        u = dup(u)
        if gi is None and f"{p.name}_sd" in post:
            u = u + dup(fit.flat(f"{p.name}_sd")) * dev(S)
        if new_run and f"{p.name}_tau" in post:
            u = u + dup(fit.flat(f"{p.name}_tau")) * dev(S)
        out[p.name] = np.exp(u) if c["positive"] else u
    if gi is not None:
        log_sigma = fit.flat("log_sigma")[:, gi]
    else:
        log_sigma = fit.flat("log_sigma_mu")
        if "log_sigma_sd" in post:
            S = log_sigma.shape[0]
            log_sigma = dup(log_sigma) + dup(fit.flat("log_sigma_sd")) * dev(S)
            out["_sigma"] = np.exp(log_sigma)
            return out
    out["_sigma"] = np.exp(dup(log_sigma))
    return out
