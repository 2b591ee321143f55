"""How big is the report of each bundled reference fit, and how long does writing it take?

    python benchmarks/report/report_time.py [--repeats 2] [--out benchmarks/report/report_time.json]

For each of the six fits in models/ (with the bundled table its predicted curves are drawn over,
where the repository has one: all 27 runs of multipowerlaw.csv, 18 of them held out; and, as
``bayescpt fit --report`` does, the annealing fit with its own 9 training runs), in one
process: the time to write the report from the saved fit file (load, diagnostics, plots, PNG,
render, write; what ``--report`` adds after a fit), best and median of ``--repeats``, after
one untimed warm-up report (imports, caches); the page's bytes and number of plots.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import tempfile
import time
import warnings
from pathlib import Path

from bayescpt.datasets.bundled import (
    REFERENCE_TABLES,
    bundled_multipowerlaw,
    reference_inputs,
    split,
)
from bayescpt.report.build import write_report

ROOT = Path(__file__).resolve().parents[2]


def measure(inputs, out: Path, repeats: int) -> dict:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        rep = write_report(inputs, out)
        times.append(time.perf_counter() - t0)
    return {
        "seconds_best": round(min(times), 2),
        "seconds_median": round(statistics.median(times), 2),
        "bytes": out.stat().st_size,
        "plots": len(rep.images),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--out", type=Path, default=Path(__file__).with_name("report_time.json"))
    a = ap.parse_args()
    warnings.simplefilter("ignore")
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        write_report([ROOT / "models" / "mixture_ct70m.nc"], Path(tmp) / "warm.html")
        train = Path(tmp) / "multipowerlaw_train.csv"  # what the fit was fitted on
        split(bundled_multipowerlaw())[0].to_csv(train, index=False)
        cases = {name: reference_inputs(name) for name in REFERENCE_TABLES}
        cases["annealing_multipowerlaw (its 9 training runs)"] = [
            ROOT / "models" / "annealing_multipowerlaw.nc",
            train,
        ]
        for name, inputs in cases.items():
            rows[name] = measure(inputs, Path(tmp) / "report.html", a.repeats)
            print(name, rows[name], flush=True)
    a.out.write_text(
        json.dumps(
            {"machine": platform.platform(), "repeats": a.repeats, "results": rows}, indent=1
        )
        + "\n"
    )


if __name__ == "__main__":
    main()
