"""Issue 50, the live watch and prefix forecasts: a log folder of several runs, a log longer than
the plan, Python warnings on the watch's stderr, a degenerate importance-sampling update (a
healthy run alerted on), and a prefix far from the fit (``predict --observed``)."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bayescpt.cli.main import main
from bayescpt.curves.fit import Fit
from bayescpt.curves.predict import predict_frame

ROOT = Path(__file__).resolve().parents[1]
FIT = ROOT / "models" / "annealing_multipowerlaw.nc"
RUN = "100M/wsd_20000_24000"


@pytest.fixture(scope="module")
def plan(tmp_path_factory):
    """The planned run (its schedule as a CSV) and the fit's mean course at its evaluations."""
    df = pd.read_csv(ROOT / "data" / "multipowerlaw.csv")
    sched = df[df["run"] == RUN].drop(columns=["loss"]).reset_index(drop=True)
    path = tmp_path_factory.mktemp("plan") / "plan.csv"
    sched.to_csv(path, index=False)
    course = predict_frame(Fit.load(FIT), sched, prob=0.9, seed=0)
    course = course[course["mean"].notna()][["step", "mean"]].reset_index(drop=True)
    return path, course


def write_csv_log(path, steps, losses):
    """A run's log as ``bayescpt.datasets.integrations.EvalLogger`` writes it: step, lr, loss."""
    pd.DataFrame({"step": steps, "lr": "", "loss": losses}).to_csv(path, index=False)


def run_watch(plan, log, tmp_path, *extra):
    path, _ = plan
    return main(["watch", str(FIT), "--log", str(log), "--from", "csv", "--schedule", str(path),
                 "--every", "0", "--timeout", "0.5", "--alerts", str(tmp_path / "alerts.csv"),
                 *extra])


# --- item 5: a folder holding several runs ------------------------------------------------------

def test_a_log_folder_of_several_runs_is_refused_naming_them(tmp_path, plan, capsys):
    _, course = plan
    logs = tmp_path / "logs"
    logs.mkdir()
    head = course.iloc[20:26]
    write_csv_log(logs / "runA.csv", head["step"], head["mean"])
    write_csv_log(logs / "runB.csv", head["step"], head["mean"] * 1.05)
    assert run_watch(plan, logs, tmp_path) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) <= 2, err         # the "watching" line, then one refusal
    assert "runA" in err[-1] and "runB" in err[-1] and "--log-run" in err[-1], err
    assert "restart" not in err[-1]
    # naming one follows that run alone: its 6 evaluations, no alert (the other is 5 % above)
    assert run_watch(plan, logs, tmp_path, "--log-run", "runA") == 0
    out, err = capsys.readouterr()
    assert "(6 evaluations, 0 alert(s))" in err, err
    assert "ALERT" not in out + err


# --- item 15: a log longer than the plan; Python warnings ---------------------------------------

def test_a_log_past_the_plans_end_is_said_and_what_fits_is_evaluated(tmp_path, plan, capsys):
    _, course = plan
    last = int(course["step"].iloc[-1])
    tail = course.iloc[-5:]
    steps = list(tail["step"]) + [last + 128, last + 256]
    (tmp_path / "log").mkdir()
    log = tmp_path / "log" / "run.csv"
    write_csv_log(log, steps, list(tail["mean"]) + [tail["mean"].iloc[-1]] * 2)
    code = run_watch(plan, log, tmp_path)
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "waiting" not in err, err
    assert f"past the plan's last step {int(pd.read_csv(plan[0])['step'].max())}" in err, err
    assert "5 evaluations" in err, err
    assert out.count("step ") >= 5


def test_watch_prints_no_raw_python_warning(tmp_path, plan):
    """A real process: a log with a step logged twice (a LogWarning) and losses far from the fit
    (a low effective sample size) gives one-line messages, never Python's
    ``path.py:LINE: SomeWarning: ...`` with its source line."""
    path, course = plan
    rows = course.iloc[20:30]
    steps = list(rows["step"]) + [int(rows["step"].iloc[-1])]
    (tmp_path / "log").mkdir()
    log = tmp_path / "log" / "run.csv"
    write_csv_log(log, steps, list(rows["mean"] + 6.0) + [float(rows["mean"].iloc[-1] + 6.0)])
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("PYTHONWARNINGS", None)
    proc = subprocess.run([sys.executable, "-m", "bayescpt.cli.main", "watch", str(FIT), "--log",
                           str(log), "--from", "csv", "--schedule", str(path), "--every", "0",
                           "--timeout", "0.5", "--alerts", str(tmp_path / "alerts.csv")],
                          capture_output=True, text=True, env=env, timeout=300)
    err = proc.stderr
    assert "Warning:" not in err and ".py:" not in err, err
    assert "logged more than once" in err, err          # the LogWarning, as one line
    assert err.count("logged more than once") == 1, err


# --- item 7: predict --observed with a prefix far from the fit ----------------------------------

def test_predict_observed_far_from_the_fit_says_so_and_keeps_its_mean_inside(tmp_path, plan,
                                                                            capsys):
    path, course = plan
    rows = course.iloc[20:40]
    prefix = tmp_path / "prefix.csv"
    pd.DataFrame({"run": RUN, "step": rows["step"], "loss": rows["mean"] + 6.0}).to_csv(
        prefix, index=False)
    out = tmp_path / "pred.csv"
    assert main(["predict", str(FIT), "--schedule", str(path), "--observed", str(prefix),
                 "--out", str(out)]) == 0
    err = capsys.readouterr().err
    line = [m for m in err.splitlines() if "disagrees with the fit" in m]
    assert len(line) == 1, err
    assert "6 nats" in line[0] and "above" in line[0], line
    got = pd.read_csv(out).dropna(subset=["mean"])
    assert ((got["lower"] <= got["mean"]) & (got["mean"] <= got["upper"])).all(), \
        got[(got["mean"] < got["lower"]) | (got["mean"] > got["upper"])]
