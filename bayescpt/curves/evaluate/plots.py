"""Pictures of predictions (matplotlib). The core library never imports this module."""

from __future__ import annotations

import numpy as np
import pandas as pd

from bayescpt.core.plotting import pyplot


def _curve_key(frame: pd.DataFrame) -> tuple[bool, pd.Series]:
    """(several validation sets?, each row's panel label: run, or "run | val_set" when there
    are several)."""
    several = "val_set" in frame.columns and frame["val_set"].nunique() > 1
    return several, (frame["run"] + " | " + frame["val_set"].astype(str)) if several else frame[
        "run"
    ]


def _panel_grid(plt, n: int, ncols: int, fig=None):
    """``fig`` (a new one, 4.2 x 3.2 in per panel, when None) with a grid of ``n`` panels in
    ``ncols`` columns: (fig, axes as a 2-D array)."""
    nrows = int(np.ceil(n / ncols))
    if fig is None:
        fig = plt.figure(figsize=(4.2 * ncols, 3.2 * nrows))
    return fig, fig.subplots(nrows, ncols, squeeze=False)


def _curve_panels(plt, frame: pd.DataFrame, key: pd.Series, runs: list, ncols: int, fig=None):
    """A panel per curve label of ``runs`` (each row's label: ``key``): (fig, axes, a list of
    (panel, label, the curve's rows of ``frame`` in step order))."""
    fig, axes = _panel_grid(plt, len(runs), ncols, fig)
    return (
        fig,
        axes,
        [(ax, run, frame[key == run].sort_values("step")) for ax, run in zip(axes.flat, runs)],
    )


def _bands(ax, g: pd.DataFrame, color: str, bands: list, centre: tuple) -> np.ndarray:
    """Draw a curve's ``bands`` (each (lower column, upper column, alpha, label)) and its
    ``centre`` line (column, line width, label) from its rows ``g`` in ``color``; returns the
    steps (x)."""
    x = g["step"].to_numpy()
    for lower, upper, alpha, label in bands:
        ax.fill_between(x, g[lower], g[upper], color=color, alpha=alpha, label=label)
    column, lw, label = centre
    ax.plot(x, g[column], color=color, lw=lw, label=label)
    return x


def plot_predictions(
    pred: pd.DataFrame,
    *,
    title: str = "",
    prob: float = 0.9,
    observed: pd.DataFrame | None = None,
    ncols: int = 3,
    fig=None,
):
    """One panel per run (per run and validation set when there are several): observed loss,
    posterior-mean curve, curve band and predictive band.

    ``pred`` is the output of :func:`bayescpt.curves.forecast.predict.predict_frame`; ``observed``
    (optional) the training rows to draw in another colour; ``fig`` a Figure to draw into
    (default: a new one, 4.2 x 3.2 in per panel). Returns the Figure; nothing is written (the
    caller saves it).
    """
    plt = pyplot()
    from matplotlib.ticker import FuncFormatter

    pred = pred[pred["mean"].notna()]
    several, key = _curve_key(pred)
    runs = list(dict.fromkeys(key))
    fig, axes, panels = _curve_panels(plt, pred, key, runs, ncols, fig)
    for ax, run, g in panels:
        _bands(
            ax,
            g,
            "C0",
            [
                ("lower", "upper", 0.18, f"{prob:.0%} predictive interval"),
                ("curve_lower", "curve_upper", 0.35, f"{prob:.0%} credible band (curve)"),
            ],
            ("mean", 1.2, "posterior mean"),
        )
        if "loss" in g and g["loss"].notna().any():
            h = g[g["loss"].notna()]
            inside = (h["loss"] >= h["lower"]) & (h["loss"] <= h["upper"])
            ax.plot(
                h["step"],
                h["loss"],
                ".",
                ms=2.5,
                color="k",
                label=f"held-out loss ({inside.mean():.0%} inside)",
            )
        if observed is not None:
            okey = (
                (observed["run"] + " | " + observed["val_set"].astype(str))
                if several
                else observed["run"]
            )
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
    for ax in list(axes.flat)[len(runs) :]:
        ax.axis("off")
    if title:
        fig.suptitle(title, fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.97 if title else 1))
    return fig


def plot_forest(table: pd.DataFrame, *, prob: float = 0.9, fig=None):
    """Forest plot: one panel per parameter (log axis for positive ones), one row per group, one
    interval per fit. ``table`` is :func:`bayescpt.curves.evaluate.compare.parameter_table`;
    ``fig`` a Figure to draw into (default: a new one). Returns the Figure; nothing is
    written."""
    plt = pyplot()

    params = list(dict.fromkeys(table["param"]))
    fits = list(dict.fromkeys(table["fit"]))
    ncols = min(4, len(params))
    nrows = int(np.ceil(len(params) / ncols))
    n_groups = table.groupby("param")["group"].nunique().max()
    if fig is None:
        fig = plt.figure(figsize=(3.6 * ncols, 0.9 + 0.45 * n_groups * len(fits) * nrows))
    axes = fig.subplots(nrows, ncols, squeeze=False)
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
                ax.plot(r["mean"], y, "o", color=f"C{j}", ms=4, label=None if labelled else f)
                labelled = True
        ax.set_yticks(range(len(groups)), groups, fontsize=8)
        ax.invert_yaxis()
        if (t["lower"] > 0).all() and t["upper"].max() / t["lower"].min() > 20:
            ax.set_xscale("log")  # only for ranges over decades: short log axes label badly
        ax.set_title(p, fontsize=10)
        ax.grid(alpha=0.3, axis="x")
    for ax in list(axes.flat)[len(params) :]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=7, loc="best")
    fig.suptitle(f"posterior means and central {prob:.0%} intervals per fit", fontsize=10)
    fig.tight_layout()
    return fig


