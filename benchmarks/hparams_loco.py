"""Optimal LR / batch size on the Step Law grid: leave-one-cell-out, exponents, stage 2, fit time.

    PYTHONPATH=. python benchmarks/hparams_loco.py [--folds all|0,3,7] [--loco-draws 400]
        [--skip-full] [--out benchmarks/hparams_loco.json]

1. Full fit on all 17 cells with the default sampler settings (4 chains x 1000 + 1000 tuning):
   diagnostics, fit time, posterior exponents vs the authors' 1000 bootstrap OLS fits
   (``1004_fitted_lr_bs_scaling_model_parameters.csv``), and stage 2: for every cell, a checkpoint
   whose loss lies on the fitted L(C) at C = 6 N D must get C_pre back inside its 90 % interval;
   and how LR_opt and B_opt move as continual pre-training adds compute.
2. Leave-one-cell-out (17 refits, 2 chains x ``--loco-draws``): is the held-out cell's empirically
   best (LR, batch) inside the 90 % interval of

   a. the predicted optimum (what ``hparams predict`` reports: law + cell scatter), and
   b. the posterior predictive of the grid's best run
      (``bayescpt.hparams.grid_best.grid_best_draws``, what ``hparams predict --grid-lrs ...
      --grid-batches ...`` reports): per draw, the held-out cell's bowl (new optimum and
      curvature drawn from the fit) evaluated at the cell's actual
      (LR, batch) runs, plus the fitted run noise at the optimum, and its argmin. This is the
      distribution the empirical best is a draw of (the grid is coarse, 2^0.5 in LR, and the
      bowl is flat near its bottom). Widths are reported in grid steps.

   The authors' bootstrap interval at the same cell (fitted on all cells, the held-out one
   included, so favourable to them) is scored the same way (a).

The full grid is used in every fit (no subsampling): 1,911 runs sample in ~1-2 min per fold with
2 chains on 2 shared cores.
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bayescpt.hparams.data import cells, load_steplaw
from bayescpt.hparams.fit import HparamsFit
from bayescpt.hparams.grid_best import grid_best_draws, grid_best_summary, merge_close
from bayescpt.hparams.optimum import c_pre_draws, optimum_draws
from bayescpt.hparams.predict import predict_optimum

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "steplaw"
PROB = 0.9
Q = [(1 - PROB) / 2, (1 + PROB) / 2]


def _iv(v):
    lo, hi = np.quantile(v, Q)
    return {
        "mean": float(np.mean(v)),
        "lower": float(lo),
        "upper": float(hi),
        "width": float(hi - lo),
    }


def bootstrap_reference():
    boot = pd.read_csv(DATA / "1004_fitted_lr_bs_scaling_model_parameters.csv")
    return boot, {
        "lr_coefN": _iv(boot["lr_coefN"]),
        "lr_coefD": _iv(boot["lr_coefD"]),
        "bs_coefD": _iv(boot["bs_coefD"]),
        "n_bootstrap": len(boot),
    }


def full_fit(df, boot_summary, seed, config=None):
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = HparamsFit.run(df, config=config, seed=seed, warn=False)
    wall = time.perf_counter() - t0
    diag = fit.diagnostics()
    p = fit.draws(["bN_lr", "bD_lr", "bN_bs", "bD_bs", "L0", "A", "g", "tau_lr", "tau_bs", "tau_L"])
    ours = {
        "lr_coefN": _iv(p["bN_lr"]),
        "lr_coefD": _iv(p["bD_lr"]),
        "bs_coefN": _iv(p["bN_bs"]),
        "bs_coefD": _iv(p["bD_bs"]),
    }
    width_ratio = {
        k: ours[k]["width"] / boot_summary[k]["width"] for k in ("lr_coefN", "lr_coefD", "bs_coefD")
    }
    # stage 2: checkpoints on the fitted law
    ct = fit.cells
    law = fit.draws(["L0", "A", "g"])
    stage2 = []
    for r in ct.itertuples():
        C = 6.0 * r.model_size * r.tokens
        c = np.log(C) - fit.refs.ln_c
        L = float(np.median(law["L0"] + law["A"] * np.exp(-law["g"] * c)))
        cp = c_pre_draws(fit, L, seed=seed)
        lo, hi = np.quantile(cp, Q, method="inverted_cdf")
        trend = [
            predict_optimum(fit, r.model_size, init_loss=L, cpt_tokens=dc, seed=seed)
            for dc in (1e9, 1e10, 1e11)
        ]
        stage2.append(
            {
                "cell": f"N={r.model_size:.4g},D={r.tokens:.4g}",
                "C": C,
                "init_loss": L,
                "C_pre_median": float(np.median(cp)),
                "C_pre_lower": float(lo),
                "C_pre_upper": float(hi),
                "covered": bool(lo <= C <= hi),
                "lr_opt_median_vs_cpt_tokens": [t["lr_opt"]["median"] for t in trend],
                "batch_opt_median_vs_cpt_tokens": [t["batch_size_opt"]["median"] for t in trend],
            }
        )
    lr_rises = np.mean([np.all(np.diff(s["lr_opt_median_vs_cpt_tokens"]) > 0) for s in stage2])
    bs_rises = np.mean([np.all(np.diff(s["batch_opt_median_vs_cpt_tokens"]) > 0) for s in stage2])
    return fit, {
        "settings": {k: fit.config["sampler"][k] for k in ("sampler", "chains", "draws", "tune")},
        "fit_seconds_sampling": fit.fit_seconds,
        "fit_seconds_wall": round(wall, 1),
        "max_rhat": diag.max_rhat,
        "min_ess_bulk": diag.min_ess_bulk,
        "min_ess_tail": diag.min_ess_tail,
        "divergences": diag.divergences,
        "diagnostics_ok": diag.ok,
        "problems": diag.problems(),
        "exponents": ours,
        "exponent_interval_width_ratio_ours_over_bootstrap": width_ratio,
        "L0": _iv(p["L0"]),
        "A": _iv(p["A"]),
        "g": _iv(p["g"]),
        "tau_lr": _iv(p["tau_lr"]),
        "tau_bs": _iv(p["tau_bs"]),
        "tau_L": _iv(p["tau_L"]),
        "stage2_C_pre_coverage": float(np.mean([s["covered"] for s in stage2])),
        "stage2_share_cells_lr_rises_with_cpt_tokens": float(lr_rises),
        "stage2_share_cells_batch_rises_with_cpt_tokens": float(bs_rises),
        "stage2": stage2,
    }


def inside(v, draws, method="linear"):
    lo, hi = np.quantile(draws, Q, method=method)
    # 1e-3: the Step Law file writes one grid LR with different precision (0.00391, 0.003906)
    return bool(lo * (1 - 1e-3) <= v <= hi * (1 + 1e-3)), float(lo), float(hi)


def steps(values, lo, hi):
    """Grid steps between lo and hi on the sorted distinct (merged) grid ``values``."""
    u = np.unique(merge_close(values))
    return int(np.argmin(abs(np.log(u / hi))) - np.argmin(abs(np.log(u / lo))))


def smooth_steps(values, lo, hi):
    """Width of a smooth interval [lo, hi] in the grid's median step (ln ratio)."""
    u = np.unique(merge_close(values))
    return float(np.log(hi / lo) / np.median(np.diff(np.log(u))))


