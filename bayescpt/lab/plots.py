"""Figures of lab curves: general and domain validation loss and the LR against the step, for
CPT runs that differ in one factor (CPT schedule, transfer step, replay ratio, model size,
length) with the others fixed at the grid's reference values, and for PT-only runs one figure
per model size with a line per schedule."""

from __future__ import annotations

import pandas as pd

from bayescpt.core.plotting import pyplot

FACTORS = ("schedule", "transfer", "replay_ratio", "size", "cpt_steps")


def reference(runs: pd.DataFrame) -> dict:
    """The most frequent value of each factor (replay 0 when present): the grid's centre."""
    ref = {f: runs[f].mode().iloc[0] for f in FACTORS}
    if (runs["replay_ratio"] == 0).any():
        ref["replay_ratio"] = 0.0
    return ref


def plot_factor(
    curves: pd.DataFrame, runs: pd.DataFrame, vary: str, ref: dict, roles=None, fig=None
):
    """One figure: a column of panels (one per validation role, then the LR) with one line per
    value of ``vary``, the other factors at ``ref``. ``fig``: a Figure to draw into (default: a
    new 7.5 in wide one). Returns the Figure, or None when fewer than two runs differ in
    ``vary``; nothing is written."""
    sel = runs
    for f in FACTORS:
        if f != vary:
            sel = sel[sel[f] == ref[f]]
    if sel[vary].nunique() < 2:
        return None
    if roles is None:
        present = set(curves["val_role"])
        roles = [r for r in ("general", "domain", "other") if r in present]
    sel = sel.sort_values(vary)
    start = max(0, int(sel["transfer"].min()) - 300)
    plt = pyplot()  # Agg unless a backend was chosen (a notebook's inline one)
    if fig is None:
        fig = plt.figure(figsize=(7.5, 2.3 * (len(roles) + 1)))
    axes = fig.subplots(
        len(roles) + 1, 1, sharex=True, gridspec_kw={"height_ratios": [3] * len(roles) + [1.4]}
    )
    cmap = plt.get_cmap("viridis")
    for i, (_, r) in enumerate(sel.iterrows()):
        color = cmap(i / max(1, len(sel) - 1) * 0.9)
        c = curves[(curves["run"] == r["run"]) & (curves["step"] >= start)]
        label = f"{vary} = {r[vary]:g}" if not isinstance(r[vary], str) else f"{vary} = {r[vary]}"
        for ax, role in zip(axes, roles):
            g = c[(c["val_role"] == role) & c["loss"].notna()]
            ax.plot(g["step"], g["loss"], color=color, lw=1.2, label=label)
            ax.axvline(r["transfer"], color=color, ls=":", lw=0.8)
        lr = c.drop_duplicates("step")
        axes[-1].plot(lr["step"], lr["lr"], color=color, lw=1.0)
    for ax, role in zip(axes, roles):
        name = c.loc[c["val_role"] == role, "val_set"].iloc[0]
        ax.set_ylabel(f"{role} loss\n({name}, nats/byte)")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8, loc="upper right")
    axes[-1].set_ylabel("learning rate")
    axes[-1].set_xlabel("step (from the start of PT; dotted: transfer to CPT)")
    axes[-1].grid(alpha=0.3)
    fixed = ", ".join(f"{f}={ref[f]}" for f in FACTORS if f != vary)
    axes[0].set_title(f"CPT curves by {vary} ({fixed})", fontsize=9)
    fig.tight_layout()
    return fig


def plot_all(curves: pd.DataFrame, runs: pd.DataFrame) -> dict:
    """One figure per factor that varies around the reference run (:func:`reference`):
    ``{"by_<factor>": Figure}`` in the order of :data:`FACTORS`; nothing is written."""
    ref = reference(runs)
    figs = {}
    for vary in FACTORS:
        fig = plot_factor(curves, runs, vary, ref)
        if fig is not None:
            figs[f"by_{vary}"] = fig
    return figs


def plot_pt_runs(curves: pd.DataFrame, runs: pd.DataFrame) -> dict:
    """PT-only runs (rows of ``runs`` with a ``pt_steps``): ``{"pt_<size>": Figure}``, each the
    general validation loss (top) and the LR (bottom) against the step, one line per run,
    held-out schedules dashed; nothing is written."""
    figs = {}
    if "pt_steps" not in runs:
        return figs
    pt = runs[runs["pt_steps"].notna()]
    plt = pyplot()
    cmap = plt.get_cmap("tab10")
    for size, group in pt.groupby("size", sort=False):
        fig = plt.figure(figsize=(7.5, 6.0))
        ax, axlr = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3, 1.4]})
        for i, (_, r) in enumerate(group.iterrows()):
            c = curves[curves["run"] == r["run"]]
            g = c[(c["val_role"] == "general") & c["loss"].notna()]
            held = bool(r.get("heldout_schedule", False))
            ls = "--" if held else "-"
            label = f"{r['schedule']} ({int(r['pt_steps'])})" + (", held out" if held else "")
            ax.plot(g["step"], g["loss"], ls, color=cmap(i % 10), lw=1.1, label=label)
            lr = c.drop_duplicates("step")
            axlr.plot(lr["step"], lr["lr"], ls, color=cmap(i % 10), lw=1.0)
        low = curves.loc[
            curves["run"].isin(group["run"]) & (curves["val_role"] == "general"), "loss"
        ].min()
        ax.set_ylim(low - 0.05, low + 1.0)  # the informative part: the decays, not the start
        name = curves.loc[curves["val_role"] == "general", "val_set"].iloc[0]
        ax.set_ylabel(f"general loss ({name}, nats/byte)")
        ax.set_title(
            f"PT runs of size {size} ({int(group['model_size'].iloc[0]):,} non-embedding params)",
            fontsize=9,
        )
        ax.legend(fontsize=7, ncol=2, loc="upper right")
        ax.grid(alpha=0.3)
        axlr.set_ylabel("learning rate")
        axlr.set_xlabel("step")
        axlr.grid(alpha=0.3)
        fig.tight_layout()
        figs[f"pt_{size}"] = fig
    return figs
