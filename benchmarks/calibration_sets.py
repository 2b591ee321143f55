"""Calibration of the default fits on held-out sets, beside two baselines (issue 16, items 2-3).

    python benchmarks/calibration_sets.py --set olmo|steplaw|multipowerlaw|lab_pt[_late]|all
        [--law annealing|multipower] [--seed 0] [--boot 100]
        [--json benchmarks/calibration_sets.json] [--force]

Loss-curve sets (``olmo``: annealing law; ``multipowerlaw``: the annealing and the multi-power law,
``--law`` picks one, default both):

* ``multipowerlaw``: the held-out protocol of ``multipower_protocol.py`` (fit ``cosine_24000,
  constant_24000, wsdcon_9`` at 25M/100M/400M, predict the six other schedules). The defaults
  were tuned on it: it is not an independent set, it is reported for the per-schedule view.
* ``olmo``: the OLMo-2 ladder of ``olmo_ladder.py`` (c4_en; fit the 0.5x/1x/2x Chinchilla runs of
  five sizes, predict the 5x and 10x runs), warmup evaluations not scored.
* ``lab_pt`` (item 3a): the lab's PT-only runs of ``data/lab_pt/`` (config
  ``bayescpt/lab/configs/pt_schedules.toml``): three sizes, fit the three training schedules
  (constant, cosine, WSD linear 20 %, 1200 steps) on the general validation set, predict the
  seven held-out schedules (``heldout_schedule`` in ``runs.csv``), both laws.
* ``lab_pt_late``: the same with the losses before step 300 (a quarter of a training run) left
  out of the fit and of the scores (the learning rates stay). **Post hoc**: added after the
  ``lab_pt`` run showed the laws misfitting the tiny models' first few hundred steps (the fit's
  own training curves biased +10.7 % at steps 50-100, -2 % at 200-800), to ask whether the
  intervals hold in the late regime the laws are written for; 300 was picked then, not tuned.

Three methods, computed in the same run, scored on the same points (after each run's warmup):

``bayes``
    ``Fit.run`` with the package's defaults (4 chains, default draws/tune/sampler), ``--seed``;
    ``predict_frame``'s posterior mean and 90 % predictive interval. Its R-hat, bulk ESS and
    divergences are reported.
``bootstrap``
    the practitioner of ``multipower_protocol.py``: per size a 16-start L-BFGS point fit on a
    Huber loss of the log loss, the 90 % band of ``--boot`` point-resampled refits (100).
``conformal``
    split conformal by schedule, per size, around the same point fit. For each training run k of
    the size, refit the point fit (same 16-start L-BFGS, same seed) on the size's other training
    runs, predict run k, and take the absolute log residuals r = |ln(y / yhat)| of its points
    (after warmup). Pool the residuals of all k of the size (n points) and take q = the
    ceil((n + 1) 0.9)-th smallest (the ceil((n+1) 0.9)/n empirical quantile; infinite if that
    exceeds n). The band is yhat exp(-q) .. yhat exp(+q) around the full point fit's prediction
    (trained on every training run of the size) of each held-out point.

    Why points and not schedules as the conformal unit: a schedule-level score (e.g. each
    left-out run's largest residual, one per run) is the exchangeable unit the split is meant to
    honour, but with 3 training runs per size ceil((3 + 1) 0.9) = 4 > 3 gives an infinite band
    (it needs >= 9 runs per group for a finite 90 % quantile). So the residuals are pooled over
    points, and the usual guarantee does not hold: residuals within a curve are strongly
    correlated (n is effectively ~3, not hundreds), the left-out run is predicted by a fit on 2
    runs (a harder task than the full fit on 3: conservative), and the held-out schedules are
    longer or of a different shape than the training ones (not exchangeable with them:
    anti-conservative). It is a baseline, not a guaranteed interval.

Scores per (size, held-out run) and per size (``bayescpt.curves.evaluate.scores.score``): mean
relative error of the centre (posterior mean / point fit), bias (mean signed relative error,
mean / y - 1), 90 % coverage, mean relative width (upper - lower) / y, interval score / y
(Gneiting & Raftery eq. 43; lower is better); per size also the width over the centre's mean
absolute relative error and the lowest per-run coverage. The issue's bars are checked per size
for ``bayes``.

``steplaw`` (hyperparameter law, extrapolation in D): on the Step Law grid hold out the largest
token budget of every model size (5 cells), fit the default hparams model (default sampler
settings) on the other 12 cells once, and for each held-out cell ask whether the 90 %
``grid_best`` interval (``bayescpt.hparams.grid_best.grid_best_draws`` on that cell's actual runs)
holds the cell's empirically best LR and batch, and how wide it is in grid steps
(``hparams_loco.steps``). Bar: both inside in >= 80 % of held-out cells at a median width <= 3
grid steps. Beside it, a practitioner: OLS on the 12 training cells' best runs, ln LR_opt and
ln B_opt each linear in ln N and ln D, prediction snapped to the held-out cell's nearest grid
value, +-1 grid step (hit: the best run's value is at most one grid step from it).

Results go to ``--json`` under keys ``"<set>/<law>"``; a key already there is skipped (rerun with
``--force`` to replace it).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bayescpt.curves.evaluate.scores import score  # noqa: E402  (light: numpy and pandas only)

PROB = 0.9
METHODS = ("bayes", "bootstrap", "conformal")


# ---------------------------------------------------------------- pure functions (unit-tested)


def conformal_quantile(residuals, prob: float = PROB) -> float:
    """The ceil((n + 1) prob)-th smallest of ``residuals`` (n of them); inf when that is > n."""
    s = np.sort(np.asarray(residuals, dtype=float).ravel())
    n = s.size
    k = int(np.ceil((n + 1) * prob - 1e-9))  # 1e-9: (n + 1) 0.9 is 9.000000000000002 at n = 9
    return float("inf") if k > n or n == 0 else float(s[k - 1])


def conformal_band(mean, q):
    """(lower, upper) = mean exp(-q), mean exp(+q): a symmetric band in log loss (``q`` a
    scalar or one per point)."""
    mean, q = np.asarray(mean, dtype=float), np.asarray(q, dtype=float)
    return mean * np.exp(-q), mean * np.exp(q)


def schedule_of(run: str) -> str:
    """``25M/cosine_72000`` -> ``cosine_72000``; ``190M-5xC`` -> ``5xC``; ``s/pt/step-1200`` ->
    ``step-1200``."""
    return run.rsplit("/", 1)[1] if "/" in run else run.split("-", 1)[-1]


def score_table(pred: pd.DataFrame, by, prob: float = PROB) -> pd.DataFrame:
    """``score`` by ``by`` plus ``bias`` (mean of mean / loss - 1) and ``width_over_mae``
    (rel_width / mean_rel_err)."""
    t = score(pred, prob, by=by)
    h = pred[pred["loss"].notna() & pred["mean"].notna()]
    keys = [by] if isinstance(by, str) else list(by)
    t["bias"] = [
        float(np.mean(g["mean"] / g["loss"] - 1))
        for _, g in h.groupby(keys, sort=True, dropna=False)
    ]
    t["width_over_mae"] = t["rel_width"] / t["mean_rel_err"]
    return t


def summarize(preds: dict, prob: float = PROB) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-size and per-(size, run) tables of every method in ``preds`` (method -> prediction
    table with loss, mean, lower, upper, model_size, run), stacked with a ``method`` column."""
    sizes, runs = [], []
    for m, p in preds.items():
        r = score_table(p, ["model_size", "run"], prob)
        s = score_table(p, "model_size", prob)
        s["min_run_coverage"] = [
            float(r.loc[r["model_size"] == lab, "coverage"].min()) for lab in s["model_size"]
        ]
        r.insert(2, "schedule", r["run"].map(schedule_of))
        sizes.append(s.assign(method=m))
        runs.append(r.assign(method=m))
    return pd.concat(sizes, ignore_index=True), pd.concat(runs, ignore_index=True)


