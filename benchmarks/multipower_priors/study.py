"""The multi-power law's drop-shape priors with the progress term: the paper's against wide ones.

    python benchmarks/multipower_priors/study.py OUT.jsonl SET:PRIORS:SEED ...

``SET``: ``multipowerlaw`` (the law's own training runs; the new priors were chosen on it, so it
no longer tests them), ``lab_pt`` or ``olmo`` (independent: not looked at before the choice was
committed), as :func:`calibration_sets.load_set` splits them. ``PRIORS``: ``default`` (the
package's, the wide priors since issue 50) or ``paper`` (the earlier defaults, centred on the
paper's kappa = 0 fits: ln beta ~ Normal(ln 0.6, 0.5), ln gamma ~ Normal(ln 0.6, 0.3), given as
config). Each spec is one default fit (``Fit.run``, law ``multipower``, seed ``SEED``; slow
mixing run longer by the default rule). One JSON line per fit is appended to OUT: time, draws,
leapfrog steps, diagnostics, the prior-data conflicts found (name, posterior median, z), the
posterior summary of every population-level node (mean, sd, MCSE of the mean), and the held-out
scores per size of a prediction from 1000 evenly thinned draws (``calibration_sets.summarize``).
Results and how to read them: ``README.md`` beside this script.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path

import arviz as az
import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from calibration_sets import PROB, load_set, summarize  # noqa: E402

from bayescpt.curves.forecast.predict import predict_frame  # noqa: E402
from bayescpt.curves.model.fit import Fit  # noqa: E402

PAPER = {
    "priors": {
        "beta": {"loc": float(np.log(0.6)), "scale": 0.5},
        "gamma": {"loc": float(np.log(0.6)), "scale": 0.3},
    }
}


def run(spec: str) -> dict:
    name, priors, seed = spec.split(":")
    seed = int(seed)
    train, test = load_set(name)
    t0 = time.perf_counter()
    fit = Fit.run(
        train, law="multipower", seed=seed, warn=False, config=PAPER if priors == "paper" else None
    )
    seconds = time.perf_counter() - t0
    d = fit.diagnostics()
    post = fit.idata.posterior
    pop = [v for v in post.data_vars if v.endswith(("_mu", "_sd", "_tau", "_slope"))]
    summ = az.summary(fit.idata, var_names=pop, kind="all")
    k = max(1, post.sizes["chain"] * post.sizes["draw"] // 1000)
    thin = dataclasses.replace(fit, idata=fit.idata.isel(draw=slice(None, None, k)))
    sizes, _ = summarize({"bayes": predict_frame(thin, test, prob=PROB, seed=seed)})
    return {
        "set": name,
        "priors": priors,
        "seed": seed,
        "seconds": round(seconds, 1),
        "draws": d.draws,
        "leapfrog": int(fit.idata.sample_stats["n_steps"].sum()),
        "max_rhat": d.max_rhat,
        "min_ess_bulk": d.min_ess_bulk,
        "divergences": d.divergences,
        "ok": d.ok,
        "conflicts": [[c.name, round(c.median, 3), round(c.z, 2)] for c in d.conflicts],
        "problems": d.problems(),
        "shape": {
            v: [float(np.median(fit.flat(v))), float(np.std(fit.flat(v)))]
            for v in ("beta", "gamma", "kappa", "Cr")
            if v in post
        },
        "summary": {
            i: [float(r["mean"]), float(r["sd"]), float(r["mcse_mean"])] for i, r in summ.iterrows()
        },
        "sizes": sizes.drop(columns=["method"]).to_dict("records"),
    }


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    out, specs = Path(argv[0]), argv[1:]
    for spec in specs:
        rec = run(spec)
        print(
            json.dumps(
                {
                    k: rec[k]
                    for k in (
                        "set",
                        "priors",
                        "seed",
                        "seconds",
                        "draws",
                        "max_rhat",
                        "min_ess_bulk",
                        "divergences",
                        "conflicts",
                        "shape",
                    )
                }
            ),
            flush=True,
        )
        with open(out, "a") as f:
            f.write(json.dumps(rec, default=float) + "\n")


if __name__ == "__main__":
    main()
