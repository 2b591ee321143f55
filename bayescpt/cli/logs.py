"""``bayescpt import SRC --from FORMAT --out DATA.csv``: training logs -> the tidy curve CSV.

Warnings of the reader (e.g. steps logged twice after a restart) are printed as one line each on
stderr; the CSV is written atomically (a temporary file in the same folder, then renamed) and an
existing one is replaced only with ``--force``.
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

from bayescpt.cli.argtypes import positive_float
from bayescpt.cli.messages import say
from bayescpt.cli.outputs import prepare_outputs, write_csv
from bayescpt.curves.data.table import DEFAULT_VAL_SET, PHASES, VAL_ROLES
from bayescpt.datasets.logs import FORMATS, RunLabels, import_logs, log_files
from bayescpt.datasets.schedule_spec import parse_schedule_spec


def add_commands(sub, sampler_args=None) -> dict:
    p = sub.add_parser(
        "import",
        help="convert training logs (TensorBoard, HF Trainer, W&B, "
        "Lightning) to the curve CSV that fit reads",
        description="Read training logs and write the tidy loss-curve CSV "
        "(run, step, lr, loss, val_set [, val_role, phase, model_size]).",
    )
    p.add_argument(
        "src",
        nargs="+",
        metavar="SRC",
        help="a run directory or log file, or a (quoted) glob of several runs",
    )
    p.add_argument(
        "--from",
        dest="fmt",
        required=True,
        choices=FORMATS,
        help="the log's format (csv: a file written by bayescpt's EvalLogger)",
    )
    p.add_argument("--out", required=True, type=Path, metavar="DATA.csv")
    p.add_argument(
        "--loss-tag",
        help="the loss tag/column (default: the tool's usual name, "
        "e.g. eval/loss, eval_loss, val_loss)",
    )
    p.add_argument(
        "--lr-tag",
        help="the learning-rate tag/column (default: the tool's usual "
        "name, e.g. train/learning_rate, learning_rate, lr-*)",
    )
    p.add_argument(
        "--run",
        help="the run name (default: the directory's name); with several "
        "sources they become one run, resumed in order",
    )
    p.add_argument(
        "--val-set",
        default=DEFAULT_VAL_SET,
        help="validation set of the losses (--from csv: the file's)",
    )
    p.add_argument("--val-role", choices=VAL_ROLES, help="role of that validation set (CPT law)")
    p.add_argument("--phase", choices=PHASES, help="pt or cpt, for every imported row")
    p.add_argument("--model-size", type=positive_float, help="non-embedding parameters (e.g. 25e6)")
    p.add_argument(
        "--schedule",
        metavar="SPEC|FILE.toml",
        help="the LR schedule when the log has none, e.g. "
        "wsd:peak=3e-4,warmup=2000,total=100000,decay=0.2 (used instead of a logged LR)",
    )
    p.add_argument("--force", action="store_true", help="replace an existing --out file")
    return {"import": cmd_import}


def cmd_import(a: argparse.Namespace) -> int:
    inputs = [(f"SRC #{i + 1}", p) for i, p in enumerate(a.src)]
    inputs += [("log file", f) for f in log_files(a.src, a.fmt)]  # read inside the sources
    if a.schedule and Path(a.schedule).suffix.lower() == ".toml":
        inputs.append(("--schedule", a.schedule))
    prepare_outputs(a.force, inputs, out=a.out)
    schedule = parse_schedule_spec(a.schedule) if a.schedule else None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        df = import_logs(
            a.src if len(a.src) > 1 else a.src[0],
            a.fmt,
            loss_tag=a.loss_tag,
            lr_tag=a.lr_tag,
            run=a.run,
            val_set=a.val_set,
            labels=RunLabels(a.val_role, a.phase, a.model_size),
            schedule=schedule,
            log=say,
        )
    for w in caught:
        if issubclass(w.category, UserWarning):
            say(f"warning: {w.message}")
    write_csv(df, a.out, force=a.force)
    say(
        f"wrote {len(df)} rows ({df['run'].nunique()} run(s), {int(df['loss'].notna().sum())} "
        f"losses) to {a.out}"
    )
    return 0