def bars(size_table: pd.DataFrame, method: str = "bayes") -> pd.DataFrame:
    """The issue's bars per size for ``method`` (default ``bayes``; True = holds): coverage in
    [85, 95] %, width <= 5x the posterior mean's mean abs. relative error, mean error <= the point
    fit's (the bootstrap row's centre), no held-out run below 70 % coverage, interval score below
    both baselines'."""
    t = size_table.set_index(["method", "model_size"])
    out = []
    for size in t.loc[method].index:
        b = t.loc[(method, size)]
        row = {
            "model_size": size,
            "coverage_85_95": bool(0.85 <= b["coverage"] <= 0.95),
            "width_le_5x_mae": bool(b["width_over_mae"] <= 5),
            "error_le_point": bool(b["mean_rel_err"] <= t.loc[("bootstrap", size), "mean_rel_err"]),
            "no_run_below_70": bool(b["min_run_coverage"] >= 0.70),
        }
        for m in ("bootstrap", "conformal"):
            if (m, size) in t.index:
                row[f"score_beats_{m}"] = bool(
                    b["interval_score"] < t.loc[(m, size), "interval_score"]
                )
        row["all"] = all(v for k, v in row.items() if k != "model_size")
        out.append(row)
    return pd.DataFrame(out)


def nearest_step_hit(grid, predicted: float, actual: float, tol_steps: int = 1) -> tuple:
    """The practitioner's rule: snap ``predicted`` to the nearest value of the (merged, sorted,
    distinct) ``grid`` in log distance; hit when ``actual`` is at most ``tol_steps`` grid steps
    from it. Returns (hit, snapped value, steps between actual and snapped)."""
    from bayescpt.hparams.grid_best import merge_close

    u = np.unique(merge_close(np.asarray(grid, dtype=float)))
    i = int(np.argmin(np.abs(np.log(u / predicted))))
    j = int(np.argmin(np.abs(np.log(u / actual))))
    return abs(i - j) <= tol_steps, float(u[i]), j - i


