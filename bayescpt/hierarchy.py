"""The hierarchical PyMC model shared by every loss-curve law.

Levels (``u`` is a parameter on its natural scale, or its log when the parameter is positive)::

    population   mu_p ~ Normal(loc_p, scale_p)
    group g      u_pg = mu_p + slope_p * x_g + sd_p * z_pg          (g = validation set x model size,
                                                                     x_g = standardised log N)
    curve c      u_pc = u_p,g(c) + tau_p * w_pc                      (c = one run on one val set)
    point i      log y_i ~ StudentT(nu, log L(theta_c(i), design_i), sigma_g(i))

The curve level is what makes predictions for an *unseen schedule* honest: the law's error on a
new schedule is systematic, not noise, and shows in the training data as curve-to-curve deviations
of the parameters. A prediction for a new run integrates over a new curve deviation w ~ N(0, 1).
Group levels are centred (each group has hundreds of points, where the non-centred form diverges;
see STACK.md); the curve level is non-centred (a deviation is weakly identified from one curve).
Both are configurable (``centered``).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .data import schedules_of
from .discrepancy import DEFAULT_DISCREPANCY, basis, domain, sqrt_spd
from .laws.base import Law

DEFAULT_NOISE = {"family": "studentt", "nu": 5.0, "sigma_loc": float(np.log(0.003)),
                 "sigma_scale": 1.0, "sigma_group_sd": 0.5}


def default_config(law: Law) -> dict:
    """Priors and model structure for ``law``: plain data, saved with every fit."""
    return {
        "priors": {p.name: {"positive": p.positive, "loc": float(p.loc), "scale": float(p.scale),
                            "group_sd": float(p.group_sd), "size_slope_sd": float(p.size_slope_sd),
                            "run_sd": float(p.run_sd)} for p in law.params},
        "noise": dict(DEFAULT_NOISE),
        "centered": {"group": True, "curve": False},
        "settings": dict(law.default_settings),
    }


def merge_config(base: dict, override: dict | None) -> dict:
    """``base`` updated by ``override`` (nested dicts merged key by key)."""
    out = copy.deepcopy(base)
    for k, v in (override or {}).items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = merge_config(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


@dataclass
class Prepared:
    """Observed points and their index structure, ready for the model.

    points: one row per loss observation (run, val_set, step, loss, curve, group)
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
    gp_domain: tuple = (0.0, 1.0)

    @property
    def y(self) -> np.ndarray:
        return np.log(self.points["loss"].to_numpy())

    def ar_structure(self):
        """(prev, dlog): index of the previous point of the same curve (-1 for a curve's first)
        and the distance to it in log(step)."""
        c = self.points["curve"].to_numpy()
        ls = np.log(self.points["step"].to_numpy().astype(float))
        prev = np.arange(len(c)) - 1
        first = np.r_[True, c[1:] != c[:-1]]
        prev[first] = -1
        dlog = np.where(first, 1.0, ls - ls[np.maximum(prev, 0)])
        return prev, dlog


def group_label(val_set: str, size) -> str:
    if size is None or (isinstance(size, float) and np.isnan(size)):
        return str(val_set)
    return f"{val_set}|{size / 1e6:g}M"


def prepare(df: pd.DataFrame, law: Law, settings: dict, size_ref=None, gp_c: float = 3.0) -> Prepared:
    """Index the loss rows of a validated table and compute the law's design at them."""
    has_size = "model_size" in df.columns
    pts = df[df["loss"].notna()].copy()
    pts["size"] = pts["model_size"] if has_size else np.nan
    groups = (pts[["val_set", "size"]].drop_duplicates().sort_values(["val_set", "size"])
              .reset_index(drop=True))
    groups["label"] = [group_label(v, s if has_size else None)
                       for v, s in zip(groups["val_set"], groups["size"])]
    logn = np.log(groups["size"].to_numpy(dtype=float)) if has_size else np.zeros(len(groups))
    if size_ref is None:
        sizes = np.unique(logn)
        size_ref = (float(sizes.mean()), float(sizes.std()) if sizes.size > 1 else 1.0)
    groups["x"] = (logn - size_ref[0]) / size_ref[1] if has_size else 0.0
    curves = pts[["run", "val_set", "size"]].drop_duplicates(["run", "val_set"]).reset_index(drop=True)
    gkey = {(v, s): i for i, (v, s) in enumerate(zip(groups["val_set"], groups["size"].fillna(-1)))}
    curves["group"] = [gkey[(v, s)] for v, s in zip(curves["val_set"], curves["size"].fillna(-1))]
    curves["label"] = curves["run"] + ":" + curves["val_set"]
    key = {(r, v): i for i, (r, v) in enumerate(zip(curves["run"], curves["val_set"]))}
    pts["curve"] = [key[(r, v)] for r, v in zip(pts["run"], pts["val_set"])]
    pts["group"] = curves["group"].to_numpy()[pts["curve"].to_numpy()]
    pts = pts.sort_values(["curve", "step"], kind="stable").reset_index(drop=True)
    sched = schedules_of(df)
    designs = []
    for i, c in curves.iterrows():
        steps = pts.loc[pts["curve"] == i, "step"].to_numpy()
        d = law.design(sched[c["run"]], steps, settings)
        if "n_millions" in law_keys(law):
            d["n_millions"] = np.full(len(steps), c["size"] / 1e6)
        designs.append(d)
    X = law.stack_designs(designs)
    return Prepared(pts[["run", "val_set", "step", "loss", "curve", "group"]], curves, groups, X,
                    tuple(size_ref), domain(np.log(X["S1"]), gp_c))


