"""Issue 50, outputs: no output may replace or append to a file the command reads
(watch's fit, schedule and log files; the files an importer reads inside its source), no output
may replace something that is not a regular file (a fifo, a device)."""

import hashlib
import json
import os
import shutil
import stat
from pathlib import Path

import pandas as pd
import pytest

from bayescpt.cli.main import main
from bayescpt.core.outputs import atomic_output, check_output, write_outputs

ROOT = Path(__file__).resolve().parents[2]
FIT = ROOT / "models" / "annealing_multipowerlaw.nc"
RUN = "100M/wsd_20000_24000"


def digest(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


# ---- item 1: watch's --alerts is never a file watch reads ------------------------------------


@pytest.fixture
def watch_inputs(tmp_path):
    (tmp_path / "inputs").mkdir()
    (tmp_path / "logs").mkdir()
    fit = tmp_path / "inputs" / "fit.nc"
    shutil.copyfile(FIT, fit)
    df = pd.read_csv(ROOT / "data" / "multipowerlaw.csv")
    sched = tmp_path / "inputs" / "plan.csv"
    df[df["run"] == RUN].drop(columns=["loss"]).to_csv(sched, index=False)
    return fit, sched


def _watch(fit, sched, log, alerts, fmt="tensorboard"):
    return main(
        [
            "watch",
            str(fit),
            "--log",
            str(log),
            "--from",
            fmt,
            "--schedule",
            str(sched),
            "--every",
            "0.05",
            "--timeout",
            "0.3",
            "--alerts",
            str(alerts),
        ]
    )


@pytest.mark.parametrize("which", ["fit", "schedule", "fit by a link"])
def test_watch_refuses_alerts_that_are_its_fit_or_schedule(tmp_path, watch_inputs, which, capsys):
    fit, sched = watch_inputs
    target = {"fit": fit, "schedule": sched, "fit by a link": tmp_path / "link.nc"}[which]
    if which == "fit by a link":
        target.symlink_to(fit)
    before = digest(fit), digest(sched)
    assert _watch(fit, sched, tmp_path / "logs" / "run1", target) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is the input" in err and str(target) in err, err
    assert (digest(fit), digest(sched)) == before


def test_watch_refuses_alerts_that_are_one_of_its_log_files(tmp_path, watch_inputs, capsys):
    """A glob as --log: the log's "folder" is the glob's, so only the files it reads protect
    them."""
    fit, sched = watch_inputs
    log = tmp_path / "runs" / "version_0" / "metrics.csv"
    log.parent.mkdir(parents=True)
    log.write_text("step,lr-AdamW,val_loss\n0,0.001,\n100,0.001,3.5\n")
    before = digest(log)
    assert (
        _watch(fit, sched, tmp_path / "runs" / "*" / "metrics.csv", log, fmt="lightning-csv") == 2
    )
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is the input log file" in err and str(log) in err, err
    assert digest(log) == before


# ---- item 2: import's --out is never a file read inside its source ---------------------------


def _tensorboard(folder: Path) -> Path:
    tb = pytest.importorskip("torch.utils.tensorboard")
    w = tb.SummaryWriter(str(folder))
    for s in range(0, 101, 20):
        w.add_scalar("train/learning_rate", 1e-3, s)
        if s:
            w.add_scalar("eval/loss", 3.0 - s / 1000, s)
    w.close()
    return next(folder.glob("events.out.tfevents*"))


def _hf_trainer(folder: Path) -> Path:
    hist = [{"learning_rate": 1e-3, "step": s, "eval_loss": 3.0 - s / 1000} for s in (10, 20, 30)]
    path = folder / "checkpoint-30" / "trainer_state.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"global_step": 30, "log_history": hist}))
    return path


def _lightning(folder: Path) -> Path:
    path = folder / "version_0" / "metrics.csv"
    path.parent.mkdir(parents=True)
    path.write_text("step,lr-AdamW,val_loss\n0,0.001,\n40,0.001,3.5\n80,0.001,3.4\n")
    return path


@pytest.mark.parametrize(
    "fmt, make",
    [("tensorboard", _tensorboard), ("hf-trainer", _hf_trainer), ("lightning-csv", _lightning)],
)
def test_import_refuses_to_replace_a_log_file_it_reads(tmp_path, fmt, make, capsys):
    run = tmp_path / "run"
    run.mkdir()
    read = make(run)
    before = digest(read)
    assert main(["import", str(run), "--from", fmt, "--out", str(tmp_path / "ok.csv")]) == 0
    capsys.readouterr()
    assert main(["import", str(run), "--from", fmt, "--out", str(read), "--force"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is the input log file" in err and str(read) in err, err
    assert digest(read) == before


# ---- item 3: an existing target that is not a regular file is refused -----------------------


def test_check_output_refuses_a_fifo_a_link_to_one_and_a_folder(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    link = tmp_path / "link"
    link.symlink_to(fifo)
    for path, kind in ((fifo, "fifo"), (link, "fifo"), (tmp_path, "folder")):
        with pytest.raises(ValueError, match=rf"--out {path}: is a {kind}, not a regular file"):
            check_output(path)
    check_output(tmp_path / "new.csv")  # a new file and a regular one are fine
    (tmp_path / "old.csv").write_text("x\n")
    check_output(tmp_path / "old.csv")


def test_the_atomic_writers_never_replace_a_fifo(tmp_path):
    """Commands that write without check_output (demo, lab, sweep) go through these."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    link = tmp_path / "link"
    link.symlink_to(fifo)
    for target in (fifo, link):
        with pytest.raises(ValueError, match="is a fifo, not a regular file"):
            write_outputs({target: lambda tmp: Path(tmp).write_text("x")})
        with pytest.raises(ValueError, match="is a fifo, not a regular file"):
            with atomic_output(target) as tmp:
                tmp.write_text("x")
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and link.is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo", "link"]  # no temporaries


def test_commands_refuse_to_replace_a_fifo_with_force(tmp_path, watch_inputs, capsys):
    fit, sched = watch_inputs
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    link = tmp_path / "link"
    link.symlink_to(fifo)
    for out in (fifo, link):
        assert (
            main(["predict", str(fit), "--schedule", str(sched), "--out", str(out), "--force"]) == 2
        )
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"--out {out}: is a fifo, not a regular file" in err, err
        assert _watch(fit, sched, tmp_path / "logs" / "run1", out) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"--alerts {out}: is a fifo" in err, err
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and link.is_symlink()
