"""A calibration learned from the training runs (issue 16 item 1): candidates measured beside the
default on one loss-curve set, from one Bayesian fit.

The default's band for a new schedule comes from the schedule-level deviation tau, whose prior was
chosen on the multipowerlaw protocol. The candidates here replace or extend it with a log-loss
discrepancy whose scale is learned from the training runs alone, by two backtests with the
per-size point fit (16-start L-BFGS Huber, as the practitioner's):

* leave one schedule out (LOSO): each training run predicted from the size's other training runs;
  its residuals measure the error on an unseen schedule *inside* the lengths trained on;
* truncation: every training run of a size cut at half its length, the fit on the halves predicts
  the second halves; residuals at distance d = ln(step / cut) past the fitted range measure how the
  error grows with extrapolation in length.

Learned by maximum likelihood on the pooled residuals (every size): sd(d)^2 = a^2 + (b d)^2, d the
distance in ln step past the longest training step of the size (0 inside). Candidates:

* ``layer``: the posterior's curve for the run's group without a fresh schedule deviation (tau
  left out) times exp(N(0, sd(d)^2)) and the fit's own noise;
* ``layer/size``: the same with (a, b) learned per model size on that size's residuals;
* ``layer/power``: the same with a and b both scaled by (N / N_ref)^gamma, gamma learned with
  them on every size's residuals (N_ref: the geometric mean of the training sizes);
* ``tau+grow``: the default (fresh tau deviation) times exp(N(0, (b d)^2)), b per size: the
  default band widened with the distance only.

Run: ``python benchmarks/calibration_layer.py --set multipowerlaw --law annealing``.
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import optimize

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from calibration_sets import (  # noqa: E402
    PROB,
    candidate_args,
    compare_methods,
    load_set,
    store_scores,
)
from multipower_protocol import after_warmup, design_of  # noqa: E402

from bayescpt.curves.data.table import curve_info, schedules_of  # noqa: E402
from bayescpt.curves.evaluate import baseline  # noqa: E402
from bayescpt.curves.forecast.predict import curve_draws  # noqa: E402
from bayescpt.curves.model.hierarchy import parameter_draws  # noqa: E402
from bayescpt.curves.model.laws import get_law  # noqa: E402


def _point(law, train, seed):
    X, y, _ = design_of(law, train, law.default_settings)
    theta, _ = baseline.point_fit(law, X, y, n_starts=16, seed=seed)
    return theta


def _resid(law, theta, df, keep=None):
    """(log residuals, steps) of df's loss rows after warmup (optionally a row mask on them)."""
    X, y, rows = design_of(law, df, law.default_settings)
    with np.errstate(all="ignore"):
        r = y - np.log(law.mean(np, theta, X))
    steps = rows["step"].to_numpy()
    m = np.ones(len(r), bool) if keep is None else keep(rows)
    return r[m], steps[m]


def backtest_residuals(law, train: pd.DataFrame, seed: int = 0, cut: float = 0.5) -> pd.DataFrame:
    """LOSO and truncation residuals of the training runs (module doc), one row per point."""
    out = []
    for size, tr in train.groupby("model_size"):
        runs = list(tr["run"].unique())
        for run in runs:
            rest = tr[tr["run"] != run]
            theta = _point(law, rest, seed)
            r, s = _resid(law, theta, tr[tr["run"] == run])
            longest = after_warmup(rest)["step"].max()
            out.append(
                pd.DataFrame(
                    {
                        "kind": "loso",
                        "size": size,
                        "run": run,
                        "r": r,
                        "d": np.maximum(0.0, np.log(s / longest)),
                    }
                )
            )
        lengths = tr.groupby("run")["step"].max()
        cuts = (lengths * cut).astype(int)
        short = tr[tr["step"] <= tr["run"].map(cuts)]
        theta = _point(law, short, seed)
        longest = after_warmup(short)["step"].max()
        for run in runs:
            r, s = _resid(
                law,
                theta,
                tr[tr["run"] == run],
                keep=lambda rows, c=cuts[run]: (rows["step"] > c).to_numpy(),
            )
            out.append(
                pd.DataFrame(
                    {
                        "kind": "trunc",
                        "size": size,
                        "run": run,
                        "r": r,
                        "d": np.maximum(0.0, np.log(s / longest)),
                    }
                )
            )
    df = pd.concat(out, ignore_index=True)
    return df[np.isfinite(df["r"])]


def learn(res: pd.DataFrame, power: bool = False) -> dict:
    """ML of sd(d)^2 = a^2 + (b d)^2 on the residuals (each run weighted equally per kind); with
    ``power`` both scale as (N / N_ref)^gamma, N the model size, N_ref the geometric mean of the
    sizes, gamma learned too."""
    r, d = res["r"].to_numpy(), res["d"].to_numpy()
    w = 1.0 / res.groupby(["kind", "size", "run"])["r"].transform("size").to_numpy()
    ln_n = np.log(res["size"].to_numpy(float))
    ref = float(np.mean(np.log(res["size"].unique().astype(float))))

    def nll(z):
        v = (np.exp(2 * z[0]) + np.exp(2 * z[1]) * d * d) + 1e-14
        if power:
            v = v * np.exp(2 * z[2] * (ln_n - ref))
        return float(np.sum(w * (0.5 * np.log(v) + 0.5 * r * r / v)))

    z0 = [np.log(0.002), np.log(0.002)] + ([0.0] if power else [])
    best = optimize.minimize(nll, z0, method="Nelder-Mead", options={"maxiter": 4000})
    out = {"a": float(np.exp(best.x[0])), "b": float(np.exp(best.x[1]))}
    if power:
        out.update(gamma=float(best.x[2]), ln_ref=ref)
    return out


