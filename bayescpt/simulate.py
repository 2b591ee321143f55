"""Simulated loss curves from a law with known hierarchical parameters (for recovery checks).

``simulate_hierarchy`` draws group parameters around known population values, then observes each
group's curves on given schedules with log-normal noise. The returned truth table lets tests and
benchmarks check that the posterior covers the values that generated the data.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .hierarchy import group_label
from .laws.base import Law
from .schedules import Schedule


def simulate_hierarchy(law: Law, population: dict, group_sd: dict, sizes, schedules: list,
                       points: int = 40, sigma: float = 0.003, slope: dict | None = None,
                       val_set: str = "default", seed: int = 0, settings: dict | None = None):
    """Simulate one data set.

    population: parameter -> population value (natural scale); group_sd: parameter -> sd of the
    group deviations (log scale for positive parameters); slope: parameter -> slope on the
    standardised log model size. ``schedules`` are :class:`Schedule` objects run at every size,
    observed at ``points`` steps spread evenly after the warmup.

    Returns (curves, truth): a validated tidy table and one row per group with the true values.
    """
    from .data import validate_curves

    rng = np.random.default_rng(seed)
    settings = dict(law.default_settings, **(settings or {}))
    sizes = np.asarray(sizes, dtype=float)
    logn = np.log(sizes)
    x = (logn - logn.mean()) / (logn.std() if sizes.size > 1 else 1.0)
    slope = slope or {}
    rows, truth = [], []
    for gi, size in enumerate(sizes):
        theta = {}
        for p in law.params:
            base = np.log(population[p.name]) if p.positive else population[p.name]
            u = base + slope.get(p.name, 0.0) * x[gi] + group_sd.get(p.name, 0.0) * rng.standard_normal()
            theta[p.name] = float(np.exp(u) if p.positive else u)
        truth.append({"group": group_label(val_set, size), "model_size": size, **theta})
        for sch in schedules:
            steps = np.unique(np.linspace(sch.warmup_steps + 1, sch.total_steps, points).round()
                              .astype(int))
            X = law.design(sch, steps, settings)
            mean = law.mean(np, {k: np.asarray(v) for k, v in theta.items()}, X)
            loss = mean * np.exp(sigma * rng.standard_normal(mean.shape))
            run = f"{size / 1e6:g}M/{sch.name}"
            lr_rows = pd.DataFrame({"run": run, "step": np.arange(sch.total_steps + 1),
                                    "lr": sch.lr, "loss": np.nan})
            lr_rows.loc[steps, "loss"] = loss
            lr_rows = lr_rows[(lr_rows["step"] % 25 == 0) | lr_rows["loss"].notna()
                              | (lr_rows["step"] <= sch.warmup_steps + 1)]
            lr_rows["model_size"] = size
            lr_rows["val_set"] = val_set
            rows.append(lr_rows)
    curves = validate_curves(pd.concat(rows, ignore_index=True), source="<simulated>")
    return curves, pd.DataFrame(truth)


def default_schedules(total: int = 4000, peak: float = 3e-4, warmup: int = 200) -> list[Schedule]:
    """A constant and a cosine schedule: enough to identify the LR-annealing law."""
    from . import schedules as S

    return [S.constant(total, peak, warmup_steps=warmup, name="constant"),
            S.cosine(total, peak, 0.1 * peak, warmup_steps=warmup, name="cosine"),
            S.wsd(total, peak, decay_steps=total // 5, final=0.0, warmup_steps=warmup,
                  name="wsd")]


def simulate_cpt(truth: dict | None = None, pt: Schedule | None = None, transfers=(8000, 10000),
                 segments: list | None = None, points: int = 30, sigma: float = 0.003,
                 seed: int = 0, law=None):
    """Simulated PT -> CPT runs on a general and a domain validation set, from known parameters.

    ``truth``: role -> parameters (natural scale; default the paper's Fig. 3 values,
    :data:`bayescpt.cpt.PAPER_FIG3`); validation sets are named after their roles. ``pt`` is the
    PT schedule (default: WSD, 10000 steps, peak 2e-4, 200 warmup, last 2000 steps decay to
    10 %); every transfer step in ``transfers`` starts one CPT run per segment of ``segments``
    (default :func:`default_cpt_segments`). Each run logs ``points`` losses per set, spread over
    the CPT, plus 10 PT losses, with log-normal noise ``sigma``. PT losses of runs from the same
    checkpoint are identical (the same checkpoint's evaluations).

    Returns (curves, truth_table): a validated CPT table and one row per validation set.
    """
    from . import schedules as S
    from .cpt import PAPER_FIG3, cpt_rows
    from .data import curve_info, validate_curves
    from .laws.cpt import CPTLaw, with_bref

    law = law or CPTLaw()
    truth = {role: with_bref(theta, law.default_settings["shift_ref"])
             for role, theta in (truth or PAPER_FIG3).items()}
    rng = np.random.default_rng(seed)
    pt = pt or S.wsd(10000, 2e-4, decay_steps=2000, final=2e-5, warmup_steps=200, name="pt-wsd")
    segments = segments or default_cpt_segments()
    roles = {role: role for role in truth}
    settings = law.default_settings
    pt_noise = {}
    frames = []
    for t in transfers:
        head = Schedule(pt.lr[:t + 1], pt.warmup_steps, f"pt@{t}")
        pt_steps = np.unique(np.linspace(pt.warmup_steps + 1, t, 10).round().astype(int))
        for seg in segments:
            cpt_steps = t + np.unique(np.linspace(1, seg.total_steps, points).round().astype(int))
            steps = np.concatenate([pt_steps, cpt_steps])
            run = f"{head.name}/{seg.name}"
            skeleton = cpt_rows(run, head, seg, roles, loss_steps=steps)
            full = head.then(seg)
            losses = {}
            for role, theta in truth.items():
                info = curve_info(skeleton.assign(loss=1.0), run, role)
                X = law.design(full, steps, settings, info)
                mean = law.mean(np, {k: np.asarray(v) for k, v in theta.items() if k != "B"}, X)
                key = (t, role)
                if key not in pt_noise:
                    pt_noise[key] = rng.standard_normal(pt_steps.size)
                eps = np.concatenate([pt_noise[key], rng.standard_normal(cpt_steps.size)])
                losses[role] = mean * np.exp(sigma * eps)
            frames.append(cpt_rows(run, head, seg, roles, loss_steps=steps, losses=losses))
    curves = validate_curves(pd.concat(frames, ignore_index=True), source="<simulated CPT>")
    table = pd.DataFrame([{"val_set": role, **theta} for role, theta in truth.items()])
    return curves, table


def default_cpt_segments(steps: int = 4000, peak: float = 2e-4, rewarm: int = 100) -> list:
    """CPT segments with a re-warmup to ``peak``: cosine to 0, WSD (20 % linear decay), constant."""
    from . import schedules as S

    return [S.rewarmup(steps, peak, rewarm, final=0.0, shape="cosine", name="cosine"),
            S.rewarmup(steps, peak, rewarm, final=0.0, shape="linear", decay_steps=steps // 5,
                       name="wsd"),
            S.rewarmup(steps, peak, rewarm, shape="constant", name="constant")]