def loco(df, boot, folds, draws, seed, save=None, config=None):
    ct = cells(df)
    rows = []
    for k in folds:
        cell = ct.iloc[k]
        key = (df["model_size"] == cell["model_size"]) & (df["tokens"] == cell["tokens"])
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit = HparamsFit.run(
                df[~key],
                config=config,
                chains=2,
                draws=draws,
                tune=draws,
                seed=seed + k,
                warn=False,
            )
        wall = time.perf_counter() - t0
        diag = fit.diagnostics()
        N, D = float(cell["model_size"]), float(cell["tokens"])
        held = df[key]
        lr, bs = optimum_draws(fit, N, 6.0 * N * D, seed=seed)
        glr, gbs = grid_best_draws(
            fit, N, 6.0 * N * D, held["lr"].to_numpy(), held["batch_size"].to_numpy(), seed=seed
        )
        gsum, _ = grid_best_summary(
            glr, gbs, held["lr"].to_numpy(), held["batch_size"].to_numpy(), PROB
        )
        hl, hb = merge_close(held["lr"].to_numpy()), held["batch_size"].to_numpy()
        p_best = float(
            np.mean(
                np.isclose(glr, merge_close(np.r_[hl, cell["best_lr"]])[-1], rtol=1e-3)
                & (gbs == cell["best_batch_size"])
            )
        )
        best_lr, best_bs = float(cell["best_lr"]), float(cell["best_batch_size"])
        a_lr = inside(best_lr, lr)
        a_bs = inside(best_bs, bs)
        b_lr = inside(best_lr, glr, "inverted_cdf")
        b_bs = inside(best_bs, gbs, "inverted_cdf")
        blr = np.exp(
            boot["lr_intercept"] + boot["lr_coefN"] * np.log(N) + boot["lr_coefD"] * np.log(D)
        ).to_numpy()
        bbs = np.exp(boot["bs_intercept"] + boot["bs_coefD"] * np.log(D)).to_numpy()
        c_lr, c_bs = inside(best_lr, blr), inside(best_bs, bbs)
        row = {
            "cell": f"N={N:.4g},D={D:.4g}",
            "runs": int(key.sum()),
            "best_lr": best_lr,
            "best_batch_size": best_bs,
            "optimum_lr": [a_lr[1], float(np.median(lr)), a_lr[2]],
            "optimum_bs": [a_bs[1], float(np.median(bs)), a_bs[2]],
            "optimum_lr_in": a_lr[0],
            "optimum_bs_in": a_bs[0],
            "optimum_both_in": a_lr[0] and a_bs[0],
            "grid_best_lr": [b_lr[1], b_lr[2]],
            "grid_best_bs": [b_bs[1], b_bs[2]],
            "grid_best_lr_in": b_lr[0],
            "grid_best_bs_in": b_bs[0],
            "grid_best_both_in": b_lr[0] and b_bs[0],
            "grid_best_lr_steps": steps(hl, b_lr[1], b_lr[2]),
            "grid_best_bs_steps": steps(hb, b_bs[1], b_bs[2]),
            "grid_best_lr_steps_outside": 0
            if b_lr[0]
            else min(abs(steps(hl, b_lr[1], best_lr)), abs(steps(hl, best_lr, b_lr[2]))),
            "grid_best_bs_steps_outside": 0
            if b_bs[0]
            else min(abs(steps(hb, b_bs[1], best_bs)), abs(steps(hb, best_bs, b_bs[2]))),
            "grid_best_prob_of_empirical_best": p_best,
            "grid_best_top_points": gsum["points"][:3],
            "optimum_lr_steps": smooth_steps(hl, a_lr[1], a_lr[2]),
            "optimum_bs_steps": smooth_steps(hb, a_bs[1], a_bs[2]),
            "bootstrap_lr": [c_lr[1], c_lr[2]],
            "bootstrap_bs": [c_bs[1], c_bs[2]],
            "bootstrap_lr_in": c_lr[0],
            "bootstrap_bs_in": c_bs[0],
            "bootstrap_both_in": c_lr[0] and c_bs[0],
            "lr_ratio_best_over_median": best_lr / float(np.median(lr)),
            "bs_ratio_best_over_median": best_bs / float(np.median(bs)),
            "width_factor_optimum_lr": a_lr[2] / a_lr[1],
            "width_factor_bootstrap_lr": c_lr[2] / c_lr[1],
            "width_factor_optimum_bs": a_bs[2] / a_bs[1],
            "width_factor_bootstrap_bs": c_bs[2] / c_bs[1],
            "fit_seconds": round(wall, 1),
            "max_rhat": diag.max_rhat,
            "min_ess_bulk": diag.min_ess_bulk,
            "divergences": diag.divergences,
        }
        rows.append(row)
        if save:
            save(rows)
        print(
            f"fold {k:2d} {row['cell']:<22} best lr {best_lr:.3g} in "
            f"[{a_lr[1]:.3g}, {a_lr[2]:.3g}] {a_lr[0]!s:5}  grid-best "
            f"[{b_lr[1]:.3g}, {b_lr[2]:.3g}] {b_lr[0]!s:5} | best bs {best_bs:.3g} in "
            f"[{a_bs[1]:.3g}, {a_bs[2]:.3g}] {a_bs[0]!s:5} grid-best [{b_bs[1]:.3g}, "
            f"{b_bs[2]:.3g}] {b_bs[0]!s:5} | steps {row['grid_best_lr_steps']},"
            f"{row['grid_best_bs_steps']} p(best) {p_best:.2f} | {wall:.0f} s, "
            f"R-hat {diag.max_rhat:.3f}, "
            f"ESS {diag.min_ess_bulk:.0f}, div {diag.divergences}",
            flush=True,
        )
    return rows


