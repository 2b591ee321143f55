"""One figure of a stage-1 fit: a cell's loss surface, the optima per cell, the fitted laws."""

from __future__ import annotations

import numpy as np
import pandas as pd

from bayescpt.core.plotting import pyplot
from bayescpt.hparams.fit import HparamsFit
from bayescpt.hparams.laws import bowl, law_location


def _cell_index(fit: HparamsFit, df: pd.DataFrame) -> np.ndarray:
    key = ["group", "model_size", "tokens"]
    return df.merge(fit.cells[key].reset_index(), on=key, how="left")["index"].to_numpy()


def plot_fit(
    fit: HparamsFit, df: pd.DataFrame, *, cell: int | None = None, prob: float = 0.9, fig=None
):
    """Four panels; ``cell`` picks the loss-surface cell (default: the one with the most runs at
    the median compute); ``fig`` a Figure to draw into (default: a new 12 x 9.5 in one). Returns
    the Figure; nothing is written."""

    plt = pyplot()

    ct = fit.cells.reset_index(drop=True)
    law = fit.config["optimum_law"]
    exps = ["bL_lr", "bL_bs"] if law == "loss" else ["bN_lr", "bD_lr", "bN_bs", "bD_bs"]
    names = [
        "x_opt",
        "y_opt",
        "m",
        "a_lr",
        "a_bs",
        "tau_lr",
        "tau_bs",
        "L0",
        "A",
        "g",
        "qx",
        "qy",
        "shear",
        "skew",
        "sd_ln_h",
        "z_ln_h",
    ] + exps
    p = fit.draws(names + (["sd_shear", "z_shear"] if "sd_shear" in fit.idata.posterior else []))
    comp = 6.0 * ct["model_size"].to_numpy() * ct["tokens"].to_numpy()
    if cell is None:
        order = np.argsort(np.abs(np.log(comp) - np.median(np.log(comp))))
        cell = int(order[0])

    if fig is None:
        fig = plt.figure(figsize=(12, 9.5))
    axes = fig.subplots(2, 2)
    _surface_panel(axes[0, 0], fit, df, p, cell, prob)
    # one colour per model size
    sizes = np.sort(ct["model_size"].unique())
    colours = plt.cm.plasma(np.linspace(0, 0.85, len(sizes)))
    _optimum_panels((axes[0, 1], axes[1, 0]), fit, p, colours, prob)
    _best_loss_panel(axes[1, 1], fit, p, colours, prob)
    fig.tight_layout()
    return fig


def _surface_panel(ax, fit: HparamsFit, df: pd.DataFrame, p: dict, cell: int, prob: float):
    """Cell ``cell``'s runs coloured by loss, the fitted bowl's excess-loss contours at the
    posterior medians, the posterior optimum with its ``prob`` intervals and the grid's best run.
    """
    from matplotlib.colors import Normalize

    fig = ax.figure
    ct = fit.cells.reset_index(drop=True)
    lo_q, hi_q = (1 - prob) / 2, (1 + prob) / 2
    idx = _cell_index(fit, df)
    sel = df[idx == cell]
    m_k = float(np.median(p["m"][:, cell]))
    norm = Normalize(m_k, m_k + 0.15)
    sc = ax.scatter(
        sel["lr"],
        sel["batch_size"],
        c=np.minimum(sel["loss"], m_k + 0.15),
        s=40,
        cmap="viridis_r",
        norm=norm,
        edgecolor="k",
        linewidth=0.3,
    )
    fig.colorbar(sc, ax=ax, label="observed loss (clipped at best + 0.15)")
    _bowl_contours(ax, sel, p, cell)
    xo, yo = np.exp(p["x_opt"][:, cell]), np.exp(p["y_opt"][:, cell])
    ax.errorbar(
        np.median(xo),
        np.median(yo),
        xerr=[[np.median(xo) - np.quantile(xo, lo_q)], [np.quantile(xo, hi_q) - np.median(xo)]],
        yerr=[[np.median(yo) - np.quantile(yo, lo_q)], [np.quantile(yo, hi_q) - np.median(yo)]],
        fmt="o",
        color="red",
        ms=5,
        capsize=3,
        label=f"posterior optimum ({prob:.0%})",
    )
    b = ct.iloc[cell]
    ax.plot(
        b["best_lr"],
        b["best_batch_size"],
        "*",
        color="orange",
        ms=14,
        mec="k",
        label="grid's best run",
    )
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="learning rate",
        ylabel="batch size (tokens)",
        title=f"N={b['model_size']:.3g}, D={b['tokens']:.3g}: runs, fitted excess loss",
    )
    ax.legend(fontsize=8, loc="lower left")