def ols_optimum(train_cells: pd.DataFrame, test_cells: pd.DataFrame) -> pd.DataFrame:
    """OLS of ln best_lr and ln best_batch_size on [1, ln N, ln D] over ``train_cells``,
    predicted at ``test_cells``: columns lr_ols, bs_ols."""

    def X(c):
        return np.column_stack([np.ones(len(c)), np.log(c["model_size"]), np.log(c["tokens"])])

    out = test_cells[["model_size", "tokens"]].copy()
    for col, name in (("best_lr", "lr_ols"), ("best_batch_size", "bs_ols")):
        beta, *_ = np.linalg.lstsq(
            X(train_cells), np.log(train_cells[col].to_numpy(float)), rcond=None
        )
        out[name] = np.exp(X(test_cells) @ beta)
    return out


# ---------------------------------------------------------------- loss-curve sets

LAB_PT = ROOT / "data" / "lab_pt"


def lab_pt_split(root: Path = LAB_PT, from_step: int = 0):
    """(train, test) of the lab's PT-only set: general validation set only, split by the
    ``heldout_schedule`` flag of ``runs.csv``; losses before ``from_step`` emptied (the LR rows
    stay, so the schedules are whole)."""
    from bayescpt.curves.data.validate import read_curves

    df = read_curves(root / "curves.csv.gz")
    df = df[df["val_role"] == "general"].reset_index(drop=True)
    df.loc[df["step"] < from_step, "loss"] = np.nan
    runs = pd.read_csv(root / "runs.csv")
    held = set(runs.loc[runs["heldout_schedule"], "run"])
    is_test = df["run"].isin(held)
    return df[~is_test].reset_index(drop=True), df[is_test].reset_index(drop=True)


def load_set(name: str):
    """(train, test) of a loss-curve set; test rows inside a run's warmup are dropped (OLMo) or
    left unpredicted (multipowerlaw, lab_pt: the fit's skip_warmup leaves them empty)."""
    if name == "multipowerlaw":
        from bayescpt.datasets.bundled import bundled_multipowerlaw, split

        return split(bundled_multipowerlaw())
    if name == "lab_pt":
        return lab_pt_split()
    if name == "lab_pt_late":
        return lab_pt_split(from_step=300)
    from olmo_ladder import olmo_split

    return olmo_split()


