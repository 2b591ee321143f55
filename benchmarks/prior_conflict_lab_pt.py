"""Default fits of the lab's PT set against fits with an L0 prior suited to its losses.

    python benchmarks/prior_conflict_lab_pt.py OUT.jsonl LAW:SEED:LOC[:SCALE] ...

Each spec fits ``LAW`` (annealing | multipower) to the training runs of ``calibration_sets.py
--set lab_pt`` with the package's defaults (``Fit.run``, seed ``SEED``; slow mixing run longer
by the default rule), ``LOC`` ``default`` or the population location of ln L0 (config
``priors.L0.loc``) and optionally its ``SCALE`` (``priors.L0.scale``). One JSON line per fit is
appended to OUT: diagnostics (max R-hat, min bulk ESS, divergences, the draws after any
extension, the problems' text), the prior-data conflicts found
(:mod:`bayescpt.core.priorcheck`: name, posterior median, z), the posterior median of L0 per
size, and the held-out scores per size (``calibration_sets.summarize``) of a prediction from
1000 evenly thinned posterior draws (the full 16000 of an extended multi-power fit take minutes
in numpy; the same thinning for every variant). Results: ``benchmarks/RESULTS.md``, "Prior-data
conflict".
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from calibration_sets import PROB, load_set, summarize  # noqa: E402

from bayescpt.curves.forecast.predict import predict_frame  # noqa: E402
from bayescpt.curves.model.fit import Fit  # noqa: E402


def run(spec: str, train, test) -> dict:
    law, seed, loc, *scale = spec.split(":")
    seed = int(seed)
    cfg = None if loc == "default" else {"priors": {"L0": {"loc": float(loc)}}}
    if scale:
        cfg["priors"]["L0"]["scale"] = float(scale[0])
    t0 = time.perf_counter()
    fit = Fit.run(train, law=law, seed=seed, warn=False, config=cfg)
    seconds = time.perf_counter() - t0
    d = fit.diagnostics()
    post = fit.idata.posterior
    k = max(1, post.sizes["chain"] * post.sizes["draw"] // 1000)
    thin = dataclasses.replace(fit, idata=fit.idata.isel(draw=slice(None, None, k)))
    sizes, _ = summarize({"bayes": predict_frame(thin, test, prob=PROB, seed=seed)})
    return {
        "law": law,
        "seed": seed,
        "L0_loc": loc if not scale else f"{loc} sd {scale[0]}",
        "seconds": round(seconds, 1),
        "draws": d.draws,
        "max_rhat": d.max_rhat,
        "min_ess_bulk": d.min_ess_bulk,
        "divergences": d.divergences,
        "ok": d.ok,
        "conflicts": [[c.name, round(c.median, 3), round(c.z, 2)] for c in d.conflicts],
        "problems": d.problems(),
        "L0_median": np.round(np.median(fit.flat("L0"), axis=0), 3).tolist(),
        "sizes": sizes.drop(columns=["method"]).to_dict("records"),
    }


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    out, specs = Path(argv[0]), argv[1:]
    train, test = load_set("lab_pt")
    for spec in specs:
        rec = run(spec, train, test)
        print(
            json.dumps(
                {
                    k: rec[k]
                    for k in (
                        "law",
                        "seed",
                        "L0_loc",
                        "seconds",
                        "draws",
                        "max_rhat",
                        "min_ess_bulk",
                        "divergences",
                        "conflicts",
                    )
                }
            ),
            flush=True,
        )
        with open(out, "a") as f:
            f.write(json.dumps(rec, default=float) + "\n")


if __name__ == "__main__":
    main()
