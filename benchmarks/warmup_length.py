"""Warm NUTS time against warmup length and mass matrix on the multipowerlaw protocol's training
split.

Each row: one fit of ``law`` with ``CompiledFit`` (the model compiled once and one untimed fit at
seed 99 first), at each tuning length and seed; wall time, max R-hat, min bulk ESS, divergences
and mean leapfrog steps per draw. Extra sampler settings as JSON (e.g. '{"low_rank": false}').

    python benchmarks/warmup_length.py annealing 1000,300 0,1,2 ['{"low_rank": false}']
"""

from __future__ import annotations

import json
import sys
import time
import warnings

from bayescpt.curves.model.fit import CompiledFit
from bayescpt.datasets.bundled import bundled_multipowerlaw, split


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    warnings.simplefilter("ignore")
    law = argv[0]
    tunes = [int(x) for x in argv[1].split(",")]
    seeds = [int(x) for x in argv[2].split(",")]
    extra = json.loads(argv[3]) if len(argv) > 3 else {}
    train, _ = split(bundled_multipowerlaw())
    for tune in tunes:
        c = CompiledFit(train, law, tune=tune, **extra)
        c.fit(train, seed=99)  # untimed: first-call costs
        for seed in seeds:
            t0 = time.perf_counter()
            f = c.fit(train, seed=seed)
            wall = time.perf_counter() - t0
            d = f.diagnostics()
            ss = f.idata.sample_stats
            lf = float(ss["n_steps"].mean()) if "n_steps" in ss else float("nan")
            print(
                json.dumps(
                    dict(
                        law=law,
                        tune=tune,
                        seed=seed,
                        wall=round(wall, 2),
                        rhat=round(d.max_rhat, 4),
                        ess=round(d.min_ess_bulk),
                        div=int(d.divergences),
                        lf=round(lf, 1),
                        **extra,
                    )
                ),
                flush=True,
            )


if __name__ == "__main__":
    main()
