"""Pictures of mixture decisions (matplotlib; imported only when a plot is asked for)."""

from __future__ import annotations

import numpy as np

from bayescpt.core.plotting import pyplot
from bayescpt.mixture.decide import pick_group
from bayescpt.mixture.fit import MixtureFit


def _observed(fit: MixtureFit, gi: int, tokens: float):
    """Fitted rows of group ``gi`` at ``tokens`` (the final budget's rows when fitted
    final-only)."""
    pts = fit.points
    if pts is None:
        return None
    g = fit.groups.loc[gi]
    sel = pts[
        (pts["model_size"] == g["model_size"])
        & (pts["val_set"] == g["val_set"])
        & (np.isclose(pts["tokens"], tokens))
    ]
    return sel


def plot_cmr(
    fit: MixtureFit, results: list[dict], *, prob: float = 0.9, risk: float = 0.1, fig=None
):
    """One row per model size: general loss vs ratio (band, baseline, tolerance), domain loss vs
    ratio (band, baseline), P(feasible) vs ratio with the CMR's interval, and R_CMR(T) when the
    results hold ``cmr_vs_tokens``. ``results`` are :func:`bayescpt.mixture.decide.cmr_report`
    dicts; ``fig`` a Figure to draw into (default: a new one, 4.3 x 3.4 in per panel). Returns
    the Figure; nothing is written."""

    plt = pyplot()

    budget = any("cmr_vs_tokens" in r for r in results)
    ncols = 4 if budget else 3
    if fig is None:
        fig = plt.figure(figsize=(4.3 * ncols, 3.4 * len(results)))
    axes = fig.subplots(len(results), ncols, squeeze=False)
    q = [(1 - prob) / 2, (1 + prob) / 2]
    for row, r in zip(axes, results):
        for ax, role in zip(row[:2], ("general", "domain")):
            _loss_panel(ax, fit, r, role, q, prob)
        _feasibility_panel(row[2], r, prob, risk)
        if budget:
            _budget_panel(row[3], r, prob, risk)
    fig.tight_layout()
    return fig


