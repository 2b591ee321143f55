"""Pictures of predictions (matplotlib). The core library never imports this module."""

from __future__ import annotations

import numpy as np
import pandas as pd

from bayescpt.core.plotting import pyplot


def plot_plans(
    table: pd.DataFrame,
    *,
    tolerance: float | None = None,
    risk: float | None = None,
    prob: float = 0.9,
    ax=None,
):
    """CPT plans: expected final domain loss (with its interval) against P(general rise <=
    tolerance); the chance constraint as a shaded region, the Pareto front joined, the chosen plan
    marked. ``table`` is the output of :func:`bayescpt.cpt.plan.decide.decide`; ``ax`` the Axes
    to draw on (default: a new 7.5 x 5 in figure). Returns the Figure; nothing is written."""
    plt = pyplot()

    own = ax is None
    if own:
        fig, ax = plt.subplots(figsize=(7.5, 5))
    fig = ax.figure
    x = table["p_within_tolerance"].to_numpy()
    y = table["domain_mean"].to_numpy()
    err = np.vstack([y - table["domain_lower"], table["domain_upper"] - y])
    ax.errorbar(
        x,
        y,
        yerr=err,
        fmt="o",
        ms=3,
        color="0.55",
        ecolor="0.8",
        lw=0.8,
        label=f"plan: expected domain loss, {prob:.0%} interval",
    )
    front = table[table["pareto"]].sort_values("p_within_tolerance")
    ax.plot(
        front["p_within_tolerance"],
        front["domain_mean"],
        "-o",
        ms=4,
        color="C0",
        label="Pareto front",
    )
    if risk is not None:
        ax.axvspan(
            1 - risk,
            1.0,
            color="C2",
            alpha=0.12,
            label=f"feasible: P(rise <= eps) >= {1 - risk:.2f}",
        )
    chosen = table[table["chosen"]]
    if len(chosen):
        c = chosen.iloc[0]
        ax.plot(
            c["p_within_tolerance"],
            c["domain_mean"],
            "*",
            ms=16,
            color="C3",
            label=f"chosen: {c['shape']}, peak {c['peak_lr']:.2g}, {int(c['steps'])} steps, "
            f"from {int(c['transfer'])}"
            + (f", replay {c['replay_ratio']:g}" if c["replay_ratio"] > 0 else ""),
        )
    eps = f" (eps = {tolerance:g})" if tolerance is not None else ""
    ax.set_xlabel(f"P(final general loss - loss at the checkpoint <= eps){eps}")
    ax.set_ylabel("final domain loss")
    ax.set_xlim(-0.03, 1.03)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7.5, loc="best")
    ax.set_title(f"{len(table)} CPT plans: domain gain vs risk of forgetting", fontsize=10)
    if own:
        fig.tight_layout()
    return fig
