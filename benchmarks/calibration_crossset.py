"""A discrepancy growing past the training range, its rate chosen on the *other* sets (issue 16
item 1, fourth candidate; the first three are ``calibration_layer.py``, ``calibration_bayes.py``
and ``calibration_stack.py``).

Why: the three candidates that learn from a user's training runs alone miss the same thing, the
error of extrapolating to runs 2-5x longer than any training run (nothing in three training
schedules of the training length shows it). The remaining honest option is a rate learned on
other data and judged where it was not learned. This script measures it:

* the default fit of each set (default settings, seed 0) predicts the set's held-out runs with its
  fresh schedule deviation (k = 1) and a log-loss discrepancy ``b d z`` (z ~ N(0, 1) per draw and
  point), ``d = ln(step / the size's longest training step)``, 0 inside the training range: the
  same predictive as ``calibration_bayes.py``'s ``predict_kb(pieces, 1, b)``;
* every b of ``B_GRID`` (per unit of ln step) is scored on every set by the mean over held-out runs
  of the run's mean interval score / y (90 %);
* **leave one set out**: for each law, set X's rate is the b minimising the mean of that score over
  the law's other sets (each set weighted equally); X's per-size bars are then read at that b.

Frozen before it ran (grid, d, k = 1, the score, equal set weights, seed 0). Disclosure: every set
has been looked at before (the growth form was suggested by the OLMo and multipowerlaw misses), so
this is a leave-one-set-out measurement of a rate, not of the form. The point fit's error and the
bootstrap and conformal scores for the bars are those of ``calibration_sets.json`` (same held-out
points after warmup; the point counts are checked).

Run: ``python benchmarks/calibration_crossset.py`` (six default fits: ~15 min idle on 2 cores;
``--json``: default ``benchmarks/calibration_crossset.json``; a rerun skips set/law pairs already
in it).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from calibration_bayes import draws, fit_on, predict_kb, run_score  # noqa: E402
from calibration_sets import _jsonable, bars, load_set, summarize  # noqa: E402
from multipower_protocol import after_warmup  # noqa: E402

SETS = ("multipowerlaw", "lab_pt", "olmo")
LAWS = ("annealing", "multipower")
B_GRID = (0.0, 0.001, 0.002, 0.003, 0.004, 0.006, 0.008, 0.012, 0.016, 0.024, 0.032)


def measure(set_name: str, law: str, seed: int = 0) -> dict:
    """The default fit of ``set_name`` and, per b of ``B_GRID``, its held-out run score and
    per-size score table."""
    train, test = load_set(set_name)
    t0 = time.perf_counter()
    fit = fit_on(train, law, seed)
    t_fit = time.perf_counter() - t0
    dg = fit.diagnostics()
    longest = after_warmup(train).groupby("model_size")["step"].max()
    pieces = draws(fit, test, longest, seed)
    per_b = {}
    for b in B_GRID:
        pred = predict_kb(pieces, 1.0, b)
        sizes, runs = summarize({"bayes": pred})
        per_b[str(b)] = {
            "run_score": run_score(pred),
            "per_size": sizes.to_dict(orient="records"),
            "per_run": runs[
                ["model_size", "run", "coverage", "interval_score", "mean_rel_err", "rel_width"]
            ].to_dict(orient="records"),
        }
    return {
        "fit_s": t_fit,
        "diagnostics": {
            "max_rhat": dg.max_rhat,
            "min_ess_bulk": dg.min_ess_bulk,
            "divergences": dg.divergences,
        },
        "per_b": per_b,
    }


def choose(store: dict) -> dict:
    """Per law and held-out set X: the b minimising the mean run score over the other sets."""
    out = {}
    for law in LAWS:
        have = [s for s in SETS if f"{s}/{law}" in store]
        for x in have:
            others = [s for s in have if s != x]
            if not others:
                continue
            mean = {
                b: float(
                    np.mean([store[f"{s}/{law}"]["per_b"][str(b)]["run_score"] for s in others])
                )
                for b in B_GRID
            }
            out[f"{x}/{law}"] = {
                "chosen_on": others,
                "b": min(mean, key=mean.get),
                "scores_on_others": mean,
            }
    return out


def bars_at(store: dict, key: str, b: float) -> pd.DataFrame:
    """The issue's bars per size (``calibration_sets.bars``) for set/law ``key`` at rate ``b``,
    against the point fit, bootstrap and conformal rows of ``calibration_sets.json``, beside the
    values they compare."""
    base = json.loads((ROOT / "benchmarks" / "calibration_sets.json").read_text())[key]
    ref = pd.DataFrame(base["per_size"])
    ref = ref[ref["method"].isin(["bootstrap", "conformal"])]
    ours = pd.DataFrame(store[key]["per_b"][str(b)]["per_size"]).assign(method="bayes")
    boot = ref[ref["method"] == "bootstrap"].set_index("model_size")
    for s, n in zip(ours["model_size"], ours["points"]):
        if boot.loc[s, "points"] != n:
            raise SystemExit(
                f"{key} {s}: {n} points here, {boot.loc[s, 'points']} in calibration_sets.json"
            )
    t = bars(pd.concat([ours, ref], ignore_index=True))
    conf = ref[ref["method"] == "conformal"].set_index("model_size")
    vals = ours.set_index("model_size")[
        ["coverage", "width_over_mae", "mean_rel_err", "min_run_coverage", "interval_score"]
    ]
    vals["point_rel_err"] = boot["mean_rel_err"]
    vals["boot_score"] = boot["interval_score"]
    vals["conf_score"] = conf["interval_score"]
    return vals.reset_index().merge(t, on="model_size")


def report(store: dict) -> dict:
    chosen = choose(store)
    out = {}
    for key, c in chosen.items():
        t = bars_at(store, key, c["b"])
        t0 = bars_at(store, key, 0.0)
        out[key] = {
            **c,
            "bars": t.to_dict(orient="records"),
            "default_bars": t0.to_dict(orient="records"),
        }
        own = {b: store[key]["per_b"][str(b)]["run_score"] for b in B_GRID}
        print(
            f"\n{key}: b = {c['b']} chosen on {', '.join(c['chosen_on'])}; own-set best b "
            f"{min(own, key=own.get)}; run score at chosen b {own[c['b']] * 100:.3f} % "
            f"(default b = 0: {own[0.0] * 100:.3f} %)"
        )
        for (_, r), (_, r0) in zip(t.iterrows(), t0.iterrows()):
            print(
                f"  {r['model_size']:>10}: cov {r['coverage'] * 100:5.1f} (b=0 "
                f"{r0['coverage'] * 100:5.1f}) width/MAE {r['width_over_mae']:4.1f} err "
                f"{r['mean_rel_err'] * 100:.3f}/{r['point_rel_err'] * 100:.3f} min run "
                f"{r['min_run_coverage'] * 100:3.0f} IS {r['interval_score'] * 100:.2f} (b=0 "
                f"{r0['interval_score'] * 100:.2f}; boot {r['boot_score'] * 100:.2f}, conf "
                f"{r['conf_score'] * 100:.2f}) all bars: {r['all']}"
            )
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "calibration_crossset.json")
    a = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    store = json.loads(a.json.read_text()) if a.json.exists() else {}
    for s in SETS:
        for law in LAWS:
            key = f"{s}/{law}"
            if key in store:
                continue
            t0 = time.perf_counter()
            store[key] = _jsonable(measure(s, law, a.seed))
            d = store[key]["diagnostics"]
            print(
                f"{key}: fit {store[key]['fit_s']:.0f} s (R-hat {d['max_rhat']:.4f}, ESS "
                f"{d['min_ess_bulk']:.0f}, div {d['divergences']}); total "
                f"{time.perf_counter() - t0:.0f} s",
                flush=True,
            )
            tmp = a.json.with_suffix(".tmp")
            tmp.write_text(json.dumps(store, indent=1, default=float))
            tmp.replace(a.json)
    store["leave_one_set_out"] = _jsonable(report(store))
    tmp = a.json.with_suffix(".tmp")
    tmp.write_text(json.dumps(store, indent=1, default=float))
    tmp.replace(a.json)


if __name__ == "__main__":
    main()
