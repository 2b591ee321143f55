"""An independent calibration check on the OLMo-2 ladder (not used to choose any prior).

Fit the annealing law on the 0.5x, 1x and 2x Chinchilla runs of all five sizes (one validation set,
c4_en by default), predict the 5x and 10x runs (2.5-10x longer than the training runs of the same
size): relative error and 90 % coverage per size, beside the per-size point fit + bootstrap.

    python benchmarks/olmo_ladder.py [--val-set c4_en] [--boot 100] [--json out.json]
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
sys.path.insert(0, str(Path(__file__).resolve().parent))

from multipower_protocol import after_warmup, practitioner  # noqa: E402

from bayescpt.curves.evaluate.scores import score
from bayescpt.curves.forecast.predict import predict_frame
from bayescpt.curves.model.fit import Fit
from bayescpt.curves.model.laws import get_law
from bayescpt.datasets.public import load_olmo_ladder

ROOT = Path(__file__).resolve().parents[2] / "shared" / "data" / "olmo-ladder" / "peteish-moreeval"
SIZES = ("190M", "370M", "760M", "1B", "3B")


def olmo_split(root: Path = ROOT, val_set: str = "c4_en"):
    """(train, test) of this check: the 0.5x/1x/2x Chinchilla runs of every size, and the 5x and
    10x runs without the evaluations logged during their warmup (outside every law's domain:
    not scored)."""
    train_runs = [f"{s}-{m}" for s in SIZES for m in ("0.5xC", "1xC", "2xC")]
    test_runs = [f"{s}-{m}" for s in SIZES for m in ("5xC", "10xC")]
    train = load_olmo_ladder(root, val_sets=(val_set,), runs=train_runs)
    test = load_olmo_ladder(root, val_sets=(val_set,), runs=test_runs)
    return train, test[test["loss"].isna() | test.index.isin(after_warmup(test).index)]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--val-set", default="c4_en")
    ap.add_argument("--boot", type=int, default=100)
    ap.add_argument("--root", type=Path, default=ROOT)
    ap.add_argument("--json", type=Path)
    a = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    train, test = olmo_split(a.root, a.val_set)
    law = get_law("annealing")
    pred_pt, t_point, t_boot = practitioner(law, train, test, a.boot)
    t0 = time.perf_counter()
    fit = Fit.run(train, law="annealing", warn=False)
    t_fit = time.perf_counter() - t0
    diag = fit.diagnostics()
    pred = predict_frame(fit, test, prob=0.9)
    table = score(pred)
    h = pred_pt[pred_pt["loss"].notna()]
    table["mean_rel_err_point"] = [
        np.mean(np.abs(g["mean"] / g["loss"] - 1)) for _, g in h.groupby("model_size")
    ]
    table["coverage_bootstrap"] = [
        np.mean((g["loss"] >= g["lower"]) & (g["loss"] <= g["upper"]))
        for _, g in h.groupby("model_size")
    ]
    print(
        f"OLMo ladder, {a.val_set}: train {train['run'].nunique()} runs, test "
        f"{test['run'].nunique()} runs"
    )
    print(table.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    print(
        f"NUTS {t_fit:.1f} s (cold) vs point {t_point:.2f} s + bootstrap {t_boot:.2f} s; "
        f"max R-hat {diag.max_rhat:.4f}, min bulk ESS {diag.min_ess_bulk:.0f}, "
        f"divergences {diag.divergences}"
    )
    if a.json:
        a.json.write_text(
            json.dumps(
                {
                    "table": table.to_dict(orient="records"),
                    "diagnostics": {
                        "max_rhat": diag.max_rhat,
                        "min_ess_bulk": diag.min_ess_bulk,
                        "divergences": diag.divergences,
                    },
                    "times": {"nuts_cold": t_fit, "point": t_point, "bootstrap": t_boot},
                },
                indent=2,
            )
        )


if __name__ == "__main__":
    main()
