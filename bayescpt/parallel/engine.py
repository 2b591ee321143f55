"""Run a sweep's fits on Dask distributed: a LocalCluster, an existing scheduler, or Slurm.

    run_sweep(specs, out_dir, workers=N | scheduler="tcp://HOST:PORT" | client=CLIENT)

1. Every fit whose output ``out_dir/NAME.nc`` already holds the fit of the same inputs (its
   ``sweep_key``) is skipped (status "done": a rerun of a finished sweep fits nothing). An
   output of other inputs is refused unless ``force`` (nothing is replaced without asking); an
   unreadable one (not a finished fit) is fitted again.
2. The others are submitted, one Dask task each (:func:`bayescpt.parallel.tasks.run_fit`,
   ``pure=False``, keyed by the fit's key). A worker that dies takes its running fit with it;
   the scheduler runs that task again on another worker (up to ``allowed-failures`` times), and
   since outputs are written whole or not at all (and a task finding its own finished output
   does not refit), every fit finishes exactly once.
3. As fits finish (in any order) their rows go to ``out_dir/summary.csv`` (rewritten whole
   after each, atomically) and one progress line each to ``say``; ``out_dir/journal.csv``
   gets one line per finished task (append-only: how many times each fit ran).

Embedded default: ``LocalCluster(n_workers=workers, threads_per_worker=1)``, one worker process
per core, each fit's chains on its worker's one thread; each worker process gets its own
PyTensor compile folder (:func:`compile_dir_plugin`).
"""

from __future__ import annotations

import csv
import io
import os
import signal
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from bayescpt.core.outputs import write_outputs
from bayescpt.parallel.spec import FitSpec
from bayescpt.parallel.tasks import ROW_KEYS, existing_key, finished_row, run_fit


class SweepOutputError(ValueError):
    """An output that holds the fit of other inputs (replaced only when forced)."""


def compile_dir_plugin(base: str):
    """A Dask worker plugin: each worker process compiles PyTensor code in its own folder
    (``base/WORKER``), set before PyTensor is imported there (a worker that imported it already
    keeps its folder). Concurrent compiles then never wait on one another's lock."""
    from distributed.diagnostics.plugin import WorkerPlugin

    class WorkerCompileDir(WorkerPlugin):
        name = "bayescpt-compiledir"

        def setup(self, worker):
            import sys

            if "pytensor" in sys.modules:
                return
            folder = Path(base) / "".join(c if c.isalnum() else "_" for c in str(worker.name))
            folder.mkdir(parents=True, exist_ok=True)
            flags = os.environ.get("PYTENSOR_FLAGS", "")
            os.environ["PYTENSOR_FLAGS"] = ",".join(
                x for x in (flags, f"base_compiledir={folder}") if x
            )

    return WorkerCompileDir()


def local_worker_plugin():
    """A Dask worker plugin for the workers of the sweep's own LocalCluster: the worker process
    ignores SIGINT (a terminal's Ctrl-C goes to the whole process group; the sweep's own process
    handles it and closes the cluster), and once it is closing its Dask logs are silenced (a
    worker stopped mid-fit logs a failed heartbeat as its connections close)."""
    from distributed.diagnostics.plugin import WorkerPlugin

    class LocalWorker(WorkerPlugin):
        name = "bayescpt-local-worker"

        def setup(self, worker):
            if threading.current_thread() is threading.main_thread():
                signal.signal(signal.SIGINT, signal.SIG_IGN)

        def teardown(self, worker):
            import logging

            logging.getLogger("distributed").setLevel(logging.CRITICAL)

    return LocalWorker()


def plan_sweep(specs: list[FitSpec], out_dir: Path, force: bool = False):
    """(finished rows, specs to run): step 1 of the module doc."""
    done, todo, clash = [], [], []
    for spec in specs:
        path = out_dir / spec.file_name
        row = finished_row(spec, path)
        if row is not None:
            done.append(dict(row, status="done"))
        elif path.exists() and existing_key(path) is not None and not force:
            clash.append(path)
        else:
            todo.append(spec)
    if clash:
        more = f" (and {len(clash) - 1} more)" if len(clash) > 1 else ""
        raise SweepOutputError(
            f"{clash[0]}{more}: holds the fit of other inputs (the sweep file "
            "or the data changed); use another --out folder or --force to "
            "replace them"
        )
    return done, todo


