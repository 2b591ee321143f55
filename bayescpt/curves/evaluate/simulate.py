"""Simulated loss curves from a law with known hierarchical parameters (for recovery checks).

``simulate_hierarchy`` draws group parameters around known population values, then observes each
group's curves on given schedules with log-normal noise. The returned truth table lets tests and
benchmarks check that the posterior covers the values that generated the data.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from bayescpt.core import schedules as S
from bayescpt.core.schedules import Schedule
from bayescpt.curves.data.validate import validate_curves
from bayescpt.curves.model.hierarchy import group_label
from bayescpt.curves.model.laws.base import Law


@dataclass(frozen=True)
class Layout:
    """How :func:`simulate_hierarchy` lays out its groups: ``slope`` (parameter -> slope on the
    standardised log model size; none: 0), the validation set ``val_set`` of every curve and the
    law's ``settings`` (over its defaults)."""

    slope: dict | None = None
    val_set: str = "default"
    settings: dict | None = None


def simulate_hierarchy(
    law: Law,
    population: dict,
    group_sd: dict,
    sizes,
    schedules: list,
    points: int = 40,
    sigma: float = 0.003,
    seed: int = 0,
    layout: Layout | None = None,
):
    """Simulate one data set.

    population: parameter -> population value (natural scale); group_sd: parameter -> sd of the
    group deviations (log scale for positive parameters); ``layout``: the size slopes, validation
    set and law settings (:class:`Layout`). ``schedules`` are :class:`Schedule` objects run at
    every size, observed at ``points`` steps spread evenly after the warmup, with log-normal noise
    of sd ``sigma`` on the log loss.

    Returns (curves, truth): a validated tidy table and one row per group with the true values.
    """

    layout = layout or Layout()
    slope, val_set = layout.slope, layout.val_set
    rng = np.random.default_rng(seed)
    settings = dict(law.default_settings, **(layout.settings or {}))
    sizes = np.asarray(sizes, dtype=float)
    logn = np.log(sizes)
    x = (logn - logn.mean()) / (logn.std() if sizes.size > 1 else 1.0)
    slope = slope or {}
    rows, truth = [], []
    for gi, size in enumerate(sizes):
        theta = {}
        for p in law.params:
            base = np.log(population[p.name]) if p.positive else population[p.name]
            u = (
                base
                + slope.get(p.name, 0.0) * x[gi]
                + group_sd.get(p.name, 0.0) * rng.standard_normal()
            )
            theta[p.name] = float(np.exp(u) if p.positive else u)
        truth.append({"group": group_label(val_set, size), "model_size": size, **theta})
        for sch in schedules:
            steps = np.unique(
                np.linspace(sch.warmup_steps + 1, sch.total_steps, points).round().astype(int)
            )
            X = law.design(sch, steps, settings)
            mean = law.mean(np, {k: np.asarray(v) for k, v in theta.items()}, X)
            loss = mean * np.exp(sigma * rng.standard_normal(mean.shape))
            run = f"{size / 1e6:g}M/{sch.name}"
            lr_rows = pd.DataFrame(
                {"run": run, "step": np.arange(sch.total_steps + 1), "lr": sch.lr, "loss": np.nan}
            )
            lr_rows.loc[steps, "loss"] = loss
            lr_rows = lr_rows[
                (lr_rows["step"] % 25 == 0)
                | lr_rows["loss"].notna()
                | (lr_rows["step"] <= sch.warmup_steps + 1)
            ]
            lr_rows["model_size"] = size
            lr_rows["val_set"] = val_set
            rows.append(lr_rows)
    curves = validate_curves(pd.concat(rows, ignore_index=True), source="<simulated>")
    return curves, pd.DataFrame(truth)


def default_schedules(total: int = 4000, peak: float = 3e-4, warmup: int = 200) -> list[Schedule]:
    """A constant and a cosine schedule: enough to identify the LR-annealing law."""

    return [
        S.constant(total, peak, warmup_steps=warmup, name="constant"),
        S.cosine(total, peak, 0.1 * peak, warmup_steps=warmup, name="cosine"),
        S.wsd(total, peak, decay_steps=total // 5, final=0.0, warmup_steps=warmup, name="wsd"),
    ]
