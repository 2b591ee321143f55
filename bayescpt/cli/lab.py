"""``bayescpt lab run CONFIG --out DIR`` and ``bayescpt lab plot CURVES --out DIR``.

Works without torch installed: the run command then stops with a one-line hint to install the
``lab`` extra.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from bayescpt.cli.messages import progress, say
from bayescpt.cli.options import command_group
from bayescpt.cli.outputs import csv_writer, save_figure, write_files
from bayescpt.lab.config import load_config
from bayescpt.lab.phenomena import per_run
from bayescpt.lab.plots import plot_all, plot_pt_runs
from bayescpt.lab.runner import run_lab


def add_commands(sub, sampler_args) -> dict:
    lsub = command_group(
        sub,
        "lab",
        "lab_command",
        metavar="LAB_COMMAND",
        help="train tiny LMs on a CPU to make real CPT loss curves",
        description="The CPT lab: pre-train small byte-level transformers, "
        "continue them on a second corpus with given LR schedules, and write the "
        "loss curves in the CPT data model (needs the 'lab' extra: torch).",
    )
    r = lsub.add_parser(
        "run",
        help="run an experiment config (TOML) and write DIR/curves.csv",
        description="Run a lab config and write DIR/curves.csv (CPT data model), "
        "DIR/runs.csv (one row per run) and DIR/manifest.json.",
    )
    r.add_argument("config", type=Path, metavar="CONFIG.toml")
    r.add_argument("--out", required=True, type=Path, metavar="DIR")
    r.add_argument("--force", action="store_true", help="replace an existing DIR/curves.csv")
    r.add_argument("--quiet", action="store_true", help="no progress output")
    p = lsub.add_parser(
        "plot",
        help="plot lab curves (general/domain loss, LR) to PNGs",
        description="One PNG per figure of the lab report, written to DIR.",
    )
    p.add_argument("curves", type=Path, metavar="CURVES.csv")
    p.add_argument(
        "--runs",
        type=Path,
        metavar="RUNS.csv",
        help="the runs.csv written beside the curves (default: next to CURVES.csv)",
    )
    p.add_argument("--out", required=True, type=Path, metavar="DIR")
    return {"lab": _dispatch}


def _dispatch(a: argparse.Namespace) -> int:

    if a.lab_command == "run":
        cfg = load_config(a.config)
        log = progress(a.quiet)
        log(
            f"lab: {cfg.name}: {len(cfg.runs)} CPT runs and {len(cfg.pt_runs)} PT-only runs over "
            f"{len(cfg.sizes_in_use())} sizes"
        )
        m = run_lab(cfg, a.out, force=a.force, log=log)
        log(
            f"wrote {a.out / 'curves.csv'} ({m['rows']} rows, {m['runs']} runs) in "
            f"{m['timings_s']['total']:.0f} s; sha256 {m['curves_sha256'][:16]}"
        )
        return 0

    runs = a.runs or a.curves.with_name("runs.csv")
    for path, what in ((a.curves, "curves"), (runs, "runs table (--runs)")):
        if not Path(path).exists():
            raise ValueError(f"{path}: no such file; expected the lab's {what}")
    curves, runs = pd.read_csv(a.curves), pd.read_csv(runs)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    cpt = runs[runs["transfer"].notna()] if "transfer" in runs else runs.iloc[:0]
    figs = plot_pt_runs(curves, runs)
    if len(cpt):
        table = out / "phenomena.csv"
        write_files({table: csv_writer(per_run(curves, cpt), "%.4f")}, force=True)
        say(f"wrote {table}")
        figs = {**plot_all(curves, cpt), **figs}
    for name, fig in figs.items():  # replaced on every call, as before
        say(f"wrote {save_figure(fig, out / f'{name}.png', force=True)}")
    return 0
