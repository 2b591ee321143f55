"""Stage 1: one hierarchical model of an LR x batch-size grid over (model size, tokens) cells.

Notation: x = ln(lr), y = ln(batch size in tokens), n = ln N - ln N_ref, d = ln D - ln D_ref,
c = ln(6 N D) - ln C_ref (C = 6 N D is the training compute in FLOPs; the refs are the means over
the grid's cells, stored with the fit).

Levels::

    law      x*_k ~ Normal(a_lr + bN_lr n_k + bD_lr d_k, tau_lr)        optimum of cell k
             y*_k ~ Normal(a_bs + bN_bs n_k + bD_bs d_k, tau_bs)
                 (``optimum_law = "compute"``: one exponent per target, bN = bD = b_C, a power law
                  in C = 6 N D;
                  ``optimum_law = "loss"``: x*_k ~ Normal(a_lr + bL_lr (ln m_k - ln L_ref), tau_lr),
                  likewise y*_k: a power law in the cell's best loss m_k (below), Zhou et al.'s
                  B_opt(L), LR_opt(L); L_ref = geometric mean of the cells' best runs)
             m_k  ~ Normal(L0 + A exp(-g c_k), tau_L)                    depth: L(C) = L0 + a C^-g
             x*_k, y*_k softly inside the cell's grid range +- ``bracket`` and within
                 ``bracket_best`` of the cell's best run (a grid search's premise)
    bowl     w = (x - x*_k) + shear (y - y*_k),  v = y - y*_k
             mean_i = m_k + h_k q_x 2 (e^{s w} - 1 - s w) / s^2 + h_k q_y v^2
                 (LINEX along w: quadratic near the optimum, exponential above it, linear below)
             ln h_k ~ Normal(0, sd_ln_h)                                 cell curvature scale
    run i    loss_i ~ StudentT(nu, mean_i, sqrt(sigma^2 + (sigma_slope (mean_i - m_k))^2))
                 (``noise = "linear"``: sigma + sigma_slope (mean_i - m_k), the first form)
             (``cell_shear``: shear_k ~ Normal(shear, sd_shear) per cell; off by default)

Why this shape (checked on the Step Law grid, see benchmarks/hparams_loco.py):

* Both terms are >= 0 and vanish only at w = v = 0, so (x*_k, y*_k) is exactly the cell's
  optimum and m_k its loss. A pure quadratic fitted the grid badly: the loss rises much faster on
  the high-LR side (towards divergence) than on the low one (hence the LINEX skew s); robust
  per-cell fits without the skew put the optimum a factor ~2 below the grid's best LR on average.
  The shear lets the best LR drift with the batch size inside a cell.
* The run noise grows with the excess loss (sigma_slope): near the optimum repeated runs agree to
  ~1e-3 nats, far from it the bowl shape is only roughly right. The two terms add in quadrature,
  so sigma is the scatter at the optimum (what decides which grid run comes out best); added
  linearly, the slope term took over within 3 milli-nats of the optimum and sigma came out at a
  third of the near-optimum runs' scatter.
* Diverged runs (loss 5-11 nats where the bowl says 2.5) stay in the data: the Student-t
  likelihood with few degrees of freedom gives them a bounded influence instead of letting them
  bend the bowl. Nothing is dropped.
* The LR optimum and depth are centred per cell (every cell has ~100 runs that pin them down, and
  the LR bowl needs chains started near the data); the batch optimum is non-centred by default
  (``centered_bs``), because its cell scatter is about as small as its per-cell uncertainty and the
  centred form mixed slowly there.
* The loss law uses ln m_k, not ln(m_k - L0). m_k - L0 = A (C/C_ref)^-g times a small cell
  scatter, so a power law in the reducible loss is the compute law again (exponent -g bL) and
  would add nothing to compare; and L0 is weakly identified on a grid whose losses span 2.1-2.6
  nats (its 90 % interval on Step Law is 0.07-1.97), so ln(m_k - L0) would tie the optimum's
  exponents to L0 and g draw by draw and diverge as m_k -> L0 (a CPT checkpoint near the
  asymptote would get an unbounded LR). ln m_k is the loss level itself: always defined, known
  to ~1e-3 nats per cell, and in stage 2 it saturates at ln L0 as compute grows. It differs
  from the compute law where cells of equal compute have different best losses (N vs D).
* The across-cell laws are what prediction uses: a new cell (or a CPT run) gets a fresh optimum
  from the law plus the cell-to-cell scatter tau, so intervals include how far real cells stray
  from the power law.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from bayescpt.core.config import check_config
from bayescpt.hparams.data import cells
from bayescpt.hparams.laws import Refs, best_loss, bowl, noise_sd, optimum_mean

LAW = "hparams"
OPTIMUM_LAWS = ("size_tokens", "compute", "loss")
NOISE_FORMS = ("quadrature", "linear")

#: prior locations/scales; ln-scale parameters are marked. Units: loss in nats, lr raw, batch in
#: tokens, C in FLOPs relative to C_ref.
DEFAULT_CONFIG = {
    "optimum_law": "size_tokens",
    "priors": {
        "a_lr": [None, 2.0],  # ln lr* at the reference cell; None: mean ln lr of best runs
        "a_bs": [None, 2.0],  # ln B* (tokens) there; None: mean ln batch of best runs
        "slope": [0.0, 1.0],  # every exponent bN, bD (or b_C)
        "slope_loss": [0.0, 10.0],  # the loss law's bL: cells' ln L spans ~0.2 (vs ~2-3 for
        # ln N, ln D), so the same shift across the grid needs ~10x
        "tau_opt": 0.1,  # mean of the Gamma(2) cell scatter of ln lr*, ln B*
        "L_lo": [None, 1.0],  # best loss at the smallest cell compute; None: grid's
        "ln_drop": [-1.5, 1.5],  # ln of its drop to the largest cell compute
        "g": [-1.2, 0.8],  # ln of the compute exponent g (e^-1.2 = 0.3)
        "tau_L": 0.03,  # mean of the Gamma(2) cell scatter of the best loss
        "ln_q": [-4.0, 1.5],  # ln curvature q_x, q_y (nats per ln-unit^2)
        "shape_sd": 0.5,  # HalfNormal scale of the cell spread of ln h
        "shear": 1.0,  # Normal scale of the LR-optimum shift per ln batch
        "shear_sd": 0.3,  # HalfNormal scale of its cell-to-cell spread
        "skew": [0.0, 1.0],  # ln of the LINEX asymmetry s (> 0: steeper above the optimum)
        "sigma": 0.02,  # HalfNormal scale of the run noise at the optimum (nats)
        "sigma_slope": 1.0,  # HalfNormal scale of the noise growth per nat of excess loss
    },
    "nu": 3.0,
    "cell_shear": False,  # True: each cell its own shear ~ Normal(shear, sd_shear)
    # (screened on 4 LOCO folds: same coverage, 40 % slower)
    "noise": "quadrature",  # run noise sd: sqrt(sigma^2 + (sigma_slope excess)^2);
    # "linear": sigma + sigma_slope excess (the first form)
    "centered_bs": False,  # centred y*_k: tau_bs (~0.02) had ESS 195 of 4000 draws
    "bracket": 0.5,  # ln units the optimum may lie beyond the cell's grid edges
    "bracket_best": 1.0,  # ... and away from the cell's best run (a factor e)
}

LAW_VARS = [
    "a_lr",
    "bN_lr",
    "bD_lr",
    "a_bs",
    "bN_bs",
    "bD_bs",
    "tau_lr",
    "tau_bs",
    "L_lo",
    "L_hi",
    "L0",
    "A",
    "g",
    "tau_L",
]
#: the exponents each optimum law samples (the others are absent or deterministic copies)
EXPONENTS = {
    "size_tokens": ["bN_lr", "bD_lr", "bN_bs", "bD_bs"],
    "compute": ["b_lr", "b_bs"],
    "loss": ["bL_lr", "bL_bs"],
}
SHAPE_VARS = ["qx", "qy", "sd_ln_h", "shear", "sd_shear", "skew", "sigma", "sigma_slope"]
CELL_VARS = ["x_opt", "y_opt", "m"]


#: the numeric knobs' ranges: every [loc, scale] pair's scale, every scale and mean > 0
KNOB_RANGES = {
    "priors.*.1": "> 0",
    **{
        f"priors.{k}": "> 0" for k, v in DEFAULT_CONFIG["priors"].items() if not isinstance(v, list)
    },
    "nu": "> 0",
    "bracket": ">= 0",
    "bracket_best": ">= 0",
}


def make_config(override: dict | None = None) -> dict:
    """DEFAULT_CONFIG updated by ``override`` (nested dicts merged key by key), checked by
    :func:`bayescpt.core.config.check_config`: known keys and types, ``noise`` one of
    NOISE_FORMS, ``optimum_law`` one of OPTIMUM_LAWS, numbers in :data:`KNOB_RANGES`."""
    return check_config(
        override,
        DEFAULT_CONFIG,
        "hparams config",
        choices={"noise": NOISE_FORMS, "optimum_law": OPTIMUM_LAWS},
        ranges=KNOB_RANGES,
    )


def _start_near(name, prior, start, step=0.1):
    """A Normal(prior[0], prior[1]) parameter sampled as ``start + step * z`` with z starting at
    0 (same prior; chains start near ``start``)."""
    import pymc as pm

    mu, sd = float(prior[0]), float(prior[1])
    z = pm.Normal(f"{name}_z", (mu - start) / step, sd / step, initval=0.0)
    return pm.Deterministic(name, start + step * z)


def _loc(prior, values) -> float:
    """A prior's location, or the mean log of ``values`` where the config says None."""
    return float(prior[0]) if prior[0] is not None else float(np.mean(np.log(values)))