def at_size(cal: dict, size) -> dict:
    """(a, b) of one model size: per-size entries, or the power rule, or one for all."""
    if size in cal:
        return cal[size]
    if "gamma" in cal:
        f = float(np.exp(cal["gamma"] * (np.log(float(size)) - cal["ln_ref"])))
        return {"a": cal["a"] * f, "b": cal["b"] * f}
    return cal


def calibrated(
    fit, test: pd.DataFrame, train: pd.DataFrame, cal: dict, tau: bool, seed: int = 0
) -> pd.DataFrame:
    """Predictions of the test rows: curves (with or without a fresh tau deviation) times the
    learned discrepancy at each point's distance past the size's longest training step."""
    rng = np.random.default_rng(seed)
    sched = schedules_of(test)
    longest = after_warmup(train).groupby("model_size")["step"].max()
    nu = fit.config["noise"].get("nu", 5.0)
    student = fit.config["noise"]["family"] == "studentt"
    q = [(1 - PROB) / 2, (1 + PROB) / 2]
    pieces = []
    pts = after_warmup(test)
    for (run, vs), g in pts.groupby(["run", "val_set"], sort=False):
        size = g["model_size"].iloc[0]
        info = curve_info(test, run, vs)
        info["model_size"] = float(size)
        theta = parameter_draws(fit, vs, size, rng, new_run=tau)
        X = fit.law.design(sched[run], g["step"].to_numpy(), fit.config["settings"], info)
        curves = curve_draws(fit, theta, X)
        d = np.maximum(0.0, np.log(g["step"].to_numpy() / longest[size]))
        c = at_size(cal, size)
        sd = np.sqrt(c["a"] ** 2 + (c["b"] * d) ** 2)
        z = rng.standard_normal(curves.shape)
        noise = (
            rng.standard_t(nu, size=curves.shape) if student else rng.standard_normal(curves.shape)
        )
        y_rep = curves * np.exp(sd[None, :] * z + theta["_sigma"][:, None] * noise)
        res = g.copy()
        res["mean"] = np.mean(curves * np.exp(sd[None, :] * z), axis=0)
        res["lower"], res["upper"] = np.quantile(y_rep, q, axis=0)
        pieces.append(res)
    return pd.concat(pieces)


def main(argv=None):
    a = candidate_args(
        __doc__,
        "calibration_layer.json",
        argv,
        extra=[("--fit-cache", {"type": Path, "default": None})],
    )
    warnings.simplefilter("ignore")
    from bayescpt.curves.model.fit import Fit

    train, test = load_set(a.set)
    law = get_law(a.law)
    t0 = time.perf_counter()
    res = backtest_residuals(law, train, a.seed)
    cal = learn(res)
    per_size = {size: learn(g) for size, g in res.groupby("size")}
    power = learn(res, power=True)
    print(
        f"power rule: a {power['a'] * 100:.3f} %, b {power['b'] * 100:.3f} %, gamma "
        f"{power['gamma']:.3f}",
        flush=True,
    )
    grow = {size: {"a": 0.0, "b": c["b"]} for size, c in per_size.items()}
    t_cal = time.perf_counter() - t0
    print(
        f"{a.set}/{a.law}: backtests {t_cal:.1f} s; layer a {cal['a'] * 100:.3f} %, "
        f"b {cal['b'] * 100:.3f} % per ln step; per size (a, b) "
        + ", ".join(
            f"{s / 1e6:g}M {c['a'] * 100:.3f} {c['b'] * 100:.3f} %" for s, c in per_size.items()
        ),
        flush=True,
    )
    for (kind, size), g in res.groupby(["kind", "size"]):
        print(
            f"  {kind} {size / 1e6:g}M: rms {np.sqrt(np.mean(g['r'] ** 2)) * 100:.3f} %, "
            f"max d {g['d'].max():.2f}",
            flush=True,
        )
    if a.fit_cache is not None and a.fit_cache.exists():
        fit = Fit.load(a.fit_cache)
    else:
        t0 = time.perf_counter()
        fit = Fit.run(train, law=a.law, seed=a.seed, warn=False)
        print(f"NUTS {time.perf_counter() - t0:.0f} s", flush=True)
        if a.fit_cache is not None:
            fit.save(a.fit_cache)
    diag = fit.diagnostics()
    sizes, runs = compare_methods(
        law,
        train,
        test,
        fit,
        {
            "layer": calibrated(fit, test, train, cal, tau=False, seed=a.seed),
            "layer/size": calibrated(fit, test, train, per_size, tau=False, seed=a.seed),
            "layer/power": calibrated(fit, test, train, power, tau=False, seed=a.seed),
            "tau+grow": calibrated(fit, test, train, grow, tau=True, seed=a.seed),
        },
        a.seed,
        a.boot,
    )
    store_scores(
        a.json,
        f"{a.set}/{a.law}",
        {
            "calibration": cal,
            "power": power,
            "backtest_s": t_cal,
            "per_size_calibration": {f"{k:g}": v for k, v in per_size.items()},
        },
        diag,
        sizes,
        runs,
    )


if __name__ == "__main__":
    main()
