"""Simulated LR x batch-size grids with known laws (for recovery tests and examples)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from bayescpt.hparams.laws import bowl, noise_sd

#: the truth used by default: Step-Law-like exponents, a LINEX bowl like the fitted Step Law one
DEFAULT_TRUTH = {
    "lr_ref": 2.5e-3,
    "bN_lr": -0.7,
    "bD_lr": 0.3,  # lr* = lr_ref (N/N0)^bN (D/D0)^bD
    "bs_ref": 4e5,
    "bN_bs": 0.0,
    "bD_bs": 0.6,  # B* in tokens
    "N0": 4e8,
    "D0": 2e10,
    "tau_lr": 0.05,
    "tau_bs": 0.05,  # cell scatter of ln lr*, ln B*
    "L0": 1.8,
    "A": 0.6,
    "g": 0.3,
    "C0": 5e19,  # best loss L0 + A (C/C0)^-g
    "tau_L": 0.01,
    "qx": 0.02,
    "qy": 0.015,
    "shear": -0.05,
    "skew": 3.0,
    "sigma": 0.002,
    "sigma_slope": 0.2,
    "nu": 3.0,
    "noise": "quadrature",
    "diverged_loss": 7.0,  # loss of runs past the divergence edge
    # optimum_law "loss": lr* = lr_ref (m / L_ref)^bL_lr, B* = bs_ref (m / L_ref)^bL_bs at the
    # cell's best loss m (instead of the N, D power laws above)
    "optimum_law": "size_tokens",
    "bL_lr": 2.0,
    "bL_bs": -6.0,
    "L_ref": 2.4,
}


def simulate_grid(
    sizes,
    tokens,
    lrs,
    batch_sizes,
    truth: dict | None = None,
    seed: int = 0,
    diverge_above: float = 1.5,
):
    """A grid table (bayescpt columns) over every (size, tokens) pair and its truth per cell.

    Runs whose bowl excess exceeds ``diverge_above`` nats get ``diverged_loss`` (+ noise): the
    blown-up runs a real grid keeps. Returns (grid, cell truth table, truth dict).
    """
    t = dict(DEFAULT_TRUTH, **(truth or {}))
    rng = np.random.default_rng(seed)
    rows, cells = [], []
    for n in sizes:
        for d in tokens:
            x_opt = (
                np.log(t["lr_ref"])
                + t["bN_lr"] * np.log(n / t["N0"])
                + t["bD_lr"] * np.log(d / t["D0"])
                + t["tau_lr"] * rng.standard_normal()
            )
            y_opt = (
                np.log(t["bs_ref"])
                + t["bN_bs"] * np.log(n / t["N0"])
                + t["bD_bs"] * np.log(d / t["D0"])
                + t["tau_bs"] * rng.standard_normal()
            )
            m = (
                t["L0"]
                + t["A"] * (6 * n * d / t["C0"]) ** -t["g"]
                + t["tau_L"] * rng.standard_normal()
            )
            if t["optimum_law"] == "loss":
                x_opt += t["bL_lr"] * np.log(m / t["L_ref"]) - (
                    t["bN_lr"] * np.log(n / t["N0"]) + t["bD_lr"] * np.log(d / t["D0"])
                )
                y_opt += t["bL_bs"] * np.log(m / t["L_ref"]) - (
                    t["bN_bs"] * np.log(n / t["N0"]) + t["bD_bs"] * np.log(d / t["D0"])
                )
            cells.append(
                {
                    "model_size": n,
                    "tokens": d,
                    "lr_opt": np.exp(x_opt),
                    "batch_size_opt": np.exp(y_opt),
                    "best_loss_true": m,
                }
            )
            for lr in lrs:
                for bs in batch_sizes:
                    mu = bowl(
                        np,
                        np.log(lr),
                        np.log(bs),
                        m,
                        x_opt,
                        y_opt,
                        t["qx"],
                        t["qy"],
                        t["shear"],
                        t["skew"],
                    )
                    sd = noise_sd(np, t["sigma"], t["sigma_slope"], mu - m, t["noise"])
                    loss = mu + sd * rng.standard_t(t["nu"])
                    if mu - m > diverge_above:
                        loss = t["diverged_loss"] + 0.3 * rng.standard_normal()
                    rows.append(
                        {
                            "model_size": n,
                            "tokens": d,
                            "lr": lr,
                            "batch_size": bs,
                            "loss": max(float(loss), 0.5),
                        }
                    )
    return pd.DataFrame(rows), pd.DataFrame(cells), t
