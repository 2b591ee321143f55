"""Many same-shape fits: a shell loop of ``bayescpt fit`` vs ``bayescpt sweep`` on Dask.

The fits: the LR-annealing law on the multipowerlaw training split's 100M curves (3 schedules),
default sampler settings, seeds 0..N-1. Serial: one ``bayescpt fit`` process per seed, one after
another (what a practitioner's loop does; each compiles). Sweep: ``bayescpt sweep --workers W``
(a LocalCluster of W single-threaded workers; each compiles once and reuses the model).

Prints: total wall times and the throughput ratio; per-fit seconds inside the workers; how many
fits compiled and the compile time saved; the per-task scheduling overhead of the cluster (100
no-op tasks); the largest draw difference between the sweep's and the loop's fits of the same
seeds (0 expected); and, on paper, a 1000-fit SBC on 100 workers.

    python benchmarks/sweep_throughput.py [--fits 16] [--workers 2] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bayescpt.curves.model.fit import Fit  # noqa: E402
from bayescpt.datasets.bundled import bundled_multipowerlaw, split  # noqa: E402

BIN = Path(sys.executable).parent


def task_overhead(workers: int, n: int = 100) -> float:
    """Seconds per no-op task on a fresh LocalCluster (submit to result)."""
    from distributed import Client, LocalCluster

    with (
        LocalCluster(
            n_workers=workers, threads_per_worker=1, dashboard_address=":0", silence_logs=40
        ) as cluster,
        Client(cluster) as client,
    ):
        client.submit(int, 0).result()
        t0 = time.perf_counter()
        client.gather([client.submit(int, i, pure=False) for i in range(n)])
        return (time.perf_counter() - t0) / n


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fits", type=int, default=16)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--json", type=Path)
    a = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="sweep_bench_"))
    train = split(bundled_multipowerlaw())[0]
    data = work / "mpl100m.csv"
    train[train["model_size"] == 100e6].to_csv(data, index=False)
    seeds = list(range(a.fits))

    t0 = time.perf_counter()
    for s in seeds:
        subprocess.run(
            [
                str(BIN / "bayescpt"),
                "fit",
                str(data),
                "--law",
                "annealing",
                "--seed",
                str(s),
                "--out",
                str(work / f"serial_{s}.nc"),
                "--quiet",
            ],
            check=True,
            capture_output=True,
        )
    t_serial = time.perf_counter() - t0

    sweep = work / "sweep.toml"
    sweep.write_text(
        f'[[fit]]\nname = "mpl100m"\ndata = "{data}"\nlaw = "annealing"\nseeds = {seeds}\n'
    )
    t0 = time.perf_counter()
    subprocess.run(
        [
            str(BIN / "bayescpt"),
            "sweep",
            str(sweep),
            "--out",
            str(work / "out"),
            "--workers",
            str(a.workers),
            "--quiet",
        ],
        check=True,
        capture_output=True,
    )
    t_sweep = time.perf_counter() - t0
    summary = pd.read_csv(work / "out" / "summary.csv")
    diff = max(
        float(
            np.max(
                np.abs(
                    Fit.load(work / "out" / f"mpl100m__seed{s}.nc").idata.posterior[v].values
                    - Fit.load(work / f"serial_{s}.nc").idata.posterior[v].values
                )
            )
        )
        for s in (seeds[0], seeds[-1])
        for v in ("L0", "A", "alpha", "C")
    )
    compiled = summary["compiled"].astype(str).str.lower() == "true"
    fit_s = summary["seconds"]
    overhead = task_overhead(a.workers)
    per_fit_fresh = float(fit_s[compiled].mean())
    per_fit_warm = float(fit_s[~compiled].mean())
    sbc_rounds = int(np.ceil(1000 / 100))
    out = {
        "fits": a.fits,
        "workers": a.workers,
        "serial_seconds": round(t_serial, 1),
        "sweep_seconds": round(t_sweep, 1),
        "throughput_ratio": round(t_serial / t_sweep, 2),
        "fits_compiled": int(compiled.sum()),
        "fits_reusing": int((~compiled).sum()),
        "fit_seconds_compiling": round(per_fit_fresh, 1),
        "fit_seconds_reusing": round(per_fit_warm, 1),
        "compile_seconds_saved": round((per_fit_fresh - per_fit_warm) * (~compiled).sum(), 1),
        "task_overhead_ms": round(1000 * overhead, 2),
        "max_draw_difference": diff,
        "sbc_1000_fits_100_workers_minutes": round(
            (per_fit_fresh + (sbc_rounds - 1) * per_fit_warm + 1000 * overhead) / 60, 1
        ),
    }
    print(json.dumps(out, indent=1))
    if a.json:
        a.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
