"""Where a grid search will find its best run (``grid_best_draws``).

The optimum of :mod:`bayescpt.hparams.optimum` is that of the smooth bowl, but a grid search
reports its best *run*, which scatters around the optimum by about a grid step (the bowl is flat
near its bottom). Per draw: the new cell's optimum, its curvature scale h = exp(sd_ln_h z) (and,
with ``cell_shear``, its shear + sd_shear z'), the bowl evaluated at every (lr, batch) of the
grid, plus independent run noise sigma * t(nu) (the fitted run-to-run scatter at the optimum),
and the argmin. Only the at-optimum noise is used: the fitted noise also grows with the excess
loss, but that term describes the bowl's misfit far from the optimum, which is systematic; as
independent Student-t noise it would let ~5 % of the far runs fall below the optimum's loss.
"""

from __future__ import annotations

import numpy as np

from bayescpt.hparams.fit import HparamsFit
from bayescpt.hparams.laws import bowl
from bayescpt.hparams.optimum import draw_summary, law_draws, optimum_draws


def merge_close(values, rtol: float = 1e-3) -> np.ndarray:
    """``values`` with near-equal entries (relative difference < ``rtol``: the same grid value
    written with different precision, e.g. 0.00391 and 0.003906) replaced by the smallest one."""
    v = np.asarray(values, dtype=float)
    u = np.unique(v)
    rep = u.copy()
    for i in range(1, len(u)):
        if u[i] <= rep[i - 1] * (1 + rtol):
            rep[i] = rep[i - 1]
    return rep[np.searchsorted(u, v)]


def grid_points(lrs, batch_sizes) -> tuple[np.ndarray, np.ndarray]:
    """Every (lr, batch size) pair of a full grid: the Cartesian product, as two flat arrays."""
    lr, bs = np.meshgrid(
        np.asarray(lrs, dtype=float), np.asarray(batch_sizes, dtype=float), indexing="ij"
    )
    return lr.ravel(), bs.ravel()


def grid_best_draws(
    fit: HparamsFit,
    n_params: float,
    compute,
    lrs,
    batch_sizes,
    seed: int = 0,
    draws: dict | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(lr, batch size) of the best run a grid search over the runs (``lrs[i]``,
    ``batch_sizes[i]``) finds, per posterior draw, for N = ``n_params`` trained with ``compute``
    FLOPs (scalar or per draw). The optimum draws are those of :func:`optimum_draws` (same seed).
    """
    lrs = merge_close(np.ravel(lrs))
    batch_sizes = merge_close(np.ravel(batch_sizes))
    if lrs.shape != batch_sizes.shape or lrs.size == 0:
        raise ValueError("grid: give one batch size per learning rate (or use grid_points)")
    if not (
        np.all(lrs > 0)
        and np.all(batch_sizes > 0)
        and np.all(np.isfinite(lrs))
        and np.all(np.isfinite(batch_sizes))
    ):
        raise ValueError("grid: learning rates and batch sizes must be positive numbers")
    p = dict(draws or law_draws(fit))
    names = ("qx", "qy", "shear", "skew", "sd_ln_h") + (
        ("sd_shear",) if "sd_shear" in fit.idata.posterior else ()
    )
    missing = [v for v in names if v not in p]
    p.update(fit.draws(missing) if missing else {})
    lr_opt, bs_opt = optimum_draws(fit, n_params, compute, seed=seed, draws=p)
    S = len(lr_opt)
    rng = np.random.default_rng(seed + 2)
    h = np.exp(p["sd_ln_h"] * rng.standard_normal(S))[:, None]
    shear = p["shear"] + (p["sd_shear"] * rng.standard_normal(S) if "sd_shear" in p else 0.0)
    out_lr = np.full(S, np.nan)
    out_bs = np.full(S, np.nan)
    ok = np.isfinite(lr_opt) & np.isfinite(bs_opt)
    x, y = np.log(lrs)[None, :], np.log(batch_sizes)[None, :]
    with np.errstate(over="ignore", invalid="ignore"):
        mu = bowl(
            np,
            x,
            y,
            0.0,
            np.log(lr_opt[ok])[:, None],
            np.log(bs_opt[ok])[:, None],
            h[ok] * p["qx"][ok, None],
            h[ok] * p["qy"][ok, None],
            shear[ok, None],
            p["skew"][ok, None],
        )
    noise = p["sigma"][ok, None] * rng.standard_t(float(fit.config["nu"]), size=mu.shape)
    k = np.argmin(np.where(np.isfinite(mu), mu, np.inf) + noise, axis=1)
    out_lr[ok], out_bs[ok] = lrs[k], batch_sizes[k]
    return out_lr, out_bs


def grid_best_summary(
    lr_best, bs_best, lrs, batch_sizes, prob: float = 0.9, top: int = 5
) -> tuple[dict, list[str]]:
    """The ``grid_best`` block of a prediction and its warnings: lr and batch_size
    (mean/median/lower/upper over draws, the ends are grid values), the ``top`` most probable
    grid points with their probability of holding the best run, and how often the best run sits
    on the grid's edge."""
    lrs = merge_close(np.ravel(lrs))
    batch_sizes = merge_close(np.ravel(batch_sizes))
    ok = np.isfinite(lr_best)
    out = {
        "lr": draw_summary(lr_best[ok], prob),
        "batch_size": draw_summary(bs_best[ok], prob),
        "undefined_share": float(np.mean(~ok)),
    }
    pairs, counts = np.unique(
        np.column_stack([lr_best[ok], bs_best[ok]]), axis=0, return_counts=True
    )
    order = np.argsort(-counts, kind="stable")[:top]
    out["points"] = [
        {
            "lr": float(pairs[i, 0]),
            "batch_size": float(pairs[i, 1]),
            "prob": float(counts[i] / len(lr_best)),
        }
        for i in order
    ]
    edge_lr = np.isin(lr_best[ok], [lrs.min(), lrs.max()])
    edge_bs = np.isin(bs_best[ok], [batch_sizes.min(), batch_sizes.max()])
    out["edge_share"] = {"lr": float(np.mean(edge_lr)), "batch_size": float(np.mean(edge_bs))}
    warnings = []
    if out["undefined_share"] > (1 - prob) / 2:  # e.g. C_pre unidentified: no finite optimum
        for key in ("lr", "batch_size"):
            out[key] = {k: None for k in out[key]}
        warnings.append(
            f"grid best undefined in {out['undefined_share']:.0%} of draws (no "
            "finite optimum there, see the C_pre warning); its intervals are open"
        )
    for name, share in out["edge_share"].items():
        if share > (1 - prob) / 2 and len(np.unique(lrs if name == "lr" else batch_sizes)) > 2:
            warnings.append(
                f"grid edge: in {share:.0%} of draws the grid's best run has the grid's smallest "
                f"or largest {name.replace('_', ' ')}; the grid may not bracket the optimum "
                "(extend it on that side)"
            )
    return out, warnings
