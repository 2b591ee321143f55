"""Stage 2: optimal learning rate and batch size for a new run, per posterior draw.

Fresh run (N parameters, D tokens): per draw s, ln lr* = a_lr + bN_lr n + bD_lr d + tau_lr z
(z ~ N(0, 1): a new cell strays from the law as the fitted cells do), and likewise ln B*.

Continual pre-training from a checkpoint (Zhou et al.'s state-aware prediction): the checkpoint's
validation loss L_init on the target data places it on the fitted loss-compute law,

    C_pre = L^-1(L_init) = C_ref ((L_true - L0) / A)^(-1/g),   L_true = L_init - e,
    e ~ Normal(0, sqrt(sd_meas^2 + tau_L^2))

(sd_meas: the loss's measurement noise, by default the fitted run noise at the optimum; tau_L: how
far a cell's best loss strays from L(C)). Then C_total = C_pre + 6 N D_cpt, and the optimum is
the law's at N parameters and the equivalent token count C_total / (6 N) (for the ``compute``
optimum law: at C_total directly; for the ``loss`` law, Zhou et al.'s form: at the loss level
L(C_total) = L0 + A (C_total / C_ref)^-g plus a new cell's scatter tau_L, i.e. L0 + noise where
C_pre is infinite; a fresh run likewise at L(6 N D)). Draws with L_true <= L0 have no finite
C_pre: the checkpoint is as good as the law's asymptote allows; when more than the interval's
tail mass of draws are like that, C_pre is *unidentified* and the result says so
(``warnings``), with an open upper end.

Where a grid search will find its best run (``grid_best_draws``): the optimum above is that of
the smooth bowl, but a grid search reports its best *run*, which scatters around the optimum by
about a grid step (the bowl is flat near its bottom). Per draw: the new cell's optimum as above,
its curvature scale h = exp(sd_ln_h z) (and, with ``cell_shear``, its shear + sd_shear z'), the
bowl evaluated at every (lr, batch) of the grid, plus independent run noise sigma * t(nu) (the fitted run-to-run scatter at the optimum), and the
argmin. Only the at-optimum noise is used: the fitted noise also grows with the excess loss, but
that term describes the bowl's misfit far from the optimum, which is systematic; as independent
Student-t noise it would let ~5 % of the far runs fall below the optimum's loss.
"""

from __future__ import annotations

import math

import numpy as np

from bayescpt.hparams.fit import HparamsFit
from bayescpt.hparams.model import best_loss, bowl, law_location

#: a C_pre interval wider than this factor (upper / lower) is flagged as poorly identified
WIDE_FACTOR = 100.0


def _summary(values: np.ndarray, prob: float) -> dict:
    """mean, median, lower, upper of draws (equal-tailed ``prob`` interval); inf kept as None."""
    v = np.asarray(values, dtype=float)
    q = np.quantile(v, [(1 - prob) / 2, 0.5, (1 + prob) / 2], method="inverted_cdf")
    finite = np.isfinite(v)
    out = {
        "mean": float(v[finite].mean()) if finite.all() else None,
        "median": float(q[1]),
        "lower": float(q[0]),
        "upper": float(q[2]),
    }
    return {k: (x if x is None or math.isfinite(x) else None) for k, x in out.items()}


def _law_draws(fit: HparamsFit) -> dict:
    exps = (
        ["bL_lr", "bL_bs"]
        if fit.config["optimum_law"] == "loss"
        else ["bN_lr", "bD_lr", "bN_bs", "bD_bs"]
    )
    names = ["a_lr", "a_bs", "tau_lr", "tau_bs", "L0", "A", "g", "tau_L", "sigma"] + exps
    return fit.draws(names)


def c_pre_draws(
    fit: HparamsFit,
    init_loss: float,
    init_loss_sd: float | None = None,
    seed: int = 0,
    draws: dict | None = None,
) -> np.ndarray:
    """Equivalent pre-training compute (FLOPs) per posterior draw; inf where L_true <= L0."""
    p = draws or _law_draws(fit)
    rng = np.random.default_rng(seed)
    sd_meas = p["sigma"] if init_loss_sd is None else np.full_like(p["L0"], float(init_loss_sd))
    sd = np.sqrt(sd_meas**2 + p["tau_L"] ** 2)
    excess = init_loss - sd * rng.standard_normal(len(sd)) - p["L0"]
    with np.errstate(divide="ignore", invalid="ignore"):
        c = -np.log(excess / p["A"]) / p["g"]
    out = np.full(len(c), np.inf)
    ok = excess > 0
    with np.errstate(over="ignore"):
        out[ok] = np.exp(c[ok] + fit.refs.ln_c)
    return out


