"""Log fits, plans and sweeps to an MLflow tracking store (the optional ``tracking`` extra).

:func:`track` is the one call: the same inputs as a report (fit files, a plan table, a sweep's
folder). It opens one run (a sweep: one run, and a nested run per fit) and logs

* params: the law, data hash, package version, the sampler settings (``sampler.*``), the fit's
  config flattened (``config.priors.L0.loc`` ...), and any ``params`` given (a plan's question);
* metrics: the diagnostics (max R-hat, min bulk and tail ESS, divergences, stuck chains,
  prior-data conflicts, sampling seconds), PSIS-LOO's elpd where the fit stores a pointwise
  log-likelihood, a plan's choice (P(feasible), expected domain loss);
* artifacts: the fit file (``fit/``), the plan table (``plan/``), the report (``report/``) and
  its plots as PNGs (``plots/``).

``uri`` None means MLflow's own default (``MLFLOW_TRACKING_URI``, else, for MLflow 3.x, the
SQLite store ``sqlite:///mlflow.db`` in the working folder, artifacts under ``./mlruns``); an
``http://`` URI is a tracking server. Nothing is logged unless this is called. mlflow is
imported inside the functions (an optional dependency); the client is explicit, so the
process's global MLflow state is left as it was.
"""

from __future__ import annotations

import math
import tempfile
import time
import warnings
from pathlib import Path

from bayescpt import __version__
from bayescpt.core.fitfile import load_fit
from bayescpt.curves.evaluate.compare import loo_table
from bayescpt.curves.model.fit import Fit
from bayescpt.report.build import sort_inputs
from bayescpt.report.plan import chosen_words, read_plans

EXPERIMENT = "bayescpt"
#: MLflow's limits: characters of a param value, params and metrics per batch
MAX_VALUE, PARAMS_PER_BATCH, METRICS_PER_BATCH = 6000, 100, 1000


def require_mlflow():
    """The mlflow module, or an ImportError saying how to install it."""
    try:
        import mlflow
    except ImportError:
        raise ImportError("--mlflow needs MLflow: pip install 'bayescpt[tracking]'") from None
    return mlflow


def flatten(obj, prefix: str = "") -> dict:
    """A nested dict as {"a.b.c": value} (lists as their text)."""
    out = {}
    for key, value in (obj or {}).items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flatten(value, name + "."))
        else:
            out[name] = value
    return out


def fit_params(fit) -> dict:
    """What a fit was made with, as MLflow params."""
    config = dict(fit.config) if isinstance(fit.config, dict) else {}
    sampler = config.pop("sampler", {}) or {}
    params = {
        "law": fit.meta.get("law"),
        "family": type(fit).__name__,
        "data_hash": fit.meta.get("data_hash"),
        "bayescpt_version": fit.meta.get("bayescpt_version", __version__),
    }
    params.update(flatten(sampler, "sampler."))
    params.update(flatten(fit.meta.get("law_options") or {}, "law_option."))
    params.update(flatten(config, "config."))
    return {k: v for k, v in params.items() if v is not None}


def fit_metrics(fit) -> dict:
    """The diagnostics (and PSIS-LOO's elpd where the fit allows it) as MLflow metrics."""
    d = fit.diagnostics()
    out = {
        "max_rhat": d.max_rhat,
        "min_ess_bulk": d.min_ess_bulk,
        "min_ess_tail": d.min_ess_tail,
        "divergences": d.divergences,
        "stuck_chains": len(d.stuck),
        "prior_conflicts": len(d.conflicts),
        "chains": d.chains,
        "draws": d.draws,
        "diagnostics_ok": float(d.ok),
    }
    if fit.fit_seconds is not None:
        out["fit_seconds"] = fit.fit_seconds
    if isinstance(fit, Fit) and "log_likelihood" in fit.idata.groups():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            loo = loo_table([fit], ["fit"])
        if loo is not None:
            out["elpd_loo"] = float(loo["elpd_loo"].iloc[0])
    return out


