"""Pictures of predictions (matplotlib). The core library never imports this module."""

from __future__ import annotations

import os
import sys

import numpy as np


def pyplot():
    """pyplot, on the file-only Agg backend unless a backend was chosen (a notebook's inline
    backend, MPLBACKEND, or pyplot already in use): forcing Agg there would hide the figures."""
    import matplotlib

    if "matplotlib.pyplot" not in sys.modules and not os.environ.get("MPLBACKEND"):
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _labelled_draws(post, var_names) -> dict:
    """Every scalar entry of ``var_names`` under the label ``az.summary`` gives it
    (``'A[prose|25M]'``) -> its (chain, draw) values."""
    from arviz.labels import BaseLabeller
    from arviz.sel_utils import xarray_var_iter

    lab = BaseLabeller()
    return {
        lab.make_label_flat(name, sel, isel): np.asarray(values)
        for name, sel, isel, values in xarray_var_iter(
            post, var_names=var_names, combined=False, skip_dims={"chain", "draw"}
        )
    }


def plot_diagnostics(idata, diag, *, n_rank: int = 4, title: str = "", fig=None):
    """Sampler health on one page: rank plots, energy, and the most correlated pair.

    * left: per-chain rank histograms (ArviZ ``plot_rank``) of the ``n_rank`` parameters with the
      highest R-hat / lowest bulk ESS in ``diag`` (a
      :class:`~bayescpt.core.diagnostics.Diagnostics`): uniform bars mean the chains agree;
    * top right: the energy plot (marginal vs transition energy; BFMI per chain);
    * bottom right: the pair of sampled parameters with the strongest posterior correlation,
      divergent draws in red: ridges like the exponents' show up here.
    ``fig``: a matplotlib Figure to draw into (default: a new one, 12 in wide). Returns the
    Figure; nothing is written (the caller saves it).
    """
    import arviz as az

    plt = pyplot()
    table = diag.judged
    bases = list(dict.fromkeys(table.index.str.split("[").str[0]))
    draws = _labelled_draws(idata.posterior, bases)
    score = table["r_hat"].rank(ascending=False) + table["ess_bulk"].rank()
    worst = list(score.sort_values().index[:n_rank])
    if fig is None:
        fig = plt.figure(figsize=(12, 2.2 * max(n_rank, 3)))
    grid = fig.add_gridspec(max(n_rank, 3), 2, width_ratios=(1.2, 1))
    for i, name in enumerate(worst):
        ax = fig.add_subplot(grid[i, 0])
        x = draws[name]
        az.plot_rank({"x": x}, ax=ax, kind="bars")
        row = table.loc[name]
        ax.set_title(
            f"{name}: R-hat {row['r_hat']:.3f}, bulk ESS {row['ess_bulk']:.0f}", fontsize=9
        )
        ax.set_xlabel("rank of draw (all chains)" if i == len(worst) - 1 else "")
        ax.set_ylabel("chain")
    half = max(n_rank, 3) // 2
    ax = fig.add_subplot(grid[:half, 1])
    if "sample_stats" in idata and "energy" in idata.sample_stats:
        az.plot_energy(idata, ax=ax)
        bfmi = az.bfmi(idata)
        ax.set_title(
            f"energy: BFMI per chain {', '.join(f'{b:.2f}' for b in bfmi)} (< 0.3: poor)",
            fontsize=9,
        )
    else:
        ax.text(0.5, 0.5, "no energy in sample_stats", ha="center", transform=ax.transAxes)
    ax = fig.add_subplot(grid[half:, 1])
    names = [n for n in table.index if n in draws and np.std(draws[n]) > 0][:60]
    flat = np.array([draws[n].ravel() for n in names])
    corr = np.corrcoef(flat) if len(names) > 1 else np.zeros((1, 1))
    np.fill_diagonal(corr, 0)
    i, j = np.unravel_index(np.nanargmax(np.abs(corr)), corr.shape)
    div = (
        np.asarray(idata.sample_stats["diverging"].values).ravel().astype(bool)
        if "sample_stats" in idata and "diverging" in idata.sample_stats
        else np.zeros(flat.shape[1], bool)
    )
    ax.scatter(flat[i][~div], flat[j][~div], s=3, alpha=0.3, color="C0", label="draws")
    if div.any():
        ax.scatter(flat[i][div], flat[j][div], s=12, color="red", label="divergent")
    ax.set_xlabel(names[i])
    ax.set_ylabel(names[j])
    ax.set_title(f"most correlated pair: r = {corr[i, j]:+.2f}", fontsize=9)
    ax.legend(fontsize=8, loc="best")
    fig.suptitle(
        title
        or f"sampler diagnostics ({diag.chains} chains x {diag.draws} draws, "
        f"{diag.divergences} divergences)"
    )
    fig.tight_layout()
    return fig


def plot_ranks(
    ranks, labels, ranks_max: int, bins: int = 10, p_values=None, ncols: int = 4, fig=None
):
    """Simulation-based-calibration rank histograms, one panel per quantity.

    ``ranks``: a table with one column of ranks (0..``ranks_max``) per label; ``bins`` equal
    bins; the grey band is the central 99 % range of a bin's count under uniform ranks
    (binomial), the line its expectation; ``p_values`` (label -> p) go into the titles. Returns
    the Figure; nothing is written."""
    from scipy import stats

    plt = pyplot()
    n = len(ranks)
    nrows = int(np.ceil(len(labels) / ncols))
    if fig is None:
        fig = plt.figure(figsize=(3.0 * ncols, 2.3 * nrows))
    axes = fig.subplots(nrows, ncols, squeeze=False)
    edges = np.linspace(0, ranks_max + 1, bins + 1)
    share = np.diff(edges) / (ranks_max + 1)
    lo, hi = stats.binom.ppf(0.005, n, share[0]), stats.binom.ppf(0.995, n, share[0])
    for ax, label in zip(axes.flat, labels):
        ax.axhspan(lo, hi, color="0.85", zorder=0)
        ax.axhline(n * share[0], color="0.4", lw=1)
        ax.hist(np.asarray(ranks[label]), bins=edges, color="C0", edgecolor="white")
        title = label if p_values is None else f"{label}  (p = {p_values[label]:.2g})"
        ax.set_title(title, fontsize=8)
        ax.set_xlim(0, ranks_max + 1)
        ax.tick_params(labelsize=7)
    for ax in list(axes.flat)[len(labels) :]:
        ax.axis("off")
    fig.suptitle(f"SBC rank histograms ({n} simulations, ranks 0-{ranks_max})", fontsize=10)
    fig.tight_layout()
    return fig