def _client(workers: int | None, scheduler: str | None, compile_base: Path):
    from distributed import Client

    if scheduler:
        client = Client(scheduler, timeout="30s")
        client.register_plugin(compile_dir_plugin(str(compile_base)))
        return client, None
    return _local_client(workers or max(1, os.cpu_count() or 1), compile_base)


@contextmanager
def _deferred_sigint():
    """Within the block a Ctrl-C (SIGINT) is only recorded; once the block is left, the handler
    that was installed (Python's: KeyboardInterrupt) runs for it, raising in the caller.

    Two parts, for two kinds of process. SIGINT is blocked in this thread: threads started in the
    block inherit the mask, and so do the processes they spawn (a mask survives fork and exec):
    Dask's worker processes never see a Ctrl-C while they start (once up they ignore it,
    :func:`local_worker_plugin`). The standard library's resource tracker is started first, as
    its start unblocks SIGINT in the thread that starts it. The mask alone does not hold in this
    process, though: threads started before (native ones: the BLAS pool, the allocator's) do not
    block SIGINT, the kernel hands it to one of them, and Python then raises KeyboardInterrupt in
    this thread at whatever point Dask's start-up has reached, where it may be swallowed (a
    finaliser) or leave a half-started cluster nobody closes. So a Python handler that only
    records it is installed too. An ignored SIGINT (a background job's) stays ignored; outside
    the main thread nothing is changed."""
    from multiprocessing import resource_tracker

    hits: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.getsignal(signal.SIGINT)
    if callable(old):
        signal.signal(signal.SIGINT, lambda signum, frame: hits.append(signum))
    mask = None
    try:
        if hasattr(signal, "pthread_sigmask"):
            resource_tracker.ensure_running()
            mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        yield
    finally:
        try:
            if mask is not None:  # a Ctrl-C held back by the mask is recorded here
                signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        finally:
            if callable(old):
                signal.signal(signal.SIGINT, old)
                if hits:
                    old(signal.SIGINT, None)


def _local_client(n: int, compile_base: Path):
    """A LocalCluster of ``n`` worker processes and its client, started so that a terminal's
    Ctrl-C reaches this process alone. A terminal sends SIGINT to its whole process group, the
    worker processes included; a worker that took it printed its own traceback (while importing)
    and the cluster's close then an AssertionError one. So the cluster starts under
    :func:`_deferred_sigint`: its workers never see a Ctrl-C, and one that came meanwhile raises
    KeyboardInterrupt once the cluster is up, which is then closed. This process alone handles
    Ctrl-C and closes the cluster."""
    from distributed import Client, LocalCluster

    cluster = client = None
    try:
        with _deferred_sigint():
            cluster = LocalCluster(
                n_workers=n,
                threads_per_worker=1,
                processes=True,
                dashboard_address=":0",
                silence_logs=40,
            )
            client = Client(cluster)
            client.register_plugin(compile_dir_plugin(str(compile_base)))
            client.register_plugin(local_worker_plugin())
        return client, cluster
    except BaseException:
        _close(client, cluster)
        raise


def _close(client, cluster) -> None:
    """Close ``client`` and ``cluster`` (either may be None), once more if a second Ctrl-C
    interrupted the first attempt."""
    for _ in range(2):
        try:
            if client is not None:
                client.close()
            if cluster is not None:
                cluster.close()
            return
        except KeyboardInterrupt:
            continue


def write_summary(out_dir: Path, rows: list[dict]) -> Path:
    """``out_dir/summary.csv``: one row per fit (ROW_KEYS), in name order."""
    table = pd.DataFrame(rows, columns=list(ROW_KEYS)).sort_values("name", kind="stable")
    path = out_dir / "summary.csv"
    write_outputs({path: lambda tmp: table.to_csv(tmp, index=False)})
    return path


