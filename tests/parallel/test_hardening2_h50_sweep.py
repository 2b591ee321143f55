"""Issue 50 on ``bayescpt sweep``, ``cv`` and ``sbc``: a terminal's Ctrl-C (SIGINT to the whole
process group, the Dask worker processes included) is one line and exit 130 (item 14b); a bad
config of a sweep entry or of ``cv``/``sbc --config`` is refused when the inputs are read, before
any Dask cluster starts (one line, exit 2, nothing written)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from bayescpt.cli.main import main
from bayescpt.parallel import engine
from tests.conftest import ROOT
from tests.helpers import sigint_default

pytestmark = pytest.mark.filterwarnings("ignore")


# ---- item 14b: Ctrl-C on sweep: one line, exit 130 -------------------------------------------


def _spawned(psutil, me):
    try:
        return [c for c in me.children(recursive=True) if "spawn_main" in " ".join(c.cmdline())]
    except psutil.Error:
        return []


@pytest.mark.parametrize("when", ["importing", "running"])
def test_ctrl_c_on_sweep_prints_one_line_and_exits_130(tmp_path, tiny_csv, when):
    """A terminal's Ctrl-C reaches the whole process group: the sweep and its Dask worker
    processes, while the workers are still starting (importing) or once the fits run. Before,
    each worker printed its own KeyboardInterrupt traceback (or an asyncio CancelledError one)
    and the cluster's close at exit an AssertionError one. A hang fails the test (the group is
    killed) rather than blocking the suite."""
    psutil = pytest.importorskip("psutil")
    sweep = tmp_path / "sweep.toml"
    sweep.write_text(
        f'[[fit]]\nname = "tiny"\ndata = "{tiny_csv}"\nlaw = "annealing"\n'
        "seeds = [0, 1]\nsampler = { chains = 2, draws = 100, tune = 100 }\n"
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        ),
    }
    with sigint_default():
        p = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "bayescpt.cli.main",
                "sweep",
                str(sweep),
                "--out",
                str(tmp_path / "out"),
                "--workers",
                "1",
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
    me, workers, head = psutil.Process(p.pid), [], ""
    try:
        deadline = time.monotonic() + 120
        while not workers and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
            workers = _spawned(psutil, me)
        assert workers and p.poll() is None, "the sweep ended before a worker started"
        if when == "importing":
            time.sleep(0.3)
        else:  # the cluster is up, the fits are submitted
            for line in p.stderr:
                head += line
                if "running on" in line:
                    break
            time.sleep(1.0)
        workers = _spawned(psutil, me) or workers
        os.killpg(p.pid, signal.SIGINT)
        _, err = p.communicate(timeout=90)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        pytest.fail("the sweep hung after Ctrl-C")
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    assert p.returncode == 130, head + err
    assert "Traceback" not in err and "Error" not in err, head + err
    assert err.splitlines()[-1] == "bayescpt: interrupted (Ctrl-C)", head + err
    assert err.count("interrupted") == 1, head + err
    _, alive = psutil.wait_procs(workers, timeout=30)
    for w in alive:
        w.kill()
    assert not alive, "a worker process outlived the sweep"


def test_ctrl_c_while_the_local_cluster_starts_is_raised_once_it_is_up(tmp_path, monkeypatch):
    """A Ctrl-C while the sweep's LocalCluster starts raises KeyboardInterrupt once the cluster
    is up, and the cluster is closed. Before, SIGINT was only blocked in the starting thread, but
    a thread started earlier (here one of the test's; in the command, native BLAS threads) took
    it, and Python raised KeyboardInterrupt in the middle of Dask's start-up (where it can be
    swallowed, or leave a half-started cluster unclosed). A real signal to this process."""
    from distributed import LocalCluster

    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signal handlers live in the main thread")
    clusters, started = [], []

    class CtrlCWhileStarting(LocalCluster):
        def __init__(self, *args, **kwargs):
            os.kill(os.getpid(), signal.SIGINT)  # the other thread takes it
            time.sleep(0.2)
            super().__init__(*args, **kwargs)
            clusters.append(self)
            started.append(True)  # not reached when raised inside

    stop = threading.Event()
    other = threading.Thread(target=stop.wait, daemon=True)  # SIGINT not blocked there
    other.start()
    monkeypatch.setattr("distributed.LocalCluster", CtrlCWhileStarting)
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            engine._local_client(1, tmp_path / "compile")
    finally:
        signal.signal(signal.SIGINT, old)
        stop.set()
    assert started, "KeyboardInterrupt was raised inside the cluster's start-up"
    assert clusters[0].status.name == "closed"
    assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, [])


# ---- configs checked when the inputs are read, before Dask starts ----------------------------

NEG_SIGMA = {"priors": {"A": {"sd_prior": {"dist": "HalfNormal", "kwargs": {"sigma": -1}}}}}


def _refused(capsys, argv, out, *parts):
    t0 = time.perf_counter()
    rc = main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1, err
    assert err[0].startswith("bayescpt: error: ") and all(p in err[0] for p in parts), err
    assert not out.exists(), "something was written"  # nothing started or written
    assert time.perf_counter() - t0 < 15  # no cluster, no fit


@pytest.mark.parametrize(
    "config, parts",
    [
        ("{ nosie = 1 }", ["'nosie'", "unknown"]),
        (
            '{ priors = { A = { sd_prior = { dist = "HalfNormal", kwargs = { sigma = -1 } } } } }',
            ["priors.A.sd_prior.kwargs.sigma = -1; expected > 0"],
        ),
        ("{ noise = { sigma_scale = -2.0 } }", ["noise.sigma_scale = -2.0; expected > 0"]),
        ('"bad.json"', ["priors.A.sd_prior.kwargs.sigma = -1; expected > 0"]),
    ],
)
def test_a_sweep_entry_with_a_bad_config_is_refused_when_read(
    tmp_path, tiny_csv, capsys, config, parts
):
    (tmp_path / "bad.json").write_text(json.dumps(NEG_SIGMA))
    path = tmp_path / "s.toml"
    path.write_text(
        f'[[fit]]\nname = "ok"\ndata = "{tiny_csv}"\n'
        f'[[fit]]\nname = "t"\ndata = "{tiny_csv}"\nconfig = {config}\n'
    )
    _refused(
        capsys,
        ["sweep", str(path), "--out", str(tmp_path / "out"), "--workers", "1"],
        tmp_path / "out",
        f"{path}, fit entry 2, key 'config': ",
        *parts,
    )


def test_a_sweep_grid_of_a_bad_config_value_is_refused_when_read(tmp_path, tiny_csv, capsys):
    path = tmp_path / "s.toml"
    path.write_text(
        f'[[fit]]\nname = "t"\ndata = "{tiny_csv}"\n'
        '[fit.grid]\n"config.noise.sigma_scale" = [0.5, -1.0]\n'
    )
    _refused(
        capsys,
        ["sweep", str(path), "--out", str(tmp_path / "out"), "--workers", "1"],
        tmp_path / "out",
        "fit entry 1, key 'config' (with grid.config.noise.sigma_scale = -1.0): ",
        "noise.sigma_scale = -1.0; expected > 0",
    )


@pytest.mark.parametrize(
    "config, parts",
    [
        (
            {"sampler": {"target_accept": 1.5}},
            ["sampler.target_accept = 1.5; expected a number strictly between 0 and 1"],
        ),
        (NEG_SIGMA, ["priors.A.sd_prior.kwargs.sigma = -1; expected > 0"]),
        ({"nosie": 1}, ["'nosie'", "unknown"]),
    ],
)
@pytest.mark.parametrize("command", ["cv", "sbc"])
def test_cv_and_sbc_with_a_bad_config_are_refused_before_dask(
    tmp_path, tiny_csv, capsys, command, config, parts
):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(config))
    out = tmp_path / "out"
    args = (
        [str(tiny_csv), "--by", "schedule"]
        if command == "cv"
        else ["--sims", "4", "--design", str(tiny_csv)]
    )
    _refused(
        capsys,
        [
            command,
            *args,
            "--law",
            "annealing",
            "--out",
            str(out),
            "--workers",
            "1",
            "--config",
            str(bad),
        ],
        out,
        f"--config {bad}: annealing law config: ",
        *parts,
    )


def test_two_entries_with_the_same_inputs_are_refused_when_read(tmp_path):
    """Two entries that differ only in name (or in the path of an identical data file) are one
    fit: its key leaves names and paths out so that a moved file resumes. The second entry's
    summary row overwrote the first's; now the file is refused naming both."""
    from bayescpt.parallel.spec import SweepError, read_sweep

    src = ROOT / "data" / "multipowerlaw.csv"
    copy = tmp_path / "copy.csv"
    copy.write_bytes(src.read_bytes())
    path = tmp_path / "s.toml"
    path.write_text(
        f'[[fit]]\nname = "a"\ndata = "{src}"\nseeds = [0]\n\n'
        f'[[fit]]\nname = "b"\ndata = "{copy}"\nseeds = [0]\n'
    )
    with pytest.raises(SweepError) as err:
        read_sweep(path)
    msg = str(err.value)
    assert "\n" not in msg and "'a__seed0'" in msg and "'b__seed0'" in msg and "same inputs" in msg
    path.write_text(
        f'[[fit]]\nname = "a"\ndata = "{src}"\nseeds = [0]\n\n'
        f'[[fit]]\nname = "b"\ndata = "{copy}"\nseeds = [1]\n'
    )
    assert len(read_sweep(path)) == 2