def loo_residuals(law, train: pd.DataFrame, seed: int = 0) -> tuple[dict, list]:
    """Per size: |ln(y / yhat)| of every training run k predicted by the point fit on the size's
    other training runs (see the module doc). Returns ({size: residuals}, per-fold rows)."""
    from multipower_protocol import design_of

    from bayescpt.curves.evaluate import baseline

    settings = law.default_settings
    res, folds = {}, []
    for size, tr in train.groupby("model_size"):
        pooled = []
        for run in tr["run"].unique():
            X, y, _ = design_of(law, tr[tr["run"] != run], settings)
            theta, _ = baseline.point_fit(law, X, y, n_starts=16, seed=seed)
            Xk, yk, _ = design_of(law, tr[tr["run"] == run], settings)
            with np.errstate(all="ignore"):
                r = np.abs(yk - np.log(law.mean(np, theta, Xk)))
            r = np.where(np.isfinite(r), r, np.inf)
            pooled.append(r)
            folds.append(
                {
                    "model_size": f"{size / 1e6:g}M",
                    "left_out": run,
                    "points": len(r),
                    "median_abs_log_resid": float(np.median(r)),
                    "max_abs_log_resid": float(np.max(r)),
                }
            )
        res[size] = np.concatenate(pooled)
    return res, folds


def curve_set(name: str, law_name: str, seed: int, n_boot: int) -> dict:
    from multipower_protocol import practitioner

    from bayescpt.curves.forecast.predict import predict_frame
    from bayescpt.curves.model.fit import Fit
    from bayescpt.curves.model.laws import get_law

    train, test = load_set(name)
    law = get_law(law_name)
    print(
        f"== {name} / {law_name}: train {train['run'].nunique()} runs, test "
        f"{test['run'].nunique()} runs",
        flush=True,
    )
    t0 = time.perf_counter()
    pred_pt, t_point, t_boot = practitioner(law, train, test, n_boot, seed)
    t_prac = time.perf_counter() - t0
    t0 = time.perf_counter()
    resid, folds = loo_residuals(law, train, seed)
    q = {s: conformal_quantile(r) for s, r in resid.items()}
    t_conf = time.perf_counter() - t0
    lo, hi = conformal_band(pred_pt["mean"].to_numpy(), pred_pt["model_size"].map(q).to_numpy())
    pred_cf = pred_pt.assign(lower=lo, upper=hi)
    print(
        f"practitioner {t_prac:.1f} s (point {t_point:.1f} + bootstrap {t_boot:.1f}); conformal "
        f"refits {t_conf:.1f} s; q per size: "
        + ", ".join(f"{s / 1e6:g}M {v:.4f}" for s, v in q.items()),
        flush=True,
    )

    t0 = time.perf_counter()
    fit = Fit.run(train, law=law_name, seed=seed, warn=False)
    t_fit = time.perf_counter() - t0
    diag = fit.diagnostics()
    print(
        f"NUTS {t_fit:.1f} s ({fit.config['sampler']['sampler']}, "
        f"{fit.config['sampler']['chains']} chains); max R-hat {diag.max_rhat:.4f}, min bulk "
        f"ESS {diag.min_ess_bulk:.0f}, divergences {diag.divergences}",
        flush=True,
    )
    pred = predict_frame(fit, test, prob=PROB, seed=seed)

    preds = {"bayes": pred, "bootstrap": pred_pt, "conformal": pred_cf}
    sizes, runs = summarize(preds)
    n = sizes.pivot(index="model_size", columns="method", values="points")
    if not (n.nunique(axis=1) == 1).all():
        raise RuntimeError(f"the methods were scored on different points:\n{n}")
    b = bars(sizes)
    return {
        "set": name,
        "law": law_name,
        "seed": seed,
        "n_boot": n_boot,
        "train_runs": sorted(train["run"].unique()),
        "test_runs": sorted(test["run"].unique()),
        "sampler": {k: fit.config["sampler"][k] for k in ("sampler", "chains", "draws", "tune")},
        "diagnostics": {
            "max_rhat": diag.max_rhat,
            "min_ess_bulk": diag.min_ess_bulk,
            "divergences": diag.divergences,
            "ok": diag.ok,
        },
        "times_s": {
            "nuts_cold": t_fit,
            "point": t_point,
            "bootstrap": t_boot,
            "conformal_refits": t_conf,
        },
        "conformal": {
            "q": {f"{s / 1e6:g}M": v for s, v in q.items()},
            "n_residuals": {f"{s / 1e6:g}M": int(r.size) for s, r in resid.items()},
            "folds": folds,
        },
        "per_size": sizes.to_dict(orient="records"),
        "per_run": runs.to_dict(orient="records"),
        "bars": b.to_dict(orient="records"),
    }


