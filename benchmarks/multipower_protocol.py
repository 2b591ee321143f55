"""The multi-power-law held-out protocol (LAWS.md section 7), Bayesian vs the practitioner's fit.

Fit on ``cosine_24000, constant_24000, wsdcon_9`` (hierarchical across 25M/100M/400M), predict the
six other schedules per size. Baseline, in the same run: per-size multi-start L-BFGS on a Huber
loss (delta 1e-3, log loss) and a 100-resample bootstrap of it for 90 % intervals.

Prints per size: mean/worst relative error, R^2 and 90 % coverage for both; wall-time ratios
(NUTS cold with compile, NUTS warm with the model compiled, vs point fit + bootstrap); one
gradient evaluation (PyTensor's C-backend dlogp, and nutpie's compiled logp + gradient, what the
sampler calls) vs one numpy evaluation of the same law on the same points, interleaved.

    python benchmarks/multipower_protocol.py --law annealing [--boot 100] [--json out.json]
        [--warm-only]
    python benchmarks/multipower_protocol.py --law multipower --law-options '{"progress": true}' ...
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
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bayescpt.curves.data.table import schedules_of
from bayescpt.curves.evaluate import baseline
from bayescpt.curves.evaluate.scores import percent_text, score
from bayescpt.curves.forecast.predict import predict_frame
from bayescpt.curves.model.fit import CompiledFit, Fit
from bayescpt.curves.model.laws import get_law
from bayescpt.datasets.bundled import bundled_multipowerlaw, split


def after_warmup(df):
    """Loss rows from the end of each run's initial warmup on (where the laws apply)."""
    warm = {r: s.warmup_steps for r, s in schedules_of(df).items()}
    return df[df["loss"].notna() & (df["step"] >= df["run"].map(warm))]


def design_of(law, df, settings):
    sched = schedules_of(df)
    pts = after_warmup(df)
    designs, ys, rows = [], [], []
    for run, g in pts.groupby("run", sort=False):
        designs.append(law.design(sched[run], g["step"].to_numpy(), settings))
        ys.append(np.log(g["loss"].to_numpy()))
        rows.append(g)
    return law.stack_designs(designs), np.concatenate(ys), pd.concat(rows)


def practitioner(law, train, test, n_boot, seed=0):
    """Per-size point fit + bootstrap; returns predictions table and timings."""
    settings = law.default_settings
    out, t_point, t_boot = [], 0.0, 0.0
    for size, tr in train.groupby("model_size"):
        X, y, _ = design_of(law, tr, settings)
        t0 = time.perf_counter()
        theta, z_hat = baseline.point_fit(law, X, y, n_starts=16, seed=seed)
        t_point += time.perf_counter() - t0
        t0 = time.perf_counter()
        boots = baseline.bootstrap(law, X, y, n_boot=n_boot, seed=seed, z_hat=z_hat)
        t_boot += time.perf_counter() - t0
        Xt, _, rows = design_of(law, test[test["model_size"] == size], settings)
        point = law.mean(np, theta, Xt)
        bt = {
            p.name: (np.exp(boots[:, i]) if p.positive else boots[:, i])[:, None]
            for i, p in enumerate(law.params)
        }
        with np.errstate(all="ignore"):
            curves = law.mean(np, bt, Xt)
        lo, hi = np.nanquantile(curves, [0.05, 0.95], axis=0)
        r = rows.copy()
        r["mean"], r["lower"], r["upper"] = point, lo, hi
        out.append(r)
    return pd.concat(out), t_point, t_boot


