"""Nothing lost: atomic writers, concurrent writers, Ctrl-C, outputs checked before any work,
outputs never inputs, exit codes, stale temporaries (issue 15 items 1, 2, 6, 8, 11, 15)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from bayescpt.cli import main as cli_main
from bayescpt.cli.interrupts import interrupt_guard
from bayescpt.cli.main import main
from bayescpt.cli.outputs import write_csv
from bayescpt.core import outputs
from bayescpt.core.fitfile import load_idata
from bayescpt.core.tables import data_hash
from bayescpt.curves.data.validate import read_curves
from tests.conftest import ROOT
from tests.helpers import sigint_default

DATA = ROOT / "bayescpt" / "resources" / "data" / "multipowerlaw.csv"
MODELS = ROOT / "bayescpt" / "resources" / "models"
LINUX = Path("/proc/self/task").is_dir()


def _subset(path: Path, size: str) -> Path:
    """Two runs of one model size, every 6th point (about 60 rows)."""
    df = pd.read_csv(DATA)
    df = df[df["run"].isin([f"{size}/cosine_24000", f"{size}/wsd_20000_24000"])]
    pd.concat([g.iloc[::6] for _, g in df.groupby("run")]).to_csv(path, index=False)
    return path


def _env() -> dict:
    env = dict(os.environ, MPLBACKEND="Agg")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    return env


def _fit_cmd(data, out, draws=50, *extra) -> list[str]:
    return [
        sys.executable,
        "-m",
        "bayescpt.cli.main",
        "fit",
        str(data),
        "--law",
        "annealing",
        "--out",
        str(out),
        "--chains",
        "2",
        "--tune",
        "50",
        "--draws",
        str(draws),
        *extra,
    ]


def _temporaries(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


# ---- item 1: unique temporaries, fsync, rename; two real writers ------------------------------


def test_write_outputs_all_or_none(tmp_path):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    a.write_text("old\n")

    def fail(tmp):
        Path(tmp).write_text("half")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        outputs.write_outputs({a: lambda t: Path(t).write_text("new\n"), b: fail})
    assert a.read_text() == "old\n" and not b.exists()
    assert _temporaries(tmp_path) == []
    outputs.write_outputs(
        {a: lambda t: Path(t).write_text("new\n"), b: lambda t: Path(t).write_text("b\n")}
    )
    assert a.read_text() == "new\n" and b.read_text() == "b\n"
    assert _temporaries(tmp_path) == []
    assert a.stat().st_mode & 0o777 == 0o666 & ~_umask()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


SAVER = """
import sys, arviz as az
from bayescpt.core.fitfile import save_idata
src, out, tag, n = sys.argv[1:]
idata = az.from_netcdf(src)
idata.load()
for _ in range(int(n)):
    save_idata(idata, dict(idata.posterior.attrs, data_hash=tag), out, overwrite=True)
