"""Figures of lab curves: general and domain validation loss and the LR against the step, for
runs that differ in one factor (CPT schedule, transfer step, replay ratio, model size, length)
with the others fixed at the grid's reference values."""

from __future__ import annotations

import pandas as pd

from bayescpt.core.plotting import pyplot

plt = pyplot()   # Agg unless a backend was chosen (a notebook's inline one)

FACTORS = ("schedule", "transfer", "replay_ratio", "size", "cpt_steps")


def reference(runs: pd.DataFrame) -> dict:
    """The most frequent value of each factor (replay 0 when present): the grid's centre."""
    ref = {f: runs[f].mode().iloc[0] for f in FACTORS}
    if (runs["replay_ratio"] == 0).any():
        ref["replay_ratio"] = 0.0
    return ref


def plot_factor(curves: pd.DataFrame, runs: pd.DataFrame, vary: str, ref: dict, roles=None,
                fig=None):
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
    if fig is None:
        fig = plt.figure(figsize=(7.5, 2.3 * (len(roles) + 1)))
    axes = fig.subplots(len(roles) + 1, 1, sharex=True,
                        gridspec_kw={"height_ratios": [3] * len(roles) + [1.4]})
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