def mre_mcse(fit, test, pred) -> dict:
    """Monte Carlo standard error of the posterior-mean mean relative error, per size (a fraction).

    The error is a smooth function of the mean curve, so to first order its MC error is that of
    one scalar per posterior draw: mean_i sign(mean_i - y_i) f_i(draw) / y_i over the size's
    held-out points i. ArviZ's mcse of that scalar over (chain, draw) counts the autocorrelation
    and the correlation between points (a shift of the whole curve moves every error together).
    """
    import arviz as az

    from bayescpt.curves.data.table import curve_info
    from bayescpt.curves.forecast.predict import curve_draws
    from bayescpt.curves.model.hierarchy import parameter_draws

    sched = schedules_of(test)
    post = fit.idata.posterior
    shape = (post.sizes["chain"], post.sizes["draw"])
    h = pred[pred["loss"].notna() & pred["mean"].notna()]
    out = {}
    for size, hs in h.groupby("model_size"):
        g = np.zeros(shape[0] * shape[1])
        for (run, vs), r in hs.groupby(["run", "val_set"]):
            info = dict(curve_info(test, run, vs), model_size=float(size))
            theta = parameter_draws(fit, vs, size, np.random.default_rng(0))
            X = fit.law.design(sched[run], r["step"].to_numpy(), fit.config["settings"], info)
            c = curve_draws(fit, theta, X)
            c = 0.5 * (c[: len(g)] + c[len(g) :])  # each draw's antithetic pair
            y = r["loss"].to_numpy()
            g += (np.sign(r["mean"].to_numpy() - y) / y * c).sum(axis=1)
        out[f"{size / 1e6:g}M"] = float(np.ravel(az.mcse(g.reshape(shape) / len(hs)))[0])
    return out


