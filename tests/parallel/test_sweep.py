"""bayescpt sweep on a real Dask engine: a LocalCluster, and a scheduler with two worker
processes one of which is killed mid-sweep; the fits equal serial fits with the same seeds."""

import functools
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import dask
import distributed  # noqa: F401  (its config defaults are in before dask.config.set adds to them)
import numpy as np
import pandas as pd
import pytest

from bayescpt.cli.main import main
from bayescpt.curves.data.validate import read_curves
from bayescpt.curves.model.fit import Fit
from bayescpt.parallel.engine import SweepOutputError, run_sweep
from bayescpt.parallel.spec import SweepError, read_sweep

pytestmark = pytest.mark.filterwarnings("ignore")
SAMPLER = "sampler = { chains = 2, draws = 150, tune = 150 }"
BIN = Path(sys.executable).parent


def sweep_file(folder: Path, data: Path, seeds, extra: str = "") -> Path:
    path = folder / "sweep.toml"
    path.write_text(
        f'[[fit]]\nname = "tiny"\ndata = "{data}"\nlaw = "annealing"\n'
        f"seeds = {list(seeds)}\n{SAMPLER}\n{extra}"
    )
    return path


@functools.cache
def serial(data: Path, seed: int) -> Fit:
    """The serial fit of ``data`` with ``seed`` (once per module: both sweep tests compare with
    seed 1's)."""
    return Fit.run(
        read_curves(data), law="annealing", chains=2, draws=150, tune=150, seed=seed, warn=False
    )


def same_draws(a: Path, fit: Fit) -> float:
    saved = Fit.load(a)
    assert saved.config["sampler"] == fit.config["sampler"]
    post = saved.idata.posterior
    return max(
        float(np.max(np.abs(post[v].values - fit.idata.posterior[v].values)))
        for v in ("L0", "A", "alpha", "C")
    )


@pytest.mark.parametrize(
    "text, message",
    [
        ('[[fit]]\ndata = "D"\nfamliy = "curves"\n', "fit entry 1, key 'famliy': unknown key"),
        ('[[fit]]\ndata = "D"\nfamily = "curve"\n', "key 'family': 'curve'; expected one of"),
        ('[[fit]]\ndata = "nope.csv"\n', "key 'data': "),
        ('[[fit]]\ndata = "D"\nseeds = [0, -1]\n', "key 'seeds': [0, -1]; expected non-negative"),
        ('[[fit]]\ndata = "D"\nsampler = { draw = 10 }\n', "key 'sampler.draw': unknown sampler"),
        ('[[fit]]\ndata = "D"\n[fit.grid]\nprogress = [true]\n', "grid key 'progress'"),
        ('[fit]\ndata = "D"\n', "no [[fit]] entries"),
        ('[[fit]]\ndata = "D"\n[[fit]]\ndata = "D"\n', "appear more than once"),
    ],
)
def test_a_bad_sweep_file_is_one_line_naming_entry_and_key(tmp_path, tiny_csv, text, message):
    path = tmp_path / "s.toml"
    path.write_text(text.replace('"D"', f'"{tiny_csv}"'))
    with pytest.raises(SweepError) as err:
        read_sweep(path)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_a_grid_is_every_combination_with_its_own_name(tmp_path, tiny_csv):
    path = sweep_file(
        tmp_path, tiny_csv, [0, 1], '[fit.grid]\n"sampler.target_accept" = [0.9, 0.95]\n'
    )
    specs = read_sweep(path)
    assert len(specs) == 4 and len({s.key for s in specs}) == 4
    assert "tiny__target_accept=0.9__seed1" in [s.name for s in specs]


