"""Empirical Bayes on the schedule deviation by backtests of the hierarchical fit itself (issue 16
item 1, second candidate; the first, point-fit backtests, is ``calibration_layer.py``).

The default predicts a new schedule with a fresh deviation w = tau z of the law's parameters
(log scale for positive ones), tau from the posterior, its prior chosen on the multipowerlaw set.
Here the spread of that deviation is scaled by a factor k, and a log-loss discrepancy b d is
added past the training range (d = ln(step / the size's longest training step), 0 inside), with
k and b learned from the training runs alone by refitting the same model (default settings):

* leave one schedule out (LOSO): for each training schedule, the fit on the other schedules (every
  size) predicts the left-out runs; k minimises the mean interval score (90 %) of those points,
  each run weighted equally, over a grid;
* truncation: the fit on every training run cut at half its length predicts the second halves;
  with that k, b minimises their mean interval score over a grid.

Then the full fit's predictions of the held-out runs use (k, b). Cost: (number of training
schedules + 1) extra fits. Beside the default, the bootstrap and the conformal band of
``calibration_sets.py``, scored on the same points.

Run: ``python benchmarks/calibration_bayes.py --set multipowerlaw --law annealing``.
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from calibration_sets import (  # noqa: E402
    PROB,
    candidate_args,
    compare_methods,
    load_set,
    schedule_of,
    store_scores,
)
from multipower_protocol import after_warmup  # noqa: E402

from bayescpt.curves.data.table import curve_info, schedules_of  # noqa: E402
from bayescpt.curves.forecast.predict import curve_draws  # noqa: E402
from bayescpt.curves.model.hierarchy import parameter_draws  # noqa: E402
from bayescpt.curves.model.laws import get_law  # noqa: E402

K_GRID = (0.25, 0.35, 0.5, 0.7, 1.0, 1.4, 2.0, 2.8, 4.0)
B_GRID = (0.0, 0.001, 0.002, 0.004, 0.008, 0.016, 0.032)


def draws(fit, test: pd.DataFrame, longest: pd.Series, seed: int = 0):
    """Per (run, val_set) of test's loss rows after warmup: (rows, log curve without a fresh
    deviation, log curve with it, white noise draws x sigma, d); the same random numbers for
    every (k, b)."""
    rng = np.random.default_rng(seed)
    sched = schedules_of(test)
    nu = fit.config["noise"].get("nu", 5.0)
    student = fit.config["noise"]["family"] == "studentt"
    out = []
    for (run, vs), g in after_warmup(test).groupby(["run", "val_set"], sort=False):
        size = g["model_size"].iloc[0]
        info = curve_info(test, run, vs)
        info["model_size"] = float(size)
        X = fit.law.design(sched[run], g["step"].to_numpy(), fit.config["settings"], info)
        th0 = parameter_draws(fit, vs, size, rng, new_run=False)
        th1 = parameter_draws(fit, vs, size, rng, new_run=True)
        pos = {p.name: p.positive for p in fit.law.params}
        dev = {n: (np.log(th1[n]) - np.log(th0[n])) if pos[n] else th1[n] - th0[n] for n in pos}
        S = th1["_sigma"].shape[0]
        z = rng.standard_normal((S, len(g)))
        e = (
            rng.standard_t(nu, size=(S, len(g))) if student else rng.standard_normal((S, len(g)))
        ) * th1["_sigma"][:, None]
        d = np.maximum(0.0, np.log(g["step"].to_numpy() / longest[size]))
        out.append(
            {
                "fit": fit,
                "rows": g,
                "th0": th0,
                "dev": dev,
                "pos": pos,
                "X": X,
                "z": z,
                "e": e,
                "d": d,
                "cache": {},
            }
        )
    return out


def predict_kb(pieces, k: float, b: float) -> pd.DataFrame:
    """Mean and 90 % interval of every piece's points with the deviation scaled by k and the
    discrepancy b d."""
    q = [(1 - PROB) / 2, (1 + PROB) / 2]
    res = []
    for p in pieces:
        if k not in p["cache"]:
            th = {
                n: (np.exp(np.log(v) + k * p["dev"][n]) if p["pos"][n] else v + k * p["dev"][n])
                for n, v in p["th0"].items()
                if n in p["pos"]
            }
            th["_sigma"] = p["th0"]["_sigma"]
            p["cache"][k] = curve_draws(p["fit"], th, p["X"])
        curves = p["cache"][k]
        extra = b * p["d"][None, :] * p["z"]
        y = curves * np.exp(extra + p["e"])
        r = p["rows"].copy()
        r["mean"] = np.mean(curves * np.exp(extra), axis=0)
        r["lower"], r["upper"] = np.quantile(y, q, axis=0)
        res.append(r)
    return pd.concat(res)


def run_score(pred: pd.DataFrame) -> float:
    """Mean over runs of the mean interval score / y of the run's points."""
    a = 1 - PROB
    y, lo, hi = pred["loss"], pred["lower"], pred["upper"]
    s = ((hi - lo) + (2 / a) * np.maximum(lo - y, 0) + (2 / a) * np.maximum(y - hi, 0)) / y
    return float(s.groupby(pred["run"]).mean().mean())


