"""``bayescpt watch FIT.nc --log SRC --from FORMAT --schedule SCHED.csv``: follow a run in
progress.

Polls the growing log (a TensorBoard directory, a Trainer/Lightning/W&B/EvalLogger file) every
``--every`` seconds; for each new evaluation prints the observed loss beside the band of the
forecast made before it was seen, then the updated forecast of the final loss
(:class:`bayescpt.curves.forecast.watch.Watch`). A loss outside the ``--band`` interval
(default 99 %) is flagged; ``--confirm`` (default 2) of them in a row on one side are an alert:
one line on stderr, one row appended to ``--alerts`` (a CSV, written outside the log's folder,
flushed row by row; :mod:`bayescpt.cli.watch_alerts`), and with ``--exit-on-alert`` exit
code 4. The watch ends when every planned curve has
reached its last planned step (exit 0), after ``--timeout`` seconds without a new evaluation
(exit 0 if any was seen), or on Ctrl-C (130). The log is only read.

For a CPT run (a cpt fit; ``--schedule`` the plan's rows in the CPT data model, PT then CPT,
e.g. its general and domain sets, each from its own ``--loss-tag``/``--val-set`` pair),
``--tolerance EPS --risk DELTA`` also update the plan's P(final general-loss rise <= EPS) after
every batch (:func:`bayescpt.cpt.live.plan_risk`) and alert when 1 - P exceeds DELTA.
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from bayescpt.cli.argtypes import (
    nonneg_float,
    positive_float,
    positive_int,
    probability,
    seed_int,
)
from bayescpt.cli.fitting import load_fit_checked
from bayescpt.cli.messages import say
from bayescpt.cli.options import add_options
from bayescpt.cli.watch_alerts import check_alerts, report_risk, report_update
from bayescpt.core.schedules import Schedule
from bayescpt.core.tables import DataError
from bayescpt.curves.data.table import DEFAULT_VAL_SET, schedules_of
from bayescpt.curves.data.validate import read_curves
from bayescpt.curves.forecast.watch import Watch
from bayescpt.curves.model.fit import Fit
from bayescpt.datasets.logs import (
    FORMATS,
    PastScheduleError,
    RunLabels,
    find_runs,
    import_logs,
)

EXIT_ALERT = 4
#: the watch command's options after FIT.nc: the log, the plan, the checks, the polling
WATCH_OPTIONS = (
    (
        "--log",
        dict(
            required=True,
            metavar="SRC",
            help="the run's log: a TensorBoard directory or a log file (only read)",
        ),
    ),
    ("--from", dict(dest="fmt", required=True, choices=FORMATS, help="the log's format")),
    (
        "--schedule",
        dict(
            required=True,
            type=Path,
            metavar="SCHED.csv",
            help="the run's planned schedule to its last step (run, step, lr [, val_set, "
            "model_size]); its LR is used at the logged steps",
        ),
    ),
    ("--run", dict(help="the schedule's run the log belongs to (default: its only run)")),
    (
        "--log-run",
        dict(
            metavar="NAME",
            help="the log's run to follow when --log holds several (a folder of runs; "
            "default: its only run, or the one named as --run)",
        ),
    ),
    (
        "--loss-tag",
        dict(
            action="append",
            metavar="TAG",
            help="the loss tag/column (default: the tool's usual name); repeat it with "
            "--val-set for several validation sets (a CPT run's general and domain)",
        ),
    ),
    (
        "--val-set",
        dict(
            action="append",
            metavar="NAME",
            help=f"validation set of each --loss-tag, in order (default {DEFAULT_VAL_SET})",
        ),
    ),
    (
        "--tolerance",
        dict(
            type=positive_float,
            metavar="EPS",
            help="cpt fits: the plan's tolerance on the final general-loss rise (nats); "
            "with --risk, the risk of exceeding it is updated and alerted on",
        ),
    ),
    (
        "--risk",
        dict(
            type=probability,
            metavar="DELTA",
            help="cpt fits: the plan's accepted risk; alert when P(rise > EPS) exceeds it",
        ),
    ),
    (
        "--prob",
        dict(
            type=probability,
            default=0.9,
            help="interval of the final-loss forecast (default 0.9)",
        ),
    ),
    (
        "--band",
        dict(
            type=probability,
            default=0.99,
            help="an evaluation outside this predictive interval is an alert (default 0.99)",
        ),
    ),
    (
        "--confirm",
        dict(
            type=positive_int,
            default=2,
            metavar="K",
            help="alert when K evaluations in a row lie outside the band on one side "
            "(default 2: a calibrated band leaves 1 %% of points outside by chance)",
        ),
    ),
    (
        "--every",
        dict(
            type=nonneg_float,
            default=30.0,
            metavar="SECONDS",
            help="seconds between polls of the log (default 30)",
        ),
    ),
    (
        "--timeout",
        dict(
            type=positive_float,
            default=None,
            metavar="SECONDS",
            help="stop after this long without a new evaluation (default: never)",
        ),
    ),
    (
        "--alerts",
        dict(
            type=Path,
            default=Path("alerts.csv"),
            metavar="ALERTS.csv",
            help="alerts are appended here (default ./alerts.csv; never inside the log)",
        ),
    ),
    (
        "--exit-on-alert",
        dict(
            action="store_true",
            help=f"stop at the first alert with exit code {EXIT_ALERT}",
        ),
    ),
    ("--seed", dict(type=seed_int, default=0)),
)


def add_commands(sub, sampler_args=None) -> dict:
    p = sub.add_parser(
        "watch",
        help="follow a training run in progress against a fit: "
        "observed vs forecast, alerts, the updated forecast of its end",
        description="Follow a growing training log against a fit: each new "
        "evaluation beside the forecast made before it, alerts when it leaves "
        "the band, the updated forecast of the final loss.",
    )
    p.add_argument("fit", type=Path, metavar="FIT.nc")
    add_options(p, WATCH_OPTIONS)
    return {"watch": cmd_watch}


def cmd_watch(a: argparse.Namespace) -> int:
    with warnings.catch_warnings():  # each of ours once as one line, library noise silenced
        warnings.simplefilter("always")
        warnings.showwarning = _one_line_warnings()
        return _watch(a)


def _watch(a: argparse.Namespace) -> int:
    check_alerts(a)
    tags = a.loss_tag or [None]
    sets = a.val_set or [DEFAULT_VAL_SET]
    if len(sets) != len(tags):
        raise ValueError(
            f"--val-set: {len(sets)} given for {len(tags)} --loss-tag; give one "
            "validation set per loss tag, in order"
        )
    if (a.tolerance is None) != (a.risk is None):
        raise ValueError("--tolerance and --risk go together (the plan's tolerance and risk)")
    fit = load_fit_checked(a.fit, Fit)
    if a.tolerance is not None and fit.law.name != "cpt":
        raise ValueError(
            f"--tolerance/--risk: {a.fit} is a {fit.law.name} fit; the risk of "
            "forgetting needs a cpt fit"
        )
    sched = read_curves(a.schedule, need_loss=False)
    runs = sorted(sched["run"].unique())
    run = a.run or (runs[0] if len(runs) == 1 else None)
    if run not in runs:
        raise ValueError(
            f"--run: the schedule {a.schedule} plans the runs {runs}; name the one "
            f"the log belongs to" + (f" (not {a.run!r})" if a.run else "")
        )
    sched = sched[sched["run"] == run]
    plan = schedules_of(sched)[run]
    size = sched["model_size"].iloc[0] if "model_size" in sched.columns else None
    watch = Watch(fit, sched, prob=a.prob, band_prob=a.band, seed=a.seed, confirm=a.confirm)
    say(
        f"watching {a.log} ({a.fmt}) as run {run!r} against {a.fit.name}; planned to step "
        f"{plan.total_steps}; alerts outside the {a.band:.0%} band go to {a.alerts}"
    )
    last_new, waiting, alerts, risk_state = time.monotonic(), None, 0, {"over": False}
    past = None  # the last step of a log that runs past the plan's end
    while True:
        read = False
        try:
            observed, beyond = _read_log(a, run, tags, sets, size, plan)
            if beyond is not None and past is None:
                say(
                    f"the log runs past the plan's last step {plan.total_steps} (to step "
                    f"{beyond}): its evaluations after step {plan.total_steps} are not "
                    "checked, and the watch ends with the plan"
                )
            past = beyond
            update = watch.update(observed)
            read = True
        except (DataError, FileNotFoundError) as err:
            if str(err) != waiting:
                say(f"waiting: {err}")
                waiting = str(err)
            update = None
        if update is not None:
            waiting, last_new = None, time.monotonic()
            alerts += report_update(update, a)
            if a.tolerance is not None:
                alerts += report_risk(watch, run, a, risk_state)
            if alerts and a.exit_on_alert:
                return EXIT_ALERT
        if watch.finished() or (past is not None and read):  # the plan is over
            say(
                f"the run reached its last planned step: {len(watch.seen)} evaluations, "
                f"{alerts} alert(s)"
            )
            return 0
        if a.timeout is not None and time.monotonic() - last_new > a.timeout:
            say(
                f"no new evaluation for {a.timeout:g} s: stopped ({len(watch.seen)} "
                f"evaluations, {alerts} alert(s))"
            )
            return 0 if len(watch.seen) else 2
        time.sleep(a.every)


def _one_line_warnings():
    """A ``warnings.showwarning`` for the watch: a warning of bayescpt's (its own classes: a
    repaired log, a forecast from few draws) once as one ``warning:`` line, the
    same message not again at later polls; the libraries' own warnings (NumPy, pandas,
    TensorBoard) not shown: the watch's lines say what they mean."""
    shown = set()

    def show(message, category, filename, lineno, file=None, line=None):
        text = str(message)
        if not category.__module__.startswith("bayescpt.") or text in shown:
            return
        shown.add(text)
        say(f"warning: {text}")

    return show


