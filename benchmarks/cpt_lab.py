"""The CPT law on the lab's real CPT curves (data/lab: tiny byte-level LMs, PT on prose, CPT on
Python).

One hierarchical fit (validation set x model size groups; replay extension on; the law's
``anchored`` option: the PT power law's loss Lr and slope G at the median transfer area are
sampled instead of L0 and A, which ridge with alpha on these short PT curves far from their floor;
the out-of-domain C-headers set as a combination) on every run except the held-out ones of the
grid config (``heldout_schedules`` = the WSD CPT schedule, ``heldout_replay`` = replay ratio 0.25).
The fit sees the losses every ``--every`` (50) steps plus the early post-transfer evaluations
(CPT steps 1-18, the fast shift); the evaluation every 25 steps carries +-0.03 nats of noise on
prose, and halving the points halves the sampling time. Then:

* in-sample R^2 per validation set at every training loss (beside the paper's 0.994 general /
  0.999 domain), of the fitted curves (each run with its own schedule deviations) and of the
  curves the fit predicts for the same runs as new ones (fresh deviations);
* the held-out WSD runs and the held-out replay-0.25 runs predicted: mean relative error and 90 %
  coverage of the CPT-phase losses per validation set;
* a plot of observed vs predicted with 90 % bands for the held-out runs.

    python benchmarks/cpt_lab.py [--data data/lab/curves.csv.gz] [--json ...] [--plot ...]
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bayescpt.curves.data.thinning import thin_cpt
from bayescpt.curves.data.validate import read_curves
from bayescpt.curves.forecast.predict import predict_frame
from bayescpt.curves.model.fit import Fit
from bayescpt.curves.model.laws.cpt_options import cpt_law_options
from bayescpt.lab.config import load_config

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
GRID = ROOT / "bayescpt" / "lab" / "configs" / "grid.toml"


def fitted_frame(fit, df: pd.DataFrame) -> pd.DataFrame:
    """Median fitted curve at every loss row of the fitted runs, each run with its own posterior
    schedule deviations (``{p}_w``), not fresh ones as for a new run."""
    from bayescpt.curves.data.table import curve_info, schedules_of
    from bayescpt.curves.forecast.predict import curve_draws

    post = fit.idata.posterior
    sched = schedules_of(df)
    curves = fit.curves.set_index(["run", "val_set"])
    rows = []
    for (run, vs), g in df[df["loss"].notna()].groupby(["run", "val_set"], sort=False):
        if (run, vs) not in curves.index:
            continue
        c = curves.loc[(run, vs)]
        info = curve_info(df, run, vs)
        theta = {}
        for p in fit.law.params:
            u = fit.flat(f"{p.name}_u")[:, int(c["group"])]
            if f"{p.name}_w" in post:
                u = u + fit.flat(f"{p.name}_w")[:, int(c["sched_idx"])]
            theta[p.name] = np.exp(u) if fit.config["priors"][p.name]["positive"] else u
        theta["_sigma"] = np.ones_like(u)
        g = g[g["step"] >= sched[run].warmup_steps]
        X = fit.law.design(sched[run], g["step"].to_numpy(), fit.config["settings"], info)
        rows.append(g.assign(median=np.median(curve_draws(fit, theta, X), axis=0)))
    return pd.concat(rows)


def score(pred: pd.DataFrame) -> dict:
    p = pred[pred["loss"].notna() & (pred["phase"] == "cpt") & pred["median"].notna()]
    out = {}
    for vs, g in p.groupby("val_set"):
        inside = (g["loss"] >= g["lower"]) & (g["loss"] <= g["upper"])
        out[vs] = {
            "points": int(len(g)),
            "mre_pct": round(100 * float((g["median"] / g["loss"] - 1).abs().mean()), 3),
            "coverage90": round(float(inside.mean()), 3),
        }
    return out


def r2(pred: pd.DataFrame) -> dict:
    p = pred[pred["loss"].notna() & pred["median"].notna()]
    out = {}
    for vs, g in p.groupby("val_set"):
        ss_res = float(((g["loss"] - g["median"]) ** 2).sum())
        ss_tot = float(((g["loss"] - g["loss"].mean()) ** 2).sum())
        out[vs] = round(1 - ss_res / ss_tot, 5)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=ROOT / "data" / "lab" / "curves.csv.gz")
    ap.add_argument("--runs", type=Path, default=None, help="runs.csv (default: beside --data)")
    ap.add_argument("--draws", type=int, default=None, help="default: the law's (mode's)")
    ap.add_argument("--tune", type=int, default=None)
    ap.add_argument(
        "--every",
        type=int,
        default=50,
        help="fit the losses every N steps (and the early CPT ones); 0: all",
    )
    ap.add_argument("--json", type=Path, default=HERE / "cpt_lab.json")
    ap.add_argument("--plot", type=Path, default=HERE / "cpt_lab.png")
    a = ap.parse_args(argv)
    cfg = load_config(GRID)
    df = read_curves(a.data)
    runs = pd.read_csv(a.runs or a.data.with_name("runs.csv"))
    held_sched = runs["schedule"].isin(cfg.heldout_schedules)
    held_replay = runs["replay_ratio"].isin(cfg.heldout_replay)
    held_runs = set(runs.loc[held_sched | held_replay, "run"])
    train = df[~df["run"].isin(held_runs)]
    opts = cpt_law_options(train, anchored=True)
    print(
        f"fit on {train['run'].nunique()} runs ({opts}); held out: "
        f"{int(held_sched.sum())} WSD runs, {int(held_replay.sum())} replay-0.25 runs",
        flush=True,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = Fit.run(
            thin_cpt(train, a.every),
            law="cpt",
            law_options=opts,
            draws=a.draws,
            tune=a.tune,
            progress=False,
            warn=False,
        )
    d = fit.diagnostics()
    out = {
        "runs_fitted": int(train["run"].nunique()),
        "law_options": opts,
        "every": a.every,
        "points_fitted": int(len(fit.idata.observed_data["y"])),
        "sampler": {k: fit.config["sampler"].get(k) for k in ("chains", "draws", "tune")},
        "anchor_s1": fit.config["settings"].get("anchor_s1"),
        "seconds": round(fit.fit_seconds, 1),
        "max_rhat": round(d.max_rhat, 4),
        "min_ess_bulk": round(d.min_ess_bulk, 1),
        "divergences": d.divergences,
        "diagnostics_ok": d.ok,
        "problems": d.problems(),
    }
    print(json.dumps(out), flush=True)
    out["r2_in_sample"] = r2(fitted_frame(fit, train))
    out["r2_in_sample_as_new_runs"] = r2(predict_frame(fit, train, prob=0.9))
    out["paper_r2"] = {"general": 0.994, "domain": 0.999}
    print("R^2 in sample:", out["r2_in_sample"], flush=True)
    preds = {}
    for name, ids in (
        ("heldout_schedule_wsd", runs.loc[held_sched & ~held_replay, "run"]),
        ("heldout_replay_0.25", runs.loc[held_replay & ~held_sched, "run"]),
    ):
        pred = predict_frame(fit, df[df["run"].isin(set(ids))], prob=0.9)
        preds[name] = pred
        out[name] = score(pred)
        print(name, json.dumps(out[name]), flush=True)
    a.json.write_text(json.dumps(out, indent=1))
    print(f"wrote {a.json}")
    _plot(preds, runs, a.plot)
    print(f"wrote {a.plot}")


def _plot(preds, runs, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sets = ["prose", "python", "c_headers"]
    fig, axes = plt.subplots(2, 3, figsize=(14, 7.5))
    info = runs.set_index("run")
    for row, (name, pred) in zip(axes, preds.items()):
        p = pred[pred["phase"] == "cpt"]
        for ax, vs in zip(row, sets):
            q = p[p["val_set"] == vs]
            ids = sorted(q["run"].unique())
            colors = plt.cm.plasma(np.linspace(0, 0.85, len(ids)))
            for c, run in zip(colors, ids):
                g = q[q["run"] == run].sort_values("step")
                t0 = info.loc[run, "transfer"]
                x = g["step"] - t0
                ax.fill_between(x, g["lower"], g["upper"], color=c, alpha=0.2, lw=0)
                ax.plot(x, g["median"], color=c, lw=1, label=f"{info.loc[run, 'size']} from {t0}")
                o = g[g["loss"].notna()]
                ax.plot(o["step"] - t0, o["loss"], ".", color=c, ms=3)
            ax.set_title(f"{name}: {vs}", fontsize=9)
            ax.set_xlabel("CPT step")
            ax.set_ylabel("validation loss (nats/byte)")
            ax.grid(alpha=0.3)
        row[0].legend(fontsize=6, ncol=2)
    fig.suptitle(
        "CPT law on the lab grid: held-out runs, dots observed, lines median, "
        "bands 90 % predictive",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
