"""What fitting the same model again costs, with and without the in-process model cache
(:mod:`bayescpt.core.modelcache`), on the bundled real curves.

A seed sweep (``bayescpt sweep`` with ``seeds = [...]``, each worker fitting several seeds of one
table), a notebook cell run twice or a robustness check at several seeds fits one model many times
in one process. Per seed, the default fit (``Fit.run``, the law's default sampler settings) of
``data/multipowerlaw.csv``:

* **cold**: the cache emptied before the fit, so the model is built, its chains' starts are
  searched for and nutpie compiles it, as every fit did before the cache (the process's first fit
  is not timed: it also imports and warms the libraries);
* **cached**: the same seeds again, the model from the cache.

Printed: wall seconds of each fit, the mean per mode, their ratio, and whether each seed's draws
are the same in both modes (they must be: the cache must not change a fit). Run it on an idle
machine.

    python benchmarks/refit_cache.py [--law annealing] [--seeds 0,1,2]
        [--json benchmarks/refit_cache.json]
    python benchmarks/refit_cache.py --chains 2 --draws 150 --tune 150
        --json benchmarks/refit_cache_quick.json      (a quick look: where the compile dominates)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bayescpt.core import modelcache  # noqa: E402
from bayescpt.curves.data.validate import read_curves  # noqa: E402
from bayescpt.curves.model.fit import Fit  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--law", default="annealing")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--chains", type=int)
    ap.add_argument("--draws", type=int)
    ap.add_argument("--tune", type=int)
    ap.add_argument("--json", default=str(ROOT / "benchmarks" / "refit_cache.json"))
    a = ap.parse_args(argv)
    seeds = [int(s) for s in a.seeds.split(",")]
    df = read_curves(ROOT / "data" / "multipowerlaw.csv")
    warnings.simplefilter("ignore")

    def fit(seed):
        t0 = time.perf_counter()
        f = Fit.run(
            df, law=a.law, seed=seed, warn=False, chains=a.chains, draws=a.draws, tune=a.tune
        )
        wall = time.perf_counter() - t0
        post = f.idata.posterior
        draws = np.concatenate([post[v].values.ravel() for v in sorted(post.data_vars)])
        return wall, draws, f.diagnostics().max_rhat

    fit(seeds[0] + 1000)  # imports, library warm-up: not timed
    rows = []
    for mode in ("cold", "cached"):
        for seed in seeds:
            if mode == "cold":
                modelcache.clear()
            wall, draws, rhat = fit(seed)
            rows.append(
                {
                    "mode": mode,
                    "seed": seed,
                    "wall_s": round(wall, 2),
                    "max_rhat": round(float(rhat), 4),
                    "_draws": draws,
                }
            )
            print(f"{mode:6s} seed {seed}: {wall:6.1f} s  (R-hat {rhat:.4f})", flush=True)
    cold = [r for r in rows if r["mode"] == "cold"]
    warm = [r for r in rows if r["mode"] == "cached"]
    same = [bool(np.array_equal(c["_draws"], w["_draws"])) for c, w in zip(cold, warm)]
    mc, mw = np.mean([r["wall_s"] for r in cold]), np.mean([r["wall_s"] for r in warm])
    print(
        f"mean per fit: cold {mc:.1f} s, cached {mw:.1f} s: cached/cold = {mw / mc:.2f}; "
        f"same draws at every seed: {all(same)}"
    )
    out = {
        "law": a.law,
        "data": "data/multipowerlaw.csv",
        "seeds": seeds,
        "sampler": {"chains": a.chains, "draws": a.draws, "tune": a.tune},
        "fits": [{k: v for k, v in r.items() if k != "_draws"} for r in rows],
        "mean_cold_s": round(float(mc), 2),
        "mean_cached_s": round(float(mw), 2),
        "ratio_cached_over_cold": round(float(mw / mc), 3),
        "same_draws": same,
        "date": time.strftime("%Y-%m-%d"),
    }
    Path(a.json).write_text(json.dumps(out, indent=1) + "\n")
    return 0 if all(same) else 1


if __name__ == "__main__":
    sys.exit(main())