def build_model(df: pd.DataFrame, config: dict, refs: Refs | None = None):
    """The PyMC model of a validated grid ``df``; returns (model, cell table, refs)."""
    import pymc as pm

    cfg = make_config(config)
    ct = cells(df)
    refs = refs or Refs.of(ct)
    key = ["group", "model_size", "tokens"]
    idx = df.merge(ct[key].reset_index(), on=key, how="left")["index"].to_numpy()
    n = np.log(ct["model_size"].to_numpy()) - refs.ln_n
    d = np.log(ct["tokens"].to_numpy()) - refs.ln_d
    x = np.log(df["lr"].to_numpy())
    y = np.log(df["batch_size"].to_numpy())
    coords = {
        "cell": [
            f"N={r.model_size:.4g},D={r.tokens:.4g}"
            + ("" if r.group == "default" else f",{r.group}")
            for r in ct.itertuples()
        ],
        "run": np.arange(len(df)),
    }
    with pm.Model(coords=coords) as model:
        m = _depth_law(cfg["priors"], ct, n + d)
        mean_lr, mean_bs = _optimum_law(cfg, ct, refs, n, d, m)
        x_opt, y_opt = _cell_optima(cfg, ct, mean_lr, mean_bs, (x, y), idx)
        _runs(cfg, df, idx, (x, y), (m, x_opt, y_opt))
    return model, ct, refs


