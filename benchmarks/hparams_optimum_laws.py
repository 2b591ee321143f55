"""Which optimum law on the Step Law grid: power laws in N and D, in C = 6ND, or in the loss L.

    PYTHONPATH=. python benchmarks/hparams_optimum_laws.py [--laws size_tokens,compute,loss]
        [--seed 0] [--cache DIR] [--out benchmarks/hparams_optimum_laws.json]

For each law, one full fit on all 1,911 runs with the default sampler settings (4 chains x 1000 +
1000 tuning): diagnostics and fit time, the exponents (posterior mean and 90 % interval), and
stage 2 as in ``hparams_loco.py``: for every cell, a checkpoint whose loss lies on the fitted L(C)
at C = 6 N D continues for 1e9, 1e10, 1e11 tokens; does LR_opt fall and B_opt grow with
C_total? Reported two ways: the share of cells whose *median* moves that way, and per posterior
draw (same draw, same new-cell scatter, three CPT budgets) the probability that LR_opt falls /
B_opt grows monotonically, averaged over cells. Then PSIS-LOO (az.compare) over the laws; every
law has the same likelihood (the runs' losses), so elpd compares how well each law's cell optima
explain the runs.

The loss law (``optimum_law: loss``) is Zhou et al.'s form: ln lr*_k = a + bL (ln m_k - ln L_ref)
with m_k the cell's best loss, and stage 2 evaluates it at the loss level L(C_total).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bayescpt.hparams.data import load_steplaw
from bayescpt.hparams.fit import HparamsFit
from bayescpt.hparams.model import EXPONENTS
from bayescpt.hparams.optimum import c_pre_draws, optimum_draws

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "steplaw"

PROB = 0.9
Q = [(1 - PROB) / 2, (1 + PROB) / 2]
CPT_TOKENS = (1e9, 1e10, 1e11)


def _iv(v):
    lo, hi = np.quantile(v, Q)
    return {
        "mean": float(np.mean(v)),
        "lower": float(lo),
        "upper": float(hi),
        "p_positive": float(np.mean(v > 0)),
    }


def stage2(fit, seed=0):
    """Checkpoints on the fitted L(C) at every cell, more and more CPT tokens."""
    law = fit.draws(["L0", "A", "g"])
    rows = []
    for r in fit.cells.itertuples():
        C = 6.0 * r.model_size * r.tokens
        c = np.log(C) - fit.refs.ln_c
        L = float(np.median(law["L0"] + law["A"] * np.exp(-law["g"] * c)))
        cp = c_pre_draws(fit, L, seed=seed)
        lo, hi = np.quantile(cp, Q, method="inverted_cdf")
        lr, bs = zip(
            *[
                optimum_draws(fit, r.model_size, cp + 6.0 * r.model_size * dc, seed=seed)
                for dc in CPT_TOKENS
            ]
        )
        lr, bs = np.array(lr), np.array(bs)  # (budget, draw)
        rows.append(
            {
                "cell": f"N={r.model_size:.4g},D={r.tokens:.4g}",
                "C": C,
                "init_loss": L,
                "C_pre": [float(lo), float(np.median(cp)), float(hi)],
                "C_pre_covered": bool(lo <= C <= hi),
                "lr_opt_median": [float(np.median(v)) for v in lr],
                "batch_opt_median": [float(np.median(v)) for v in bs],
                "p_lr_falls": float(np.mean(np.all(np.diff(lr, axis=0) < 0, axis=0))),
                "p_batch_grows": float(np.mean(np.all(np.diff(bs, axis=0) > 0, axis=0))),
                "lr_ratio_1e11_over_1e9_median": float(np.median(lr[-1] / lr[0])),
                "batch_ratio_1e11_over_1e9_median": float(np.median(bs[-1] / bs[0])),
            }
        )
    return {
        "C_pre_coverage": float(np.mean([s["C_pre_covered"] for s in rows])),
        "share_cells_median_lr_falls": float(
            np.mean([np.all(np.diff(s["lr_opt_median"]) < 0) for s in rows])
        ),
        "share_cells_median_batch_grows": float(
            np.mean([np.all(np.diff(s["batch_opt_median"]) > 0) for s in rows])
        ),
        "p_lr_falls_mean_over_cells": float(np.mean([s["p_lr_falls"] for s in rows])),
        "p_lr_falls_range": [
            float(min(s["p_lr_falls"] for s in rows)),
            float(max(s["p_lr_falls"] for s in rows)),
        ],
        "p_batch_grows_mean_over_cells": float(np.mean([s["p_batch_grows"] for s in rows])),
        "p_batch_grows_range": [
            float(min(s["p_batch_grows"] for s in rows)),
            float(max(s["p_batch_grows"] for s in rows)),
        ],
        "cells": rows,
    }


def run_law(df, law, seed, cache, draws=None, chains=None):
    path = cache / f"steplaw_{law}_seed{seed}.nc" if cache else None
    if path and path.exists():
        fit, wall = HparamsFit.load(path), None
    else:
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit = HparamsFit.run(
                df,
                config={"optimum_law": law},
                seed=seed,
                warn=False,
                draws=draws,
                tune=draws,
                chains=chains,
            )
        wall = round(time.perf_counter() - t0, 1)
        if path:
            fit.save(path, overwrite=True)
    diag = fit.diagnostics()
    names = EXPONENTS[law] + ["tau_lr", "tau_bs", "L0", "A", "g", "tau_L"]
    p = fit.draws(names)
    out = {
        "settings": {k: fit.config["sampler"][k] for k in ("sampler", "chains", "draws", "tune")},
        "fit_seconds_sampling": fit.fit_seconds,
        "fit_seconds_wall": wall,
        "max_rhat": diag.max_rhat,
        "min_ess_bulk": diag.min_ess_bulk,
        "min_ess_tail": diag.min_ess_tail,
        "divergences": diag.divergences,
        "diagnostics_ok": diag.ok,
        "problems": diag.problems(),
        "parameters": {k: _iv(p[k]) for k in names},
        "stage2": stage2(fit, seed),
    }
    if law == "loss":
        out["L_ref"] = float(np.exp(fit.refs.ln_l))
    return fit, out


def main(argv=None):
    import arviz as az

    ap = argparse.ArgumentParser()
    ap.add_argument("--laws", default="size_tokens,compute,loss")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--cache", type=Path, default=None, help="save/reuse the fits here (NetCDF, ~70 MB each)"
    )
    ap.add_argument("--draws", type=int, default=None, help="smoke runs only (default 1000)")
    ap.add_argument("--chains", type=int, default=None, help="smoke runs only (default 4)")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "hparams_optimum_laws.json")
    ap.add_argument(
        "--plot",
        type=Path,
        default=ROOT / "benchmarks" / "hparams_steplaw_loss.png",
        help="plot of the loss-law fit",
    )
    a = ap.parse_args(argv)
    if a.cache:
        a.cache.mkdir(parents=True, exist_ok=True)
    df = load_steplaw(DATA / "dense_lr_bs_loss.csv")
    result = json.loads(a.out.read_text()) if a.out.exists() else {}
    result.setdefault("laws", {})
    idatas = {}
    for law in a.laws.split(","):
        fit, out = run_law(df, law, a.seed, a.cache, a.draws, a.chains)
        result["laws"][law] = out
        idatas[law] = fit.idata
        s = out["stage2"]
        print(
            f"{law}: {out['fit_seconds_wall']} s wall, R-hat {out['max_rhat']:.4f}, bulk ESS "
            f"{out['min_ess_bulk']:.0f}, tail ESS {out['min_ess_tail']:.0f}, div "
            f"{out['divergences']}",
            flush=True,
        )
        for k in EXPONENTS[law]:
            v = out["parameters"][k]
            print(
                f"  {k}: {v['mean']:.3f} [{v['lower']:.3f}, {v['upper']:.3f}] "
                f"P(>0) {v['p_positive']:.3f}"
            )
        print(
            f"  stage 2: C_pre covered {s['C_pre_coverage']:.0%}; median LR falls in "
            f"{s['share_cells_median_lr_falls']:.0%} of cells, batch grows in "
            f"{s['share_cells_median_batch_grows']:.0%}; per draw P(LR falls) "
            f"{s['p_lr_falls_mean_over_cells']:.3f} {s['p_lr_falls_range']}, P(batch grows) "
            f"{s['p_batch_grows_mean_over_cells']:.3f} {s['p_batch_grows_range']}",
            flush=True,
        )
        if law == "loss" and a.plot:
            from bayescpt.hparams.plots import plot_fit

            plot_fit(fit, df).savefig(a.plot, dpi=100)
        a.out.write_text(json.dumps(result, indent=1))
        del fit
    if len(idatas) > 1:
        cmp = az.compare(idatas, ic="loo")
        print(cmp.to_string())
        result["loo_compare"] = json.loads(
            cmp.drop(columns=["warning", "scale"], errors="ignore").to_json(orient="index")
        )
        result["loo_warnings"] = {k: bool(v) for k, v in cmp["warning"].items()}
    a.out.write_text(json.dumps(result, indent=1))
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
