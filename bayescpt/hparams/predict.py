"""Stage 2: optimal learning rate and batch size for a new run, as a JSON-ready prediction.

:func:`predict_optimum` answers a request (a fresh run of N parameters on D tokens, or continual
pre-training from a checkpoint of a given validation loss, optionally with the grid a search
will run) from the per-draw optima of :mod:`bayescpt.hparams.optimum` and the grid's best runs of
:mod:`bayescpt.hparams.grid_best`, with intervals and warnings. When more than the interval's
tail mass of draws have no finite C_pre (the checkpoint's loss at or below the law's asymptote),
C_pre is *unidentified* and the result says so (``warnings``), with an open upper end.
:func:`optimum_idata` exports a prediction's draws, :func:`law_text` prints the fitted laws.
"""

from __future__ import annotations

import math

import numpy as np

from bayescpt.hparams.fit import HparamsFit
from bayescpt.hparams.grid_best import grid_best_draws, grid_best_summary, grid_points
from bayescpt.hparams.optimum import c_pre_draws, draw_summary, law_draws, optimum_draws

#: a C_pre interval wider than this factor (upper / lower) is flagged as poorly identified
WIDE_FACTOR = 100.0


def predict_optimum(
    fit: HparamsFit,
    n_params: float,
    tokens: float | None = None,
    init_loss: float | None = None,
    cpt_tokens: float | None = None,
    init_loss_sd: float | None = None,
    prob: float = 0.9,
    seed: int = 0,
    grid: tuple | None = None,
    keep_draws: bool = False,
) -> dict:
    """Optimal LR and batch size (tokens) with ``prob`` intervals, as a JSON-ready dict.

    Without ``init_loss``: a fresh run of ``n_params`` on ``tokens``. With it: continual
    pre-training for ``cpt_tokens`` from a checkpoint of that validation loss; ``tokens`` (the
    checkpoint's own pre-training tokens, optional) is then only reported for comparison.
    With ``grid`` = (learning rates, batch sizes) (a full grid: every pair is a run), also where a
    grid search over them finds its best run (``grid_best``, see
    :func:`~bayescpt.hparams.grid_best.grid_best_draws`).
    ``keep_draws``: also return the draws under ``"_draws"`` (flat arrays over the posterior
    draws, not JSON: ``lr``, ``batch_size``, and ``C_pre``, ``C_total`` for a checkpoint,
    ``grid_best_lr``, ``grid_best_batch_size`` with a grid; for
    :func:`bayescpt.hparams.plot.plot_optimum` and :func:`optimum_idata`).
    """
    grid_lrs, grid_batch_sizes = (None, None) if grid is None else grid
    _check_request(n_params, prob, tokens, cpt_tokens, grid_lrs, grid_batch_sizes)
    p = law_draws(fit)
    out = {
        "n_params": float(n_params),
        "prob": prob,
        "optimum_law": fit.config["optimum_law"],
        "draws": int(len(p["a_lr"])),
        "warnings": [],
    }
    c_pre = None
    if init_loss is None:
        compute = _fresh_run(out, n_params, tokens, cpt_tokens)
    else:
        c_pre, compute = _from_checkpoint(
            fit, out, p, (n_params, tokens, cpt_tokens), (init_loss, init_loss_sd), seed
        )
    out["warnings"] += _extrapolation_warnings(fit, n_params, compute)
    lr, bs = optimum_draws(fit, n_params, compute, seed=seed, draws=p)
    out["lr_opt"] = draw_summary(lr, prob)
    out["batch_size_opt"] = draw_summary(bs, prob)
    if keep_draws:
        out["_draws"] = {"lr": lr, "batch_size": bs}
        if init_loss is not None:
            out["_draws"].update(C_pre=c_pre, C_total=compute)
    if grid_lrs is not None:
        _add_grid_best(
            fit, out, p, n_params, compute, (grid_lrs, grid_batch_sizes), seed, keep_draws
        )
    return out


def _fresh_run(out: dict, n_params: float, tokens, cpt_tokens) -> float:
    """The compute 6 N D of a fresh run of ``tokens`` (recorded in ``out``); refuses a request
    without tokens or with CPT tokens but no checkpoint loss."""
    if tokens is None:
        raise ValueError(
            "give the run's tokens (--tokens), or a checkpoint's --init-loss and --cpt-tokens"
        )
    if cpt_tokens is not None:
        raise ValueError("--cpt-tokens needs the checkpoint's --init-loss")
    compute = 6.0 * n_params * tokens
    out["tokens"] = float(tokens)
    out["compute"] = compute
    return compute


