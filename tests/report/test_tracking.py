"""MLflow tracking: ``bayescpt fit --mlflow URI --report`` against a real ``mlflow server``
(SQLite backend on 127.0.0.1), read back with ``MlflowClient``; the local default store; and
nothing logged unless asked."""

import os
import socket
import subprocess
import sys
import time
import urllib.request
from argparse import Namespace
from pathlib import Path

import numpy as np
import pytest

from bayescpt.cli.main import main
from bayescpt.cli.report import with_outputs
from bayescpt.core.fitfile import load_fit
from bayescpt.report.tracking import track
from tests.conftest import ROOT

# module-scoped fixtures: the module's tests run on one xdist worker (--dist loadgroup)
pytestmark = pytest.mark.xdist_group("report/test_tracking")

mlflow = pytest.importorskip("mlflow", reason="the tracking extra (mlflow) is not installed")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A real tracking server: SQLite backend store, artifacts served from a local folder."""
    d = tmp_path_factory.mktemp("mlflow")
    port = _free_port()
    exe = Path(sys.executable).parent / "mlflow"
    proc = subprocess.Popen(
        [
            str(exe),
            "server",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--backend-store-uri",
            f"sqlite:///{d / 'mlflow.db'}",
            "--artifacts-destination",
            str(d / "artifacts"),
            "--workers",
            "1",
        ],
        cwd=d,
        stdout=open(d / "server.log", "w"),
        stderr=subprocess.STDOUT,
    )
    uri = f"http://127.0.0.1:{port}"
    try:
        for _ in range(240):
            try:
                if urllib.request.urlopen(uri + "/health", timeout=2).status == 200:
                    break
            except OSError:
                time.sleep(0.5)
            assert proc.poll() is None, (d / "server.log").read_text()[-3000:]
        else:
            pytest.fail("mlflow server did not start: " + (d / "server.log").read_text()[-3000:])
        yield uri
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.mark.slow  # a real server and a real fit in a child process (a minute)
def test_fit_logs_params_metrics_and_the_fit_to_a_server(server, tiny_csv, tmp_path):
    fit_path, report = tmp_path / "fit.nc", tmp_path / "fit.html"
    rc = main(
        [
            "fit",
            str(tiny_csv),
            "--law",
            "annealing",
            "--out",
            str(fit_path),
            "--chains",
            "2",
            "--draws",
            "60",
            "--tune",
            "60",
            "--seed",
            "1",
            "--quiet",
            "--mlflow",
            server,
            "--report",
            str(report),
        ]
    )
    assert rc == 0 and report.is_file()
    client = mlflow.tracking.MlflowClient(tracking_uri=server)
    exp = client.get_experiment_by_name("bayescpt")
    (run,) = client.search_runs([exp.experiment_id])
    assert run.info.status == "FINISHED"
    p, m = run.data.params, run.data.metrics
    assert p["law"] == "annealing" and p["sampler.chains"] == "2" and p["sampler.draws"] == "60"
    assert p["command"].startswith("bayescpt fit ") and "config.priors.L0.loc" in p
    assert {"max_rhat", "min_ess_bulk", "divergences", "elpd_loo"} <= set(m)
    assert m["draws"] == 60 and m["chains"] == 2
    files = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert files == {"fit", "report", "plots"}
    assert {a.path for a in client.list_artifacts(run.info.run_id, "report")} == {"report/fit.html"}
    assert len(client.list_artifacts(run.info.run_id, "plots")) == 3
    got = Path(client.download_artifacts(run.info.run_id, "fit/fit.nc", str(tmp_path / "dl")))
    mine, theirs = load_fit(fit_path), load_fit(got)
    assert mine.meta["data_hash"] == theirs.meta["data_hash"]
    for name in mine.idata.posterior.data_vars:
        np.testing.assert_array_equal(
            mine.idata.posterior[name].values, theirs.idata.posterior[name].values
        )


def test_the_default_store_is_mlflow_db_in_the_working_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    fit = ROOT / "models" / "mixture_ct70m.nc"
    run_id = track([fit], params={"note": "local"})
    assert (tmp_path / "mlflow.db").is_file()
    client = mlflow.tracking.MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    run = client.get_run(run_id)
    assert run.data.params["note"] == "local" and run.data.params["law"] == "mixture"
    assert run.data.metrics["divergences"] == 0
    assert [a.path for a in client.list_artifacts(run_id, "fit")] == ["fit/mixture_ct70m.nc"]


def test_nothing_is_logged_or_written_unless_asked(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    calls = []
    args = Namespace(command="fit", report=None, mlflow=None, out=tmp_path / "fit.nc")
    assert with_outputs(lambda a: calls.append(a) or 0, args) == 0
    assert calls == [args] and os.listdir(tmp_path) == []


def test_a_failed_command_writes_no_report(tmp_path):
    args = Namespace(
        command="fit",
        report=tmp_path / "r.html",
        mlflow="",
        force=False,
        out=tmp_path / "fit.nc",
        data=None,
    )
    assert with_outputs(lambda a: 2, args) == 2
    assert not (tmp_path / "r.html").exists() and not (tmp_path / "mlflow.db").exists()
