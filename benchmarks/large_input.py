"""Memory and time of reading and preparing a large loss-curve table (no sampling).

Writes a table of N rows to a scratch folder (not kept): ``runs`` runs of N / runs logged steps
each (a warmup-cosine learning rate, a noisy power-law loss, three model sizes), then, in a fresh
process per N, times each stage ``bayescpt fit`` goes through before compiling: read + validate
(:func:`bayescpt.curves.data.validate.read_curves`), the automatic thinning of long curves
(:func:`bayescpt.curves.data.thinning.thin_long_curves`) and the model's index and design
(:func:`bayescpt.curves.model.hierarchy.prepare`), and the peak resident memory of that process.

    python benchmarks/large_input.py [--rows 1e4,1e5,1e6,3e6] [--runs 30] [--dir /tmp] \
        [--all-points]

Prints one table row per N: file MB, seconds per stage, peak RSS in MB, loss points kept.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd


def write_table(path: Path, rows: int, runs: int, seed: int = 0) -> None:
    """A table of ``rows`` rows: ``runs`` runs with rows // runs logged steps each."""
    rng = np.random.default_rng(seed)
    per = rows // runs
    sizes = [25e6, 100e6, 400e6]
    with open(path, "w") as fh:
        fh.write("run,step,lr,loss,model_size,val_set\n")
        for r in range(runs):
            step = np.arange(per) + 1
            warm = max(per // 50, 1)
            lr = np.where(
                step < warm,
                3e-4 * step / warm,
                3e-4 * (0.1 + 0.9 * 0.5 * (1 + np.cos(np.pi * step / per))),
            )
            s1 = np.cumsum(lr)
            loss = (2.5 + 0.5 * (s1 + 1e-3) ** -0.5) * np.exp(0.003 * rng.standard_normal(per))
            pd.DataFrame(
                {
                    "run": f"run{r}",
                    "step": step,
                    "lr": lr,
                    "loss": loss,
                    "model_size": sizes[r % 3],
                    "val_set": "default",
                }
            ).to_csv(fh, header=False, index=False, float_format="%.6g")


def measure(path: str, thin: bool = True) -> dict:
    """Stage times and the peak RSS of this process (run in a fresh one per table)."""
    from bayescpt.curves.data.thinning import thin_long_curves
    from bayescpt.curves.data.validate import read_curves
    from bayescpt.curves.model.config import make_config
    from bayescpt.curves.model.hierarchy import prepare
    from bayescpt.curves.model.laws import get_law

    out = {}
    t = time.perf_counter()
    df = read_curves(path)
    out["read_s"] = time.perf_counter() - t
    t = time.perf_counter()
    df, note = thin_long_curves(df) if thin else (df, None)
    out["thin_s"] = time.perf_counter() - t
    law = get_law("annealing")
    t = time.perf_counter()
    prep = prepare(df, law, make_config(law)["settings"])
    out["prepare_s"] = time.perf_counter() - t
    out["points"] = int(len(prep.points))
    out["thinned"] = note is not None
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default="1e4,1e5,1e6,3e6")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--dir", type=Path, default=None, help="scratch folder (default: a temp one)")
    ap.add_argument(
        "--all-points",
        action="store_true",
        help="skip the automatic thinning (what `fit --all-points` prepares)",
    )
    ap.add_argument("--measure", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.measure:
        print(json.dumps(measure(a.measure, thin=not a.all_points)))
        return
    print(
        f"{'rows':>9} {'MB':>6} {'read s':>7} {'thin s':>7} {'prep s':>7} {'peak MB':>8} "
        f"{'points':>7}"
    )
    with tempfile.TemporaryDirectory(dir=a.dir) as tmp:
        for n in (int(float(x)) for x in a.rows.split(",")):
            path = Path(tmp) / f"large_{n}.csv"
            write_table(path, n, a.runs)
            res = subprocess.run(
                [sys.executable, __file__, "--measure", str(path)]
                + (["--all-points"] if a.all_points else []),
                capture_output=True,
                text=True,
                env=dict(os.environ),
                check=True,
            )
            m = json.loads(res.stdout.strip().splitlines()[-1])
            print(
                f"{n:>9} {path.stat().st_size / 1e6:>6.1f} {m['read_s']:>7.2f} "
                f"{m['thin_s']:>7.2f} {m['prepare_s']:>7.2f} {m['peak_rss_mb']:>8.0f} "
                f"{m['points']:>7}",
                flush=True,
            )
            path.unlink()


if __name__ == "__main__":
    main()
