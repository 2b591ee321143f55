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
optimum law: at C_total directly). Draws with L_true <= L0 have no finite C_pre: the checkpoint
is as good as the law's asymptote allows; when more than the interval's tail mass of draws are
like that, C_pre is *unidentified* and the result says so (``warnings``), with an open upper end.
"""

from __future__ import annotations

import math

import numpy as np

from .model import HparamsFit

#: a C_pre interval wider than this factor (upper / lower) is flagged as poorly identified
WIDE_FACTOR = 100.0


def _summary(values: np.ndarray, prob: float) -> dict:
    """mean, median, lower, upper of draws (equal-tailed ``prob`` interval); inf kept as None."""
    v = np.asarray(values, dtype=float)
    q = np.quantile(v, [(1 - prob) / 2, 0.5, (1 + prob) / 2], method="inverted_cdf")
    finite = np.isfinite(v)
    out = {"mean": float(v[finite].mean()) if finite.all() else None,
           "median": float(q[1]), "lower": float(q[0]), "upper": float(q[2])}
    return {k: (x if x is None or math.isfinite(x) else None) for k, x in out.items()}


def _law_draws(fit: HparamsFit) -> dict:
    names = ["a_lr", "bN_lr", "bD_lr", "a_bs", "bN_bs", "bD_bs", "tau_lr", "tau_bs", "L0", "A",
             "g", "tau_L", "sigma"]
    return fit.draws(names)


def c_pre_draws(fit: HparamsFit, init_loss: float, init_loss_sd: float | None = None,
                seed: int = 0, draws: dict | None = None) -> np.ndarray:
    """Equivalent pre-training compute (FLOPs) per posterior draw; inf where L_true <= L0."""
    p = draws or _law_draws(fit)
    rng = np.random.default_rng(seed)
    sd_meas = p["sigma"] if init_loss_sd is None else np.full_like(p["L0"], float(init_loss_sd))
    sd = np.sqrt(sd_meas ** 2 + p["tau_L"] ** 2)
    excess = init_loss - sd * rng.standard_normal(len(sd)) - p["L0"]
    with np.errstate(divide="ignore", invalid="ignore"):
        c = -np.log(excess / p["A"]) / p["g"]
    out = np.full(len(c), np.inf)
    ok = excess > 0
    with np.errstate(over="ignore"):
        out[ok] = np.exp(c[ok] + fit.refs.ln_c)
    return out


def optimum_draws(fit: HparamsFit, n_params: float, compute, seed: int = 0,
                  draws: dict | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(lr*, B* in tokens) per posterior draw for N = ``n_params`` trained with ``compute`` FLOPs
    (a scalar or one value per draw; inf allowed). Includes the cell-to-cell scatter."""
    p = draws or _law_draws(fit)
    rng = np.random.default_rng(seed + 1)
    ln_c = np.log(np.broadcast_to(np.asarray(compute, dtype=float), p["a_lr"].shape))
    n = math.log(n_params) - fit.refs.ln_n
    d = ln_c - math.log(6.0 * n_params) - fit.refs.ln_d
    z = rng.standard_normal((2, len(p["a_lr"])))
    with np.errstate(invalid="ignore"):
        x = p["a_lr"] + p["bN_lr"] * n + p["bD_lr"] * d + p["tau_lr"] * z[0]
        y = p["a_bs"] + p["bN_bs"] * n + p["bD_bs"] * d + p["tau_bs"] * z[1]
    return np.exp(x), np.exp(y)


def predict_optimum(fit: HparamsFit, n_params: float, tokens: float | None = None,
                    init_loss: float | None = None, cpt_tokens: float | None = None,
                    init_loss_sd: float | None = None, prob: float = 0.9, seed: int = 0) -> dict:
    """Optimal LR and batch size (tokens) with ``prob`` intervals, as a JSON-ready dict.

    Without ``init_loss``: a fresh run of ``n_params`` on ``tokens``. With it: continual
    pre-training for ``cpt_tokens`` from a checkpoint of that validation loss; ``tokens`` (the
    checkpoint's own pre-training tokens, optional) is then only reported for comparison.
    """
    if not (n_params > 0 and math.isfinite(n_params)):
        raise ValueError(f"n_params {n_params!r}; expected a positive parameter count")
    if not 0 < prob < 1:
        raise ValueError(f"prob {prob!r}; expected a probability between 0 and 1")
    for name, v in (("tokens", tokens), ("cpt_tokens", cpt_tokens)):
        if v is not None and not (v > 0 and math.isfinite(v)):
            raise ValueError(f"{name} {v!r}; expected a positive number of tokens")
    p = _law_draws(fit)
    out = {"n_params": float(n_params), "prob": prob, "optimum_law": fit.config["optimum_law"],
           "draws": int(len(p["a_lr"])), "warnings": []}
    if init_loss is None:
        if tokens is None:
            raise ValueError("give the run's tokens (--tokens), or a checkpoint's --init-loss "
                             "and --cpt-tokens")
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
        out.update(init_loss=float(init_loss), cpt_tokens=float(cpt_tokens),
                   C_pre=_summary(c_pre, prob), C_total=_summary(compute, prob),
                   equivalent_pretrain_tokens=_summary(c_pre / (6.0 * n_params), prob))
        if tokens is not None:
            out["tokens"] = float(tokens)
            out["nominal_C_pre"] = 6.0 * n_params * tokens
        unidentified = float(np.mean(~np.isfinite(c_pre)))
        out["C_pre"]["unidentified_share"] = unidentified
        L0 = p["L0"]
        if unidentified > (1 - prob) / 2:
            out["warnings"].append(
                f"C_pre unidentified: in {unidentified:.0%} of draws the loss {init_loss:g} is at "
                f"or below the law's asymptote L0 (posterior median {np.median(L0):.3f}, "
                f"{prob:.0%} interval {np.quantile(L0, (1 - prob) / 2):.3f}-"
                f"{np.quantile(L0, (1 + prob) / 2):.3f}) within its noise; the compute, and the "
                "optimum's upper or lower end, are open. Fit the law on a grid reaching lower "
                "losses, or treat the prediction as a bound")
        elif out["C_pre"]["upper"] / out["C_pre"]["lower"] > WIDE_FACTOR:
            out["warnings"].append(
                f"C_pre poorly identified: its {prob:.0%} interval spans a factor "
                f"{out['C_pre']['upper'] / out['C_pre']['lower']:.0f} (the loss is close to the "
                "law's asymptote L0 or far outside the fitted losses); the optimum's interval is "
                "correspondingly wide")
    finite_c = compute[np.isfinite(compute)] if np.ndim(compute) else np.array([compute])
    c_lo, c_hi = (6.0 * fit.cells["model_size"] * fit.cells["tokens"]).agg(["min", "max"])
    if finite_c.size and (np.median(finite_c) > 10 * c_hi or np.median(finite_c) < c_lo / 10):
        out["warnings"].append(
            f"extrapolating: compute {np.median(finite_c):.3g} FLOPs is more than 10x outside the "
            f"fitted cells ({c_lo:.3g}-{c_hi:.3g})")
    n_lo, n_hi = fit.cells["model_size"].min(), fit.cells["model_size"].max()
    if n_params > 4 * n_hi or n_params < n_lo / 4:
        out["warnings"].append(f"extrapolating: model size {n_params:.3g} is more than 4x outside "
                               f"the fitted sizes ({n_lo:.3g}-{n_hi:.3g})")
    lr, bs = optimum_draws(fit, n_params, compute, seed=seed, draws=p)
    out["lr_opt"] = _summary(lr, prob)
    out["batch_size_opt"] = _summary(bs, prob)
    return out