def _journal(out_dir: Path, row: dict) -> None:
    buf = io.StringIO()
    csv.writer(buf).writerow(
        [time.strftime("%Y-%m-%dT%H:%M:%S"), row["key"], row["name"], row["status"], row["worker"]]
    )
    with open(out_dir / "journal.csv", "a", encoding="utf-8") as fh:
        fh.write(buf.getvalue())
        fh.flush()
        os.fsync(fh.fileno())


@dataclass(frozen=True)
class Cluster:
    """Where a study's sweep fits run (:func:`run_sweep`'s ``workers``, ``scheduler`` and
    ``client``): a local Dask cluster of ``workers`` processes, the scheduler at address
    ``scheduler``, or a running ``client``."""

    workers: int | None = None
    scheduler: str | None = None
    client: object = None

    def sweep(self, specs: list[FitSpec], out_dir, force: bool, say) -> pd.DataFrame:
        """:func:`run_sweep` of ``specs`` into ``out_dir`` here."""
        return run_sweep(specs, out_dir, self.workers, self.scheduler, self.client, force, say)


#: the default place of a study's fits: a local Dask cluster (frozen, so one shared instance)
LOCAL_CLUSTER = Cluster()


def run_sweep(
    specs: list[FitSpec],
    out_dir,
    workers: int | None = None,
    scheduler: str | None = None,
    client=None,
    force: bool = False,
    say=lambda msg: None,
) -> pd.DataFrame:
    """Run ``specs`` (see the module doc); returns the summary table (one row per spec)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    done, todo = plan_sweep(specs, out_dir, force)
    rows = {r["key"]: r for r in done}
    say(f"sweep: {len(specs)} fits, {len(done)} already done, {len(todo)} to run")
    if todo:
        own = client is None
        cluster = None
        try:
            if own:
                client, cluster = _client(workers, scheduler, out_dir / ".compiledir")
            where = (
                scheduler or f"a local cluster of {len(client.scheduler_info()['workers'])} workers"
            )
            say(f"sweep: running on {where}")
            from distributed import as_completed

            futures = [
                client.submit(
                    run_fit, s.to_json(), str(out_dir), 1, pure=False, key=f"bayescpt-fit-{s.key}"
                )
                for s in todo
            ]
            for i, fut in enumerate(as_completed(futures), 1):
                row = fut.result()
                rows[row["key"]] = row
                _journal(out_dir, row)
                write_summary(out_dir, list(rows.values()))
                say(
                    f"[{i}/{len(todo)}] {row['name']}: {row['status']}"
                    + (
                        f" (R-hat {row['max_rhat']:.4f}, ESS {row['min_ess_bulk']:.0f}, "
                        f"{row['divergences']} divergences, {row['seconds']:.1f} s)"
                        if row["status"] in ("ok", "diagnostics")
                        else f": {row['error']}"
                    )
                )
        finally:
            if own:
                _close(client, cluster)
    write_summary(out_dir, list(rows.values()))
    return pd.DataFrame([rows[s.key] for s in specs], columns=list(ROW_KEYS))


FINISHED = ("ok", "diagnostics", "done")


def sweep_outputs(path) -> list[tuple[str, Path]]:
    """(name, fit file) of every finished fit of a sweep: ``path`` is its ``summary.csv`` or its
    folder (then its summary.csv, or without one every ``*.nc`` in it, by name). Raises
    ValueError when there is none."""
    path = Path(path)
    summary = path / "summary.csv" if path.is_dir() else path
    if summary.is_file():
        table = pd.read_csv(summary)
        missing = {"name", "status", "output"} - set(table.columns)
        if missing:
            raise ValueError(f"{summary}: not a sweep summary (no column {sorted(missing)})")
        rows = table[table["status"].isin(FINISHED)]
        out = [(str(r.name), Path(str(r.output))) for r in rows.itertuples()]
        out = [(n, p if p.is_absolute() else summary.parent / p.name) for n, p in out]
    elif path.is_dir():
        out = [(p.stem, p) for p in sorted(path.glob("*.nc")) if not p.name.startswith(".")]
    else:
        raise ValueError(f"{path}: no such sweep folder or summary")
    out = [(n, p) for n, p in out if p.is_file()]
    if not out:
        raise ValueError(f"{path}: no finished fit in this sweep")
    return out