def _bowl_contours(ax, sel: pd.DataFrame, p: dict, cell: int) -> None:
    """The fitted bowl's excess-loss contours of cell ``cell`` at the posterior medians, over the
    range of its runs ``sel`` (plus a margin)."""
    xs = np.linspace(np.log(sel["lr"].min()) - 0.3, np.log(sel["lr"].max()) + 0.3, 160)
    ys = np.linspace(
        np.log(sel["batch_size"].min()) - 0.3, np.log(sel["batch_size"].max()) + 0.3, 160
    )
    X, Y = np.meshgrid(xs, ys)
    med = {k: np.median(v, axis=0) for k, v in p.items()}
    h = np.exp(med["sd_ln_h"] * med["z_ln_h"][cell])
    shear = med["shear"] + (med["sd_shear"] * med["z_shear"][cell] if "sd_shear" in med else 0.0)
    Z = bowl(
        np,
        X,
        Y,
        med["m"][cell],
        med["x_opt"][cell],
        med["y_opt"][cell],
        h * med["qx"],
        h * med["qy"],
        shear,
        med["skew"],
    )
    cs = ax.contour(
        np.exp(X),
        np.exp(Y),
        Z - med["m"][cell],
        levels=[0.005, 0.01, 0.02, 0.05, 0.1],
        colors="0.3",
        linewidths=0.8,
    )
    ax.clabel(cs, fmt="+%.3g", fontsize=7)


def _optimum_panels(axes, fit: HparamsFit, p: dict, colours, prob: float):
    """The optimal LR (first axes) and batch size (second) per cell vs D, one colour per model
    size, with the fitted law per size and its ``prob`` band (no cell scatter; loss law: at
    L(6 N D))."""
    ct = fit.cells.reset_index(drop=True)
    lo_q, hi_q = (1 - prob) / 2, (1 + prob) / 2
    law = fit.config["optimum_law"]
    sizes = np.sort(ct["model_size"].unique())
    dgrid = np.geomspace(ct["tokens"].min() / 1.5, ct["tokens"].max() * 1.5, 60)
    r = fit.refs
    for ax, var, which, best, label in (
        (axes[0], "x_opt", 0, "best_lr", "optimal learning rate"),
        (axes[1], "y_opt", 1, "best_batch_size", "optimal batch size (tokens)"),
    ):
        for size, col in zip(sizes, colours):
            k = np.flatnonzero(ct["model_size"].to_numpy() == size)
            v = np.exp(p[var][:, k])
            mid = np.median(v, axis=0)
            ax.errorbar(
                ct["tokens"].to_numpy()[k] * (1 + 0.02 * (size == sizes).argmax()),
                mid,
                yerr=[mid - np.quantile(v, lo_q, axis=0), np.quantile(v, hi_q, axis=0) - mid],
                fmt="o",
                color=col,
                capsize=3,
                ms=5,
                label=f"N={size:.3g}",
            )
            ax.plot(ct["tokens"].to_numpy()[k], ct[best].to_numpy()[k], "x", color=col, ms=7)
            # the law per N, no cell scatter (loss law: at L(6 N D))
            lnv = law_location(
                {k: v[:, None] for k, v in p.items() if v.ndim == 1},
                law,
                r,
                np.log(size) - r.ln_n,
                (np.log(6.0 * size * dgrid) - r.ln_c)[None, :],
            )[which]
            ax.plot(dgrid, np.exp(np.median(lnv, axis=0)), color=col, lw=1)
            ax.fill_between(
                dgrid,
                np.exp(np.quantile(lnv, lo_q, axis=0)),
                np.exp(np.quantile(lnv, hi_q, axis=0)),
                color=col,
                alpha=0.15,
            )
        ax.set(
            xscale="log",
            yscale="log",
            xlabel="training tokens D",
            ylabel=label,
            title=f"cells ({prob:.0%} interval, o), grid best (x), law per N"
            + (" at L(6ND)" if law == "loss" else ""),
        )
        ax.legend(fontsize=8)


