"""The hparams model's laws, written once over an array namespace ``xp`` (``pytensor.tensor`` in
the model, ``numpy`` in prediction and plots), and the centring constants they are taken at.

:func:`optimum_mean` (ln lr* or ln B* as a power law in N and D), :func:`best_loss` (the depth
law L(C) = L0 + A (C / C_ref)^-g), :func:`law_location` (the fitted optimum law per draw),
:func:`bowl` (the LINEX-quadratic loss surface of a cell) and :func:`noise_sd` (the run noise's
scale); see :mod:`bayescpt.hparams.model` for the model they make up and why it has this shape.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass
class Refs:
    """Centring constants (natural logs): N_ref, D_ref over the cells, C_ref = 6 N_ref D_ref."""

    ln_n: float
    ln_d: float
    ln_l: float | None = None  # mean ln best loss over the cells (the loss law's centre)

    @property
    def ln_c(self) -> float:
        return float(np.log(6.0) + self.ln_n + self.ln_d)

    @classmethod
    def of(cls, cell_table: pd.DataFrame) -> Refs:
        return cls(
            float(np.log(cell_table["model_size"]).mean()),
            float(np.log(cell_table["tokens"]).mean()),
            float(np.log(cell_table["best_loss"]).mean()) if "best_loss" in cell_table else None,
        )


def optimum_mean(a, bN, bD, n, d):
    """ln of the optimum (lr or batch tokens) at centred ln N = n, ln D = d."""
    return a + bN * n + bD * d


def best_loss(xp, L0, A, g, c):
    """L(C) = L0 + A (C / C_ref)^-g at centred ln compute c."""
    return L0 + A * xp.exp(-g * c)


def law_location(p: dict, law: str, refs: Refs, n, c, loss=None):
    """ln lr*, ln B* (tokens) of the fitted optimum law, no cell scatter, per draw (numpy).

    ``p``: posterior draws (arrays of length S); ``n``: centred ln N (scalar); ``c``: centred
    ln C = ln(6 N D) - ln C_ref (scalar or per draw; +inf allowed). For the loss law the
    optimum is taken at the loss level ``loss`` (per draw) or, if None, at L(C) (L0 where
    C is infinite).
    """
    if law == "loss":
        if loss is None:
            with np.errstate(over="ignore"):
                loss = best_loss(np, p["L0"], p["A"], p["g"], c)
        with np.errstate(invalid="ignore", divide="ignore"):
            ln_l = np.log(loss) - refs.ln_l
        return p["a_lr"] + p["bL_lr"] * ln_l, p["a_bs"] + p["bL_bs"] * ln_l
    d = c - n
    with np.errstate(invalid="ignore"):
        return (
            optimum_mean(p["a_lr"], p["bN_lr"], p["bD_lr"], n, d),
            optimum_mean(p["a_bs"], p["bN_bs"], p["bD_bs"], n, d),
        )


def bowl(xp, x, y, m, x_opt, y_opt, qx, qy, shear, skew):
    """Mean loss of runs at ln lr = x, ln batch = y in a cell with the given bowl parameters.

    Along w = (x - x_opt) + shear (y - y_opt) the excess is LINEX, q_x 2(e^{s w} - 1 - s w)/s^2:
    quadratic near the optimum, exponential above it (towards divergence), linear below it;
    along the batch size it is quadratic. Minimum m exactly at (x_opt, y_opt).
    """
    v = y - y_opt
    w = x - x_opt + shear * v
    sw = skew * w
    return m + qx * 2.0 * (xp.exp(sw) - 1.0 - sw) / (skew * skew) + qy * v * v


def noise_sd(xp, sigma, sigma_slope, excess, form="quadrature"):
    """Scale of a run's Student-t noise at bowl excess ``excess`` (nats above the optimum).

    ``quadrature``: sqrt(sigma^2 + (sigma_slope excess)^2), so sigma is the run-to-run scatter at
    the optimum and the slope term takes over only where the excess is well above sigma/slope.
    ``linear``: sigma + sigma_slope excess (the first form): there the slope term already
    dominates at 2-3 milli-nats of excess, so sigma came out at 0.6 milli-nats on Step Law while
    the runs within 3 milli-nats of the optimum scatter with a t-scale of ~1.3.
    """
    if form == "linear":
        return sigma + sigma_slope * excess
    return xp.sqrt(sigma * sigma + (sigma_slope * excess) ** 2)
