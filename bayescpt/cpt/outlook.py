"""The decision quantities of CPT plans, per posterior draw of a fitted CPT law.

:func:`outlook`: per plan (run) and validation set, the final loss (mean, median, central interval,
nats), the PT schedule's loss potential and, for a ``general`` set, the turning point of the general
loss (the CPT step at which it peaks) with the probabilities that it rises above its value at the
transfer and comes back down before the run ends. Curves are evaluated with numpy on the stored
draws (:mod:`bayescpt.curves.forecast.predict`); ``other`` validation sets through their linear
combination of the general and domain curves (:mod:`bayescpt.curves.model.other_sets`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from bayescpt.cpt.rows import loss_potential
from bayescpt.curves.data.table import curve_info, schedules_of
from bayescpt.curves.forecast.predict import curve_draws, other_draws
from bayescpt.curves.model.hierarchy import parameter_draws
from bayescpt.curves.model.other_sets import other_sets


def outlook(fit, plans: pd.DataFrame, prob: float = 0.9, seed: int = 0) -> pd.DataFrame:
    """Decision quantities of CPT plans from a CPT-law fit, one row per plan and validation set.

    ``plans`` is a table in the CPT data model (losses may be empty) whose runs the fit can
    predict. Per run and validation set: the loss at the run's last step (``final_*``: mean,
    median and the central credible interval of the curve at ``prob``); the loss potential of
    its PT; for a ``general`` set, the turning point: the CPT step (counted from the transfer)
    where the curve peaks, summarised over the draws in which the loss does rise above its
    transfer value (``p_rise`` is the share of such draws) and then comes back down before the
    run ends (``p_turn``).
    """

    others = other_sets(fit.meta)

    rng = np.random.default_rng(seed)
    sched = schedules_of(plans)
    q = [(1 - prob) / 2, (1 + prob) / 2]
    rows = []
    for (run, vs), _ in plans.groupby(["run", "val_set"], sort=False):
        info = curve_info(plans, run, vs)
        if info["val_role"] is None and "val_role" in fit.groups.columns:
            info["val_role"] = fit.groups.loc[fit.groups["val_set"] == vs, "val_role"].iloc[0]
        s = sched[run]
        t_pt = info["pt_end"]
        steps = np.arange(max(t_pt, 1), s.total_steps + 1)
        if info["model_size"] is None:
            info["model_size"] = _only_size(fit)
        if vs in others:
            curves, _ = other_draws(fit, vs, others[vs], s, steps, info, rng)
        else:
            X = fit.law.design(s, steps, fit.config["settings"], info)
            curves = curve_draws(fit, parameter_draws(fit, vs, info["model_size"], rng), X)
        final = curves[:, -1]
        row = {
            "run": run,
            "val_set": vs,
            "val_role": info["val_role"],
            "cpt_steps": int(s.total_steps - t_pt),
            "loss_potential": loss_potential(s, t_pt) if t_pt > 0 else float("nan"),
            "final_mean": final.mean(),
            "final_median": np.median(final),
            "final_lower": np.quantile(final, q[0]),
            "final_upper": np.quantile(final, q[1]),
        }
        if info["val_role"] == "general" and t_pt > 0:
            peak = curves.argmax(axis=1)
            rises = curves.max(axis=1) > curves[:, 0]
            turns = rises & (peak < curves.shape[1] - 1)
            row["p_rise"] = rises.mean()
            row["p_turn"] = turns.mean()
            tp = steps[peak[turns]] - t_pt
            row["turning_mean"] = tp.mean() if tp.size else float("nan")
            row["turning_median"] = np.median(tp) if tp.size else float("nan")
            row["turning_lower"] = np.quantile(tp, q[0]) if tp.size else float("nan")
            row["turning_upper"] = np.quantile(tp, q[1]) if tp.size else float("nan")
        rows.append(row)
    return pd.DataFrame(rows)


def _only_size(fit):
    sizes = fit.groups["size"].dropna().unique()
    return float(sizes[0]) if sizes.size == 1 else None