@pytest.mark.slow  # every fit run twice, serially and on a local Dask cluster
def test_local_cluster_sweep_equals_serial_fits_resumes_and_survives_a_bad_fit(tmp_path, tiny_csv):
    path = sweep_file(tmp_path, tiny_csv, [0, 1, 2])
    bad = tmp_path / "bad.csv"
    shutil.copy(tiny_csv, bad)
    with open(path, "a") as fh:  # a fit that fails at fit time: its data file is broken
        fh.write(f'\n[[fit]]\nname = "bad"\ndata = "{bad}"\nseed = 9\n{SAMPLER}\n')
    specs = read_sweep(path)  # (a bad config is refused here, before any fit)
    bad.write_text("run,step,lr\nnot,a,curve\n")  # after the sweep file was read
    out = tmp_path / "out"
    # the workers import PyTensor as they start, so they load this process's compiled code
    # (compiling it afresh in folders of their own was most of this test's two minutes on 2
    # cores; that each worker of the engine's cluster gets its own folder is the next test's)
    with dask.config.set({"distributed.worker.preload": ["pytensor"]}):
        table = run_sweep(specs, out, workers=2)
    # (150 draws: too few for the ESS bar, so "diagnostics" is a finished fit too)
    finished = {"ok", "diagnostics"}
    assert set(table["status"].iloc[:3]) <= finished and table["status"].iloc[3] == "failed"
    assert "bad.csv" in table["error"].iloc[3]
    # the worker cache: 3 same-shape fits on 2 workers, so at least one reused a compiled model
    assert (table["compiled"].iloc[:3] == False).sum() >= 1  # noqa: E712
    summary = pd.read_csv(out / "summary.csv")
    assert len(summary) == 4 and set(summary["status"]) <= finished | {"failed"}
    assert same_draws(out / "tiny__seed1.nc", serial(tiny_csv, 1)) == 0.0
    # a rerun fits nothing (the failed fit is tried again and fails again)
    journal = (out / "journal.csv").read_text().splitlines()
    again = run_sweep(specs, out, workers=1)
    assert list(again["status"]) == ["done", "done", "done", "failed"]
    assert len((out / "journal.csv").read_text().splitlines()) == len(journal) + 1
    # compare lines the sweep's finished fits up by name (the failed one is left out)
    rc = main(["compare", str(out), "--out", str(tmp_path / "diff.csv")])
    diff = pd.read_csv(tmp_path / "diff.csv")
    assert rc == 0 and {"tiny__seed1", "tiny__seed2"} <= set(diff["fit"])
    # an output of other inputs is never replaced without --force
    shutil.copy(tiny_csv, bad)
    path.write_text(
        path.read_text().replace(
            "seeds = [0, 1, 2]", "seeds = [0, 1, 2]\noptions = { progress = true }"
        )
    )
    with pytest.raises(SweepOutputError, match="holds the fit of other inputs"):
        run_sweep(read_sweep(path), out, workers=1)


def _compile_folder() -> str:
    import pytensor

    return os.path.realpath(pytensor.config.base_compiledir)


def test_each_worker_of_the_local_cluster_compiles_in_a_folder_of_its_own(tmp_path, monkeypatch):
    """The engine's LocalCluster registers the compile-folder plugin: PyTensor in each worker
    process uses DIR/.compiledir/WORKER; a process that has imported PyTensor keeps its own."""
    import types

    from bayescpt.parallel.engine import _client, compile_dir_plugin

    base = tmp_path / ".compiledir"
    client, cluster = _client(2, None, base)
    try:
        names = {a: w["name"] for a, w in client.scheduler_info()["workers"].items()}
        got = client.run(_compile_folder)
    finally:
        client.close()
        cluster.close()
    want = {
        a: os.path.realpath(base / "".join(c if c.isalnum() else "_" for c in str(n)))
        for a, n in names.items()
    }
    assert len(got) == 2 and got == want and all(Path(f).is_dir() for f in got.values())
    import pytensor  # noqa: F401  (imported here: the plugin leaves this process's folder be)

    monkeypatch.setenv("PYTENSOR_FLAGS", "floatX=float64")
    compile_dir_plugin(str(base)).setup(types.SimpleNamespace(name="here"))
    assert os.environ["PYTENSOR_FLAGS"] == "floatX=float64" and not (base / "here").exists()


def _start(args, log):
    return subprocess.Popen(
        [str(BIN / "dask"), *args], stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )


@pytest.mark.slow  # a Dask kill test: a worker killed mid-sweep, the sweep rerun
def test_a_worker_killed_mid_sweep_loses_and_duplicates_nothing(tmp_path, tiny_csv):
    """A real scheduler and two worker processes on 127.0.0.1; one worker is killed (SIGKILL)
    once the first fit has finished; every fit still finishes exactly once, with the numbers of
    serial fits, and a rerun does nothing. The workers import PyTensor as they start
    (``--preload``), so they keep the compile folder this process uses, and load its compiled
    code, instead of compiling everything afresh in folders of their own (the LocalCluster test
    runs that path): the kill, not compiling, is what this test is about."""
    if shutil.which("dask", path=str(BIN)) is None:
        pytest.skip("dask's command line is not installed")
    sched_file = tmp_path / "scheduler.json"
    log = open(tmp_path / "cluster.log", "w")
    procs = [
        _start(
            [
                "scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--no-dashboard",
                "--scheduler-file",
                str(sched_file),
            ],
            log,
        )
    ]
    try:
        for _ in range(200):
            if sched_file.exists() and sched_file.stat().st_size:
                break
            time.sleep(0.1)
        import json

        address = json.loads(sched_file.read_text())["address"]
        for i in range(2):
            procs.append(
                _start(
                    [
                        "worker",
                        address,
                        "--nthreads",
                        "1",
                        "--nworkers",
                        "1",
                        "--name",
                        f"w{i}",
                        "--no-dashboard",
                        "--no-nanny",
                        "--preload",
                        "pytensor",
                    ],
                    log,
                )
            )
        path = sweep_file(tmp_path, tiny_csv, [0, 1, 2, 3])
        out = tmp_path / "out"
        sweep = subprocess.Popen(
            [str(BIN / "bayescpt"), "sweep", str(path), "--out", str(out), "--scheduler", address],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        journal = out / "journal.csv"
        t0 = time.time()
        while not (journal.exists() and journal.read_text().strip()) and time.time() - t0 < 300:
            time.sleep(0.2)
        assert journal.exists(), "no fit finished"
        assert len(journal.read_text().splitlines()) < 4, "the sweep ended before the kill"
        os.killpg(procs[1].pid, signal.SIGKILL)  # worker w0, while fits are still running
        procs[1].wait(timeout=30)  # reaped, as its parent would: its temporaries are then stale
        stdout, stderr = sweep.communicate(timeout=600)
        assert sweep.returncode == 0, stderr  # (no --strict: too few draws for the bars)
        rows = journal.read_text().splitlines()
        keys = [r.split(",")[1] for r in rows]
        assert len(keys) == 4 and len(set(keys)) == 4, rows  # each fit finished once
        summary = pd.read_csv(out / "summary.csv")
        assert set(summary["status"]) <= {"ok", "diagnostics"} and len(summary) == 4
        # a result lost with the killed worker is fetched again: the rerun task finds the saved
        # output and does not fit (noted), so nothing was fitted twice
        for seed in (1, 3):  # (seed 1's serial fit is the LocalCluster test's)
            assert same_draws(out / f"tiny__seed{seed}.nc", serial(tiny_csv, seed)) == 0.0
        assert not list(out.glob(".*.tmp"))  # no partial output left behind
        rc = main(["sweep", str(path), "--out", str(out), "--scheduler", address, "--quiet"])
        assert rc == 0 and len(journal.read_text().splitlines()) == 4  # a rerun does nothing
    finally:
        for p in procs:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait(timeout=30)
        log.close()


def test_compare_takes_a_folder_of_fit_files(tmp_path, capsys):
    models = Path(__file__).resolve().parents[2] / "models"
    for name in ("annealing_multipowerlaw.nc", "annealing_olmo_c4.nc"):
        shutil.copy(models / name, tmp_path / name)
    assert main(["compare", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "annealing_multipowerlaw: " in text and "annealing_olmo_c4: " in text


def test_hparams_and_mixture_entries_are_read_and_keyed_by_their_own_tables(tmp_path):
    """A sweep entry of the hparams or mixture family is read as that family's ``fit`` command
    reads it and keyed by the hash of its own table (before: the loss-curve hash was taken of
    every table, and such entries ended in an internal KeyError on 'val_set' / 'step')."""
    from bayescpt.hparams.data import grid_hash, read_any_grid
    from bayescpt.mixture.data import mixture_hash, read_mixture

    root = Path(__file__).resolve().parents[2] / "data"
    grid, mix = root / "steplaw_grid.csv", root / "mixture_ct70m.csv"
    path = tmp_path / "sweep.toml"
    path.write_text(
        f'[[fit]]\nfamily = "hparams"\ndata = "{grid}"\nseeds = [0, 1]\n\n'
        f'[[fit]]\nfamily = "mixture"\ndata = "{mix}"\n'
    )
    specs = read_sweep(path)
    assert [s.family for s in specs] == ["hparams", "hparams", "mixture"]
    assert specs[0].data_hash == specs[1].data_hash == grid_hash(read_any_grid(grid))
    assert specs[2].data_hash == mixture_hash(read_mixture(mix))
    assert len({s.key for s in specs}) == 3