def _best_loss_panel(ax, fit: HparamsFit, p: dict, colours, prob: float):
    """Each cell's best loss m_k vs compute C = 6 N D with the fitted L(C) = L0 + A C^-g and its
    ``prob`` band, the grid's best runs marked."""
    ct = fit.cells.reset_index(drop=True)
    lo_q, hi_q = (1 - prob) / 2, (1 + prob) / 2
    sizes = np.sort(ct["model_size"].unique())
    comp = 6.0 * ct["model_size"].to_numpy() * ct["tokens"].to_numpy()
    cgrid = np.geomspace(comp.min() / 2, comp.max() * 2, 80)
    cc = np.log(cgrid) - fit.refs.ln_c
    L = p["L0"][:, None] + p["A"][:, None] * np.exp(-p["g"][:, None] * cc[None, :])
    ax.plot(cgrid, np.median(L, axis=0), color="k", lw=1, label="L(C) = L0 + A C^-g")
    ax.fill_between(
        cgrid, np.quantile(L, lo_q, axis=0), np.quantile(L, hi_q, axis=0), color="k", alpha=0.15
    )
    mm = p["m"]
    mid = np.median(mm, axis=0)
    for size, col in zip(sizes, colours):
        k = np.flatnonzero(ct["model_size"].to_numpy() == size)
        ax.errorbar(
            comp[k],
            mid[k],
            yerr=[
                mid[k] - np.quantile(mm[:, k], lo_q, axis=0),
                np.quantile(mm[:, k], hi_q, axis=0) - mid[k],
            ],
            fmt="o",
            color=col,
            ms=5,
            capsize=3,
            label=f"N={size:.3g}",
        )
        ax.plot(comp[k], ct["best_loss"].to_numpy()[k], "x", color=col, ms=7)
    ax.set(
        xscale="log",
        xlabel="compute C = 6 N D (FLOPs)",
        ylabel="best loss (nats)",
        title=f"best loss per cell (o), grid best (x); L0 median {np.median(p['L0']):.2f}",
    )
    ax.legend(fontsize=8)


def plot_optimum(res: dict, *, title: str = "", ax=None):
    """The predicted optimum of one run (``predict_optimum(..., keep_draws=True)``): its posterior
    draws in (LR, batch) with the median and the central interval of each, and, when a grid was
    given, each grid point sized by its probability of holding the grid search's best run.
    ``ax``: the Axes to draw on (default: a new 6.4 x 4.8 in figure). Returns the Figure; nothing
    is written."""

    plt = pyplot()
    d = res["_draws"]
    ok = np.isfinite(d["lr"]) & np.isfinite(d["batch_size"])
    own = ax is None
    if own:
        fig, ax = plt.subplots(figsize=(6.4, 4.8))
    fig = ax.figure
    ax.scatter(
        d["lr"][ok],
        d["batch_size"][ok],
        s=3,
        alpha=0.15,
        color="C0",
        label="optimum, posterior draws",
    )
    lr, bs = res["lr_opt"], res["batch_size_opt"]
    prob = res["prob"]
    if lr["median"] is not None and bs["median"] is not None:
        ax.plot(lr["median"], bs["median"], "o", color="C3", ms=7, label="median")
        if None not in (lr["lower"], lr["upper"], bs["lower"], bs["upper"]):
            ax.add_patch(
                plt.Rectangle(
                    (lr["lower"], bs["lower"]),
                    lr["upper"] - lr["lower"],
                    bs["upper"] - bs["lower"],
                    fill=False,
                    color="C3",
                    lw=1.2,
                    label=f"{prob:.0%} interval of each",
                )
            )
    gb = res.get("grid_best")
    if gb:
        g_lr, g_bs = np.meshgrid(gb["grid"]["lrs"], gb["grid"]["batch_sizes"])
        ax.plot(g_lr.ravel(), g_bs.ravel(), "+", color="0.6", ms=6, label="grid runs")
        for pt in gb["points"]:
            ax.scatter(
                pt["lr"],
                pt["batch_size"],
                s=600 * pt["prob"],
                facecolor="none",
                edgecolor="C2",
                lw=1.5,
            )
            ax.annotate(
                f"{pt['prob']:.2f}",
                (pt["lr"], pt["batch_size"]),
                fontsize=7,
                xytext=(4, 4),
                textcoords="offset points",
                color="C2",
            )
        ax.scatter(
            [], [], s=80, facecolor="none", edgecolor="C2", label="P(grid point holds the best run)"
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("peak learning rate")
    ax.set_ylabel("batch size (tokens)")
    what = (
        f"CPT from loss {res['init_loss']:g}, {res['cpt_tokens']:.3g} tokens"
        if "init_loss" in res
        else f"fresh run, {res['tokens']:.3g} tokens"
    )
    ax.set_title(title or f"optimal LR and batch: N = {res['n_params']:.3g}, {what}", fontsize=10)
    ax.legend(fontsize=7, loc="best")
    ax.grid(alpha=0.3, which="both")
    if own:
        fig.tight_layout()
    return fig
