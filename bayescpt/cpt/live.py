"""A CPT run in progress against its plan: the risk of forgetting, updated by the run's own losses.

For the CPT run ``run`` of a table in the CPT data model (its PT and CPT rows planned to the last
step ``T``, the general set's losses where logged so far), with ``t_pt`` its transfer step::

    rise_k = L_k(T) - L_k(t_pt)                 particle k: a posterior draw x a fresh deviation
                                                 of the run's general curve (nats)
    P(rise <= eps | prefix) = sum_k w_k 1[rise_k <= eps]

with the importance weights of :func:`bayescpt.curves.forecast.particles.curve_particles` (the run's
general losses past the warmup; none logged yet: equal weights, the plan's own risk that
``bayescpt plan`` computes). The plan was accepted at risk ``delta`` when P >= 1 - delta; a run in
progress whose P falls below that has left the plan
(``bayescpt watch --tolerance EPS --risk DELTA``). The general set's own deviation is what the
prefix informs (the law's schedule-level terms, C2 and Bref); a run far outside them shows first
as losses outside the forecast's band.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from bayescpt.core.tables import DataError
from bayescpt.curves.data.table import curve_info, schedules_of
from bayescpt.curves.forecast.particles import curve_particles, weighted_quantiles
from bayescpt.curves.forecast.predict import curve_draws


def general_set(fit, table: pd.DataFrame, run: str) -> str:
    """The run's validation set whose role is ``general`` (the table's role, else the fit's)."""
    for vs in table.loc[table["run"] == run, "val_set"].unique():
        role = curve_info(table, run, vs)["val_role"]
        if role is None and "val_role" in fit.groups.columns:
            known = fit.groups.loc[fit.groups["val_set"] == vs, "val_role"]
            role = known.iloc[0] if len(known) else None
        if role == "general":
            return vs
    raise DataError(
        f"run {run!r}: no validation set with role 'general' (val_role); the risk of "
        "forgetting is about the general loss"
    )


def plan_risk(
    fit,
    table: pd.DataFrame,
    run: str,
    tolerance: float,
    prob: float = 0.9,
    seed: int = 0,
    n_dev: int = 8,
) -> dict:
    """P(final general-loss rise <= ``tolerance`` | the run's logged general losses) and the
    rise's weighted mean and central ``prob`` interval (nats), the weights' ``ess`` and the
    number of general ``evaluations`` used (module docstring)."""
    if fit.law.name != "cpt":
        raise DataError(f"the risk of forgetting needs a cpt fit; this one is a {fit.law.name} fit")
    if not tolerance > 0:
        raise ValueError(f"tolerance {tolerance!r}; expected a positive loss difference (nats)")
    vs = general_set(fit, table, run)
    sched = schedules_of(table)[run]
    g = table[(table["run"] == run) & (table["val_set"] == vs) & (table["step"] >= 1)]
    part = curve_particles(fit, table, run, vs, g, sched, np.random.default_rng(seed), n_dev)
    t_pt = part.info["pt_end"]
    if t_pt <= 0:
        raise DataError(f"run {run!r}: no PT rows, so no transfer step to measure the rise from")
    X = fit.law.design(
        sched, np.array([t_pt, sched.total_steps]), fit.config["settings"], part.info
    )
    c = curve_draws(fit, part.theta, X)
    rise = c[:, 1] - c[:, 0]
    lo, hi = weighted_quantiles(rise[:, None], part.w, [(1 - prob) / 2, (1 + prob) / 2])
    return {
        "run": run,
        "val_set": vs,
        "p_within": float(part.w @ (rise <= tolerance)),
        "rise_mean": float(part.w @ rise),
        "rise_lower": float(lo[0]),
        "rise_upper": float(hi[0]),
        "ess": float(part.ess),
        "evaluations": len(part.obs),
    }
