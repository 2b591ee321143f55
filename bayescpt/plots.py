"""Pictures of predictions (matplotlib). The core library never imports this module."""

from __future__ import annotations

import os
import sys

import numpy as np
import pandas as pd


def _pyplot():
    """pyplot, on the file-only Agg backend unless a backend was chosen (a notebook's inline
    backend, MPLBACKEND, or pyplot already in use): forcing Agg there would hide the figures."""
    import matplotlib

    if "matplotlib.pyplot" not in sys.modules and not os.environ.get("MPLBACKEND"):
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_predictions(pred: pd.DataFrame, path=None, title: str = "", prob: float = 0.9,
                     observed: pd.DataFrame | None = None, ncols: int = 3):
    """One panel per run (per run and validation set when there are several): observed loss,
    posterior-mean curve, curve band and predictive band.

    ``pred`` is the output of :func:`bayescpt.predict.predict_frame`; ``observed`` (optional) the
    training rows to draw in another colour. Returns the matplotlib Figure (saved to ``path``).
    """
    plt = _pyplot()
    from matplotlib.ticker import FuncFormatter

    pred = pred[pred["mean"].notna()]
    several = "val_set" in pred.columns and pred["val_set"].nunique() > 1
    key = (pred["run"] + " | " + pred["val_set"].astype(str)) if several else pred["run"]
    runs = list(dict.fromkeys(key))
    nrows = int(np.ceil(len(runs) / ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.2 * ncols, 3.2 * nrows), squeeze=False)
    for ax, run in zip(axes.flat, runs):
        g = pred[key == run].sort_values("step")
        x = g["step"].to_numpy()
        ax.fill_between(x, g["lower"], g["upper"], color="C0", alpha=0.18,
                        label=f"{prob:.0%} predictive interval")
        ax.fill_between(x, g["curve_lower"], g["curve_upper"], color="C0", alpha=0.35,
                        label=f"{prob:.0%} credible band (curve)")
        ax.plot(x, g["mean"], color="C0", lw=1.2, label="posterior mean")
        if "loss" in g and g["loss"].notna().any():
            h = g[g["loss"].notna()]
            inside = (h["loss"] >= h["lower"]) & (h["loss"] <= h["upper"])
            ax.plot(h["step"], h["loss"], ".", ms=2.5, color="k",
                    label=f"held-out loss ({inside.mean():.0%} inside)")
        if observed is not None:
            okey = (observed["run"] + " | " + observed["val_set"].astype(str)) if several \
                else observed["run"]
            o = observed[(okey == run) & observed["loss"].notna()]
            if len(o):
                ax.plot(o["step"], o["loss"], ".", ms=2.5, color="C3", label="training loss")
        lo = np.nanpercentile(g["lower"], 1)
        hi = np.nanpercentile(g["upper"], 90)
        ax.set_ylim(lo - 0.02 * (hi - lo), hi + 0.1 * (hi - lo))
        ax.set_title(run, fontsize=9)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v / 1000:g}k"))
        ax.set_xlabel("optimizer step")
        ax.set_ylabel("validation loss")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6.5, loc="upper right")
    for ax in list(axes.flat)[len(runs):]:
        ax.axis("off")
    if title:
        fig.suptitle(title, fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.97 if title else 1))
    if path is not None:
        fig.savefig(path, dpi=110)
    return fig