"""


def test_two_processes_saving_one_fit_file(tmp_path):
    """Two processes save fits to one path 8 times each while this one reads it: the file
    always loads and is one of the two (before: one fixed FIT.nc.tmp, shared and corrupted)."""
    src = MODELS / "mixture_ct70m.nc"
    out = tmp_path / "fit.nc"
    script = tmp_path / "saver.py"
    script.write_text(SAVER)
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), str(src), str(out), tag, "8"],
            env=_env(),
            stderr=subprocess.PIPE,
            text=True,
        )
        for tag in ("AAAA", "BBBB")
    ]
    reads = 0
    while any(p.poll() is None for p in procs):
        if out.exists():
            _, attrs = load_idata(out)
            assert attrs["data_hash"] in ("AAAA", "BBBB")
            reads += 1
        time.sleep(0.05)
    for p in procs:
        assert p.wait() == 0, p.stderr.read()
    assert reads > 0
    assert load_idata(out)[1]["data_hash"] in ("AAAA", "BBBB")
    assert _temporaries(tmp_path) == []


def test_two_real_fits_race_on_one_out(tmp_path):
    """Two `bayescpt fit` processes on different data, one --out, --force: both succeed and the
    file is one complete fit of either data set."""
    data = [_subset(tmp_path / "a.csv", "100M"), _subset(tmp_path / "b.csv", "25M")]
    out = tmp_path / "fit.nc"
    out.write_bytes(b"an older file")
    procs = [
        subprocess.Popen(
            _fit_cmd(d, out, 50, "--force", "--quiet"),
            env=_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for d in data
    ]
    results = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], results
    hashes = {data_hash(read_curves(d)) for d in data}
    assert len(hashes) == 2
    _, attrs = load_idata(out, "annealing")
    assert attrs["data_hash"] in hashes
    assert _temporaries(tmp_path) == []


# ---- item 15: stale temporaries --------------------------------------------------------------


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_stale_temporaries_are_removed_on_the_next_write(tmp_path):
    old = time.time() - 2 * 3600
    minutes_ago = time.time() - 120
    dead = tmp_path / f".t.csv.{_dead_pid()}.ab12cd.tmp"  # writer gone
    live = tmp_path / f".t.csv.{os.getpid()}.zz99yy.tmp"  # a writer still at work
    ancient = tmp_path / f".t.csv.{os.getpid()}.qq11rr.tmp"  # anyone's, hours old
    legacy = tmp_path / "t.csv.tmp"  # the former fixed name
    other = tmp_path / f".u.csv.{_dead_pid()}.ab12cd.tmp"  # another target's
    user = tmp_path / ".t.csv.notes.tmp"  # not ours (no pid)
    for p in (dead, live, ancient, legacy, other, user):
        p.write_text("x")
    for p, t in ((dead, minutes_ago), (ancient, old), (legacy, old), (other, old), (user, old)):
        os.utime(p, (t, t))
    write_csv(pd.DataFrame({"a": [1]}), tmp_path / "t.csv", force=False)
    assert (tmp_path / "t.csv").read_text() == "a\n1\n"
    assert not dead.exists() and not ancient.exists() and not legacy.exists()
    assert live.exists() and other.exists() and user.exists()


def test_a_dead_writer_on_this_host_is_cleaned_at_once_another_hosts_only_when_old(tmp_path):
    """A sweep's worker killed mid-write and its fit rewritten seconds later by another worker on
    this machine: the dead writer's temporary goes at once. Another host's cannot be judged from
    here (its pid means nothing on this machine): kept until STALE_SECONDS."""
    from bayescpt.core.outputs import host_tag

    here, pid = host_tag(), _dead_pid()
    dead_here = tmp_path / f".t.csv.{pid}.{here}.ab12cd34.tmp"
    live_here = tmp_path / f".t.csv.{os.getpid()}.{here}.zz99yy00.tmp"
    elsewhere = tmp_path / f".t.csv.{pid}.h{'0' * 8 if here != 'h' + '0' * 8 else '1' * 8}.q.tmp"
    for p in (dead_here, live_here, elsewhere):
        p.write_text("x")
    write_csv(pd.DataFrame({"a": [1]}), tmp_path / "t.csv", force=False)
    assert not dead_here.exists() and live_here.exists() and elsewhere.exists()
    old = time.time() - 2 * 3600
    os.utime(elsewhere, (old, old))
    write_csv(pd.DataFrame({"a": [2]}), tmp_path / "t.csv", force=True)
    assert not elsewhere.exists() and live_here.exists()
    assert _temporaries(tmp_path) == [live_here.name]  # the writes left none of their own
    from bayescpt.core.outputs import write_outputs

    names = []
    write_outputs(
        {tmp_path / "u.csv": lambda tmp: (names.append(Path(tmp).name), Path(tmp).write_text("b"))}
    )
    assert names[0].startswith(f".u.csv.{os.getpid()}.{here}.")  # the writer's host is named


# ---- item 6: an output is never an input -----------------------------------------------------


def test_fit_refuses_to_write_over_its_data(tmp_path, capsys):
    data = _subset(tmp_path / "d.csv", "100M")
    before = data.read_bytes()
    link = tmp_path / "link.csv"
    link.symlink_to(data)
    for out in (data, link, tmp_path / "sub" / ".." / "d.csv"):
        (tmp_path / "sub").mkdir(exist_ok=True)
        assert main(["fit", str(data), "--law", "annealing", "--out", str(out), "--force"]) == 2
        err = capsys.readouterr().err
        assert "is the input DATA.csv" in err and str(data) in err and err.count("\n") == 1
    assert data.read_bytes() == before


def test_predict_refuses_its_schedule_or_fit_as_output(tmp_path, capsys):
    sched = _subset(tmp_path / "s.csv", "100M")
    fit = MODELS / "annealing_multipowerlaw.nc"
    before = sched.read_bytes()
    assert (
        main(["predict", str(fit), "--schedule", str(sched), "--out", str(sched), "--force"]) == 2
    )
    assert "is the input --schedule" in capsys.readouterr().err
    assert (
        main(
            [
                "predict",
                str(fit),
                "--schedule",
                str(sched),
                "--out",
                str(tmp_path / "p.csv"),
                "--plot",
                str(tmp_path / "p.csv"),
            ]
        )
        == 2
    )
    assert "are the same file" in capsys.readouterr().err
    assert sched.read_bytes() == before and not (tmp_path / "p.csv").exists()


# ---- item 8: outputs checked before any work; all or none ------------------------------------


def test_fit_checks_its_out_folder_before_sampling(tmp_path, capsys):
    data = _subset(tmp_path / "d.csv", "100M")
    (tmp_path / "afile").write_text("x")
    for out, what in (
        (tmp_path / "missing" / "f.nc", "does not exist"),
        (tmp_path / "afile" / "f.nc", "is not a folder"),
        (tmp_path, "is a folder"),
    ):
        t0 = time.perf_counter()
        assert main(["fit", str(data), "--law", "annealing", "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert what in err and "--out" in err and "fitting" not in err
        assert time.perf_counter() - t0 < 10  # no compiling or sampling happened


def test_predict_writes_all_outputs_or_none(tmp_path, capsys):
    sched = _subset(tmp_path / "s.csv", "100M")
    fit = MODELS / "annealing_multipowerlaw.nc"
    pred = tmp_path / "p.csv"
    args = ["predict", str(fit), "--schedule", str(sched), "--out", str(pred)]
    assert main(args + ["--plot", str(tmp_path / "nofolder" / "p.png")]) == 2
    assert "--plot" in capsys.readouterr().err and not pred.exists()
    # the figure fails only when written (a format matplotlib does not know): no CSV either
    assert main(args + ["--plot", str(tmp_path / "p.nosuchformat")]) == 2
    capsys.readouterr()
    assert not pred.exists() and _temporaries(tmp_path) == []
    assert main(args + ["--plot", str(tmp_path / "p.png")]) == 0
    assert pred.exists() and (tmp_path / "p.png").exists()


# ---- item 11: SIGPIPE, internal errors -------------------------------------------------------


def test_closed_stdout_pipe_exits_quietly():
    p = subprocess.Popen(
        [sys.executable, "-m", "bayescpt.cli.main", "config", "--law", "annealing"],
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    p.stdout.close()  # the reader is gone before anything is written
    err = p.stderr.read()
    assert p.wait() == 141
    assert err == ""


def test_internal_error_has_its_own_exit_code(monkeypatch, capsys):
    def broken(a):
        raise ZeroDivisionError("division by zero")

    monkeypatch.setitem(cli_main.COMMANDS, "config", broken)
    monkeypatch.delenv("BAYESCPT_DEBUG", raising=False)
    assert main(["config", "--law", "annealing"]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "ZeroDivisionError" in err and "please report" in err
    monkeypatch.setenv("BAYESCPT_DEBUG", "1")
    assert main(["config", "--law", "annealing"]) == 3
    assert "Traceback" in capsys.readouterr().err


def test_a_file_the_system_refuses_is_bad_input_not_a_bug(tmp_path, capsys):
    fit = MODELS / "annealing_multipowerlaw.nc"
    rc = main(["predict", str(fit), "--schedule", str(tmp_path), "--out", str(tmp_path / "p.csv")])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and str(tmp_path) in err, err
    assert "internal error" not in err


# ---- item 2: Ctrl-C --------------------------------------------------------------------------


def _threads(pid: int) -> set[str]:
    names = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            names.add((task / "comm").read_text().strip())
        except OSError:
            pass
    return names


def _interrupt(p, when) -> tuple[int, str]:
    deadline = time.monotonic() + 240
    while not when(p) and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert p.poll() is None, "the fit ended before it could be interrupted"
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    return p.returncode, err


def test_interrupt_guard_leaves_an_ignored_sigint_ignored():
    """A background job's SIGINT is ignored: the guard leaves it so (as the sweep's
    ``_deferred_sigint`` does), and a Ctrl-C sent to it then stops nothing; a handled SIGINT (a
    terminal's) gets the guard's handler within the block and its own back after it."""
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with interrupt_guard() as hits:
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.2)
        assert hits == [] and signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        signal.signal(signal.SIGINT, signal.default_int_handler)
        with interrupt_guard() as hits:
            assert signal.getsignal(signal.SIGINT) is not signal.default_int_handler
        assert hits == [] and signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, old)


def test_an_interrupt_landing_after_the_command_handled_one_still_exits_130():
    """The interrupt guard repeats Ctrl-C until its block is left; one still pending when the
    command returns (or a second Ctrl-C while exiting) must not turn exit 130 into -SIGINT."""
    code = (
        "import _thread, bayescpt.cli.main as m\n"
        "def late(argv=None):\n"
        "    _thread.interrupt_main()\n"
        "    return 130\n"
        "m.main = late\n"
        "m.entry()\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 130 and "Traceback" not in p.stderr, (p.returncode, p.stderr)


def test_an_interrupt_caught_inside_exec_code_does_not_kill_the_process(tmp_path):
    """Under ``python -m`` CPython marks the process for death by SIGINT when a string ``exec``
    ends in KeyboardInterrupt (code generated while compiling, hit by Ctrl-C), even once caught;
    the command's own exit code must come out all the same."""
    (tmp_path / "hit_cli.py").write_text(
        "import bayescpt.cli.main as m\n"
        "def hit(argv=None):\n"
        "    try:\n"
        "        exec('raise KeyboardInterrupt', {})\n"
        "    except KeyboardInterrupt:\n"
        "        pass\n"
        "    return 2\n"
        "m.main = hit\n"
        "m.entry()\n"
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            [str(tmp_path)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        ),
    }
    p = subprocess.run(
        [sys.executable, "-m", "hit_cli"], capture_output=True, text=True, timeout=120, env=env
    )
    assert p.returncode == 2, (p.returncode, p.stderr)


@pytest.mark.skipif(not LINUX, reason="needs /proc to see the sampler's threads")
def test_ctrl_c_during_compile_stops_the_fit_and_writes_nothing(tmp_path):
    data = _subset(tmp_path / "d.csv", "100M")
    out = tmp_path / "fit.nc"
    with sigint_default():
        p = subprocess.Popen(
            _fit_cmd(data, out, 20000),
            env=_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    seen = []

    def compiling(p):  # the "compiling" line, and no sampler thread yet
        if not seen:
            seen.append(p.stderr.readline())
            if "compiling" not in seen[-1]:
                seen.clear()
                return False
            time.sleep(1.0)
        return not any(n.startswith("nutpie-worker") for n in _threads(p.pid))

    rc, err = _interrupt(p, compiling)
    assert rc == 130, err
    assert "nothing written" in err and "Traceback" not in err
    assert not out.exists() and _temporaries(tmp_path) == []


@pytest.mark.skipif(not LINUX, reason="needs /proc to see the sampler's threads")
def test_ctrl_c_during_sampling_keeps_the_old_fit(tmp_path):
    """nutpie catches the interrupt and returns the draws so far: they must not be saved."""
    data = _subset(tmp_path / "d.csv", "100M")
    out = tmp_path / "fit.nc"
    out.write_bytes(b"the user's previous fit")
    with sigint_default():
        p = subprocess.Popen(
            _fit_cmd(data, out, 20000, "--force"),
            env=_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    rc, err = _interrupt(p, lambda p: any(n.startswith("nutpie-worker") for n in _threads(p.pid)))
    assert rc == 130, err
    assert "nothing written" in err and "Traceback" not in err
    assert out.read_bytes() == b"the user's previous fit"
    assert _temporaries(tmp_path) == []
