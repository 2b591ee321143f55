"""The CPT law on the mixing-laws CPT experiment (Pythia-70M, Pile + Python at five Pile shares).

The law's options come from the data (:func:`bayescpt.cpt.cpt_law_options`): the replay extension,
and the checkpoint mode (all runs continue one checkpoint, whose loss is the only PT loss).

1. The CPT schedule was not published: fit the law jointly on all five shares
   under each candidate schedule (:data:`bayescpt.mixinglaws.CPT_SCHEDULES`) and compare them by
   PSIS-LOO (elpd; higher is better).
2. Under the chosen schedule, hold out one share at a time (all five), fit the other four and
   predict the held-out run on both validation sets: relative error and 90 % coverage.
3. A plot of observed vs predicted with bands for the held-out shares (one panel per set).

    python benchmarks/cpt_mixinglaws.py [--draws N] [--json benchmarks/cpt_mixinglaws.json]
        [--plot benchmarks/cpt_mixinglaws.png]
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

from bayescpt.curves.forecast.predict import predict_frame
from bayescpt.curves.model.fit import Fit
from bayescpt.curves.model.laws.cpt_options import cpt_law_options
from bayescpt.datasets.mixinglaws import (
    CPT_SCHEDULES,
    DEFAULT_CPT_SCHEDULE,
    TRANSFER,
    load_mixinglaws_ct,
)

ROOT = Path(__file__).resolve().parents[2] / "shared" / "data" / "mixinglaws"
HERE = Path(__file__).resolve().parent


def fit(df, draws, tune, seed=0):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Fit.run(
            df,
            law="cpt",
            law_options=cpt_law_options(df),
            draws=draws,
            tune=tune,
            seed=seed,
            progress=False,
            warn=False,
        )


def diag_dict(f):
    d = f.diagnostics()
    return {
        "max_rhat": round(d.max_rhat, 4),
        "min_ess_bulk": round(d.min_ess_bulk, 1),
        "divergences": d.divergences,
        "ok": d.ok,
        "seconds": round(f.fit_seconds, 1),
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, default=ROOT)
    ap.add_argument("--draws", type=int, default=None, help="default: the law's (mode's)")
    ap.add_argument("--tune", type=int, default=None, help="default: the law's (mode's)")
    ap.add_argument("--schedules", nargs="*", default=list(CPT_SCHEDULES))
    ap.add_argument("--json", type=Path, default=HERE / "cpt_mixinglaws.json")
    ap.add_argument("--plot", type=Path, default=HERE / "cpt_mixinglaws.png")
    a = ap.parse_args(argv)
    import arviz as az

    out = {
        "draws": a.draws,
        "tune": a.tune,
        "schedules": {},
        "law_options": cpt_law_options(load_mixinglaws_ct(a.root)),
    }
    print(f"cpt law options (from the data): {out['law_options']}")
    print("1. which CPT schedule do the data support? (joint fit on all five shares)")
    loos = {}
    for kind in a.schedules:
        df = load_mixinglaws_ct(a.root, cpt_schedule=kind)
        f = fit(df, a.draws, a.tune)
        out["draws"], out["tune"] = f.config["sampler"]["draws"], f.config["sampler"]["tune"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            loo = az.loo(f.idata)
        loos[kind] = loo
        pred = predict_frame(f, df, prob=0.9)
        pred = pred[pred["loss"].notna()]
        rel = (pred["median"] / pred["loss"] - 1).abs()
        res = {
            "elpd_loo": round(float(loo.elpd_loo), 2),
            "se": round(float(loo.se), 2),
            "p_loo": round(float(loo.p_loo), 2),
            "pareto_k_over_0.7": int((loo.pareto_k > 0.7).sum()),
            "in_sample_mre_pct": round(100 * float(rel.mean()), 3),
            **diag_dict(f),
        }
        out["schedules"][kind] = res
        print(
            f"  {kind:16s} elpd_loo {res['elpd_loo']:8.2f} (se {res['se']:.2f}, "
            f"k>0.7: {res['pareto_k_over_0.7']}), in-sample MRE {res['in_sample_mre_pct']:.3f} %,"
            f" R-hat {res['max_rhat']}, ESS {res['min_ess_bulk']}, div {res['divergences']},"
            f" {res['seconds']} s",
            flush=True,
        )
    # The package's default schedule stays unless another beats it by more than two standard
    # errors of the elpd difference (az.compare's dse): a tie is not evidence for a change.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cmp = az.compare(loos)
    top = cmp.index[0]
    dse = float(cmp.loc[DEFAULT_CPT_SCHEDULE, "dse"]) if DEFAULT_CPT_SCHEDULE in cmp.index else 0.0
    gap = (
        float(cmp.loc[top, "elpd_loo"] - cmp.loc[DEFAULT_CPT_SCHEDULE, "elpd_loo"])
        if DEFAULT_CPT_SCHEDULE in cmp.index
        else np.inf
    )
    best = top if gap > 2 * dse else DEFAULT_CPT_SCHEDULE
    out["compare"] = {
        k: {"elpd_diff": round(float(r["elpd_diff"]), 2), "dse": round(float(r["dse"]), 2)}
        for k, r in cmp.iterrows()
    }
    for k, r in cmp.iterrows():
        print(f"  {k:16s} elpd difference to the best {r['elpd_diff']:7.2f} (se {r['dse']:.2f})")
    out["chosen_schedule"] = best
    print(
        f"  -> {best} (the package default {DEFAULT_CPT_SCHEDULE!r} unless another is better "
        "by more than 2 se of the difference)"
    )

    print(f"2. hold out one Pile share at a time (schedule {best})")
    df = load_mixinglaws_ct(a.root, cpt_schedule=best)
    preds, holds = [], []
    for run in sorted(df["run"].unique()):
        f = fit(df[df["run"] != run], a.draws, a.tune)
        p = predict_frame(f, df[df["run"] == run], prob=0.9)
        p = p[p["loss"].notna() & (p["step"] > TRANSFER)].copy()
        p["rel"] = (p["median"] / p["loss"] - 1).abs()
        p["inside"] = (p["loss"] >= p["lower"]) & (p["loss"] <= p["upper"])
        # the whole curve of the held-out run, for the plot
        dense = df[df["run"] == run].copy()
        curve = predict_frame(f, dense, prob=0.9)
        curve = curve[curve["step"] >= TRANSFER]
        preds.append(curve)
        row = {"held_out": run, **diag_dict(f)}
        for vs, g in p.groupby("val_set"):
            row[f"{vs}_mre_pct"] = round(100 * float(g["rel"].mean()), 3)
            row[f"{vs}_coverage90"] = round(float(g["inside"].mean()), 3)
        holds.append(row)
        print("  " + ", ".join(f"{k} {v}" for k, v in row.items()), flush=True)
    tab = pd.DataFrame(holds)
    out["holdout"] = holds
    for vs in ("general", "domain"):
        out[f"holdout_{vs}_mre_pct"] = round(float(tab[f"{vs}_mre_pct"].mean()), 3)
        out[f"holdout_{vs}_coverage90"] = round(float(tab[f"{vs}_coverage90"].mean()), 3)
        print(
            f"  {vs}: mean MRE {out[f'holdout_{vs}_mre_pct']} %, "
            f"90 % coverage {out[f'holdout_{vs}_coverage90']}"
        )
    a.json.write_text(json.dumps(out, indent=1))
    print(f"wrote {a.json}")
    _plot(pd.concat(preds), df, a.plot, best)
    print(f"wrote {a.plot}")


def _plot(pred, df, path, kind):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    runs = sorted(pred["run"].unique())
    colors = plt.cm.viridis(np.linspace(0, 0.9, len(runs)))
    for ax, vs in zip(axes, ("general", "domain")):
        for c, run in zip(colors, runs):
            p = pred[(pred["run"] == run) & (pred["val_set"] == vs)].sort_values("step")
            x = p["step"] - TRANSFER
            ax.fill_between(x, p["lower"], p["upper"], color=c, alpha=0.2, lw=0)
            ax.plot(x, p["median"], color=c, lw=1.2, label=f"{run} (held out)")
            o = df[(df["run"] == run) & (df["val_set"] == vs) & df["loss"].notna()]
            ax.plot(o["step"] - TRANSFER, o["loss"], "o", color=c, ms=4)
        ax.set_title(f"{vs} ({'Pile, weighted' if vs == 'general' else 'Python'})")
        ax.set_xlabel("CPT step (from Pythia-70M step 20000)")
        ax.set_ylabel("validation loss (nats)")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.suptitle(
        f"CPT law, each Pile share predicted from the other four (CPT schedule "
        f"assumed: {kind}); dots observed, bands 90 % predictive",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
