"""The decision over evaluated plans: feasibility under a risk of forgetting, the objective, the
Pareto front, and why no plan was chosen.

A plan is *feasible* at tolerance ``eps`` (nats of general-loss rise) and risk ``delta`` when
P(rise <= eps) >= 1 - delta over the posterior draws; the chosen plan minimises the expected final
domain loss among feasible plans (``objective="chance"``), or its ``quantile`` of the domain loss,
or the expected ``w_general * rise + w_domain * (domain loss)`` (``"weighted"``, the paper's
objective, unconstrained).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from bayescpt.cpt.plan.evaluate import PlanDraws

OBJECTIVES = ("chance", "quantile", "weighted")


@dataclass(frozen=True)
class Criterion:
    """How the plan is chosen: ``tolerance`` (nats) and ``risk`` define feasibility,
    ``objective`` (:data:`OBJECTIVES`) with its ``quantile`` or weights ``w_general, w_domain``
    what is minimised; ``prob`` the central intervals' probability. Checked on construction."""

    tolerance: float
    risk: float = 0.1
    objective: str = "chance"
    quantile: float = 0.9
    w_general: float = 1.0
    w_domain: float = 1.0
    prob: float = 0.9

    def __post_init__(self):
        if not self.tolerance > 0:
            raise ValueError(
                f"tolerance {self.tolerance!r}; expected a positive loss difference (nats)"
            )
        if not 0 < self.risk < 1:
            raise ValueError(f"risk {self.risk!r}; expected a probability in (0, 1)")
        if self.objective not in OBJECTIVES:
            raise ValueError(f"objective {self.objective!r}; expected chance, quantile or weighted")


def decide(pd_: PlanDraws, criterion: Criterion, also_feasible=None) -> pd.DataFrame:
    """One row per plan: decisions, outcome summaries, feasibility and the chosen plan.

    Columns: the decisions, ``loss_potential``, ``domain_mean, domain_lower, domain_upper``
    (central interval at ``prob``), ``domain_q`` (the ``quantile`` of the domain loss),
    ``general_rise_mean, general_rise_upper``, ``peak_rise_mean``, ``p_turn`` (share of draws whose
    general loss peaks before the end), ``turning_median``, ``p_within_tolerance`` = P(rise <=
    tolerance), ``feasible`` (>= 1 - risk), ``pareto`` (no feasible... see below) and ``chosen``.
    ``pareto`` marks the plans no other plan beats on both expected domain loss and
    P(within tolerance). ``also_feasible`` (one bool per plan, optional) is a further condition
    a feasible plan must meet, e.g. :func:`~bayescpt.cpt.plan.checks.mixture_check`'s.
    """
    c = criterion
    lo, hi = (1 - c.prob) / 2, (1 + c.prob) / 2
    t = pd_.plans.copy()
    t["domain_mean"] = pd_.domain.mean(0)
    t["domain_lower"], t["domain_upper"] = np.quantile(pd_.domain, [lo, hi], axis=0)
    t["domain_q"] = np.quantile(pd_.domain, c.quantile, axis=0)
    t["general_mean"] = pd_.general.mean(0)
    t["general_rise_mean"] = pd_.rise.mean(0)
    t["general_rise_upper"] = np.quantile(pd_.rise, hi, axis=0)
    t["peak_rise_mean"] = pd_.peak_rise.mean(0)
    ends = pd_.turning < t["steps"].to_numpy()[None, :]
    t["p_turn"] = ((pd_.peak_rise > 0) & ends).mean(0)
    t["turning_median"] = np.median(pd_.turning, axis=0)
    t["p_within_tolerance"] = (pd_.rise <= c.tolerance).mean(0)
    t["feasible"] = t["p_within_tolerance"] >= 1 - c.risk
    if also_feasible is not None:
        t["feasible"] &= np.asarray(also_feasible, bool)
    score = {
        "chance": t["domain_mean"],
        "quantile": t["domain_q"],
        "weighted": c.w_general * t["general_rise_mean"] + c.w_domain * t["domain_mean"],
    }[c.objective]
    t["score"] = score
    pool = t if c.objective == "weighted" else t[t["feasible"]]
    t["chosen"] = False
    if len(pool):
        t.loc[pool["score"].idxmin(), "chosen"] = True
    t["pareto"] = pareto_mask(t["domain_mean"].to_numpy(), t["p_within_tolerance"].to_numpy())
    return t


def pareto_mask(domain_mean: np.ndarray, p_ok: np.ndarray) -> np.ndarray:
    """Plans not dominated (lower-or-equal expected domain loss and higher-or-equal P(within
    tolerance), one strictly) by another plan."""
    order = np.lexsort((-p_ok, domain_mean))  # by domain loss, then by P(ok) descending
    keep = np.zeros(domain_mean.size, bool)
    best = -np.inf
    for i in order:
        if p_ok[i] > best:
            keep[i] = True
            best = p_ok[i]
    return keep


def infeasibility(
    table: pd.DataFrame, tolerance: float, risk: float, mixture_label: str = "the mixture fit"
) -> str | None:
    """Why no plan of ``table`` (:func:`decide`'s) was chosen, and what to relax (worded for the
    command line's options); None when one was. Either the mixture check fails every plan, or
    the best plan's P(general rise <= tolerance) (among those passing the mixture check) is below
    1 - risk."""
    if table["chosen"].any():
        return None
    if "mixture_ok" in table.columns and not table["mixture_ok"].any():
        return (
            f"no plan is feasible: by {mixture_label} no planned mixture keeps the general "
            f"loss within {tolerance:g} with probability >= {1 - risk:.3f}; add plans with "
            "more replay (--replay-ratios) or allow a larger --tolerance or --risk"
        )
    pool = table[table["mixture_ok"]] if "mixture_ok" in table.columns else table
    best = pool["p_within_tolerance"].max()
    return (
        f"no plan is feasible: the best keeps the general rise within {tolerance:g} with "
        f"probability {best:.3f} < {1 - risk:.3f}; allow a larger --tolerance or --risk, "
        "or add plans with lower peak LRs, fewer steps or more replay"
    )