def _depth_law(pr: dict, ct: pd.DataFrame, c: np.ndarray):
    """The cells' best losses m_k ~ Normal(L(C_k), tau_L) under L(C) = L0 + A (C / C_ref)^-g
    (``c``: centred ln C per cell); returns m (the model's ``m``, dims cell)."""
    import pymc as pm
    import pytensor.tensor as pt

    # L(C) through its values at the smallest and largest cell compute (well identified) and
    # the exponent g; L0 and A follow. Sampling L0, A, g directly left ESS ~50 per 600 draws.
    c_lo, c_hi = float(c.min()), float(c.max())
    g = pm.LogNormal("g", *pr["g"])
    lo_cell = int(np.argmin(c))
    L_lo = pm.Normal(
        "L_lo",
        pr["L_lo"][0] if pr["L_lo"][0] is not None else float(ct["best_loss"].iloc[lo_cell]),
        pr["L_lo"][1],
    )
    L_hi = pm.Deterministic("L_hi", L_lo - pt.exp(pm.Normal("ln_drop", *pr["ln_drop"])))
    A = pm.Deterministic("A", (L_lo - L_hi) / (pt.exp(-g * c_lo) - pt.exp(-g * c_hi)))
    L0 = pm.Deterministic("L0", L_lo - A * pt.exp(-g * c_lo))
    tau_L = pm.Gamma("tau_L", 2.0, 2.0 / pr["tau_L"])
    return pm.Normal(
        "m", best_loss(pt, L0, A, g, c), tau_L, dims="cell", initval=ct["best_loss"].to_numpy()
    )


