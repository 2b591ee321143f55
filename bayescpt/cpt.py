"""Continual pre-training (CPT) runs as tables, and the decision quantities of a CPT plan.

* :func:`cpt_rows` writes a PT schedule + a CPT segment as rows of the CPT data model
  (:mod:`bayescpt.data`), for simulations and for plans to predict.
* :func:`loss_potential` is the paper's loss potential of a PT schedule at its transfer step.
* :func:`outlook` turns a fitted CPT law into per-draw decision quantities for plans: the final
  general and domain losses, and the general-loss turning point.
* :data:`PAPER_FIG3` holds the CPT-law parameters of Wang et al. 2025, Fig. 3 (FineWeb ->
  Knowledge-Pile, 106M, raw LR with peak 2e-4), typed from the paper.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .schedules import Schedule

#: Fig. 3 of Wang et al. 2025 (wang2025_cpt_fitted_parameters.csv); B is the magnitude, its sign
#: comes from the role (general: +, domain: -).
PAPER_FIG3 = {
    "general": {"L0": 3.057, "A": 0.490, "alpha": 0.497, "B": 0.366, "E": 28.0, "beta": 0.189,
                "C1": 0.299, "C2": 0.298},
    "domain": {"L0": 3.024, "A": 0.412, "alpha": 0.677, "B": 0.666, "E": 5662.0, "beta": 0.146,
               "C1": 0.278, "C2": 0.324},
}


def cpt_rows(run: str, pt: Schedule | None, cpt: Schedule, val_roles: dict,
             loss_steps=None, losses: dict | None = None, model_size: float | None = None,
             replay_ratio: float | None = None, lr_every: int = 25) -> pd.DataFrame:
    """One run of PT ``pt`` (None: unknown PT history) then the CPT segment ``cpt``, as rows.

    ``cpt.lr[0]`` is replaced by the last PT learning rate (``pt.then``). ``val_roles`` maps each
    validation set to its role; ``losses`` (optional) maps a validation set to the losses at
    ``loss_steps`` (global steps, counted from the start of PT; none: a plan, with every
    validation set on the schedule's rows). The learning rate is written every
    ``lr_every`` steps and wherever it bends (warmup, decay start, transfer), so linear
    interpolation gives the schedule back exactly where it matters.
    """
    full = pt.then(cpt) if pt is not None else cpt
    t_pt = pt.total_steps if pt is not None else 0
    lr = full.lr
    steps = np.arange(lr.size)
    bend = np.zeros(lr.size, bool)
    bend[1:-1] = np.abs(lr[:-2] - 2 * lr[1:-1] + lr[2:]) > 1e-6 * max(lr.max(), 1e-30)
    keep = (steps % lr_every == 0) | bend | (steps <= full.warmup_steps + 1) | \
        (np.abs(steps - t_pt) <= 1) | (steps == steps[-1])
    loss_steps = np.asarray([] if loss_steps is None else loss_steps, dtype=int)
    vsets = list(val_roles)
    frames = []
    for j, vs in enumerate(vsets):
        # without loss steps (a plan to predict) every set gets the schedule's rows
        at = np.union1d(steps[keep], loss_steps) if j == 0 or not loss_steps.size else loss_steps
        f = pd.DataFrame({"run": run, "step": at, "lr": lr[at], "loss": np.nan, "val_set": vs,
                          "val_role": val_roles[vs]})
        if losses is not None and vs in losses:
            f.loc[np.isin(at, loss_steps), "loss"] = np.asarray(losses[vs], dtype=float)
        frames.append(f)
    out = pd.concat(frames, ignore_index=True)
    out["phase"] = np.where(out["step"] <= t_pt, "pt", "cpt") if t_pt > 0 else "cpt"
    if model_size is not None:
        out["model_size"] = float(model_size)
    if replay_ratio is not None:
        out["replay_ratio"] = float(replay_ratio)
    return out


def cpt_law_options(df: pd.DataFrame, replay: bool | None = None,
                    unknown_pt: bool | None = None, size_extension: bool | None = None,
                    checkpoint: bool | None = None, anchored: bool | None = None) -> dict:
    """Options of the cpt law for a CPT table: given ones kept, the others chosen from the data.

    ``replay`` when runs differ in ``replay_ratio`` (with one ratio the extension is not
    identified: C2 and the shift absorb it); ``unknown_pt`` when some run has no PT rows;
    ``size_extension`` only when asked: every (validation set, model size) is a group of the
    hierarchy, whose parameters already vary log-linearly in size, so Eq. 7 on top of it would
    describe the same dependence twice. ``checkpoint`` (Lc, G, alpha instead of L0, A, C1) when
    every run continues the same checkpoint and the only PT losses are the checkpoint's own:
    there L0, A and C1 are not identified and sampling them does not converge. ``anchored``
    (Lr, G at a PT area inside the data instead of L0, A; alpha held by its prior) only when
    asked: it is for PT curves far from their floor (the lab's), where L0, A and alpha ridge.
    """
    def distinct(col):
        return df[col].dropna().nunique() if col in df.columns else 0

    if replay is None:
        replay = distinct("replay_ratio") > 1
    if unknown_pt is None:
        phases = df["phase"] if "phase" in df.columns else pd.Series("cpt", index=df.index)
        unknown_pt = bool((~phases.eq("pt").groupby(df["run"]).any()).any())
    if size_extension is None:
        size_extension = False
    if checkpoint is None:
        checkpoint = not unknown_pt and not size_extension and one_checkpoint(df)
    out = {"replay": bool(replay), "unknown_pt": bool(unknown_pt),
           "size_extension": bool(size_extension), "checkpoint": bool(checkpoint)}
    if anchored:
        if out["checkpoint"]:
            raise ValueError("anchored: the data have one PT point (checkpoint mode), no PT "
                             "curve to anchor the law in")
        out["anchored"] = True
    return out


def one_checkpoint(df: pd.DataFrame) -> bool:
    """True when every run has PT rows, all share one PT schedule to one transfer step, and no
    run has a PT loss before that step (the data see PT only through the checkpoint's loss)."""
    if "phase" not in df.columns or "run" not in df.columns:
        return False
    pt = df[df["phase"] == "pt"]
    if pt.empty or pt["run"].nunique() != df["run"].nunique():
        return False
    ends = pt.groupby("run")["step"].max()
    if ends.nunique() != 1:
        return False
    if (pt["loss"].notna() & (pt["step"] < ends.iloc[0])).any():
        return False
    lrs = {r: tuple(np.round(g.sort_values("step").drop_duplicates("step")[["step", "lr"]]
                             .to_numpy().ravel(), 12)) for r, g in pt.groupby("run")}
    return len(set(lrs.values())) == 1


def loss_potential(schedule: Schedule, pt_end: int) -> float:
    """Final PT learning rate / PT peak learning rate (1: not annealed, 0: annealed to zero)."""
    pt_lr = schedule.lr[:pt_end + 1]
    return float(pt_lr[-1] / pt_lr.max()) if pt_lr.max() > 0 else float("nan")


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
    from .data import curve_info, schedules_of
    from .other import other_sets
    from .predict import other_draws, curve_draws, parameter_draws

    others = other_sets(fit.meta)

    rng = np.random.default_rng(seed)
    sched = schedules_of(plans)
    q = [(1 - prob) / 2, (1 + prob) / 2]
    rows = []
    for (run, vs), g in plans.groupby(["run", "val_set"], sort=False):
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
        row = {"run": run, "val_set": vs, "val_role": info["val_role"],
               "cpt_steps": int(s.total_steps - t_pt),
               "loss_potential": loss_potential(s, t_pt) if t_pt > 0 else float("nan"),
               "final_mean": final.mean(), "final_median": np.median(final),
               "final_lower": np.quantile(final, q[0]), "final_upper": np.quantile(final, q[1])}
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