def _loss_panel(ax, fit: MixtureFit, r: dict, role: str, q: list, prob: float) -> None:
    """One size's ``role`` loss vs ratio at the result's budget: the law's ``q`` band and median,
    the observed rows, the pre-CPT baseline, and for the general loss the tolerance limit and the
    CMR's interval (axis off when the fit has no group of that role)."""
    size, T = r["model_size"], r["tokens"]
    R = np.asarray(r["p_feasible"]["ratio"])
    c = r["cmr"]
    gi = pick_group(fit, size, role, r["general_val_set"] if role == "general" else None)
    if gi is None:
        ax.axis("off")
        return
    mu = fit.mean_draws(gi, R, T)
    lo, hi = np.nanquantile(mu, q, axis=0)
    ax.fill_between(R, lo, hi, color="C0", alpha=0.3, label=f"{prob:.0%} band of the law")
    ax.plot(R, np.nanmedian(mu, 0), color="C0", lw=1.2, label="posterior median")
    obs = _observed(fit, gi, T)
    if obs is not None and len(obs):
        ax.plot(obs["ratio"], obs["loss"], "o", ms=4, color="k", label="observed")
    base = r["baseline"].get(role)
    if base is not None:
        ax.axhline(base, color="C2", lw=1, ls="--", label="pre-CPT loss")
    if role == "general":
        ax.axhline(r["general_limit"], color="C3", lw=1, ls=":", label="tolerance limit")
        ax.axvspan(c["lower"], c["upper"], color="C3", alpha=0.12, label=f"CMR {prob:.0%} interval")
    ax.axvspan(fit.r_lo, fit.r_hi, color="0.5", alpha=0.08, label="fitted ratios")
    finite = np.isfinite(lo) & np.isfinite(hi)
    inside = finite & (R >= fit.r_lo - 0.1) & (R <= min(1.0, fit.r_hi + 0.1))
    if inside.any():
        ys = np.concatenate([lo[inside], hi[inside]] + ([[base]] if base else []))
        pad = 0.1 * (ys.max() - ys.min() + 1e-9)
        ax.set_ylim(ys.min() - pad, ys.max() + pad)
    ax.set_xlim(R[0], R[-1])
    vs = fit.groups.loc[gi, "val_set"]
    ax.set_title(f"{size / 1e6:g}M: {role} loss ({vs}) at T={T:g}", fontsize=9)
    ax.set_xlabel("domain ratio R")
    ax.set_ylabel("loss (nats)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=6.5)


def _feasibility_panel(ax, r: dict, prob: float, risk: float) -> None:
    """P(feasible) vs ratio with the CMR's interval, median and the CMR at ``risk``."""
    size, T = r["model_size"], r["tokens"]
    R = np.asarray(r["p_feasible"]["ratio"])
    c = r["cmr"]
    ax.plot(R, r["p_feasible"]["p"], color="C0", lw=1.5, label="P(feasible)")
    ax.axvspan(c["lower"], c["upper"], color="C3", alpha=0.15, label=f"CMR {prob:.0%} interval")
    ax.axvline(c["median"], color="C3", lw=1.2, label=f"CMR median {c['median']:.3f}")
    ax.axhline(1 - risk, color="0.4", lw=0.8, ls=":")
    ax.axvline(
        r["cmr_at_risk"],
        color="k",
        lw=1,
        ls="--",
        label=f"CMR at risk {risk:g}: {r['cmr_at_risk']:.3f}",
    )
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlim(R[0], R[-1])
    ax.set_xlabel("domain ratio R")
    ax.set_ylabel("P(feasible)")
    ax.set_title(f"{size / 1e6:g}M: feasibility at T={T:g}", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=6.5)


def _budget_panel(ax, r: dict, prob: float, risk: float) -> None:
    """R_CMR(T) over the result's ``cmr_vs_tokens`` budgets (axis off when it has none)."""
    if "cmr_vs_tokens" not in r:
        ax.axis("off")
        return
    tab = r["cmr_vs_tokens"]
    Ts = np.array([x["tokens"] for x in tab])
    ax.fill_between(
        Ts,
        [x["lower"] for x in tab],
        [x["upper"] for x in tab],
        color="C1",
        alpha=0.3,
        label=f"{prob:.0%} interval",
    )
    ax.plot(Ts, [x["median"] for x in tab], "o-", color="C1", ms=3, label="median")
    ax.plot(Ts, [x["cmr_at_risk"] for x in tab], "--", color="k", lw=1, label=f"at risk {risk:g}")
    ax.set_xlabel("CPT budget T")
    ax.set_ylabel("CMR")
    ax.set_title(f"{r['model_size'] / 1e6:g}M: R_CMR(T)", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=6.5)


def plot_loss_vs_ratio(
    fit: MixtureFit,
    model_size,
    val_set: str,
    tokens: float,
    *,
    prob: float = 0.9,
    held_out=None,
    ax=None,
    title: str = "",
):
    """Loss vs ratio at ``tokens`` with the law's band and predictive interval; ``held_out``
    rows (ratio, loss) are drawn in red. ``ax``: the Axes to draw on; returns it, or, when None,
    the new 4.5 x 3.4 in Figure drawn. Nothing is written."""

    plt = pyplot()

    gi = fit.group_index(model_size, val_set)
    R = np.linspace(
        min(fit.r_lo, *(held_out["ratio"] if held_out is not None else [1])) * 0.9, fit.r_hi, 100
    )
    mu = fit.mean_draws(gi, R, tokens)
    yp = fit.predictive_draws(gi, R, tokens)
    q = [(1 - prob) / 2, (1 + prob) / 2]
    own = ax is None
    if own:
        fig, ax = plt.subplots(figsize=(4.5, 3.4))
    ax.fill_between(
        R, *np.quantile(yp, q, 0), color="C0", alpha=0.15, label=f"{prob:.0%} predictive"
    )
    ax.fill_between(R, *np.quantile(mu, q, 0), color="C0", alpha=0.35, label=f"{prob:.0%} band")
    ax.plot(R, np.median(mu, 0), color="C0", lw=1.2, label="median")
    obs = _observed(fit, gi, tokens)
    if obs is not None and len(obs):
        ax.plot(obs["ratio"], obs["loss"], "o", color="k", ms=4, label="fitted")
    if held_out is not None:
        ax.plot(held_out["ratio"], held_out["loss"], "s", color="C3", ms=5, label="held out")
    ax.set_xlabel("domain ratio R")
    ax.set_ylabel("loss (nats)")
    ax.set_title(title or f"{val_set} {model_size / 1e6:g}M", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=6.5)
    if own:
        fig.tight_layout()
        return fig
    return ax