def _optimum_law(cfg: dict, ct: pd.DataFrame, refs: Refs, n: np.ndarray, d: np.ndarray, m):
    """The law's ln lr* and ln B* per cell (no scatter) under ``cfg["optimum_law"]``, at the
    cells' centred ln N ``n``, ln D ``d`` (loss law: at their depths ``m``); returns the two
    location tensors (mean_lr, mean_bs)."""
    import pymc as pm
    import pytensor.tensor as pt

    pr, law = cfg["priors"], cfg["optimum_law"]
    slope = pr["slope"]
    # Every law parameter starts at a least-squares fit to the cells' best runs and is
    # sampled as start + 0.1 z (its prior unchanged): nutpie jitters each chain's start by
    # U(-1, 1) in the sampled coordinates, which here is +-0.1 instead of +-1 in an exponent.
    # With +-1, a chain could start (and stay) in a poor mode: R-hat 1.53 on Step Law.
    ln_l = np.log(ct["best_loss"].to_numpy()) - refs.ln_l if law == "loss" else None
    X = np.column_stack(
        {"compute": [np.ones_like(n), n + d], "loss": [np.ones_like(n), ln_l]}.get(
            law, [np.ones_like(n), n, d]
        )
    )
    ols_lr = np.linalg.lstsq(X, np.log(ct["best_lr"].to_numpy()), rcond=None)[0]
    ols_bs = np.linalg.lstsq(X, np.log(ct["best_batch_size"].to_numpy()), rcond=None)[0]
    # Intercepts: prior centred on the grid's best runs (wide scale).
    a_lr = _start_near("a_lr", [_loc(pr["a_lr"], ct["best_lr"]), pr["a_lr"][1]], ols_lr[0])
    a_bs = _start_near("a_bs", [_loc(pr["a_bs"], ct["best_batch_size"]), pr["a_bs"][1]], ols_bs[0])
    if law == "loss":
        # ln lr*_k = a_lr + bL_lr (ln m_k - ln L_ref): a power law in the cell's best loss
        # (Zhou et al.'s B_opt(L), LR_opt(L)); m_k is the latent depth above, not the grid's
        # noisy best run. ln m, not ln(m - L0): see the module docstring.
        bL_lr = _start_near("bL_lr", pr["slope_loss"], ols_lr[1])
        bL_bs = _start_near("bL_bs", pr["slope_loss"], ols_bs[1])
        return (a_lr + bL_lr * (pt.log(m) - refs.ln_l), a_bs + bL_bs * (pt.log(m) - refs.ln_l))
    if law == "compute":
        b_lr = _start_near("b_lr", slope, ols_lr[1])
        b_bs = _start_near("b_bs", slope, ols_bs[1])
        bN_lr = pm.Deterministic("bN_lr", b_lr)
        bD_lr = pm.Deterministic("bD_lr", b_lr)
        bN_bs = pm.Deterministic("bN_bs", b_bs)
        bD_bs = pm.Deterministic("bD_bs", b_bs)
    else:
        bN_lr = _start_near("bN_lr", slope, ols_lr[1])
        bD_lr = _start_near("bD_lr", slope, ols_lr[2])
        bN_bs = _start_near("bN_bs", slope, ols_bs[1])
        bD_bs = _start_near("bD_bs", slope, ols_bs[2])
    return optimum_mean(a_lr, bN_lr, bD_lr, n, d), optimum_mean(a_bs, bN_bs, bD_bs, n, d)