def compare_methods(
    law,
    train: pd.DataFrame,
    test: pd.DataFrame,
    fit,
    candidates: dict,
    seed: int = 0,
    n_boot: int = 100,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The default (``bayes``: ``predict_frame`` of ``fit``), the bootstrap, the conformal band
    and ``candidates`` (name -> prediction table of test's points) scored on the same points;
    prints the per-size table, the bars of the default and of each candidate, and their
    per-run rows; returns (per size, per run) of :func:`summarize`."""
    from multipower_protocol import practitioner

    from bayescpt.curves.forecast.predict import predict_frame

    pred_pt, _, _ = practitioner(law, train, test, n_boot, seed)
    resid, _ = loo_residuals(law, train, seed)
    qs = {s: conformal_quantile(r) for s, r in resid.items()}
    lo, hi = conformal_band(pred_pt["mean"].to_numpy(), pred_pt["model_size"].map(qs).to_numpy())
    preds = {
        "bayes": predict_frame(fit, test, prob=PROB, seed=seed),
        "bootstrap": pred_pt,
        "conformal": pred_pt.assign(lower=lo, upper=hi),
        **candidates,
    }
    keys = ["run", "step", "val_set"]
    base = pred_pt[keys]
    preds = {m: base.merge(p, on=keys, how="left", suffixes=("", "_x")) for m, p in preds.items()}
    sizes, runs = summarize(preds)
    pd.set_option("display.width", 200)
    cols = [
        "model_size",
        "method",
        "points",
        "mean_rel_err",
        "bias",
        "coverage",
        "rel_width",
        "width_over_mae",
        "interval_score",
        "min_run_coverage",
    ]
    print(sizes[cols].to_string(index=False))
    shown = ["bayes", *candidates]
    for m in shown:
        print(m, bars(sizes, m).to_string(index=False), sep="\n")
    print(
        runs[runs["method"].isin(shown)][
            ["model_size", "schedule", "method", "coverage", "bias", "interval_score"]
        ].to_string(index=False)
    )
    return sizes, runs


def store_scores(
    path: Path, key: str, record: dict, diag, sizes: pd.DataFrame, runs: pd.DataFrame
) -> None:
    """Add ``record`` with the fit's diagnostics and the score tables under ``key`` to the JSON
    file ``path`` (created if missing)."""
    store = json.loads(path.read_text()) if path.exists() else {}
    store[key] = {
        **record,
        "diagnostics": {
            "max_rhat": diag.max_rhat,
            "min_ess_bulk": diag.min_ess_bulk,
            "divergences": diag.divergences,
        },
        "per_size": sizes.to_dict(orient="records"),
        "per_run": runs.to_dict(orient="records"),
    }
    path.write_text(json.dumps(store, indent=1, default=float))


def print_curve(res: dict):
    sizes = pd.DataFrame(res["per_size"])
    runs = pd.DataFrame(res["per_run"])
    cols = [
        "mean_rel_err",
        "bias",
        "coverage",
        "rel_width",
        "interval_score",
        "width_over_mae",
        "min_run_coverage",
    ]
    pct = {"mean_rel_err", "bias", "coverage", "rel_width", "interval_score", "min_run_coverage"}

    def fmt(t, cs):
        t = t.copy()
        for c in cs:
            t[c] = t[c].map((lambda v: f"{100 * v:.3g}") if c in pct else (lambda v: f"{v:.2f}"))
        return t

    print(f"\n{res['set']} / {res['law']}: per size (errors, widths, scores, coverage in %)")
    print(fmt(sizes[["model_size", "method", "points"] + cols], cols).to_string(index=False))
    rc = ["mean_rel_err", "bias", "coverage", "rel_width", "interval_score"]
    print("\nper held-out run:")
    print(fmt(runs[["model_size", "schedule", "method", "points"] + rc], rc).to_string(index=False))
    print("\nbars (bayes):")
    print(pd.DataFrame(res["bars"]).to_string(index=False))
    d = res["diagnostics"]
    print(
        f"diagnostics: max R-hat {d['max_rhat']:.4f}, min bulk ESS {d['min_ess_bulk']:.0f}, "
        f"divergences {d['divergences']}"
    )


# ---------------------------------------------------------------- Step Law, largest D held out


def steplaw_set(seed: int) -> dict:
    from hparams_loco import DATA, inside, steps

    from bayescpt.hparams.data import cells, load_steplaw
    from bayescpt.hparams.fit import HparamsFit
    from bayescpt.hparams.grid_best import grid_best_draws, merge_close

    df = load_steplaw(DATA / "dense_lr_bs_loss.csv")
    ct = cells(df)
    held = ct.loc[ct.groupby("model_size")["tokens"].idxmax()]
    key = pd.Series(False, index=df.index)
    for c in held.itertuples():
        key |= (df["model_size"] == c.model_size) & (df["tokens"] == c.tokens)
    train_cells = ct.drop(held.index)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = HparamsFit.run(df[~key], seed=seed, warn=False)
    t_fit = time.perf_counter() - t0
    diag = fit.diagnostics()
    print(
        f"hparams fit on {len(train_cells)} cells ({int((~key).sum())} runs): {t_fit:.0f} s; "
        f"max R-hat {diag.max_rhat:.4f}, min bulk ESS {diag.min_ess_bulk:.0f}, divergences "
        f"{diag.divergences}",
        flush=True,
    )
    ols = ols_optimum(train_cells, held)
    rows = []
    for c, o in zip(held.itertuples(), ols.itertuples()):
        N, D = float(c.model_size), float(c.tokens)
        runs = df[(df["model_size"] == N) & (df["tokens"] == D)]
        lrs, bss = runs["lr"].to_numpy(), runs["batch_size"].to_numpy()
        glr, gbs = grid_best_draws(fit, N, 6.0 * N * D, lrs, bss, seed=seed)
        b_lr = inside(c.best_lr, glr, "inverted_cdf")
        b_bs = inside(c.best_batch_size, gbs, "inverted_cdf")
        hl = merge_close(lrs)
        o_lr = nearest_step_hit(hl, o.lr_ols, c.best_lr)
        o_bs = nearest_step_hit(bss, o.bs_ols, c.best_batch_size)
        p_best = float(
            np.mean(
                np.isclose(glr, merge_close(np.r_[hl, c.best_lr])[-1], rtol=1e-3)
                & (gbs == c.best_batch_size)
            )
        )
        row = {
            "cell": f"N={N:.4g},D={D:.4g}",
            "model_size": N,
            "tokens": D,
            "runs": len(runs),
            "train_max_tokens_this_size": float(
                train_cells.loc[train_cells["model_size"] == N, "tokens"].max()
            ),
            "best_lr": float(c.best_lr),
            "best_batch_size": float(c.best_batch_size),
            "grid_best_lr": [b_lr[1], b_lr[2]],
            "grid_best_bs": [b_bs[1], b_bs[2]],
            "grid_best_lr_in": b_lr[0],
            "grid_best_bs_in": b_bs[0],
            "grid_best_both_in": b_lr[0] and b_bs[0],
            "grid_best_lr_steps": steps(hl, b_lr[1], b_lr[2]),
            "grid_best_bs_steps": steps(bss, b_bs[1], b_bs[2]),
            "grid_best_prob_of_empirical_best": p_best,
            "ols_lr": float(o.lr_ols),
            "ols_bs": float(o.bs_ols),
            "ols_lr_snapped": o_lr[1],
            "ols_bs_snapped": o_bs[1],
            "ols_lr_steps_off": o_lr[2],
            "ols_bs_steps_off": o_bs[2],
            "ols_lr_in": bool(o_lr[0]),
            "ols_bs_in": bool(o_bs[0]),
            "ols_both_in": bool(o_lr[0] and o_bs[0]),
        }
        rows.append(row)
        print(
            f"{row['cell']:<22} best lr {c.best_lr:.3g} grid-best [{b_lr[1]:.3g}, {b_lr[2]:.3g}]"
            f" {b_lr[0]!s:5} ({row['grid_best_lr_steps']} steps), OLS {o.lr_ols:.3g} "
            f"({o_lr[2]:+d} steps) | best bs {c.best_batch_size:.3g} grid-best [{b_bs[1]:.3g}, "
            f"{b_bs[2]:.3g}] {b_bs[0]!s:5} ({row['grid_best_bs_steps']} steps), OLS "
            f"{o.bs_ols:.3g} ({o_bs[2]:+d} steps) | p(best) {p_best:.2f}",
            flush=True,
        )
    share = {
        k: float(np.mean([r[k] for r in rows]))
        for k in (
            "grid_best_lr_in",
            "grid_best_bs_in",
            "grid_best_both_in",
            "ols_lr_in",
            "ols_bs_in",
            "ols_both_in",
        )
    }
    med = {
        k: float(np.median([r[k] for r in rows]))
        for k in ("grid_best_lr_steps", "grid_best_bs_steps", "grid_best_prob_of_empirical_best")
    }
    summary = {
        **{f"share_{k}": v for k, v in share.items()},
        **{f"median_{k}": v for k, v in med.items()},
        "held_out_cells": len(rows),
    }
    summary["bar_holds"] = bool(
        share["grid_best_both_in"] >= 0.8
        and med["grid_best_lr_steps"] <= 3
        and med["grid_best_bs_steps"] <= 3
    )
    print(json.dumps(summary, indent=1))
    return {
        "set": "steplaw",
        "law": "hparams",
        "seed": seed,
        "train_cells": len(train_cells),
        "train_runs": int((~key).sum()),
        "sampler": {k: fit.config["sampler"][k] for k in ("sampler", "chains", "draws", "tune")},
        "diagnostics": {
            "max_rhat": diag.max_rhat,
            "min_ess_bulk": diag.min_ess_bulk,
            "divergences": diag.divergences,
            "ok": diag.ok,
        },
        "times_s": {"fit_wall": t_fit},
        "summary": summary,
        "cells": rows,
    }


# ---------------------------------------------------------------- driver


def candidate_args(doc: str, json_name: str, argv=None, extra=()) -> argparse.Namespace:
    """The command line of a calibration candidate's script (``calibration_layer.py``,
    ``calibration_bayes.py``): ``--set``, ``--law``, ``--seed``, ``--boot`` and ``--json``
    (default ``benchmarks/<json_name>``), plus ``extra`` (name, add_argument keywords) pairs."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--set", default="multipowerlaw")
    ap.add_argument("--law", default="annealing")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--boot", type=int, default=100)
    for name, kw in extra:
        ap.add_argument(name, **kw)
    ap.add_argument("--json", type=Path, default=ROOT / "benchmarks" / json_name)
    return ap.parse_args(argv)