def _read_log(a, run, tags, sets, size, plan):
    """The evaluations the log holds so far, as the table rows of ``run`` on the ``plan``, and
    the last logged step where the log runs past the plan's end (else None; the rows after it
    are left out). A folder of several runs is refused unless ``--log-run`` (or ``--run``)
    names one (ValueError); no log yet is a DataError (waiting)."""
    found = dict(find_runs(a.log, a.fmt))
    pick = a.log_run or (a.run if a.run in found else None)
    if pick is None and len(found) > 1:
        raise ValueError(
            f"--log {a.log} holds {len(found)} runs ({', '.join(found)}); watch "
            "follows one: name it with --log-run NAME"
        )
    if pick is not None and pick not in found:
        raise DataError(
            f"--log-run {pick!r}: no such run in {a.log} yet (it holds {', '.join(found)})"
        )
    src = found[pick] if pick is not None else next(iter(found.values()))

    def read(schedule):
        return pd.concat(
            [
                import_logs(
                    src,
                    a.fmt,
                    loss_tag=tag,
                    run=run,
                    val_set=vs,
                    labels=RunLabels(model_size=size),
                    schedule=schedule,
                )
                for tag, vs in zip(tags, sets)
            ],
            ignore_index=True,
        )

    try:
        return read(plan), None
    except PastScheduleError as err:  # the plan's LR held after its end, those rows dropped
        longer = Schedule(
            np.concatenate([plan.lr, np.full(err.last - plan.total_steps, plan.lr[-1])]),
            plan.warmup_steps,
            plan.name,
        )
        obs = read(longer)
        return obs[obs["step"] <= plan.total_steps].reset_index(drop=True), err.last