def gradient_vs_numpy(fit_model, law, prep, theta_groups, reps=50, compiled=None, repeats=10):
    """Seconds per dlogp call of the PyMC model (PyTensor's C backend) vs per numpy evaluation
    of the law's mean, and per call of nutpie's compiled logp + gradient (``compiled``, the
    function the sampler calls; None without it): medians of ``repeats`` interleaved blocks."""
    from gradient_cost import interleaved, nutpie_gradient

    dlogp = fit_model.compile_dlogp()
    ip = fit_model.initial_point()
    gi = prep.points["group"].to_numpy()
    th = {k: v[gi] for k, v in theta_groups.items()}
    fns = {"dlogp": lambda: dlogp(ip), "numpy": lambda: law.mean(np, th, prep.X)}
    if compiled is not None:
        fns["nutpie"] = nutpie_gradient(compiled)
    for f in fns.values():
        f()
    t = interleaved(fns, reps, repeats)
    return t["dlogp"][0], t["numpy"][0], (t["nutpie"][0] if compiled is not None else None)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--law", default="annealing", choices=["annealing", "multipower"])
    ap.add_argument("--boot", type=int, default=100)
    ap.add_argument("--sampler", default="auto")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--draws",
        type=int,
        default=None,
        help="draws per chain (default: the package's, 1000); more draws shrink the "
        "Monte Carlo error of the posterior mean",
    )
    ap.add_argument(
        "--tune",
        type=int,
        default=None,
        help="tuning steps per chain (default: the law's; the LR-annealing law's is 300 "
        "from 2026-12-05, the package's 1000 before)",
    )
    ap.add_argument("--json", type=Path)
    ap.add_argument(
        "--law-options",
        type=json.loads,
        default={},
        help="the law's options as JSON, e.g. '{\"progress\": true}' (multipower)",
    )
    ap.add_argument(
        "--warm-only",
        action="store_true",
        help="one nutpie run on a precompiled model (cold = compile + warm); halves the "
        "cost on a busy machine",
    )
    a = ap.parse_args(argv)
    warnings.simplefilter("ignore")

    df = bundled_multipowerlaw()
    train, test = split(df)
    law = get_law(a.law, **a.law_options)
    draws = {} if a.draws is None else {"draws": a.draws}
    if a.tune is not None:
        draws["tune"] = a.tune
    print(
        f"== {a.law} law: train {train['run'].nunique()} curves, "
        f"test {test['run'].nunique()} curves ({int(test['loss'].notna().sum())} points)",
        flush=True,
    )

    pred_pt, t_point, t_boot = practitioner(law, train, test, a.boot, a.seed)
    print(
        f"point fit (16-start L-BFGS, 3 sizes): {t_point:.2f} s; bootstrap x{a.boot}: "
        f"{t_boot:.2f} s",
        flush=True,
    )

    if a.warm_only:
        # One NUTS run on a model compiled first: it gives the warm time, and compile + warm is
        # the cold time (the same work as a separate cold fit, which would repeat the sampling).
        compiled = CompiledFit(train, a.law, law_options=a.law_options, **draws)
        t0 = time.perf_counter()
        fit = compiled.fit(train, seed=a.seed)
        t_warm = time.perf_counter() - t0
        t_cold = compiled.compile_seconds + t_warm
        diag = fit.diagnostics()
        print(
            f"NUTS warm (model compiled once, {compiled.compile_seconds:.1f} s): {t_warm:.1f} s; "
            f"max R-hat {diag.max_rhat:.4f}, min bulk ESS {diag.min_ess_bulk:.0f}, "
            f"divergences {diag.divergences}",
            flush=True,
        )
    else:
        t0 = time.perf_counter()
        fit = Fit.run(
            train,
            law=a.law,
            law_options=a.law_options,
            sampler=a.sampler,
            seed=a.seed,
            warn=False,
            **draws,
        )
        t_cold = time.perf_counter() - t0
        diag = fit.diagnostics()
        print(
            f"NUTS cold (compile + sample, {fit.config['sampler']['sampler']}): {t_cold:.1f} s; "
            f"max R-hat {diag.max_rhat:.4f}, min bulk ESS {diag.min_ess_bulk:.0f}, "
            f"divergences {diag.divergences}",
            flush=True,
        )
        t_warm = None
        if fit.config["sampler"]["sampler"] == "nutpie":
            compiled = CompiledFit(train, a.law, law_options=a.law_options, **draws)
            t0 = time.perf_counter()
            compiled.fit(train, seed=a.seed)
            t_warm = time.perf_counter() - t0
            print(
                f"NUTS warm (model compiled once, {compiled.compile_seconds:.1f} s): "
                f"{t_warm:.1f} s",
                flush=True,
            )

    pred = predict_frame(fit, test, prob=0.9, seed=a.seed)
    bayes = score(pred)
    h = pred_pt[pred_pt["loss"].notna()]
    base_rows = []
    for size, g in h.groupby("model_size"):
        rel = np.abs(g["mean"] / g["loss"] - 1)
        ss_res = np.sum((g["loss"] - g["mean"]) ** 2)
        ss_tot = np.sum((g["loss"] - g["loss"].mean()) ** 2)
        inside = (g["loss"] >= g["lower"]) & (g["loss"] <= g["upper"])
        base_rows.append(
            {
                "model_size": f"{size / 1e6:g}M",
                "mean_rel_err": rel.mean(),
                "worst_rel_err": rel.max(),
                "r2": 1 - ss_res / ss_tot,
                "coverage": inside.mean(),
            }
        )
    base = pd.DataFrame(base_rows)
    table = bayes.merge(base, on="model_size", suffixes=("", "_point"))
    mcse = mre_mcse(fit, test, pred)
    table.insert(
        table.columns.get_loc("mean_rel_err") + 1, "mre_mcse", table["model_size"].map(mcse)
    )
    print(
        "\nper size (Bayesian posterior mean / 90 % predictive interval vs point fit / 90 % "
        "bootstrap band):"
    )
    print(percent_text(table, digits=4))
    print(
        "(mre_mcse: Monte Carlo standard error of the posterior-mean relative error; the "
        "Bayesian and point errors differ beyond Monte Carlo noise only where the gap is a few "
        "times it)"
    )
    h2 = pred[pred["loss"].notna()].assign(
        inside=lambda d: (d["loss"] >= d["lower"]) & (d["loss"] <= d["upper"]),
        rel=lambda d: np.abs(d["mean"] / d["loss"] - 1),
    )
    per_run = h2.groupby("run").agg(
        points=("rel", "size"), mean_rel_err=("rel", "mean"), coverage=("inside", "mean")
    )
    print("\nper held-out run (Bayesian):")
    print(per_run.to_string(float_format=lambda v: f"{v:.4f}"))

    from bayescpt.curves.model.hierarchy import build_model, prepare

    prep = prepare(train, fit.law, fit.config["settings"])
    model = build_model(fit.law, prep, fit.config)
    post = fit.idata.posterior
    theta_g = {p.name: post[p.name].mean(("chain", "draw")).values for p in fit.law.params}
    # the law's parameters per group (posterior mean and 90 % interval), e.g. kappa's
    params = {}
    for p in fit.law.params:
        v = post[p.name]
        q = v.quantile([0.05, 0.95], dim=("chain", "draw")).values
        params[p.name] = {
            "mean": np.atleast_1d(v.mean(("chain", "draw")).values).tolist(),
            "q05": np.atleast_1d(q[0]).tolist(),
            "q95": np.atleast_1d(q[1]).tolist(),
        }
    for name in ("kappa",):
        if name in params:
            print(
                f"{name}: posterior mean {params[name]['mean']}, 90 % interval "
                f"{params[name]['q05']} .. {params[name]['q95']} (per group)"
            )
    t_grad, t_np, t_nutpie = gradient_vs_numpy(
        model, fit.law, prep, theta_g, compiled=compiled.compiled if t_warm else None
    )
    baseline_total = t_point + t_boot
    ratios = {
        "nuts_cold_over_point_plus_bootstrap": t_cold / baseline_total,
        "nuts_warm_over_point_plus_bootstrap": (t_warm / baseline_total) if t_warm else None,
        "gradient_over_numpy_eval": t_grad / t_np,
        "nutpie_gradient_over_numpy_eval": (t_nutpie / t_np) if t_nutpie else None,
    }
    print(
        f"\ntimes: point {t_point:.2f} s + bootstrap {t_boot:.2f} s = {baseline_total:.2f} s; "
        f"NUTS cold {t_cold:.1f} s ({ratios['nuts_cold_over_point_plus_bootstrap']:.2f}x)"
        + (
            f", warm {t_warm:.1f} s ({ratios['nuts_warm_over_point_plus_bootstrap']:.2f}x)"
            if t_warm
            else ""
        )
    )
    print(
        f"one gradient (PyMC dlogp, {len(prep.points)} points): {t_grad * 1e3:.2f} ms; one "
        f"numpy evaluation: {t_np * 1e3:.3f} ms ({ratios['gradient_over_numpy_eval']:.1f}x)"
        + (
            f"; nutpie's compiled logp + gradient (what the sampler calls): "
            f"{t_nutpie * 1e3:.2f} ms ({ratios['nutpie_gradient_over_numpy_eval']:.2f}x)"
            if t_nutpie
            else ""
        )
    )
    print(
        f"diagnostics: max R-hat {diag.max_rhat:.4f}, min bulk ESS {diag.min_ess_bulk:.0f}, "
        f"divergences {diag.divergences} -> {'OK' if diag.ok else 'FAIL'}"
    )
    if a.json:
        a.json.write_text(
            json.dumps(
                {
                    "law": a.law,
                    "law_options": a.law_options,
                    "seed": a.seed,
                    "sampler": fit.config["sampler"],
                    "table": table.to_dict(orient="records"),
                    "per_run": per_run.reset_index().to_dict(orient="records"),
                    "times": {
                        "point": t_point,
                        "bootstrap": t_boot,
                        "nuts_cold": t_cold,
                        "nuts_warm": t_warm,
                        "gradient": t_grad,
                        "numpy_eval": t_np,
                        "nutpie_gradient": t_nutpie,
                    },
                    "ratios": ratios,
                    "params": params,
                    "diagnostics": {
                        "max_rhat": diag.max_rhat,
                        "min_ess_bulk": diag.min_ess_bulk,
                        "divergences": diag.divergences,
                    },
                },
                indent=2,
            )
        )


if __name__ == "__main__":
    main()