def _jsonable(o):
    if isinstance(o, dict):
        return {str(k): _jsonable(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_jsonable(v) for v in o]
    if isinstance(o, (np.bool_,)):
        return bool(o)
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    return o


def jobs(set_name: str, law: str | None) -> list[tuple[str, str]]:
    out = []
    for s in (
        ("olmo", "steplaw", "multipowerlaw", "lab_pt", "lab_pt_late")
        if set_name == "all"
        else (set_name,)
    ):
        if s == "olmo":
            out.append(("olmo", law or "annealing"))
        elif s == "steplaw":
            out.append(("steplaw", "hparams"))
        else:
            out += [(s, m) for m in ((law,) if law else ("annealing", "multipower"))]
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--set",
        default="all",
        choices=["multipowerlaw", "olmo", "steplaw", "lab_pt", "lab_pt_late", "all"],
    )
    ap.add_argument(
        "--law",
        choices=["annealing", "multipower"],
        help="the law (default: both for multipowerlaw and lab_pt, annealing for olmo)",
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--boot", type=int, default=100)
    ap.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "calibration_sets.json")
    ap.add_argument("--force", action="store_true", help="recompute keys already in --json")
    a = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    store = json.loads(a.json.read_text()) if a.json.exists() else {}
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    for set_name, law in jobs(a.set, a.law):
        key = f"{set_name}/{law}"
        if key in store and not a.force:
            print(f"{key}: in {a.json}, skipped (--force to recompute)")
            if set_name != "steplaw":
                print_curve(store[key])
            continue
        t0 = time.perf_counter()
        res = (
            steplaw_set(a.seed)
            if set_name == "steplaw"
            else curve_set(set_name, law, a.seed, a.boot)
        )
        res["wall_s"] = time.perf_counter() - t0
        res["commit"] = commit
        res["date_utc"] = time.strftime("%Y-%m-%d %H:%M", time.gmtime())
        if set_name != "steplaw":
            print_curve(res)
        store = json.loads(a.json.read_text()) if a.json.exists() else {}
        store[key] = _jsonable(res)
        a.json.write_text(json.dumps(store, indent=1))
        print(f"wrote {key} to {a.json}", flush=True)


if __name__ == "__main__":
    main()