def plan_metrics(path) -> dict:
    """A plan table's outcome: plans, feasible plans and the chosen plan's numbers."""
    table = read_plans(path)
    out = {"plans": len(table)}
    if "feasible" in table.columns:
        out["plans_feasible"] = int(table["feasible"].sum())
    chosen = table[table["chosen"]]
    if len(chosen):
        c = chosen.iloc[0]
        out.update(
            {
                "chosen_p_within_tolerance": c["p_within_tolerance"],
                "chosen_domain_mean": c["domain_mean"],
                "chosen_domain_upper": c["domain_upper"],
            }
        )
    return out


def _log(client, run_id: str, params: dict, metrics: dict) -> None:
    """Params and finite metrics of a run, in batches within MLflow's limits."""
    from mlflow.entities import Metric, Param

    now = int(time.time() * 1000)
    ps = [Param(str(k), str(v)[:MAX_VALUE]) for k, v in params.items()]
    ms = [
        Metric(str(k), float(v), now, 0)
        for k, v in metrics.items()
        if v is not None and math.isfinite(float(v))
    ]
    for i in range(0, len(ps), PARAMS_PER_BATCH):
        client.log_batch(run_id, params=ps[i : i + PARAMS_PER_BATCH])
    for i in range(0, len(ms), METRICS_PER_BATCH):
        client.log_batch(run_id, metrics=ms[i : i + METRICS_PER_BATCH])


def _log_fit(client, run_id: str, path: Path) -> None:
    fit = load_fit(path)
    _log(client, run_id, fit_params(fit), fit_metrics(fit))
    client.log_artifact(run_id, str(path), "fit")


def _log_report(client, run_id: str, report, report_path) -> None:
    """The report page and its plots (PNG files) as artifacts."""
    if report_path is not None:
        client.log_artifact(run_id, str(report_path), "report")
    if report is not None and report.images:
        with tempfile.TemporaryDirectory() as tmp:
            for name, png in report.images.items():
                (Path(tmp) / name).write_bytes(png)
            client.log_artifacts(run_id, tmp, "plots")


def track(
    paths,
    uri: str | None = None,
    *,
    report=None,
    report_path=None,
    params: dict | None = None,
    run_name: str | None = None,
    experiment: str = EXPERIMENT,
) -> str:
    """Log ``paths`` (see the module docstring) to the store at ``uri``; ``report`` a
    :class:`~bayescpt.report.build.Report` whose plots to log, ``report_path`` its page.
    Returns the run's id."""
    require_mlflow()
    from mlflow.tracking import MlflowClient

    got = sort_inputs(paths)
    client = MlflowClient(tracking_uri=uri or None)
    found = client.get_experiment_by_name(experiment)
    exp = found.experiment_id if found is not None else client.create_experiment(experiment)
    name = run_name or (got.fits[0][0] if len(got.fits) == 1 else Path(got.paths[0]).name)
    run_id = client.create_run(
        exp, run_name=name, tags={"bayescpt.inputs": ", ".join(str(p) for p in got.paths)}
    ).info.run_id
    status = "FAILED"
    try:
        _log(client, run_id, params or {}, {})
        if len(got.fits) == 1:
            _log_fit(client, run_id, got.fits[0][1])
        for label, path in got.fits if len(got.fits) > 1 else []:
            child = client.create_run(
                exp, run_name=label, tags={"mlflow.parentRunId": run_id}
            ).info.run_id
            _log_fit(client, child, path)
            client.set_terminated(child)
        if got.plan is not None:
            _log(
                client,
                run_id,
                {"plan.choice": chosen_words(read_plans(got.plan))[0]},
                plan_metrics(got.plan),
            )
            client.log_artifact(run_id, str(got.plan), "plan")
        if got.sweep is not None:
            _log(client, run_id, {}, {"fits": len(got.sweep), "fits_finished": len(got.fits)})
        _log_report(client, run_id, report, report_path)
        status = "FINISHED"
    finally:
        client.set_terminated(run_id, status=status)
    return run_id
