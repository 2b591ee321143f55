"""``bayescpt sweep SWEEP.toml --out DIR [--workers N | --scheduler ADDRESS]``: many fits on Dask.

The sweep file's format is :mod:`bayescpt.parallel.spec`; how fits are run, resumed and
recorded is :mod:`bayescpt.parallel.engine`. Progress is one line per finished fit on stderr;
the summary table (``DIR/summary.csv``) is printed at the end. Exit 0 when every fit finished,
1 with ``--strict`` when one fails its diagnostics, 2 when a fit failed (the others still ran).
"""

from __future__ import annotations

from pathlib import Path

from bayescpt.cli.common import EXIT_INPUT, positive_int, say
from bayescpt.parallel.engine import run_sweep
from bayescpt.parallel.spec import read_sweep

SHOWN = ["name", "status", "max_rhat", "min_ess_bulk", "divergences", "seconds"]


def add_commands(sub, sampler_args=None) -> dict:
    p = sub.add_parser("sweep", help="run many fits (a sweep file) on Dask: local cores or a "
                       "cluster; resumable",
                       description="Run the fits listed in a TOML sweep file on Dask "
                       "distributed, one NetCDF per fit in --out and a summary.csv; fits whose "
                       "output already holds the same inputs are skipped.")
    p.add_argument("sweep", type=Path, metavar="SWEEP.toml")
    p.add_argument("--out", required=True, type=Path, metavar="DIR",
                   help="folder for the fit files, summary.csv and journal.csv")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--workers", type=positive_int,
                       help="local worker processes (default: one per core)")
    where.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                       help="use a running Dask scheduler (e.g. a dask-jobqueue SLURMCluster's)")
    p.add_argument("--strict", action="store_true",
                   help="exit 1 when a fit fails R-hat <= 1.01, bulk ESS >= 400, 0 divergences")
    p.add_argument("--force", action="store_true",
                   help="replace outputs that hold fits of other inputs")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    return {"sweep": cmd_sweep}


def cmd_sweep(a) -> int:

    specs = read_sweep(a.sweep)
    if a.out.exists() and not a.out.is_dir():
        raise ValueError(f"--out {a.out}: not a folder")
    table = run_sweep(specs, a.out, workers=a.workers, scheduler=a.scheduler, force=a.force,
                      say=(lambda msg: None) if a.quiet else say)
    print(table[SHOWN].to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    failed = table[table["status"] == "failed"]
    if len(failed):
        say(f"{len(failed)} of {len(table)} fits failed (their errors: {a.out / 'summary.csv'})")
        return EXIT_INPUT
    if a.strict and (table["status"] == "diagnostics").any():
        return 1
    return 0