def _cell_optima(cfg: dict, ct: pd.DataFrame, mean_lr, mean_bs, xy: tuple, idx: np.ndarray):
    """Each cell's optimum (x*_k, y*_k) around the law's location with scatter tau_lr, tau_bs,
    held softly inside the cell's grid bracket (``xy``: every run's ln lr and ln batch; ``idx``:
    its cell); returns (x_opt, y_opt)."""
    import pymc as pm
    import pytensor.tensor as pt

    pr = cfg["priors"]
    tau_lr = pm.Gamma("tau_lr", 2.0, 2.0 / pr["tau_opt"])
    tau_bs = pm.Gamma("tau_bs", 2.0, 2.0 / pr["tau_opt"])
    # Chains start at each cell's best run (nutpie adds a U(-1, 1) jitter), and a soft
    # bracket says what a grid search assumes: the optimum lies inside the grid, give or take
    # ``bracket`` (ln units), and within a factor e^bracket_best of the grid's best run.
    # Without them a chain could settle in the LINEX bowl's poor mode far above a cell's
    # best run (every run on the linear branch): R-hat 1.5-1.8 on Step Law; with the grid
    # bracket alone, one LOCO fold (2 chains) still had a chain at the bracket's edge.
    x_opt = pm.Normal(
        "x_opt", mean_lr, tau_lr, dims="cell", initval=np.log(ct["best_lr"].to_numpy())
    )
    if cfg["centered_bs"]:
        y_opt = pm.Normal(
            "y_opt", mean_bs, tau_bs, dims="cell", initval=np.log(ct["best_batch_size"].to_numpy())
        )
    else:  # the batch bowl is quadratic (one mode): no start near the data needed
        y_opt = pm.Deterministic(
            "y_opt", mean_bs + tau_bs * pm.Normal("z_bs", 0.0, 1.0, dims="cell"), dims="cell"
        )
    br, bb = float(cfg["bracket"]), float(cfg["bracket_best"])
    for name, var, col, best in (
        ("x_bracket", x_opt, xy[0], ct["best_lr"]),
        ("y_bracket", y_opt, xy[1], ct["best_batch_size"]),
    ):
        best = np.log(best.to_numpy())
        lo = np.maximum(np.array([col[idx == k].min() for k in range(len(ct))]) - br, best - bb)
        hi = np.minimum(np.array([col[idx == k].max() for k in range(len(ct))]) + br, best + bb)
        out = pt.maximum(var - hi, 0.0) + pt.maximum(lo - var, 0.0)
        pm.Potential(name, -0.5 * pt.sum((out / 0.1) ** 2))
    return x_opt, y_opt


def _runs(cfg: dict, df: pd.DataFrame, idx: np.ndarray, xy: tuple, cell: tuple) -> None:
    """The bowl's shape (curvatures, per-cell scale h_k, shear, skew) and the runs' Student-t
    likelihood around it (``cell``: the cells' m, x_opt, y_opt; ``idx``: each run's cell)."""
    import pymc as pm
    import pytensor.tensor as pt

    pr = cfg["priors"]
    m, x_opt, y_opt = cell
    qx = pm.Deterministic("qx", pt.exp(pm.Normal("ln_qx", *pr["ln_q"])))
    qy = pm.Deterministic("qy", pt.exp(pm.Normal("ln_qy", *pr["ln_q"])))
    sd_h = pm.HalfNormal("sd_ln_h", pr["shape_sd"])
    h = pt.exp(sd_h * pm.Normal("z_ln_h", 0.0, 1.0, dims="cell"))
    shear = pm.Normal("shear", 0.0, pr["shear"])
    if cfg["cell_shear"]:  # how far the best LR moves with the batch differs between cells
        sd_shear = pm.HalfNormal("sd_shear", pr["shear_sd"])
        shear_k = (shear + sd_shear * pm.Normal("z_shear", 0.0, 1.0, dims="cell"))[idx]
    else:
        shear_k = shear
    skew = pm.LogNormal("skew", *pr["skew"])
    sigma = pm.HalfNormal("sigma", pr["sigma"])
    sigma_slope = pm.HalfNormal("sigma_slope", pr["sigma_slope"])
    mu = bowl(
        pt, xy[0], xy[1], m[idx], x_opt[idx], y_opt[idx], h[idx] * qx, h[idx] * qy, shear_k, skew
    )
    pm.StudentT(
        "loss",
        nu=cfg["nu"],
        mu=mu,
        sigma=noise_sd(pt, sigma, sigma_slope, mu - m[idx], cfg["noise"]),
        observed=df["loss"].to_numpy(),
        dims="run",
    )