def summarize_loco(rows):
    def share(k):
        return float(np.mean([r[k] for r in rows]))

    out = {
        f"share_{k}": share(k)
        for k in (
            "optimum_both_in",
            "optimum_lr_in",
            "optimum_bs_in",
            "grid_best_both_in",
            "grid_best_lr_in",
            "grid_best_bs_in",
            "bootstrap_both_in",
            "bootstrap_lr_in",
            "bootstrap_bs_in",
        )
    }
    for k in (
        "width_factor_optimum_lr",
        "width_factor_bootstrap_lr",
        "width_factor_optimum_bs",
        "width_factor_bootstrap_bs",
        "grid_best_lr_steps",
        "grid_best_bs_steps",
        "optimum_lr_steps",
        "optimum_bs_steps",
        "grid_best_prob_of_empirical_best",
    ):
        out[f"median_{k}"] = float(np.median([r[k] for r in rows]))
    out["median_abs_ln_error_lr"] = float(
        np.median([abs(np.log(r["lr_ratio_best_over_median"])) for r in rows])
    )
    out["median_abs_ln_error_bs"] = float(
        np.median([abs(np.log(r["bs_ratio_best_over_median"])) for r in rows])
    )
    for v in ("lr", "bs"):
        out[f"share_{v}_within_factor_1.5_of_median"] = float(
            np.mean([abs(np.log(r[f"{v}_ratio_best_over_median"])) < np.log(1.5) for r in rows])
        )
    out["mean_log_prob_of_empirical_best"] = float(
        np.mean([np.log(max(r["grid_best_prob_of_empirical_best"], 1e-4)) for r in rows])
    )
    out["fit_seconds_median"] = float(np.median([r["fit_seconds"] for r in rows]))
    out["fit_seconds_total"] = float(np.sum([r["fit_seconds"] for r in rows]))
    out["max_rhat_worst"] = float(np.max([r["max_rhat"] for r in rows]))
    out["min_ess_bulk_worst"] = float(np.min([r["min_ess_bulk"] for r in rows]))
    out["divergences_total"] = int(np.sum([r["divergences"] for r in rows]))
    out["folds"] = len(rows)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--folds", default="all")
    ap.add_argument("--loco-draws", type=int, default=400)
    ap.add_argument("--skip-full", action="store_true")
    ap.add_argument("--skip-loco", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--noise",
        choices=["quadrature", "linear"],
        default="quadrature",
        help="the model's run-noise form (config key noise)",
    )
    ap.add_argument(
        "--optimum-law",
        choices=["size_tokens", "compute", "loss"],
        default="size_tokens",
        help="the optimum law of the LOCO fits (config key "
        "optimum_law); other than size_tokens needs --skip-full (the full fits of "
        "every law are in benchmarks/hparams_optimum_laws.py)",
    )
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "hparams_loco.json")
    ap.add_argument("--plot", type=Path, default=ROOT / "benchmarks" / "hparams_steplaw.png")
    a = ap.parse_args(argv)
    if a.optimum_law != "size_tokens" and not a.skip_full:
        ap.error("--optimum-law other than size_tokens needs --skip-full")
    df = load_steplaw(DATA / "dense_lr_bs_loss.csv")
    boot, boot_summary = bootstrap_reference()
    result = json.loads(a.out.read_text()) if a.out.exists() else {}
    result["data"] = {"runs": len(df), "cells": int(len(cells(df))), "subsampled": False}
    result["bootstrap"] = boot_summary
    if not a.skip_full:
        fit, full = full_fit(df, boot_summary, a.seed, {"noise": a.noise})
        result["full_fit"] = full
        print(
            f"full fit: {full['fit_seconds_wall']} s wall ({full['settings']}); max R-hat "
            f"{full['max_rhat']:.4f}, min bulk ESS {full['min_ess_bulk']:.0f}, divergences "
            f"{full['divergences']}"
        )
        for k in ("lr_coefN", "lr_coefD", "bs_coefD"):
            o, b = full["exponents"][k], boot_summary[k]
            print(
                f"  {k}: ours {o['mean']:.3f} [{o['lower']:.3f}, {o['upper']:.3f}]  bootstrap "
                f"{b['mean']:.3f} [{b['lower']:.3f}, {b['upper']:.3f}]  width ratio "
                f"{o['width'] / b['width']:.2f}"
            )
        o = full["exponents"]["bs_coefN"]
        print(
            f"  bs_coefN: ours {o['mean']:.3f} [{o['lower']:.3f}, {o['upper']:.3f}] "
            "(the authors fix it at 0)"
        )
        print(
            f"  stage 2: C_pre covered in {full['stage2_C_pre_coverage']:.0%} of cells; LR_opt "
            f"rises with CPT tokens in {full['stage2_share_cells_lr_rises_with_cpt_tokens']:.0%}"
            f", B_opt in {full['stage2_share_cells_batch_rises_with_cpt_tokens']:.0%}"
        )
        from bayescpt.hparams.plots import plot_fit

        plot_fit(fit, df).savefig(a.plot, dpi=100)
        a.out.write_text(json.dumps(result, indent=1))
    if not a.skip_loco:
        n = len(cells(df))
        folds = range(n) if a.folds == "all" else [int(x) for x in a.folds.split(",")]

        def save(rows):
            result["loco_partial"] = rows
            a.out.write_text(json.dumps(result, indent=1))

        rows = loco(
            df,
            boot,
            folds,
            a.loco_draws,
            a.seed,
            save,
            {"noise": a.noise, "optimum_law": a.optimum_law},
        )
        result.pop("loco_partial", None)
        result["loco"] = {
            "settings": {
                "chains": 2,
                "draws": a.loco_draws,
                "tune": a.loco_draws,
                "noise": a.noise,
                "optimum_law": a.optimum_law,
            },
            "summary": summarize_loco(rows),
            "folds": rows,
        }
        s = result["loco"]["summary"]
        print(json.dumps(s, indent=1))
        a.out.write_text(json.dumps(result, indent=1))
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
