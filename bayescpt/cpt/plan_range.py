"""Which plans of a grid leave the CPT fit's training range (peak LR, run length, forward area,
model size), judged as ``predict`` judges a run (:mod:`bayescpt.curves.forecast.extrapolation`)."""

from __future__ import annotations

import pandas as pd

from bayescpt.core import schedules as S
from bayescpt.cpt.plan.grid import plan_schedule
from bayescpt.curves.forecast.extrapolation import (
    QUANTITIES,
    check_extrapolation,
    range_of_fit,
    unknown_note,
)

#: the plan settings that set each extrapolated quantity of a plan's whole run (lr: its peak LR,
#: unless the PT schedule's own peak is higher; steps: transfer + CPT steps); a line per value
_SET_BY = {"lr": ("peak_lr",), "steps": ("transfer", "steps")}


def plan_extrapolation(fit, pt: S.Schedule, plans: pd.DataFrame, model_size=None):
    """Where the plans leave the fit's training range
    (:mod:`bayescpt.curves.forecast.extrapolation`, the check ``predict`` makes), each plan judged
    on its whole run (PT to the transfer step, then its CPT schedule), as ``predict`` would judge
    that run.

    Returns ``(column, lines, note)``: ``column`` one text per plan (None inside the range),
    naming each quantity outside it; ``lines`` the ExtrapolationWarnings to print, one per plan
    setting that leaves the range (per peak LR; per transfer step and CPT length), one for the
    forward area S1 and for the model size (the furthest plan), each labelled by the settings
    and how many plans share them; ``note`` the :func:`unknown_note` of the fit (None when it
    records its whole range)."""
    trained = range_of_fit(fit)
    per_plan = []
    for _, p in plans.iterrows():
        full = plan_schedule(pt, p)
        row = {"run": ["plan"], "step": [full.total_steps]}
        if model_size is not None:
            row["model_size"] = [float(model_size)]
        per_plan.append(check_extrapolation(trained, pd.DataFrame(row), {"plan": full}))
    column = ["; ".join(w.short() for w in found) or None for found in per_plan]
    n = len(plans)
    groups: dict = {}
    for i, found in enumerate(per_plan):
        p = plans.iloc[i]
        for w in found:
            if w.quantity == "lr" and p["peak_lr"] < w.value * (1 - 1e-9):
                key = ("lr", "pt")  # the PT schedule's own peak LR
            else:
                key = (w.quantity,) + tuple(p[c] for c in _SET_BY.get(w.quantity, ()))
            groups.setdefault(key, []).append((i, w))
    lines = []
    for key, hits in groups.items():
        i, worst = max(hits, key=lambda h: h[1].factor)
        p = plans.iloc[i]
        share = f"{len(hits)} of {n} plans"
        if key == ("lr", "pt"):
            label = f"the PT schedule --pt up to its transfer step ({share})"
        elif key[0] == "lr":
            label = f"plans with peak LR {p['peak_lr']:g} ({share})"
        elif key[0] == "steps":
            label = (
                f"plans of {int(p['steps'])} CPT steps from PT step {int(p['transfer'])} ({share})"
            )
        elif key[0] == "model_size":
            label = f"plans at --model-size {float(model_size):g} ({share})"
        else:
            label = (
                f"the plans' whole runs ({share}; the furthest: {p['shape']}, peak LR "
                f"{p['peak_lr']:g}, {int(p['steps'])} CPT steps from PT step "
                f"{int(p['transfer'])})"
            )
        lines.append(worst.relabelled(label))
    order = list(QUANTITIES)
    lines.sort(key=lambda w: (order.index(w.quantity), w.label))
    return column, lines, unknown_note(trained)