def optimum_draws(
    fit: HparamsFit, n_params: float, compute, seed: int = 0, draws: dict | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(lr*, B* in tokens) per posterior draw for N = ``n_params`` trained with ``compute`` FLOPs
    (a scalar or one value per draw; inf allowed). Includes the cell-to-cell scatter."""
    p = draws or _law_draws(fit)
    rng = np.random.default_rng(seed + 1)
    ln_c = np.log(np.broadcast_to(np.asarray(compute, dtype=float), p["a_lr"].shape))
    n = math.log(n_params) - fit.refs.ln_n
    c = ln_c - fit.refs.ln_c
    z = rng.standard_normal((2, len(p["a_lr"])))
    loss = None
    if fit.config["optimum_law"] == "loss":
        # the new cell's best loss: L(C) plus the cells' scatter tau_L around it (its own draw)
        with np.errstate(over="ignore"):
            loss = best_loss(np, p["L0"], p["A"], p["g"], c) + p["tau_L"] * np.random.default_rng(
                seed + 3
            ).standard_normal(len(c))
    x, y = law_location(p, fit.config["optimum_law"], fit.refs, n, c, loss)
    with np.errstate(invalid="ignore"):
        x = x + p["tau_lr"] * z[0]
        y = y + p["tau_bs"] * z[1]
    return np.exp(x), np.exp(y)


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
    p = dict(draws or _law_draws(fit))
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
        "lr": _summary(lr_best[ok], prob),
        "batch_size": _summary(bs_best[ok], prob),
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
    grid search over them finds its best run (``grid_best``, see :func:`grid_best_draws`).
    ``keep_draws``: also return the draws under ``"_draws"`` (flat arrays over the posterior
    draws, not JSON: ``lr``, ``batch_size``, and ``C_pre``, ``C_total`` for a checkpoint,
    ``grid_best_lr``, ``grid_best_batch_size`` with a grid; for
    :func:`bayescpt.hparams.plot.plot_optimum` and :func:`optimum_idata`).
    """
    grid_lrs, grid_batch_sizes = (None, None) if grid is None else grid
    _check_request(n_params, prob, tokens, cpt_tokens, grid_lrs, grid_batch_sizes)
    p = _law_draws(fit)
    out = {
        "n_params": float(n_params),
        "prob": prob,
        "optimum_law": fit.config["optimum_law"],
        "draws": int(len(p["a_lr"])),
        "warnings": [],
    }
    c_pre = None
    if init_loss is None:
        if tokens is None:
            raise ValueError(
                "give the run's tokens (--tokens), or a checkpoint's --init-loss and --cpt-tokens"
            )
        if cpt_tokens is not None:
            raise ValueError("--cpt-tokens needs the checkpoint's --init-loss")
        compute = 6.0 * n_params * tokens
        out["tokens"] = float(tokens)
        out["compute"] = compute
    else:
        if not (init_loss > 0 and math.isfinite(init_loss)):
            raise ValueError(f"init_loss {init_loss!r}; expected a positive loss in nats")
        if cpt_tokens is None:
            raise ValueError("--init-loss needs the continual pre-training tokens (--cpt-tokens)")
        c_pre = c_pre_draws(fit, init_loss, init_loss_sd, seed=seed, draws=p)
        compute = c_pre + 6.0 * n_params * cpt_tokens
        out.update(
            init_loss=float(init_loss),
            cpt_tokens=float(cpt_tokens),
            C_pre=_summary(c_pre, prob),
            C_total=_summary(compute, prob),
            equivalent_pretrain_tokens=_summary(c_pre / (6.0 * n_params), prob),
        )
        if tokens is not None:
            out["tokens"] = float(tokens)
            out["nominal_C_pre"] = 6.0 * n_params * tokens
        out["warnings"] += _c_pre_warnings(fit, out, c_pre, p["L0"], init_loss)
    out["warnings"] += _extrapolation_warnings(fit, n_params, compute)
    lr, bs = optimum_draws(fit, n_params, compute, seed=seed, draws=p)
    out["lr_opt"] = _summary(lr, prob)
    out["batch_size_opt"] = _summary(bs, prob)
    if keep_draws:
        out["_draws"] = {"lr": lr, "batch_size": bs}
        if init_loss is not None:
            out["_draws"].update(C_pre=c_pre, C_total=compute)
    if grid_lrs is not None:
        g_lr, g_bs = grid_points(
            sorted(set(map(float, grid_lrs))), sorted(set(map(float, grid_batch_sizes)))
        )
        b_lr, b_bs = grid_best_draws(fit, n_params, compute, g_lr, g_bs, seed=seed, draws=p)
        if keep_draws:
            out["_draws"].update(grid_best_lr=b_lr, grid_best_batch_size=b_bs)
        out["grid_best"], warn = grid_best_summary(b_lr, b_bs, g_lr, g_bs, prob)
        out["grid_best"]["grid"] = {
            "lrs": sorted(set(map(float, grid_lrs))),
            "batch_sizes": sorted(set(map(float, grid_batch_sizes))),
        }
        out["warnings"] += warn
    return out


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
