"""``bayescpt cv`` on the multi-power-law data vs the held-out protocol, same split, same seed.

The protocol (``multipower_protocol.py``, LAWS.md section 7) fits ``cosine_24000,
constant_24000, wsdcon_9`` at 25M/100M/400M and predicts the six other schedules. Here the same
split is one fold of ``bayescpt cv --by schedule --train cosine_24000,constant_24000,wsdcon_9``
(fitted through the sweep engine, a LocalCluster), and the protocol's own path (a CompiledFit on
the table as read back, ``predict_frame``, ``score``) runs beside it in this process. Prints both
per-size tables and their largest difference (0 expected: same draws, same predictions), and the
cv command's per-schedule table.

    python benchmarks/cv_protocol.py [--law annealing|multipower] [--seed 0] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bayescpt.curves.data.validate import read_curves  # noqa: E402
from bayescpt.curves.evaluate.scores import percent_text, score  # noqa: E402
from bayescpt.curves.forecast.predict import predict_frame  # noqa: E402
from bayescpt.curves.model.fit import CompiledFit  # noqa: E402
from bayescpt.datasets.bundled import TRAIN_SCHEDULES, bundled_multipowerlaw  # noqa: E402
from bayescpt.parallel.cv import group_labels, run_cv  # noqa: E402
from bayescpt.parallel.engine import Cluster  # noqa: E402
from bayescpt.parallel.spec import StudyFit  # noqa: E402

COLS = ["points", "mean_rel_err", "worst_rel_err", "coverage", "rel_width", "interval_score"]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--law", default="annealing", choices=["annealing", "multipower"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--json", type=Path)
    a = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    df = bundled_multipowerlaw()
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "multipowerlaw.csv"
        df.to_csv(data, index=False)
        t0 = time.perf_counter()
        res = run_cv(
            data,
            Path(tmp) / "cv",
            StudyFit(a.law, seed=a.seed),
            by="schedule",
            train=list(TRAIN_SCHEDULES),
            cluster=Cluster(a.workers),
            say=print,
        )
        t_cv = time.perf_counter() - t0
        # the protocol's split of the table as the cv command reads it (read_curves sorts the
        # rows, which orders the curves and so the model's coordinates: same order, same draws)
        table = read_curves(data)
    in_train = group_labels(table, "schedule").isin(TRAIN_SCHEDULES)
    train, test = table[in_train], table[~in_train]
    t0 = time.perf_counter()
    fit = CompiledFit(train, a.law).fit(train, seed=a.seed)
    direct = score(predict_frame(fit, test, prob=0.9, seed=a.seed))
    t_direct = time.perf_counter() - t0
    print(f"\n== {a.law} law, seed {a.seed}: the protocol's path ({t_direct:.0f} s)")
    print(percent_text(direct[["model_size"] + COLS]))
    print(f"== bayescpt cv, the same split as one fold ({t_cv:.0f} s with the cluster)")
    print(percent_text(res.by_size[["model_size"] + COLS]))
    diff = float(np.max(np.abs(res.by_size[COLS].to_numpy(float) - direct[COLS].to_numpy(float))))
    print(f"largest difference between the two tables: {diff:.3g}")
    print("\n== per held-out schedule and size")
    print(percent_text(res.table.drop(columns=["fold", "r2"])))
    if a.json:
        a.json.write_text(
            json.dumps(
                {
                    "law": a.law,
                    "seed": a.seed,
                    "max_difference": diff,
                    "cv_seconds": t_cv,
                    "direct_seconds": t_direct,
                    "by_size": res.by_size.to_dict("records"),
                    "direct": direct.to_dict("records"),
                    "per_schedule": res.table.to_dict("records"),
                    "fit": res.fits.iloc[0][["max_rhat", "min_ess_bulk", "divergences"]].to_dict(),
                },
                indent=1,
                default=float,
            )
        )


if __name__ == "__main__":
    main()