def law_keys(law: Law) -> set:
    return {"n_millions"} if getattr(law, "size_extension", False) else set()


def build_model(law: Law, prep: Prepared, config: dict):
    """The PyMC model of ``law`` on ``prep`` with ``config`` (see :func:`default_config`)."""
    import pymc as pm
    import pytensor.tensor as pt

    pri, noise = config["priors"], config["noise"]
    centered = config.get("centered", {"group": True, "curve": False})
    G, Cn = len(prep.groups), len(prep.curves)
    coords = {"group": prep.groups["label"].tolist(), "curve": prep.curves["label"].tolist(),
              "obs": np.arange(len(prep.points))}
    gidx = prep.curves["group"].to_numpy()
    cidx = prep.points["curve"].to_numpy()
    x = prep.groups["x"].to_numpy(dtype=float)
    multi_size = np.unique(x).size >= 3
    with pm.Model(coords=coords) as model:
        theta_curve = {}
        for p in law.params:
            c = pri[p.name]
            mu = pm.Normal(f"{p.name}_mu", c["loc"], c["scale"])
            loc_g = mu
            if c["size_slope_sd"] > 0 and multi_size:
                slope = pm.Normal(f"{p.name}_slope", 0.0, c["size_slope_sd"])
                loc_g = mu + slope * x
            if c["group_sd"] > 0 and G > 1:
                sd = pm.HalfNormal(f"{p.name}_sd", c["group_sd"])
                if centered.get("group", True):
                    u_g = pm.Normal(f"{p.name}_u", loc_g * np.ones(G), sd, dims="group")
                else:
                    z = pm.Normal(f"{p.name}_z", 0.0, 1.0, dims="group")
                    u_g = pm.Deterministic(f"{p.name}_u", loc_g + sd * z, dims="group")
            else:
                u_g = pm.Deterministic(f"{p.name}_u", loc_g * np.ones(G), dims="group")
            u_c = u_g[gidx]
            if c["run_sd"] > 0:
                tau = pm.HalfNormal(f"{p.name}_tau", c["run_sd"])
                if centered.get("curve", False):
                    u_c = pm.Normal(f"{p.name}_w", u_c, tau, dims="curve")
                else:
                    w = pm.Normal(f"{p.name}_w", 0.0, 1.0, dims="curve")
                    u_c = u_c + tau * w
            theta_curve[p.name] = pt.exp(u_c) if c["positive"] else u_c
            pm.Deterministic(p.name, pt.exp(u_g) if c["positive"] else u_g, dims="group")
        theta = {k: v[cidx] for k, v in theta_curve.items()}
        X = {k: pt.as_tensor_variable(v) for k, v in prep.X.items()}
        mean = law.mean(pt, theta, X)
        log_sigma_mu = pm.Normal("log_sigma_mu", noise["sigma_loc"], noise["sigma_scale"])
        if G > 1 and noise.get("sigma_group_sd", 0) > 0:
            s_sd = pm.HalfNormal("log_sigma_sd", noise["sigma_group_sd"])
            log_sigma = pm.Normal("log_sigma", log_sigma_mu * np.ones(G), s_sd, dims="group")
        else:
            log_sigma = pm.Deterministic("log_sigma", log_sigma_mu * np.ones(G), dims="group")
        sigma = pt.exp(log_sigma)[prep.points["group"].to_numpy()]
        mu_y = pt.log(pt.maximum(mean, 1e-6))
        disc = noise.get("discrepancy")
        if disc:
            m, L = int(disc["m"]), prep.gp_domain[1]
            model.add_coord("basis", np.arange(m))
            amp = pm.HalfNormal("gp_amp", disc["amp_scale"])
            ls = pm.LogNormal("gp_ls", disc["ls_loc"], disc["ls_scale"])
            beta = pm.Normal("gp_beta", 0.0, 1.0, dims=("group", "basis"))
            Phi = basis(np.log(prep.X["S1"]) - prep.gp_domain[0], L, m)
            weights = beta * sqrt_spd(pt, amp, ls, L, m)          # (G, m)
            f = (Phi * weights[prep.points["group"].to_numpy()]).sum(axis=1)
            mu_y = mu_y + f
        ar = noise.get("ar")
        if ar:
            # Residuals of log loss follow a stationary Ornstein-Uhlenbeck process in log(step)
            # within each curve: corr(e_i, e_j) = exp(-|log s_i - log s_j| / ell). The likelihood
            # is the product of the conditionals y_i | y_{i-1} (y_{i-1} is data, so this is exact).
            prev, dlog = prep.ar_structure()
            ell = pm.LogNormal("ar_length", ar.get("loc", np.log(0.1)), ar.get("scale", 1.0))
            phi = pt.exp(-dlog / ell) * (prev >= 0)
            y_prev = prep.y[np.maximum(prev, 0)]
            mu_y = mu_y + phi * (y_prev - mu_y[np.maximum(prev, 0)])
            sigma = sigma * pt.sqrt(1.0 - phi**2)
        if noise["family"] == "studentt":
            pm.StudentT("y", nu=noise["nu"], mu=mu_y, sigma=sigma, observed=prep.y, dims="obs")
        elif noise["family"] == "normal":
            pm.Normal("y", mu=mu_y, sigma=sigma, observed=prep.y, dims="obs")
        else:
            raise ValueError(f"noise family {noise['family']!r}; expected 'studentt' or 'normal'")
    return model