def plot_cv(table: pd.DataFrame, *, prob: float = 0.9, fig=None):
    """Cross-validation scores per held-out group: mean (dot) and worst (bar top) relative error,
    coverage of the ``prob`` interval against the nominal level, and the interval's relative
    width, one colour per model size. ``table`` is :class:`bayescpt.parallel.cv.CVResult`'s
    ``table`` (columns group, model_size, mean_rel_err, worst_rel_err, coverage, rel_width).
    Returns the Figure; nothing is written."""
    plt = pyplot()

    groups = list(dict.fromkeys(table["group"]))
    sizes = list(dict.fromkeys(table["model_size"]))
    if fig is None:
        fig = plt.figure(figsize=(max(6.0, 0.9 * len(groups) + 2.5), 7.5))
    axes = fig.subplots(3, 1, sharex=True)
    width = 0.8 / max(len(sizes), 1)
    for j, size in enumerate(sizes):
        t = table[table["model_size"] == size].set_index("group").reindex(groups)
        x = np.arange(len(groups)) + (j - (len(sizes) - 1) / 2) * width
        label = None if size == "-" else size
        axes[0].bar(x, 100 * t["worst_rel_err"], width, color=f"C{j}", alpha=0.35)
        axes[0].plot(x, 100 * t["mean_rel_err"], "o", color=f"C{j}", ms=5, label=label)
        axes[1].bar(x, 100 * t["coverage"], width, color=f"C{j}", alpha=0.8, label=label)
        axes[2].bar(x, 100 * t["rel_width"], width, color=f"C{j}", alpha=0.8, label=label)
    axes[0].set_ylabel("relative error, %\n(dot: mean, bar: worst)")
    axes[1].axhline(100 * prob, color="k", lw=1, ls="--", label=f"nominal {prob:.0%}")
    axes[1].set_ylim(0, 105)
    axes[1].set_ylabel(f"{prob:.0%} interval\ncoverage, %")
    axes[2].set_ylabel("interval width,\n% of the loss")
    axes[2].set_xticks(range(len(groups)), groups, rotation=30, ha="right", fontsize=8)
    axes[2].set_xlabel("held-out group")
    for ax in axes:
        ax.grid(alpha=0.3, axis="y")
    if any(s != "-" for s in sizes):
        axes[0].legend(fontsize=7, title="model size", title_fontsize=7)
    axes[1].legend(fontsize=7, loc="lower right")
    fig.suptitle("cross-validated predictions of held-out groups", fontsize=10)
    fig.tight_layout()
    return fig


def plot_prior_check(
    band: pd.DataFrame,
    *,
    prob: float = 0.9,
    title: str = "",
    ncols: int = 3,
    max_panels: int = 24,
    fig=None,
):
    """The data's curves over their prior predictive bands, one panel per run (per run and
    validation set when there are several), log loss axis: the ``prob`` and 50 % bands and the
    median of the prior predictive loss, the observed losses as dots. ``band`` is
    :func:`bayescpt.curves.model.priors.prior_band`; at most ``max_panels`` curves are drawn (the
    first ones). ``fig`` a Figure to draw into (default: a new one). Returns the Figure."""
    plt = pyplot()
    from matplotlib.ticker import FuncFormatter

    _, key = _curve_key(band)
    runs = list(dict.fromkeys(key))
    shown = runs[:max_panels]
    fig, axes, panels = _curve_panels(plt, band, key, shown, max(1, min(ncols, len(shown))), fig)
    for ax, run, g in panels:
        x = _bands(
            ax,
            g,
            "C2",
            [
                ("lower", "upper", 0.2, f"{prob:.0%} prior predictive"),
                ("lower50", "upper50", 0.4, "50% prior predictive"),
            ],
            ("median", 1.0, "prior predictive median"),
        )
        ax.plot(
            x, g["loss"], ".", ms=2.5, color="k", label=f"data ({g['inside'].mean():.0%} inside)"
        )
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.tick_params(axis="y", which="minor", labelsize=7)
        ax.set_title(run, fontsize=9)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v / 1000:g}k"))
        ax.set_xlabel("optimizer step")
        ax.set_ylabel("validation loss (log axis)")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=6.5, loc="upper right")
    for ax in list(axes.flat)[len(shown) :]:
        ax.axis("off")
    if len(runs) > len(shown):
        title = f"{title} (first {len(shown)} of {len(runs)} curves)".strip()
    if title:
        fig.suptitle(title, fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.97 if title else 1))
    return fig