def plot_plans(table: pd.DataFrame, path=None, tolerance: float | None = None,
               risk: float | None = None, prob: float = 0.9):
    """CPT plans: expected final domain loss (with its interval) against P(general rise <=
    tolerance); the chance constraint as a shaded region, the Pareto front joined, the chosen plan
    marked. ``table`` is the output of :func:`bayescpt.plan.decide`."""
    plt = _pyplot()

    fig, ax = plt.subplots(figsize=(7.5, 5))
    x = table["p_within_tolerance"].to_numpy()
    y = table["domain_mean"].to_numpy()
    err = np.vstack([y - table["domain_lower"], table["domain_upper"] - y])
    ax.errorbar(x, y, yerr=err, fmt="o", ms=3, color="0.55", ecolor="0.8", lw=0.8,
                label=f"plan: expected domain loss, {prob:.0%} interval")
    front = table[table["pareto"]].sort_values("p_within_tolerance")
    ax.plot(front["p_within_tolerance"], front["domain_mean"], "-o", ms=4, color="C0",
            label="Pareto front")
    if risk is not None:
        ax.axvspan(1 - risk, 1.0, color="C2", alpha=0.12,
                   label=f"feasible: P(rise <= eps) >= {1 - risk:.2f}")
    chosen = table[table["chosen"]]
    if len(chosen):
        c = chosen.iloc[0]
        ax.plot(c["p_within_tolerance"], c["domain_mean"], "*", ms=16, color="C3",
                label=f"chosen: {c['shape']}, peak {c['peak_lr']:.2g}, {int(c['steps'])} steps, "
                      f"from {int(c['transfer'])}" + (f", replay {c['replay_ratio']:g}"
                                                      if c["replay_ratio"] > 0 else ""))
    eps = f" (eps = {tolerance:g})" if tolerance is not None else ""
    ax.set_xlabel(f"P(final general loss - loss at the checkpoint <= eps){eps}")
    ax.set_ylabel("final domain loss")
    ax.set_xlim(-0.03, 1.03)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7.5, loc="best")
    ax.set_title(f"{len(table)} CPT plans: domain gain vs risk of forgetting", fontsize=10)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=110)
    return fig


def plot_forest(table: pd.DataFrame, path=None, prob: float = 0.9):
    """Forest plot: one panel per parameter (log axis for positive ones), one row per group, one
    interval per fit. ``table`` is :func:`bayescpt.compare.parameter_table`."""
    plt = _pyplot()

    params = list(dict.fromkeys(table["param"]))
    fits = list(dict.fromkeys(table["fit"]))
    ncols = min(4, len(params))
    nrows = int(np.ceil(len(params) / ncols))
    n_groups = table.groupby("param")["group"].nunique().max()
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.6 * ncols, 0.9 + 0.45 * n_groups *
                                                    len(fits) * nrows), squeeze=False)
    for ax, p in zip(axes.flat, params):
        t = table[table["param"] == p]
        groups = list(dict.fromkeys(t["group"]))
        for j, f in enumerate(fits):
            labelled = False
            for i, g in enumerate(groups):
                r = t[(t["fit"] == f) & (t["group"] == g)]
                if not len(r):
                    continue
                r = r.iloc[0]
                y = i + (j - (len(fits) - 1) / 2) * 0.8 / max(len(fits), 1)
                ax.plot([r["lower"], r["upper"]], [y, y], color=f"C{j}", lw=2)
                ax.plot(r["mean"], y, "o", color=f"C{j}", ms=4,
                        label=None if labelled else f)
                labelled = True
        ax.set_yticks(range(len(groups)), groups, fontsize=8)
        ax.invert_yaxis()
        if (t["lower"] > 0).all() and t["upper"].max() / t["lower"].min() > 20:
            ax.set_xscale("log")   # only for ranges over decades: short log axes label badly
        ax.set_title(p, fontsize=10)
        ax.grid(alpha=0.3, axis="x")
    for ax in list(axes.flat)[len(params):]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=7, loc="best")
    fig.suptitle(f"posterior means and central {prob:.0%} intervals per fit", fontsize=10)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=110)
    return fig


def _labelled_draws(post, var_names) -> dict:
    """Every scalar entry of ``var_names`` under the label ``az.summary`` gives it
    (``'A[prose|25M]'``) -> its (chain, draw) values."""
    from arviz.labels import BaseLabeller
    from arviz.sel_utils import xarray_var_iter

    lab = BaseLabeller()
    return {lab.make_label_flat(name, sel, isel): np.asarray(values)
            for name, sel, isel, values in xarray_var_iter(post, var_names=var_names,
                                                           combined=False, skip_dims={"chain",
                                                                                      "draw"})}


