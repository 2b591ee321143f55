"""Cost of a fit against the number of loss points, with the package's thinning on and off.

Simulated per-step logs with known truth: the LR-annealing law at three model sizes x three
schedules (cosine, WSD, constant; :func:`bayescpt.curves.evaluate.simulate.simulate_hierarchy`),
every curve observed at N / 9 steps, noise on the log loss AR(1) (lag-1 correlation ``--rho``,
marginal sd 0.003) as on dense real logs. Per N and mode, one fit in a fresh process
(``bayescpt fit``'s library path: :func:`bayescpt.curves.data.thinning.thin_long_curves` when
thinning is on (mode ``thin``, the default averaging rule; ``thin-decimate``, the rule before
2026-12-05), then :meth:`bayescpt.curves.model.fit.Fit.run` with the law's default sampler
settings):

* wall seconds (thinning + compile + sampling), CPU seconds of the fit (all threads), sampling
  seconds, thinning seconds,
  peak resident memory (MB);
* loss points the model saw;
* posterior-mean error against the truth: per group and parameter (L0, A, alpha, C),
  |posterior mean - truth| / truth, averaged; with its Monte Carlo standard error (posterior sd /
  sqrt(bulk ESS), relative to the truth, averaged);
* R-hat, ESS, divergences; leapfrog steps (gradient evaluations) per draw after tuning.

``--gradients`` times, per N and without thinning, one call of the sampler's compiled log density
+ gradient (nutpie's numba callback, as ``gradient_cost.py`` does) on the same simulated table,
no sampling: a fit's sampling time is (gradient evaluations) x (seconds per gradient) / cores, so
this separates the cost per gradient, which should grow linearly in N, from the number of
gradients, which depends on the posterior's shape (taken from the fits).

    python benchmarks/fit_scaling.py [--points 1e3,1e4,1e5,1e6] [--modes thin,all]
        [--rho 0.9] [--json benchmarks/fit_scaling.json]
    python benchmarks/fit_scaling.py --gradients [--points 1e3,1e4,1e5,1e6]
    python benchmarks/fit_scaling.py --layout many [--points 1e3,1e4]   (many short curves)
    python benchmarks/fit_scaling.py --chains 2 --tune 500 --draws 500 ...   (a shorter run per
        fit, the same at every N: the growth in N of a full-data fit at 1e6 points in ~1 h)

Results are appended to the JSON after every fit (a rerun skips what is there). Run it on an idle
machine; a full-data fit of 1e6 points takes long (its gradient is 1e6 points).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

TRUTH = {"L0": 2.8, "A": 0.55, "alpha": 0.5, "C": 0.45}
GROUP_SD = {"L0": 0.03, "A": 0.1, "alpha": 0.05, "C": 0.1}
SIZES = [25e6, 100e6, 400e6]
SIGMA = 0.003


#: loss points per curve of the ``many`` layout
MANY_PER_CURVE = 111


def many_schedules(n_triples: int) -> list:
    """``n_triples`` x (constant, cosine, WSD) schedules of 2000-4000 steps (lengths spread
    evenly), each named by its kind and index."""
    from bayescpt.core import schedules as S

    out = []
    for k in range(n_triples):
        total = int(2000 + 2000 * k / max(n_triples - 1, 1))
        out += [
            S.constant(total, 3e-4, warmup_steps=100, name=f"constant{k}"),
            S.cosine(total, 3e-4, 3e-5, warmup_steps=100, name=f"cosine{k}"),
            S.wsd(total, 3e-4, decay_steps=total // 5, final=0.0, warmup_steps=100, name=f"wsd{k}"),
        ]
    return out


def simulate(n_points: int, rho: float, seed: int = 0, layout: str = "long"):
    """The table (validated) and the per-group truth for ``n_points`` loss points in all:
    ``long``, 9 curves (3 sizes x 3 schedules) of N / 9 points; ``many``, 3 sizes x N / 333
    schedules, curves of :data:`MANY_PER_CURVE` points."""
    import pandas as pd

    from bayescpt.curves.evaluate import simulate as sim
    from bayescpt.curves.model.laws import get_law

    law = get_law("annealing")
    if layout == "many":
        per_curve = MANY_PER_CURVE
        scheds = many_schedules(max(1, round(n_points / (9 * per_curve))))
    else:
        per_curve = max(20, n_points // 9)
        total = max(2000, int(per_curve * 1.02) + 300)
        scheds = sim.default_schedules(total=total, warmup=min(200, total // 20))
    df, truth = sim.simulate_hierarchy(
        law, TRUTH, GROUP_SD, SIZES, scheds, points=per_curve, sigma=0.0, seed=seed
    )
    rng = np.random.default_rng(seed + 1)
    out = []
    for _, g in df.groupby("run", sort=False):
        g = g.copy()
        has = g["loss"].notna().to_numpy()
        e = np.empty(has.sum())
        e[0] = rng.standard_normal()
        z = rng.standard_normal(has.sum())
        for i in range(1, len(e)):
            e[i] = rho * e[i - 1] + np.sqrt(1 - rho**2) * z[i]
        g.loc[has, "loss"] = g.loc[has, "loss"].to_numpy() * np.exp(SIGMA * e)
        out.append(g)
    return pd.concat(out, ignore_index=True), truth


def cpu_seconds() -> float:
    """CPU seconds (user + system, all threads) this process has used: the work of a fit,
    less sensitive than wall time to other jobs on the machine."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def one(
    n_points: int,
    mode: str,
    rho: float,
    layout: str = "long",
    run: dict | None = None,
    data_seed: int = 0,
) -> dict:
    """One fit, in this process: what the module docstring lists. ``run``: sampler settings
    (chains, draws, tune) other than the law's defaults; ``data_seed``: the simulated data's."""
    from bayescpt.curves.data.thinning import thin_long_curves
    from bayescpt.curves.model.fit import Fit

    df, truth = simulate(n_points, rho, seed=data_seed, layout=layout)
    n_all = int(df["loss"].notna().sum())
    note = None
    t0, c0 = time.perf_counter(), cpu_seconds()
    if mode in ("thin", "thin-decimate"):
        df, note = thin_long_curves(df, average=mode == "thin")
    thin_seconds = time.perf_counter() - t0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = Fit.run(df, law="annealing", seed=0, warn=False, **(run or {}))
    wall, cpu = time.perf_counter() - t0, cpu_seconds() - c0
    d = fit.diagnostics()
    post = fit.idata.posterior
    st = fit.idata.sample_stats
    steps = float(st["n_steps"].mean()) if "n_steps" in st else None
    errs, mcses = [], []
    import arviz as az

    for _, row in truth.iterrows():
        gi = fit.group_index(row["model_size"], "default")
        for p in TRUTH:
            x = post[p].isel(group=gi)
            ess = float(az.ess(x)[p].values)
            errs.append(abs(float(x.mean()) - row[p]) / row[p])
            mcses.append(float(x.std()) / np.sqrt(ess) / row[p])
    return {
        "points": n_all,
        "mode": mode,
        "rho": rho,
        "layout": layout,
        **(run or {}),
        "data_seed": data_seed,
        "curves": int(df.groupby(["run", "val_set"]).ngroups),
        "seen_points": int(fit.meta["n_points"]),
        "thinning": note,
        "thin_seconds": round(thin_seconds, 2),
        "wall_seconds": round(wall, 1),
        "cpu_seconds": round(cpu, 1),
        "sampling_seconds": fit.fit_seconds,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "mean_rel_error": float(np.mean(errs)),
        "mcse_rel": float(np.mean(mcses)),
        "max_rhat": round(d.max_rhat, 4),
        "min_ess_bulk": round(d.min_ess_bulk),
        "divergences": int(d.divergences),
        "leapfrog_per_draw": steps,
    }