def fit_on(df, law_name, seed):
    from bayescpt.curves.model.fit import Fit

    return Fit.run(df, law=law_name, seed=seed, warn=False)


def learn_kb(train: pd.DataFrame, law_name: str, seed: int = 0, log=print) -> dict:
    """(k, b) from LOSO and truncation refits of the default model (module doc)."""
    sched_names = train["run"].map(schedule_of)
    loso = []
    diag = []
    for s in sorted(sched_names.unique()):
        rest, left = train[sched_names != s], train[sched_names == s]
        t0 = time.perf_counter()
        f = fit_on(rest, law_name, seed)
        dg = f.diagnostics()
        diag.append(
            {
                "left_out": s,
                "max_rhat": dg.max_rhat,
                "min_ess_bulk": dg.min_ess_bulk,
                "divergences": dg.divergences,
                "s": time.perf_counter() - t0,
            }
        )
        longest = after_warmup(rest).groupby("model_size")["step"].max()
        loso += draws(f, left, longest, seed)
        log(f"  LOSO {s}: fit {time.perf_counter() - t0:.0f} s, R-hat {dg.max_rhat:.3f}")
    k_scores = {k: run_score(predict_kb(loso, k, 0.0)) for k in K_GRID}
    k = min(k_scores, key=k_scores.get)
    lengths = train.groupby("run")["step"].max()
    cuts = (lengths * 0.5).astype(int)
    short = train[train["step"] <= train["run"].map(cuts)]
    t0 = time.perf_counter()
    f = fit_on(short, law_name, seed)
    dg = f.diagnostics()
    diag.append(
        {
            "left_out": "second halves",
            "max_rhat": dg.max_rhat,
            "min_ess_bulk": dg.min_ess_bulk,
            "divergences": dg.divergences,
            "s": time.perf_counter() - t0,
        }
    )
    longest = after_warmup(short).groupby("model_size")["step"].max()
    trunc = draws(f, train, longest, seed)
    for p in trunc:  # score only the second halves
        keep = (p["rows"]["step"] > p["rows"]["run"].map(cuts)).to_numpy()
        p["rows"] = p["rows"][keep]
        p["X"] = {
            n: v[keep] if np.ndim(v) and len(v) == len(keep) else v for n, v in p["X"].items()
        }
        p["z"], p["e"], p["d"] = p["z"][:, keep], p["e"][:, keep], p["d"][keep]
    log(f"  truncation: fit {time.perf_counter() - t0:.0f} s, R-hat {dg.max_rhat:.3f}")
    b_scores = {b: run_score(predict_kb(trunc, k, b)) for b in B_GRID}
    b = min(b_scores, key=b_scores.get)
    return {"k": k, "b": b, "k_scores": k_scores, "b_scores": b_scores, "refits": diag}


def main(argv=None):
    a = candidate_args(__doc__, "calibration_bayes.json", argv)
    warnings.simplefilter("ignore")
    train, test = load_set(a.set)
    law = get_law(a.law)
    t0 = time.perf_counter()
    cal = learn_kb(train, a.law, a.seed, log=lambda m: print(m, flush=True))
    t_cal = time.perf_counter() - t0
    print(
        f"{a.set}/{a.law}: k {cal['k']}, b {cal['b']} (backtests {t_cal:.0f} s); k scores "
        + ", ".join(f"{k}: {v * 100:.3f}" for k, v in cal["k_scores"].items())
        + "; b scores "
        + ", ".join(f"{k}: {v * 100:.3f}" for k, v in cal["b_scores"].items()),
        flush=True,
    )
    t0 = time.perf_counter()
    fit = fit_on(train, a.law, a.seed)
    t_fit = time.perf_counter() - t0
    diag = fit.diagnostics()
    longest = after_warmup(train).groupby("model_size")["step"].max()
    pieces = draws(fit, test, longest, a.seed)
    print(
        f"NUTS {t_fit:.0f} s; max R-hat {diag.max_rhat:.4f}, min bulk ESS "
        f"{diag.min_ess_bulk:.0f}, divergences {diag.divergences}"
    )
    sizes, runs = compare_methods(
        law, train, test, fit, {"eb": predict_kb(pieces, cal["k"], cal["b"])}, a.seed, a.boot
    )
    store_scores(
        a.json,
        f"{a.set}/{a.law}",
        {"calibration": cal, "backtest_s": t_cal, "fit_s": t_fit},
        diag,
        sizes,
        runs,
    )


if __name__ == "__main__":
    main()