def plot_diagnostics(idata, diag, path=None, n_rank: int = 4, title: str = ""):
    """Sampler health on one page: rank plots, energy, and the most correlated pair.

    * left: per-chain rank histograms (ArviZ ``plot_rank``) of the ``n_rank`` parameters with the
      highest R-hat / lowest bulk ESS in ``diag`` (a :class:`~bayescpt.diagnostics.Diagnostics`):
      uniform bars mean the chains agree;
    * top right: the energy plot (marginal vs transition energy; BFMI per chain);
    * bottom right: the pair of sampled parameters with the strongest posterior correlation,
      divergent draws in red: ridges like the exponents' show up here.
    Returns the Figure (saved to ``path``).
    """
    import arviz as az

    plt = _pyplot()
    table = diag.judged
    bases = list(dict.fromkeys(table.index.str.split("[").str[0]))
    draws = _labelled_draws(idata.posterior, bases)
    score = table["r_hat"].rank(ascending=False) + table["ess_bulk"].rank()
    worst = list(score.sort_values().index[:n_rank])
    fig = plt.figure(figsize=(12, 2.2 * max(n_rank, 3)))
    grid = fig.add_gridspec(max(n_rank, 3), 2, width_ratios=(1.2, 1))
    for i, name in enumerate(worst):
        ax = fig.add_subplot(grid[i, 0])
        x = draws[name]
        az.plot_rank({"x": x}, ax=ax, kind="bars")
        row = table.loc[name]
        ax.set_title(f"{name}: R-hat {row['r_hat']:.3f}, bulk ESS {row['ess_bulk']:.0f}",
                     fontsize=9)
        ax.set_xlabel("rank of draw (all chains)" if i == len(worst) - 1 else "")
        ax.set_ylabel("chain")
    half = max(n_rank, 3) // 2
    ax = fig.add_subplot(grid[:half, 1])
    if "sample_stats" in idata and "energy" in idata.sample_stats:
        az.plot_energy(idata, ax=ax)
        bfmi = az.bfmi(idata)
        ax.set_title(f"energy: BFMI per chain {', '.join(f'{b:.2f}' for b in bfmi)} "
                     "(< 0.3: poor)", fontsize=9)
    else:
        ax.text(0.5, 0.5, "no energy in sample_stats", ha="center", transform=ax.transAxes)
    ax = fig.add_subplot(grid[half:, 1])
    names = [n for n in table.index if n in draws and np.std(draws[n]) > 0][:60]
    flat = np.array([draws[n].ravel() for n in names])
    corr = np.corrcoef(flat) if len(names) > 1 else np.zeros((1, 1))
    np.fill_diagonal(corr, 0)
    i, j = np.unravel_index(np.nanargmax(np.abs(corr)), corr.shape)
    div = (np.asarray(idata.sample_stats["diverging"].values).ravel().astype(bool)
           if "sample_stats" in idata and "diverging" in idata.sample_stats else
           np.zeros(flat.shape[1], bool))
    ax.scatter(flat[i][~div], flat[j][~div], s=3, alpha=0.3, color="C0", label="draws")
    if div.any():
        ax.scatter(flat[i][div], flat[j][div], s=12, color="red", label="divergent")
    ax.set_xlabel(names[i])
    ax.set_ylabel(names[j])
    ax.set_title(f"most correlated pair: r = {corr[i, j]:+.2f}", fontsize=9)
    ax.legend(fontsize=8, loc="best")
    fig.suptitle(title or f"sampler diagnostics ({diag.chains} chains x {diag.draws} draws, "
                 f"{diag.divergences} divergences)")
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=110)
        plt.close(fig)
    return fig
