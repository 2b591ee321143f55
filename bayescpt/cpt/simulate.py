"""Simulated PT -> CPT runs from known CPT-law parameters (default: Wang et al. 2025, Fig. 3).

:data:`PAPER_FIG3` holds the paper's fitted parameters (FineWeb -> Knowledge-Pile, 106M, raw LR
with peak 2e-4); :func:`simulate_cpt` writes runs in the CPT table format with log-normal noise.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from bayescpt.core import schedules as S
from bayescpt.core.schedules import Schedule
from bayescpt.curves.data.cpt_rows import cpt_rows
from bayescpt.curves.data.table import curve_info
from bayescpt.curves.data.validate import validate_curves
from bayescpt.curves.model.laws.cpt import CPTLaw, with_bref

#: Fig. 3 of Wang et al. 2025 (wang2025_cpt_fitted_parameters.csv); B is the magnitude, its sign
#: comes from the role (general: +, domain: -).
PAPER_FIG3 = {
    "general": {
        "L0": 3.057,
        "A": 0.490,
        "alpha": 0.497,
        "B": 0.366,
        "E": 28.0,
        "beta": 0.189,
        "C1": 0.299,
        "C2": 0.298,
    },
    "domain": {
        "L0": 3.024,
        "A": 0.412,
        "alpha": 0.677,
        "B": 0.666,
        "E": 5662.0,
        "beta": 0.146,
        "C1": 0.278,
        "C2": 0.324,
    },
}


def simulate_cpt(
    truth: dict | None = None,
    pt: Schedule | None = None,
    transfers=(8000, 10000),
    segments: list | None = None,
    points: int = 30,
    sigma: float = 0.003,
    seed: int = 0,
    law=None,
):
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

    law = law or CPTLaw()
    truth = {
        role: with_bref(theta, law.default_settings["shift_ref"])
        for role, theta in (truth or PAPER_FIG3).items()
    }
    rng = np.random.default_rng(seed)
    pt = pt or S.wsd(10000, 2e-4, decay_steps=2000, final=2e-5, warmup_steps=200, name="pt-wsd")
    segments = segments or default_cpt_segments()
    roles = {role: role for role in truth}
    settings = law.default_settings
    pt_noise = {}
    frames = []
    for t in transfers:
        head = Schedule(pt.lr[: t + 1], pt.warmup_steps, f"pt@{t}")
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

    return [
        S.rewarmup(steps, peak, rewarm, final=0.0, shape="cosine", name="cosine"),
        S.rewarmup(
            steps, peak, rewarm, final=0.0, shape="linear", decay_steps=steps // 5, name="wsd"
        ),
        S.rewarmup(steps, peak, rewarm, shape="constant", name="constant"),
    ]
