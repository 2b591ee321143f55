"""Stage 2, per posterior draw: a new run's optimal learning rate and batch size under the
fitted laws, and a checkpoint's equivalent pre-training compute.

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
C_pre: the checkpoint is as good as the law's asymptote allows (:mod:`bayescpt.hparams.predict`
says so when too many draws are like that).
"""

from __future__ import annotations

import math

import numpy as np

from bayescpt.hparams.fit import HparamsFit
from bayescpt.hparams.laws import best_loss, law_location


def draw_summary(values: np.ndarray, prob: float) -> dict:
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


def law_draws(fit: HparamsFit) -> dict:
    """The posterior draws the optimum laws need (flat arrays by name)."""
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
    p = draws or law_draws(fit)
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
    p = draws or law_draws(fit)
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
