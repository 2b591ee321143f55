"""The alerts of ``bayescpt watch``: what each update of the forecast prints (the new
evaluations against their band, the updated final loss; a CPT plan's risk of forgetting), and
the alerts it raises, each one line on stderr and one row appended to the ``--alerts`` CSV
(a path refused where watch reads or inside the log's folder)."""

from __future__ import annotations

import argparse
import csv
import time
from pathlib import Path

from bayescpt.cli.messages import say
from bayescpt.core.outputs import check_not_input, check_output
from bayescpt.core.tables import DataError
from bayescpt.cpt.live import plan_risk
from bayescpt.datasets.logs import log_files

#: an alerts.csv row: kind "band" (a loss outside the band: loss, its forecast mean, lower,
#: upper, band) or "risk" (the plan's risk exceeded: the rise's mean, lower, upper, p_within, risk)
ALERT_COLUMNS = [
    "time",
    "kind",
    "run",
    "val_set",
    "step",
    "loss",
    "mean",
    "lower",
    "upper",
    "band",
    "p_within",
    "risk",
]


def _inside(path: Path, folder: Path) -> bool:
    """Whether ``path`` lies inside ``folder`` (both resolved)."""
    try:
        path.resolve().relative_to(folder.resolve())
        return True
    except ValueError:
        return False


def check_alerts(a: argparse.Namespace) -> None:
    """Refuse an --alerts path that watch reads (the fit, the schedule, a log file: rows would be
    appended to it), one inside the log's folder, or one that is not a regular file. Run at the
    start and again before each append, as log files may appear while the run goes on."""
    check_output(a.alerts, "--alerts")
    log = Path(a.log)
    folder = log if log.is_dir() else log.parent
    if _inside(a.alerts, folder):
        raise ValueError(
            f"--alerts {a.alerts} is inside the log's folder {folder}; watch never "
            "writes there: give a path outside it"
        )
    try:
        logs = log_files(a.log, a.fmt)
    except DataError:  # no log yet
        logs = []
    check_not_input(
        {"--alerts": a.alerts},
        [("FIT.nc", a.fit), ("--schedule", a.schedule)] + [("log file", f) for f in logs],
    )


def _alert_rows(a, rows) -> None:
    """Append ``rows`` (dicts of ALERT_COLUMNS) to the alerts CSV, flushed row by row."""
    check_alerts(a)
    new = not a.alerts.exists()
    with open(a.alerts, "a", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=ALERT_COLUMNS, restval="")
        if new:
            w.writeheader()
        for row in rows:
            w.writerow({"time": time.strftime("%Y-%m-%dT%H:%M:%S"), **row})
            fh.flush()


def report_risk(watch, run, a, state: dict) -> int:
    """The plan's risk of forgetting from the evaluations so far; 1 (an alert) when it comes to
    exceed the plan's (``state['over']``: it did at the last batch; no new alert until it has
    come back within)."""
    r = plan_risk(watch.fit, watch.table(watch.seen), run, a.tolerance, prob=a.prob, seed=a.seed)
    over = 1 - r["p_within"] > a.risk
    print(
        f"  P(final general-loss rise <= {a.tolerance:g}) = {r['p_within']:.3f} (plan: >= "
        f"{1 - a.risk:.3f}); rise {r['rise_mean']:+.4f} [{r['rise_lower']:+.4f}, "
        f"{r['rise_upper']:+.4f}] from {r['evaluations']} general evaluations "
        f"(ESS {r['ess']:.0f}){' ALERT' if over else ''}",
        flush=True,
    )
    was, state["over"] = state["over"], over
    if not over or was:
        return 0
    step = int(watch.seen.loc[watch.seen["run"] == run, "step"].max())
    say(
        f"ALERT: run {run!r}, step {step}: P(final general-loss rise > {a.tolerance:g}) = "
        f"{1 - r['p_within']:.3f} exceeds the plan's risk {a.risk:g}"
    )
    _alert_rows(
        a,
        [
            {
                "kind": "risk",
                "run": run,
                "val_set": r["val_set"],
                "step": step,
                "mean": f"{r['rise_mean']:.6g}",
                "lower": f"{r['rise_lower']:.6g}",
                "upper": f"{r['rise_upper']:.6g}",
                "p_within": f"{r['p_within']:.4f}",
                "risk": a.risk,
            }
        ],
    )
    return 1


def report_update(update, a) -> int:
    """Print the checks and the updated forecast; append and announce the alerts."""
    band = f"{a.band:.0%}"
    for r in update.checks.itertuples():
        flag = "ALERT" if r.alert else ("outside" if r.outside else "ok")
        print(
            f"step {r.step} ({r.run}, {r.val_set}): loss {r.loss:.4f}, forecast "
            f"{r.mean:.4f} [{r.lower:.4f}, {r.upper:.4f}] ({band}) {flag}"
        )
    for r in update.final.itertuples():
        print(
            f"  final loss at step {r.step} ({r.val_set}): {r.mean:.4f} [{r.lower:.4f}, "
            f"{r.upper:.4f}] ({a.prob:.0%}), from {update.seen} evaluations "
            f"(ESS {r.ess:.0f})",
            flush=True,
        )
    bad = update.alerts
    for r in bad.itertuples():
        side = "above" if r.loss > r.upper else "below"
        say(
            f"ALERT: run {r.run!r}, step {r.step}: loss {r.loss:.4f} {side} the {band} "
            f"band [{r.lower:.4f}, {r.upper:.4f}] of the forecast before it"
        )
    if len(bad):
        _alert_rows(
            a,
            [
                {
                    "kind": "band",
                    "run": r.run,
                    "val_set": r.val_set,
                    "step": r.step,
                    "loss": f"{r.loss:.6g}",
                    "mean": f"{r.mean:.6g}",
                    "lower": f"{r.lower:.6g}",
                    "upper": f"{r.upper:.6g}",
                    "band": a.band,
                }
                for r in bad.itertuples()
            ],
        )
    return len(bad)
