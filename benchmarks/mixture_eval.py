"""Evaluate the mixture laws on the real data (issue 6) and write benchmarks/mixture_eval.json.

Parts (run one at a time on a shared machine; each writes its own entry in the JSON):

table2   Gu et al. 2024 Table 2: fit L(R) = alpha R^s + beta (final budget, pooled over the four
         sizes) on R = 1, 3/4, 1/2, 1/3; predict R = 1/4. Error vs the paper's 0.02-0.05 %, and
         whether the observed loss is inside the 90 % predictive interval.
ct       Data Mixing Laws CPT (Pythia-70M, Pile + Python): the critical Pile share keeping the
         weighted Pile loss at its pre-CPT level (tolerance 0) at the final 10K steps, fitted on
         the four runs at Pile share 0.125/0.25/0.375/0.5 (the authors' validation run at 0.285
         held out); compared with the authors' 0.285. (a) final-budget exponential law, as the
         authors; (b) the law over tokens (all checkpoints), R_CMR(T), and coverage of the held-out
         run's 20 checkpoints.
sim      Recovery: simulated CPT runs (bayescpt.mixture.simulate, one run per ratio 0.2..0.8,
         checkpoints 1K-10K) from a known law, several seeds; is the true CMR (absolute eps 0 and
         0.02 nats, relative 1 %) inside the 90 % interval, how wide is it, diagnostics.
2mix     Data Mixing Laws 2Mix (70M + 160M from scratch, Github vs Pile-CC): one hierarchical fit
         on checkpoints <= 20K steps, coverage and error on the held-out 22K-30K checkpoints
         (extrapolation in tokens); and one fit without the ratio-0.5 runs, predicting them
         (a new mixture).
2mix-interp  the same fit on every other checkpoint, predicting the ones between (interpolation).
2mix-two-term  the 2mix extrapolation with two token terms per loss.

Usage: python benchmarks/mixture_eval.py PART [--quick]   (--quick: 2 chains x 500, for
development; the reported numbers use the defaults, 4 chains x 2000 draws after 2000 tuning).
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

from bayescpt.mixture import data as D
from bayescpt.mixture.cmr_law import fit_cmr_law, fit_cmr_law_draws
from bayescpt.mixture.decide import CmrCriterion, cmr_paths, cmr_report, cmr_vs_tokens, feasibility
from bayescpt.mixture.fit import MixtureFit, predict_rows

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
OUT = ROOT / "benchmarks" / "mixture_eval.json"
PROB = 0.9


def _fit(df, config, args):
    kw = dict(chains=2, draws=500, tune=500) if args.quick else {}
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = MixtureFit.run(df, config=config, seed=args.seed, warn=False, **kw)
    diag = fit.diagnostics()
    info = {
        "seconds": round(time.perf_counter() - t0, 1),
        "chains": diag.chains,
        "draws": diag.draws,
        "max_rhat": round(diag.max_rhat, 4),
        "min_ess_bulk": round(diag.min_ess_bulk, 1),
        "divergences": diag.divergences,
        "ok": diag.ok,
        "problems": diag.problems(),
    }
    print(f"  sampled in {info['seconds']} s: {diag.to_text().splitlines()[0]}")
    return fit, info


def _coverage(pred):
    inside = (pred["loss"] >= pred["lower"]) & (pred["loss"] <= pred["upper"])
    err = 100 * (pred["median"] / pred["loss"] - 1)
    return (
        {
            "n": int(len(pred)),
            "coverage_90": round(float(inside.mean()), 4),
            "mean_abs_err_pct": round(float(err.abs().mean()), 4),
            "max_abs_err_pct": round(float(err.abs().max()), 4),
        },
        inside,
        err,
    )


def part_table2(args):
    path = SHARED / "paper-figures" / "cmr_table2_domain_loss_vs_ratio.csv"
    df = D.load_cmr_table2(path)
    train, test = df[df["ratio"] > 0.3], df[df["ratio"] < 0.3]
    fit, diag = _fit(train, {"token_terms": {"general": 0, "domain": 0}}, args)
    pred = predict_rows(fit, test.reset_index(drop=True), prob=PROB, seed=args.seed)
    import pandas as pd

    paper = pd.read_csv(path).set_index("row_type")
    rows = []
    for _, r in pred.sort_values("model_size").iterrows():
        name = r["run"].split("/")[0]
        rows.append(
            {
                "model": name,
                "observed": r["loss"],
                "predicted_median": round(r["median"], 5),
                "lower_90": round(r["lower"], 5),
                "upper_90": round(r["upper"], 5),
                "err_pct": round(100 * (r["median"] / r["loss"] - 1), 4),
                "inside_90": bool(r["lower"] <= r["loss"] <= r["upper"]),
                "paper_predicted": float(paper.loc["predicted", f"loss_{name}"]),
                "paper_err_pct": float(paper.loc["rel_diff_pct", f"loss_{name}"]),
            }
        )
        print(
            f"  {name}: observed {r['loss']:.4f}, predicted {r['median']:.4f} "
            f"[{r['lower']:.4f}, {r['upper']:.4f}], error {rows[-1]['err_pct']:+.3f} % "
            f"(paper {rows[-1]['paper_err_pct']:.2f} %)"
        )
    coefs = {}
    for gi, g in fit.groups.iterrows():
        c = fit.coefficients(gi)
        coefs[f"{g['model_size'] / 1e6:g}M"] = {
            k: [
                round(float(np.median(v)), 5),
                round(float(np.quantile(v, 0.05)), 5),
                round(float(np.quantile(v, 0.95)), 5),
            ]
            for k, v in c.items()
        }
    if args.plots:
        import matplotlib.pyplot as plt

        from bayescpt.mixture.plots import plot_loss_vs_ratio

        fig, axes = plt.subplots(1, 4, figsize=(17, 3.6))
        for ax, (_, g) in zip(axes, fit.groups.iterrows()):
            held = test[test["model_size"] == g["model_size"]]
            plot_loss_vs_ratio(
                fit,
                g["model_size"],
                "domain",
                1.0,
                held_out=held,
                ax=ax,
                title=f"CMR Table 2, {g['model_size'] / 1e6:g}M: domain loss",
            )
        fig.tight_layout()
        fig.savefig(ROOT / "benchmarks" / "mixture_table2.png", dpi=100)
    return {
        "protocol": "fit R in {1, 3/4, 1/2, 1/3} per size (pooled curvature), predict 1/4",
        "diagnostics": diag,
        "predictions": rows,
        "coefficients_median_90": coefs,
        "mean_abs_err_pct": round(float(np.mean([abs(r["err_pct"]) for r in rows])), 4),
        "inside_90": sum(r["inside_90"] for r in rows),
    }


def _ct_point_fit(train):
    """The authors' way: least squares of the final Pile loss L(r) = c + k exp(t r) over the Pile
    share r, solved for L(r) = pre-CPT loss. Four runs, three parameters: no interval."""
    from scipy.optimize import brentq, curve_fit

    pile = train[train["val_set"] == "pile"]
    L0 = float(pile.loc[pile["tokens"] == 0, "loss"].iloc[0])
    fin = pile[pile["tokens"] == pile["tokens"].max()]
    r, y = 1 - fin["ratio"].to_numpy(), fin["loss"].to_numpy()
    law = lambda r, c, k, t: c + k * np.exp(t * r)  # noqa: E731
    (c, k, t), _ = curve_fit(law, r, y, p0=(y.min() - 0.05, 0.1, -5.0), maxfev=50000)
    share = brentq(lambda x: law(x, c, k, t) - L0, 0.01, 0.99)
    return {
        "c": round(float(c), 5),
        "k": round(float(k), 5),
        "t": round(float(t), 4),
        "critical_pile_share": round(float(share), 4),
    }


def part_ct(args):
    df = D.load_ct(
        SHARED / "mixinglaws" / "ct" / "70M.txt", SHARED / "mixinglaws" / "valid_weight.json"
    )
    held_run = df["run"].str.contains("_9-")
    train, held = df[~held_run], df[held_run & (df["tokens"] > 0)].reset_index(drop=True)
    out = {"authors_critical_pile_share": 0.285, "point_fit_exp": _ct_point_fit(train)}
    print(f" point fit (least squares, the authors' method): {out['point_fit_exp']}")
    grid = np.round(np.linspace(0.0, 1.0, 1001), 6)
    for label, cfg in [
        ("final_budget_exp", {"ratio_form": "exp", "token_terms": {"general": 0, "domain": 0}}),
        ("tokens_exp", {"ratio_form": "exp"}),
    ]:
        print(f" {label}")
        fit, diag = _fit(train, cfg, args)
        f = feasibility(fit, 70e6, 10000, 0.0, ratios=grid)
        cmr = f.cmr_draws()
        share = 1 - cmr
        lo, hi = np.quantile(share, [(1 - PROB) / 2, (1 + PROB) / 2])
        res = {
            "diagnostics": diag,
            "critical_pile_share": {
                "median": round(float(np.median(share)), 4),
                "mean": round(float(np.mean(share)), 4),
                "lower_90": round(float(lo), 4),
                "upper_90": round(float(hi), 4),
            },
            "p_feasible_at_authors_pile_share_0.285": float(
                f.p_feasible[np.argmin(abs(grid - 0.71484375))]
            ),
            "cmr_at_risk_0.1_as_pile_share": round(1 - f.cmr_at_risk(0.1), 4),
        }
        last = held[held["tokens"] == 10000] if label.startswith("final") else held
        pred = predict_rows(fit, last, prob=PROB, seed=args.seed)
        cov, inside, err = _coverage(pred)
        res["held_out_run_0.285"] = cov
        res["held_out_final"] = [
            {
                "val_set": r["val_set"],
                "observed": round(r["loss"], 5),
                "predicted_median": round(r["median"], 5),
                "lower_90": round(r["lower"], 5),
                "upper_90": round(r["upper"], 5),
            }
            for _, r in pred[pred["tokens"] == 10000].iterrows()
        ]
        print(
            f"  critical Pile share {res['critical_pile_share']} (authors 0.285); held-out run: "
            f"{cov}"
        )
        if label == "tokens_exp":
            budgets = [2000, 3000, 4000, 5000, 6000, 7000, 8000, 9000, 10000]
            tab = cmr_vs_tokens(fit, 70e6, budgets, 0.0)
            tab_share = tab.assign(
                median=1 - tab["median"], lower=1 - tab["upper"], upper=1 - tab["lower"]
            )
            res["critical_pile_share_vs_steps"] = (
                tab_share[["tokens", "median", "lower", "upper"]].round(4).to_dict("records")
            )
            res["cmr_law_median"] = fit_cmr_law(tab)
            res["cmr_law_per_draw_90"] = fit_cmr_law_draws(
                budgets, cmr_paths(fit, 70e6, budgets, 0.0), PROB
            )
            if args.plots:
                from bayescpt.mixture.plots import plot_cmr

                rep = cmr_report(fit, 70e6, 10000, CmrCriterion(0.0))
                rep["cmr_vs_tokens"] = tab.to_dict("records")
                plot_cmr(fit, [rep]).savefig(ROOT / "benchmarks" / "mixture_ct70m_cmr.png", dpi=110)
        out[label] = res
    return out


def part_sim(args):
    from bayescpt.mixture import simulate

    truth = simulate.DEFAULT_TRUTH
    cases = [(0.0, False), (0.02, False), (0.01, True)]
    out = {
        "truth": truth,
        "protocol": "ratios 0.2-0.8 (step 0.15), checkpoints 1K-10K, budget 10K; CMR interval 90 %",
        "seeds": [],
    }
    for seed in range(args.nsim):
        df = simulate.simulate_cpt(
            seed=seed, ratios=(0.2, 0.35, 0.5, 0.65, 0.8), tokens=tuple(range(1000, 10001, 1000))
        )
        print(f" seed {seed}")
        fit, diag = _fit(df, {}, args)
        row = {"seed": seed, "diagnostics": diag, "cases": []}
        for eps, rel in cases:
            true = simulate.true_cmr(truth, 10000, 10000, 0.2, 0.8, eps, relative=rel)
            rep = cmr_report(fit, 70e6, 10000, CmrCriterion(eps, rel))
            c = rep["cmr"]
            row["cases"].append(
                {
                    "tolerance": eps,
                    "relative": rel,
                    "true_cmr": round(true, 4),
                    **{k: round(v, 4) for k, v in c.items()},
                    "cmr_at_risk_0.1": rep["cmr_at_risk"],
                    "inside_90": bool(c["lower"] <= true <= c["upper"]),
                }
            )
            print(
                f"  eps {eps} {'rel' if rel else 'abs'}: true {true:.3f}, CMR {c['median']:.3f} "
                f"[{c['lower']:.3f}, {c['upper']:.3f}]"
            )
        if args.plots and seed == 0:
            from bayescpt.mixture.plots import plot_cmr

            rep = cmr_report(fit, 70e6, 10000, CmrCriterion(0.02))
            rep["cmr_vs_tokens"] = cmr_vs_tokens(fit, 70e6, range(2000, 10001, 1000), 0.02).to_dict(
                "records"
            )
            plot_cmr(fit, [rep]).savefig(ROOT / "benchmarks" / "mixture_sim_cmr.png", dpi=110)
        out["seeds"].append(row)
    # two sizes in one hierarchical fit (shapes pooled across sizes), each with its own CMR
    big = {
        "general": dict(truth["general"], m=2.70, d=-0.10, c=1.6, loss0=2.64),
        "domain": dict(truth["domain"], m=1.25, d=0.07, c=-0.4, A=[0.07], loss0=1.70),
    }
    import pandas as pd

    kw = dict(ratios=(0.2, 0.35, 0.5, 0.65, 0.8), tokens=tuple(range(1000, 10001, 1000)))
    df = pd.concat(
        [
            simulate.simulate_cpt(seed=10, model_size=70e6, **kw),
            simulate.simulate_cpt(big, seed=11, model_size=160e6, **kw),
        ]
    )
    print(" two sizes")
    fit, diag = _fit(df, {}, args)
    two = {"diagnostics": diag, "truth_160M": big, "cases": []}
    for size, th in ((70e6, truth), (160e6, big)):
        for eps, rel in cases:
            true = simulate.true_cmr(th, 10000, 10000, 0.2, 0.8, eps, relative=rel)
            c = cmr_report(fit, size, 10000, CmrCriterion(eps, rel))["cmr"]
            two["cases"].append(
                {
                    "model_size": size,
                    "tolerance": eps,
                    "relative": rel,
                    "true_cmr": round(true, 4),
                    **{k: round(v, 4) for k, v in c.items()},
                    "inside_90": bool(c["lower"] <= true <= c["upper"]),
                }
            )
            print(
                f"  {size / 1e6:g}M eps {eps} {'rel' if rel else 'abs'}: true {true:.3f}, CMR "
                f"{c['median']:.3f} [{c['lower']:.3f}, {c['upper']:.3f}]"
            )
    out["two_sizes"] = two
    allc = [c for r in out["seeds"] for c in r["cases"]] + two["cases"]
    out["inside_90"] = f"{sum(c['inside_90'] for c in allc)}/{len(allc)}"
    out["mean_width_90"] = round(float(np.mean([c["upper"] - c["lower"] for c in allc])), 4)
    out["all_diagnostics_ok"] = all(r["diagnostics"]["ok"] for r in out["seeds"] + [two])
    return out


def part_2mix(args):
    df = D.load_2mix(SHARED / "mixinglaws" / "2Mix")
    train, test = df[df["tokens"] <= 20000], df[df["tokens"] > 20000].reset_index(drop=True)
    out = {
        "protocol": "fit steps 10K-20K of both sizes (one hierarchical fit), predict the "
        "22K-30K checkpoints of the same runs"
    }
    for form in ["power", "exp"] if not args.quick else ["power"]:
        print(f" {form}")
        fit, diag = _fit(train, {"ratio_form": form}, args)
        pred = predict_rows(fit, test, prob=PROB, seed=args.seed)
        cov, inside, err = _coverage(pred)
        by = {}
        for (size, vs), g in pred.groupby(["model_size", "val_set"]):
            c, _, _ = _coverage(g)
            by[f"{vs}|{size / 1e6:g}M"] = c
        out[form] = {"diagnostics": diag, "held_out": cov, "by_group": by}
        print(f"  held out: {cov}")
        if args.plots and form == "power":
            import matplotlib.pyplot as plt

            from bayescpt.mixture.plots import plot_loss_vs_ratio

            fig, axes = plt.subplots(1, 4, figsize=(17, 3.6))
            for ax, (_, g) in zip(axes, fit.groups.iterrows()):
                held = test[
                    (test["model_size"] == g["model_size"])
                    & (test["val_set"] == g["val_set"])
                    & (test["tokens"] == 30000)
                ]
                plot_loss_vs_ratio(
                    fit,
                    g["model_size"],
                    g["val_set"],
                    30000,
                    held_out=held,
                    ax=ax,
                    title=f"2Mix {g['val_set']} {g['model_size'] / 1e6:g}M at 30K (fit <= 20K)",
                )
            fig.tight_layout()
            fig.savefig(ROOT / "benchmarks" / "mixture_2mix.png", dpi=100)
    # a new mixture: leave the middle ratio out entirely (all checkpoints, both sizes)
    mid = 0.5
    train, test = df[df["ratio"] != mid], df[df["ratio"] == mid].reset_index(drop=True)
    print(f" power, ratio {mid} held out")
    fit, diag = _fit(train, {"ratio_form": "power"}, args)
    pred = predict_rows(fit, test, prob=PROB, seed=args.seed)
    cov, _, _ = _coverage(pred)
    by = {
        f"{vs}|{size / 1e6:g}M": _coverage(g)[0]
        for (size, vs), g in pred.groupby(["model_size", "val_set"])
    }
    out["held_out_ratio_0.5"] = {
        "protocol": "fit ratios 0.25/0.375/0.625/0.75, all checkpoints; "
        "predict every checkpoint of the 0.5 runs (a new run: fresh "
        "run deviation)",
        "diagnostics": diag,
        "held_out": cov,
        "by_group": by,
    }
    print(f"  held out: {cov}")
    return out


def part_2mix_two_term(args):
    df = D.load_2mix(SHARED / "mixinglaws" / "2Mix")
    train, test = df[df["tokens"] <= 20000], df[df["tokens"] > 20000].reset_index(drop=True)
    print(" power, two token terms per loss")
    fit, diag = _fit(
        train, {"ratio_form": "power", "token_terms": {"general": 2, "domain": 2}}, args
    )
    pred = predict_rows(fit, test, prob=PROB, seed=args.seed)
    cov, _, err = _coverage(pred)
    by = {
        f"{vs}|{size / 1e6:g}M": _coverage(g)[0]
        for (size, vs), g in pred.groupby(["model_size", "val_set"])
    }
    print(f"  held out: {cov}; mean signed error {err.mean():+.3f} %")
    return {
        "protocol": "as 2mix (fit <= 20K, predict 22K-30K) with two token terms for both "
        "losses (the CMR paper's dL_gen form)",
        "diagnostics": diag,
        "held_out": cov,
        "mean_signed_err_pct": round(float(err.mean()), 4),
        "by_group": by,
    }


def part_2mix_interp(args):
    df = D.load_2mix(SHARED / "mixinglaws" / "2Mix")
    held = {12000, 14000, 18000, 22000, 27000}
    train = df[~df["tokens"].isin(held)]
    test = df[df["tokens"].isin(held)].reset_index(drop=True)
    print(" power, every other checkpoint held out")
    fit, diag = _fit(train, {"ratio_form": "power"}, args)
    pred = predict_rows(fit, test, prob=PROB, seed=args.seed)
    cov, _, _ = _coverage(pred)
    by = {
        f"{vs}|{size / 1e6:g}M": _coverage(g)[0]
        for (size, vs), g in pred.groupby(["model_size", "val_set"])
    }
    print(f"  held out: {cov}")
    return {
        "protocol": "fit checkpoints 10K/13K/16K/20K/24K/30K of both sizes, predict 12K/14K/"
        "18K/22K/27K of the same runs (interpolation in steps)",
        "diagnostics": diag,
        "held_out": cov,
        "by_group": by,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("part", choices=["table2", "ct", "2mix", "2mix-interp", "2mix-two-term", "sim"])
    ap.add_argument("--nsim", type=int, default=4, help="seeds for the sim part")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-plots", dest="plots", action="store_false")
    args = ap.parse_args()
    print(f"part {args.part}{' (quick)' if args.quick else ''}")
    t0 = time.perf_counter()
    res = {
        "table2": part_table2,
        "ct": part_ct,
        "2mix": part_2mix,
        "2mix-interp": part_2mix_interp,
        "2mix-two-term": part_2mix_two_term,
        "sim": part_sim,
    }[args.part](args)
    res["settings"] = "quick 2x500" if args.quick else "defaults 4x2000 (+2000 tuning)"
    res["wall_seconds"] = round(time.perf_counter() - t0, 1)
    allres = json.loads(OUT.read_text()) if OUT.exists() else {}
    allres[args.part] = res
    OUT.write_text(json.dumps(allres, indent=1, default=float) + "\n")
    print(f"wrote {OUT} [{args.part}]")


if __name__ == "__main__":
    main()
