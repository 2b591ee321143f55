"""Stacking the two loss-curve laws by leave-one-schedule-out weights (issue 16 item 1, third
candidate; the first two, point-fit backtests and empirical Bayes on the deviation's scale, are
``calibration_layer.py`` and ``calibration_bayes.py``).

The LR-annealing and multi-power laws miss different schedules (on the multipowerlaw set the
annealing law's posterior mean is too high late in ``cosine_72000``, the multi-power law's too
low: ``benchmarks/RESULTS.md``), so a mixture of their predictive distributions may cover what
each misses. The weight is learned from the training runs alone, by refitting both laws' default
models (``Fit.run``, default settings) with one training schedule left out (every size), as
stacking of predictive distributions does (Yao, Vehtari, Simpson & Gelman 2018, "Using stacking
to average Bayesian predictive distributions", Bayesian Analysis 13(3)), with the issue's own
proper score in place of the log score:

* each law's LOSO predictive draws of the left-out runs' points (after warmup): posterior draws x
  a fresh schedule deviation x the fit's noise (the default prediction of an unseen schedule);
* the mixture with weight w on the annealing law takes round(w S) of its S draws per point and
  S - round(w S) of the multi-power law's (one fixed random choice per run); w on the grid
  0, 0.1, ..., 1 minimises the mean over left-out runs of the runs' mean 90 % interval score / y
  (``calibration_bayes.run_score``; ties go to the smaller w);
* the held-out runs are predicted by the same mixture of the two full fits (all training runs).

Nothing here was tuned on a held-out set: the grid, the score and the mixture were fixed (this
file committed) before the script ran on any set. Scored beside each law's default, the point fit
+ bootstrap and the split-conformal band of ``calibration_sets.py`` (annealing law's) on the same
points. Cost: 2 x (schedules + 1) fits.

Run: ``python benchmarks/calibration_stack.py --set multipowerlaw|olmo|lab_pt``
(``--json``: default ``benchmarks/calibration_stack.json``).
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

from calibration_bayes import fit_on, run_score  # noqa: E402
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

LAWS = ("annealing", "multipower")
WEIGHTS = tuple(np.round(np.linspace(0.0, 1.0, 11), 2))


def predictive_draws(fit, table: pd.DataFrame, seed: int = 0) -> list[tuple]:
    """Per (run, val_set) of ``table``'s loss rows after warmup: (rows, curve draws (S, n),
    predictive draws (S, n)) of an unseen schedule (fresh deviation, the fit's noise)."""
    rng = np.random.default_rng(seed)
    sched = schedules_of(table)
    nu = fit.config["noise"].get("nu", 5.0)
    student = fit.config["noise"]["family"] == "studentt"
    out = []
    for (run, vs), g in after_warmup(table).groupby(["run", "val_set"], sort=False):
        info = curve_info(table, run, vs)
        info["model_size"] = float(g["model_size"].iloc[0])
        X = fit.law.design(sched[run], g["step"].to_numpy(), fit.config["settings"], info)
        th = parameter_draws(fit, vs, g["model_size"].iloc[0], rng, new_run=True)
        curves = curve_draws(fit, th, X)
        e = (
            rng.standard_t(nu, size=curves.shape) if student else rng.standard_normal(curves.shape)
        ) * th["_sigma"][:, None]
        out.append((g, curves, curves * np.exp(e)))
    return out


def mixture(a: list[tuple], b: list[tuple], w: float, seed: int = 0) -> pd.DataFrame:
    """Mean and 90 % interval of the mixture w (law a) + (1 - w) (law b), piece by piece (the
    same rows in the same order in ``a`` and ``b``)."""
    rng = np.random.default_rng(seed)
    q = [(1 - PROB) / 2, (1 + PROB) / 2]
    res = []
    for (ga, ca, ya), (gb, cb, yb) in zip(a, b, strict=True):
        if not ga.index.equals(gb.index):
            raise RuntimeError("the two laws' draws are not of the same points")
        S = min(len(ya), len(yb))
        m = int(round(w * S))
        ia, ib = rng.permutation(len(ya))[:m], rng.permutation(len(yb))[: S - m]
        y = np.concatenate([ya[ia], yb[ib]])
        r = ga.copy()
        r["mean"] = w * ca.mean(axis=0) + (1 - w) * cb.mean(axis=0)
        r["lower"], r["upper"] = np.quantile(y, q, axis=0)
        res.append(r)
    return pd.concat(res)


def learn_weight(train: pd.DataFrame, seed: int = 0, log=print) -> dict:
    """The annealing law's weight w from LOSO refits of both laws (module doc)."""
    sched_names = train["run"].map(schedule_of)
    loso = {law: [] for law in LAWS}
    diag = []
    for s in sorted(sched_names.unique()):
        rest, left = train[sched_names != s], train[sched_names == s]
        for law in LAWS:
            t0 = time.perf_counter()
            f = fit_on(rest, law, seed)
            dg = f.diagnostics(prior_check=False)
            diag.append(
                {
                    "left_out": s,
                    "law": law,
                    "max_rhat": dg.max_rhat,
                    "min_ess_bulk": dg.min_ess_bulk,
                    "divergences": dg.divergences,
                    "s": time.perf_counter() - t0,
                }
            )
            loso[law] += predictive_draws(f, left, seed)
            log(
                f"  LOSO {s} {law}: fit {diag[-1]['s']:.0f} s, R-hat {dg.max_rhat:.3f}, "
                f"ESS {dg.min_ess_bulk:.0f}, divergences {dg.divergences}"
            )
    scores = {
        w: run_score(mixture(loso["annealing"], loso["multipower"], w, seed)) for w in WEIGHTS
    }
    w = min(scores, key=lambda k: (round(scores[k], 12), k))
    return {
        "w_annealing": float(w),
        "scores": {str(k): v for k, v in scores.items()},
        "refits": diag,
    }


def main(argv=None):
    a = candidate_args(__doc__, "calibration_stack.json", argv)
    warnings.simplefilter("ignore")
    train, test = load_set(a.set)
    t0 = time.perf_counter()
    cal = learn_weight(train, a.seed, log=lambda m: print(m, flush=True))
    t_cal = time.perf_counter() - t0
    print(
        f"{a.set}: w(annealing) {cal['w_annealing']} (backtests {t_cal:.0f} s); LOSO scores "
        + ", ".join(f"{k}: {v * 100:.3f}" for k, v in cal["scores"].items()),
        flush=True,
    )
    fits, full = {}, {}
    for law in LAWS:
        t0 = time.perf_counter()
        fits[law] = fit_on(train, law, a.seed)
        d = fits[law].diagnostics(prior_check=False)
        full[law] = {
            "s": time.perf_counter() - t0,
            "max_rhat": d.max_rhat,
            "min_ess_bulk": d.min_ess_bulk,
            "divergences": d.divergences,
        }
        print(
            f"{law}: NUTS {full[law]['s']:.0f} s; max R-hat {d.max_rhat:.4f}, min bulk ESS "
            f"{d.min_ess_bulk:.0f}, divergences {d.divergences}",
            flush=True,
        )
    draws = {law: predictive_draws(fits[law], test, a.seed) for law in LAWS}
    stack = mixture(draws["annealing"], draws["multipower"], cal["w_annealing"], a.seed)
    from bayescpt.curves.forecast.predict import predict_frame

    other = predict_frame(fits["multipower"], test, prob=PROB, seed=a.seed)
    sizes, runs = compare_methods(
        get_law("annealing"),
        train,
        test,
        fits["annealing"],
        {"stack": stack, "bayes_multipower": other},
        a.seed,
        a.boot,
    )
    store_scores(
        a.json,
        a.set,
        {"calibration": cal, "backtest_s": t_cal, "full_fits": full},
        fits["annealing"].diagnostics(prior_check=False),
        sizes,
        runs,
    )


if __name__ == "__main__":
    main()
