"""The ``report`` command, and the ``--report`` / ``--mlflow`` options of fit, predict, plan
and sweep: parse, call :mod:`bayescpt.report`, say what was written.

``bayescpt report INPUT... --out REPORT.html``: fit files, a table to predict (schedule or
grid), a plan table, a sweep's folder. :func:`report_args` adds the options to another
command's parser; :func:`with_outputs` runs a command and then writes its report and logs it
(the inputs a command's report shows: :data:`REPORT_INPUTS`).
"""

from __future__ import annotations

import shlex
from pathlib import Path

from bayescpt.cli.argtypes import probability, seed_int
from bayescpt.cli.messages import say
from bayescpt.cli.outputs import prepare_outputs
from bayescpt.report.build import write_report
from bayescpt.report.tracking import track

#: command -> the argument names whose files its report shows (a fit's data is the table its
#: predicted curves are drawn over)
REPORT_INPUTS = {
    "fit": ("out", "data"),
    "predict": ("fit", "schedule"),
    "plan": ("fit", "out"),
    "sweep": ("out",),
}
#: the plan question logged as params
PLAN_PARAMS = (
    "tolerance",
    "risk",
    "objective",
    "shapes",
    "peak_lrs",
    "steps",
    "transfers",
    "replay_ratios",
    "seed",
)


def add_commands(sub, sampler_args=None) -> dict:
    r = sub.add_parser(
        "report",
        help="one self-contained HTML page of fits, a plan or a sweep",
        description="Write one HTML file (no network; images and styles inline) "
        "with the data, the diagnostics verdict, rank plots, parameters per "
        "group, predicted curves with bands, extrapolation warnings, the plan "
        "and what produced it.",
    )
    r.add_argument(
        "inputs",
        nargs="+",
        type=Path,
        metavar="INPUT",
        help="fit files (.nc), a schedule or grid CSV to predict, a plan table "
        "(bayescpt plan --out), a sweep's folder or summary.csv",
    )
    r.add_argument("--out", required=True, type=Path, metavar="REPORT.html")
    r.add_argument("--prob", type=probability, default=0.9, help="interval probability")
    r.add_argument("--seed", type=seed_int, default=0, help="seed of the predictions")
    r.add_argument("--tolerance", type=float, help="the plan's tolerance (for its plot)")
    r.add_argument("--risk", type=probability, help="the plan's risk (for its plot)")
    r.add_argument("--force", action="store_true", help="replace an existing --out file")
    return {"report": cmd_report}


def cmd_report(a) -> int:
    prepare_outputs(
        a.force, {f"INPUT #{i + 1}": p for i, p in enumerate(a.inputs) if not p.is_dir()}, out=a.out
    )
    rep = write_report(
        a.inputs,
        a.out,
        command=_command(a),
        prob=a.prob,
        seed=a.seed,
        tolerance=a.tolerance,
        risk=a.risk,
    )
    say(f"wrote {a.out} ({len(rep.html) / 1e6:.2f} MB, {len(rep.images)} plots)")
    return 0


def report_args(parser, mlflow: bool = False) -> None:
    """Add ``--report REPORT.html`` (and, with ``mlflow``, ``--mlflow [URI]``) to a parser."""
    parser.add_argument(
        "--report",
        type=Path,
        metavar="REPORT.html",
        help="also write a self-contained HTML report of the result",
    )
    if mlflow:
        parser.add_argument(
            "--mlflow",
            nargs="?",
            const="",
            default=None,
            metavar="URI",
            help="also log the run to MLflow: the tracking server or store at "
            "URI, or MLflow's default (MLFLOW_TRACKING_URI, else "
            "sqlite:///mlflow.db here) when no URI is given",
        )


def with_outputs(command, a) -> int:
    """Run ``command(a)``, then write its ``--report`` and log it to ``--mlflow`` when asked
    (also when the command exits 1 for failed diagnostics: the report shows why)."""
    report_path = getattr(a, "report", None)
    uri = getattr(a, "mlflow", None)
    if report_path is not None:
        prepare_outputs(getattr(a, "force", False), out=report_path)
    code = command(a)
    if code not in (0, 1) or (report_path is None and uri is None):
        return code
    inputs = [getattr(a, k) for k in REPORT_INPUTS[a.command] if getattr(a, k, None)]
    rep = None
    if report_path is not None:
        rep = write_report(
            inputs,
            report_path,
            command=_command(a),
            prob=getattr(a, "prob", 0.9),
            seed=getattr(a, "seed", None) or 0,
            tolerance=getattr(a, "tolerance", None),
            risk=getattr(a, "risk", None),
        )
        say(f"wrote {report_path}")
    if uri is not None:
        params = {
            k: getattr(a, k)
            for k in PLAN_PARAMS
            if a.command == "plan" and getattr(a, k, None) is not None
        }
        run_id = track(
            inputs,
            uri or None,
            report=rep,
            report_path=report_path,
            params={"command": _command(a), **params},
        )
        say(f"logged to MLflow{f' at {uri}' if uri else ''}: run {run_id}")
    return code


def _command(a) -> str:
    """The command as its parsed arguments say it (also when called as ``main([...])``)."""
    words = [
        f"--{k.replace('_', '-')} {shlex.quote(str(v))}"
        for k, v in sorted(vars(a).items())
        if k != "command" and v not in (None, False)
    ]
    return f"bayescpt {a.command} " + " ".join(words)