def gradient_seconds(n_points: int, rho: float, calls: int = 20, repeats: int = 7) -> dict:
    """Seconds per call of nutpie's compiled logp + gradient on the simulated table of
    ``n_points`` points (no thinning): median of ``repeats`` blocks of ``calls`` calls."""
    from gradient_cost import interleaved, nutpie_gradient

    from bayescpt.curves.model.fit import CompiledFit

    df, _ = simulate(n_points, rho)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cf = CompiledFit(df, "annealing")
    med, best = interleaved({"g": nutpie_gradient(cf.compiled)}, calls, repeats)["g"]
    return {
        "points": int(df["loss"].notna().sum()),
        "seen_points": len(cf.prep.points),
        "gradient_seconds": med,
        "gradient_seconds_best": best,
        "compile_seconds": round(cf.compile_seconds, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", default="1e3,1e4,1e5,1e6")
    ap.add_argument(
        "--modes",
        default="thin,all",
        help="thin: the package's default thinning (averaged windows); "
        "thin-decimate: one logged loss per kept point (the rule before "
        "2026-12-05); all: every point",
    )
    ap.add_argument("--rho", type=float, default=0.9)
    ap.add_argument(
        "--layout",
        default="long",
        choices=["long", "many"],
        help="long: 9 curves of N / 9 points; many: N / 111 curves of 111 points",
    )
    ap.add_argument(
        "--data-seed",
        type=int,
        default=0,
        help="seed of the simulated data (rows of another seed keyed |seedN)",
    )
    ap.add_argument("--json", type=Path, default=Path(__file__).with_name("fit_scaling.json"))
    ap.add_argument(
        "--gradients",
        action="store_true",
        help="time one compiled gradient per N (no thinning, no sampling)",
    )
    for k in ("chains", "draws", "tune"):
        ap.add_argument(
            f"--{k}",
            type=int,
            default=None,
            help=f"sampler {k} instead of the law's default (the rows' key says so)",
        )
    ap.add_argument("--one", nargs=2, help=argparse.SUPPRESS)  # N MODE: run one fit, print JSON
    a = ap.parse_args()
    run = {k: getattr(a, k) for k in ("chains", "draws", "tune") if getattr(a, k) is not None}
    if a.one:
        r = (
            gradient_seconds(int(float(a.one[0])), a.rho)
            if a.one[1] == "gradient"
            else one(int(float(a.one[0])), a.one[1], a.rho, a.layout, run, a.data_seed)
        )
        print(json.dumps(r))
        return 0
    if a.gradients:
        a.modes = "gradient"
    done = json.loads(a.json.read_text()) if a.json.exists() else {}
    for n in [int(float(x)) for x in a.points.split(",")]:
        for mode in a.modes.split(","):
            key = (
                f"{n}|{mode}|{a.rho}"
                + ("" if a.layout == "long" else f"|{a.layout}")
                + "".join(f"|{k}{v}" for k, v in run.items())
                + (f"|seed{a.data_seed}" if a.data_seed else "")
            )
            if key in done:
                r = done[key]
            else:
                proc = subprocess.run(
                    [
                        sys.executable,
                        __file__,
                        "--one",
                        str(n),
                        mode,
                        "--rho",
                        str(a.rho),
                        "--layout",
                        a.layout,
                        "--data-seed",
                        str(a.data_seed),
                        *[f"--{k}={v}" for k, v in run.items()],
                    ],
                    capture_output=True,
                    text=True,
                    env=dict(os.environ, PYTHONWARNINGS="ignore"),
                )
                if proc.returncode:
                    print(f"{key}: failed\n{proc.stderr[-2000:]}", flush=True)
                    continue
                r = json.loads(proc.stdout.strip().splitlines()[-1])
                done[key] = r
                a.json.write_text(json.dumps(done, indent=1) + "\n")
            if mode == "gradient":
                print(
                    f"N {r['points']:>8}: one gradient {1e3 * r['gradient_seconds']:8.3f} ms "
                    f"(best block {1e3 * r['gradient_seconds_best']:.3f} ms), compile "
                    f"{r['compile_seconds']} s, peak {r['peak_rss_mb']:.0f} MB",
                    flush=True,
                )
                continue
            print(
                (f"{r['curves']} curves, " if "curves" in r else "")
                + f"N {r['points']:>8} {mode:>13}: seen {r['seen_points']:>7}  wall "
                f"{r['wall_seconds']:7.1f} s (sampling {r['sampling_seconds']:7.1f} s"
                + (f", CPU {r['cpu_seconds']:.0f} s" if "cpu_seconds" in r else "")
                + ")  peak "
                f"{r['peak_rss_mb']:6.0f} MB  error {100 * r['mean_rel_error']:.3f} % (MCSE "
                f"{100 * r['mcse_rel']:.3f} %)  R-hat {r['max_rhat']:.3f} ESS "
                f"{r['min_ess_bulk']} div {r['divergences']}"
                + (
                    f" leapfrog/draw {r['leapfrog_per_draw']:.1f}"
                    if r.get("leapfrog_per_draw")
                    else ""
                ),
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
