"""The CPT law on simulated PT (WSD) -> CPT runs with known parameters.

1. Held-out schedule: Fig. 3 parameters of Wang et al. 2025 (both validation sets), CPT runs from
   transfer steps 8000 (stable phase) and 10000 (annealed); fit on the cosine and constant CPT
   runs, predict the WSD CPT runs: mean relative error, 90 % coverage, diagnostics, fit time, at the
   default sampler settings.
2. Recovery: ``--sets`` simulated data sets whose truths scatter around Fig. 3 (each parameter
   times exp(0.15 z), L0 times exp(0.02 z)), each fitted once (the model compiled once); the share
   of (set, validation set) pairs whose true value lies in the central 90 % interval, per parameter.
   With 2 x sets pairs the binomial 90 % range of a calibrated interval is printed beside it.

    python benchmarks/cpt_simulated.py [--sets 20] [--json benchmarks/cpt_simulated.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bayescpt.cpt.simulate import PAPER_FIG3, simulate_cpt
from bayescpt.curves.forecast.predict import predict_frame
from bayescpt.curves.model.fit import CompiledFit, Fit

HERE = Path(__file__).resolve().parent
PARAMS = ("L0", "A", "alpha", "C1", "C2", "Bref", "E", "beta")


def held_out(seed: int) -> dict:
    curves, truth = simulate_cpt(seed=seed)
    held = curves["run"].str.endswith("/wsd")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = Fit.run(curves[~held], law="cpt", seed=seed, progress=False, warn=False)
    d = fit.diagnostics()
    pred = predict_frame(fit, curves[held], prob=0.9)
    pred = pred[pred["loss"].notna() & (pred["phase"] == "cpt")].copy()
    pred["rel"] = (pred["median"] / pred["loss"] - 1).abs()
    pred["inside"] = (pred["loss"] >= pred["lower"]) & (pred["loss"] <= pred["upper"])
    out = {
        "seconds": round(fit.fit_seconds, 1),
        "max_rhat": round(d.max_rhat, 4),
        "min_ess_bulk": round(d.min_ess_bulk, 1),
        "divergences": d.divergences,
        "diagnostics_ok": d.ok,
        "problems": d.problems(),
    }
    post = fit.idata.posterior
    for vs, g in pred.groupby("val_set"):
        out[f"{vs}_mre_pct"] = round(100 * float(g["rel"].mean()), 3)
        out[f"{vs}_coverage90"] = round(float(g["inside"].mean()), 3)
        true = float(truth.set_index("val_set").loc[vs, "Bref"])
        lo, hi = np.quantile(post["Bref"].sel(group=vs).values.ravel(), [0.05, 0.95])
        out[f"{vs}_Bref"] = {
            "true": round(true, 4),
            "lower": round(float(lo), 4),
            "upper": round(float(hi), 4),
        }
    return out


def recovery(n_sets: int, draws: int, tune: int) -> dict:
    rng = np.random.default_rng(2025)
    truths = []
    for _ in range(n_sets):
        t = {}
        for role, th in PAPER_FIG3.items():
            t[role] = {
                k: v * float(np.exp((0.02 if k == "L0" else 0.15) * rng.standard_normal()))
                for k, v in th.items()
            }
        truths.append(t)
    template, _ = simulate_cpt(truths[0], seed=0)
    t0 = time.perf_counter()
    compiled = CompiledFit(template, "cpt", chains=4, draws=draws, tune=tune)
    print(f"  compiled in {time.perf_counter() - t0:.1f} s", flush=True)
    hits = {p: [] for p in PARAMS}
    diags = []
    for i, t in enumerate(truths):
        curves, table = simulate_cpt(t, seed=100 + i)
        fit = compiled.fit(curves, seed=i)
        d = fit.diagnostics()
        diags.append(
            {
                "max_rhat": d.max_rhat,
                "min_ess_bulk": d.min_ess_bulk,
                "divergences": d.divergences,
                "seconds": fit.fit_seconds,
            }
        )
        post = fit.idata.posterior
        truth = table.set_index("val_set")
        for p in PARAMS:
            for vs in ("general", "domain"):
                lo, hi = np.quantile(post[p].sel(group=vs).values.ravel(), [0.05, 0.95])
                hits[p].append(bool(lo <= truth.loc[vs, p] <= hi))
        print(
            f"  set {i + 1}/{n_sets}: R-hat {d.max_rhat:.3f}, ESS {d.min_ess_bulk:.0f}, "
            f"div {d.divergences}, {fit.fit_seconds:.1f} s",
            flush=True,
        )
    n = 2 * n_sets
    lo, hi = stats.binom.ppf([0.05, 0.95], n, 0.9) / n
    rates = {p: round(float(np.mean(h)), 3) for p, h in hits.items()}
    every = np.concatenate([np.asarray(h) for h in hits.values()])
    return {
        "sets": n_sets,
        "pairs_per_param": n,
        "rate_per_param": rates,
        "rate_all": round(float(every.mean()), 3),
        "binomial_90pct_range_per_param": [round(float(lo), 3), round(float(hi), 3)],
        "max_rhat": round(max(x["max_rhat"] for x in diags), 4),
        "min_ess_bulk": round(min(x["min_ess_bulk"] for x in diags), 1),
        "divergences": int(sum(x["divergences"] for x in diags)),
        "mean_seconds": round(float(np.mean([x["seconds"] for x in diags])), 1),
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", type=int, default=20)
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--tune", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--skip-heldout", action="store_true")
    ap.add_argument("--json", type=Path, default=HERE / "cpt_simulated.json")
    a = ap.parse_args(argv)
    # a part run alone updates its key and keeps the other part's last result
    out = json.loads(a.json.read_text()) if a.json.exists() else {}
    if not a.skip_heldout:
        print("1. held-out CPT schedule (fit cosine + constant, predict WSD), default settings")
        out["heldout"] = held_out(a.seed)
        print("  " + json.dumps(out["heldout"]), flush=True)
    if a.sets:
        print(f"2. recovery over {a.sets} simulated sets")
        out["recovery"] = recovery(a.sets, a.draws, a.tune)
        print("  " + json.dumps(out["recovery"]))
    a.json.write_text(json.dumps(out, indent=1))
    print(f"wrote {a.json}")


if __name__ == "__main__":
    main()