def _from_checkpoint(
    fit: HparamsFit, out: dict, p: dict, sizes: tuple, loss: tuple, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """(C_pre, C_total) per draw for continual pre-training from a checkpoint (``sizes``:
    n_params, its own pre-training tokens or None, the CPT tokens; ``loss``: its validation loss
    and that loss's sd or None); records their summaries and the C_pre warnings in ``out``."""
    n_params, tokens, cpt_tokens = sizes
    init_loss, init_loss_sd = loss
    prob = out["prob"]
    if not (init_loss > 0 and math.isfinite(init_loss)):
        raise ValueError(f"init_loss {init_loss!r}; expected a positive loss in nats")
    if cpt_tokens is None:
        raise ValueError("--init-loss needs the continual pre-training tokens (--cpt-tokens)")
    c_pre = c_pre_draws(fit, init_loss, init_loss_sd, seed=seed, draws=p)
    compute = c_pre + 6.0 * n_params * cpt_tokens
    out.update(
        init_loss=float(init_loss),
        cpt_tokens=float(cpt_tokens),
        C_pre=draw_summary(c_pre, prob),
        C_total=draw_summary(compute, prob),
        equivalent_pretrain_tokens=draw_summary(c_pre / (6.0 * n_params), prob),
    )
    if tokens is not None:
        out["tokens"] = float(tokens)
        out["nominal_C_pre"] = 6.0 * n_params * tokens
    out["warnings"] += _c_pre_warnings(fit, out, c_pre, p["L0"], init_loss)
    return c_pre, compute


def _add_grid_best(
    fit: HparamsFit, out: dict, p: dict, n_params, compute, grid: tuple, seed, keep_draws
) -> None:
    """``out["grid_best"]`` (and its draws, its warnings): where a grid search over the full
    grid ``grid`` = (learning rates, batch sizes) finds its best run."""
    grid_lrs, grid_batch_sizes = grid
    g_lr, g_bs = grid_points(
        sorted(set(map(float, grid_lrs))), sorted(set(map(float, grid_batch_sizes)))
    )
    b_lr, b_bs = grid_best_draws(fit, n_params, compute, g_lr, g_bs, seed=seed, draws=p)
    if keep_draws:
        out["_draws"].update(grid_best_lr=b_lr, grid_best_batch_size=b_bs)
    out["grid_best"], warn = grid_best_summary(b_lr, b_bs, g_lr, g_bs, out["prob"])
    out["grid_best"]["grid"] = {
        "lrs": sorted(set(map(float, grid_lrs))),
        "batch_sizes": sorted(set(map(float, grid_batch_sizes))),
    }
    out["warnings"] += warn


def _check_request(n_params, prob, tokens, cpt_tokens, grid_lrs, grid_batch_sizes) -> None:
    """Refuse a request :func:`predict_optimum` cannot answer: sizes, token counts and grid
    values not positive and finite, ``prob`` outside (0, 1), half a grid."""
    if not (n_params > 0 and math.isfinite(n_params)):
        raise ValueError(f"n_params {n_params!r}; expected a positive parameter count")
    if not 0 < prob < 1:
        raise ValueError(f"prob {prob!r}; expected a probability between 0 and 1")
    for name, v in (("tokens", tokens), ("cpt_tokens", cpt_tokens)):
        if v is not None and not (v > 0 and math.isfinite(v)):
            raise ValueError(f"{name} {v!r}; expected a positive number of tokens")
    if (grid_lrs is None) != (grid_batch_sizes is None):
        raise ValueError("a grid needs both its learning rates and its batch sizes")
    if grid_lrs is not None:
        for name, vals in (("grid learning rate", grid_lrs), ("grid batch size", grid_batch_sizes)):
            vals = np.asarray(vals, dtype=float)
            if vals.size == 0 or not np.all((vals > 0) & np.isfinite(vals)):
                raise ValueError(f"{name}s {list(np.ravel(vals))}; expected positive numbers")


def _c_pre_warnings(
    fit: HparamsFit, out: dict, c_pre: np.ndarray, L0: np.ndarray, init_loss: float
) -> list[str]:
    """How well the checkpoint's equivalent compute C_pre is identified: records its
    ``unidentified_share`` (draws with L_true <= L0) in ``out["C_pre"]`` and returns a warning
    when that share exceeds the interval's tail mass, or when its interval spans more than
    :data:`WIDE_FACTOR`."""
    prob = out["prob"]
    unidentified = float(np.mean(~np.isfinite(c_pre)))
    out["C_pre"]["unidentified_share"] = unidentified
    if unidentified > (1 - prob) / 2:
        return [
            f"C_pre unidentified: in {unidentified:.0%} of draws the loss {init_loss:g} is at "
            f"or below the law's asymptote L0 (posterior median {np.median(L0):.3f}, "
            f"{prob:.0%} interval {np.quantile(L0, (1 - prob) / 2):.3f}-"
            f"{np.quantile(L0, (1 + prob) / 2):.3f}) within its noise; the compute"
            + (
                " is open and those draws take the optimum at the asymptote L0 (a bound)"
                if fit.config["optimum_law"] == "loss"
                else ", and the optimum's upper or lower end, are open"
            )
            + ". Fit the law on a grid reaching lower losses, or treat the prediction as a "
            "bound"
        ]
    if out["C_pre"]["upper"] / out["C_pre"]["lower"] > WIDE_FACTOR:
        return [
            f"C_pre poorly identified: its {prob:.0%} interval spans a factor "
            f"{out['C_pre']['upper'] / out['C_pre']['lower']:.0f} (the loss is close to the "
            "law's asymptote L0 or far outside the fitted losses); the optimum's interval is "
            "correspondingly wide"
        ]
    return []


def _extrapolation_warnings(fit: HparamsFit, n_params: float, compute) -> list[str]:
    """A warning each when the (median finite) compute is over 10x, or the model size over 4x,
    outside the fitted cells'."""
    warnings = []
    finite_c = compute[np.isfinite(compute)] if np.ndim(compute) else np.array([compute])
    c_lo, c_hi = (6.0 * fit.cells["model_size"] * fit.cells["tokens"]).agg(["min", "max"])
    if finite_c.size and (np.median(finite_c) > 10 * c_hi or np.median(finite_c) < c_lo / 10):
        warnings.append(
            f"extrapolating: compute {np.median(finite_c):.3g} FLOPs is more than 10x outside the "
            f"fitted cells ({c_lo:.3g}-{c_hi:.3g})"
        )
    n_lo, n_hi = fit.cells["model_size"].min(), fit.cells["model_size"].max()
    if n_params > 4 * n_hi or n_params < n_lo / 4:
        warnings.append(
            f"extrapolating: model size {n_params:.3g} is more than 4x outside "
            f"the fitted sizes ({n_lo:.3g}-{n_hi:.3g})"
        )
    return warnings


def optimum_idata(fit: HparamsFit, res: dict):
    """ArviZ InferenceData of a :func:`predict_optimum` result made with ``keep_draws``: its
    draws in the ``predictions`` group, dims (chain, draw) as the fit's posterior (``lr_opt``,
    ``batch_size_opt`` in tokens; ``C_pre``, ``C_total`` in FLOPs, inf where undefined;
    ``grid_best_lr``, ``grid_best_batch_size``, NaN where undefined); the request's scalars
    (n_params, tokens, ...) as attrs."""
    import arviz as az
    import xarray as xr

    if "_draws" not in res:
        raise ValueError("the result holds no draws: predict_optimum(..., keep_draws=True)")
    post = fit.idata.posterior
    shape = (post.sizes["chain"], post.sizes["draw"])
    names = {"lr": "lr_opt", "batch_size": "batch_size_opt"}
    ds = xr.Dataset(
        {
            names.get(k, k): (("chain", "draw"), np.asarray(v, float).reshape(shape))
            for k, v in res["_draws"].items()
        },
        coords={"chain": post["chain"].values, "draw": post["draw"].values},
    )
    ds.attrs.update(
        {
            k: v
            for k, v in res.items()
            if isinstance(v, (int, float, str)) and not isinstance(v, bool)
        }
    )
    return az.InferenceData(predictions=ds)


def law_text(fit) -> str:
    """The fitted laws in the usual units: LR_opt and B_opt (tokens) as a power of the loss
    (``loss`` optimum law) or of N and D, with their coefficient at 1 (posterior mean) and the
    exponents' posterior means and central 90 % intervals; and L(C) = L0 + A (C / C_ref)^-g."""
    r = fit.refs

    def iv(v):
        lo, hi = np.quantile(v, [0.05, 0.95])
        return f"{v.mean():.3f} [{lo:.3f}, {hi:.3f}]"

    if fit.config["optimum_law"] == "loss":
        post = fit.draws(["a_lr", "bL_lr", "a_bs", "bL_bs", "L0", "A", "g"])
        # ln lr = a + bL (ln L - ln L_ref): coefficient at L = 1 nat
        c_lr = post["a_lr"] - post["bL_lr"] * r.ln_l
        c_bs = post["a_bs"] - post["bL_bs"] * r.ln_l
        return (
            f"LR_opt = {math.exp(np.mean(c_lr)):.3g} L^({iv(post['bL_lr'])})\n"
            f"B_opt  = {math.exp(np.mean(c_bs)):.3g} L^({iv(post['bL_bs'])})  (tokens; L = "
            "best loss in nats, at L(C) for a prediction)\n"
            f"L(C)   = L0 + A (C / {math.exp(r.ln_c):.3g})^-g: L0 {iv(post['L0'])}, "
            f"A {iv(post['A'])}, g {iv(post['g'])}"
        )
    post = fit.draws(["a_lr", "bN_lr", "bD_lr", "a_bs", "bN_bs", "bD_bs", "L0", "A", "g"])

    # ln lr = a + bN (ln N - ln N_ref) + bD (ln D - ln D_ref): intercept at N = D = 1
    c_lr = post["a_lr"] - post["bN_lr"] * r.ln_n - post["bD_lr"] * r.ln_d
    c_bs = post["a_bs"] - post["bN_bs"] * r.ln_n - post["bD_bs"] * r.ln_d
    return (
        f"LR_opt = {math.exp(np.mean(c_lr)):.3g} N^({iv(post['bN_lr'])}) "
        f"D^({iv(post['bD_lr'])})\n"
        f"B_opt  = {math.exp(np.mean(c_bs)):.3g} N^({iv(post['bN_bs'])}) "
        f"D^({iv(post['bD_bs'])})  (tokens)\n"
        f"L(C)   = L0 + A (C / {math.exp(r.ln_c):.3g})^-g: L0 {iv(post['L0'])}, "
        f"A {iv(post['A'])}, g {iv(post['g'])}"
    )
