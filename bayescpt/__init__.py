"""bayescpt: Bayesian scaling laws for planning continual pre-training.

The public API: ``import bayescpt as bc`` gives every name a notebook needs, by group. The names
are imported on first use (PEP 562), so ``import bayescpt`` stays light (no PyMC, ArviZ or
PyTensor until a name that needs them is used); every name also stays importable from its own
module, which its entry below names.

Reading tables and logs
    ``read_curves``, ``validate_curves``, ``describe_curves`` (loss-curve tables,
    ``curves.data``); ``read_observed`` (a run's observed prefix); ``thin_cpt`` (thin CPT curves
    for a fit); ``read_grid``, ``validate_grid``, ``describe_grid`` (LR x batch-size grids,
    ``hparams.data``); ``read_mixture``, ``validate_mixture``, ``describe_mixture`` (mixture
    tables, ``mixture.data``); ``import_logs`` (training logs, ``datasets.logs``);
    ``bundled_multipowerlaw``, ``split``, ``TRAIN_SCHEDULES`` (the bundled data,
    ``datasets.bundled``); ``data_hash`` (``core.tables``).

Fitting
    ``Fit`` (loss curves, ``curves.model.fit``), ``cpt_law_options`` (the CPT law's options a
    table calls for), ``HparamsFit`` (``hparams.fit``), ``MixtureFit`` (``mixture.fit``).

Loading fit files
    ``load_fit`` (any family, by the law stored in the file; ``core.fitfile``); each family's
    ``.load`` also reads its own.

Predicting
    ``forecast``, ``Forecast`` (the one loss-curve forecast entry point,
    ``curves.forecast.forecast``), ``predict_frame`` (``curves.forecast.predict``);
    ``predict_optimum``, ``law_text`` (``hparams.predict``); ``cmr_results``, ``cmr_report``,
    ``cmr_vs_tokens``, ``feasibility``, ``CmrCriterion`` (``mixture.decide``); ``score``,
    ``percent_text`` (``curves.evaluate.scores``).

Planning
    ``run_plan``, ``PlanResult`` (``cpt.run``), ``plan_request``, ``PlanRequest``
    (``cpt.plan.request``), ``pt_schedule_from_table`` (``cpt.plan.files``).

Comparing
    ``parameter_table``, ``differences``, ``loo_table`` (``curves.evaluate.compare``).

Plots
    ``plot_diagnostics``, ``plot_ranks`` (``core.plotting``); ``plot_predictions``,
    ``plot_forest``, ``plot_cv``, ``plot_prior_check`` (``curves.evaluate.plots``); ``plot_fit``,
    ``plot_optimum`` (``hparams.plots``); ``plot_cmr``, ``plot_loss_vs_ratio``
    (``mixture.plots``); ``plot_plans`` (``cpt.plots``).

Schedules
    ``Schedule`` and the module ``schedules`` (``core.schedules``: ``schedules.cosine``,
    ``schedules.wsd``, ``schedules.constant``, ``schedules.rewarmup``, ``schedules.from_points``,
    ``schedules.areas``...).
"""

import importlib

__version__ = "0.1.0"

#: public name -> (module, attribute); attribute None: the module itself
_EXPORTS = {
    # reading tables and logs
    "read_curves": ("bayescpt.curves.data.validate", "read_curves"),
    "validate_curves": ("bayescpt.curves.data.validate", "validate_curves"),
    "describe_curves": ("bayescpt.curves.data.table", "describe"),
    "read_observed": ("bayescpt.curves.data.observed", "read_observed"),
    "thin_cpt": ("bayescpt.curves.data.thinning", "thin_cpt"),
    "read_grid": ("bayescpt.hparams.data", "read_grid"),
    "validate_grid": ("bayescpt.hparams.data", "validate_grid"),
    "describe_grid": ("bayescpt.hparams.data", "describe_grid"),
    "read_mixture": ("bayescpt.mixture.data", "read_mixture"),
    "validate_mixture": ("bayescpt.mixture.data", "validate_mixture"),
    "describe_mixture": ("bayescpt.mixture.data", "describe"),
    "import_logs": ("bayescpt.datasets.logs", "import_logs"),
    "bundled_multipowerlaw": ("bayescpt.datasets.bundled", "bundled_multipowerlaw"),
    "split": ("bayescpt.datasets.bundled", "split"),
    "TRAIN_SCHEDULES": ("bayescpt.datasets.bundled", "TRAIN_SCHEDULES"),
    "data_hash": ("bayescpt.core.tables", "data_hash"),
    # fitting
    "Fit": ("bayescpt.curves.model.fit", "Fit"),
    "cpt_law_options": ("bayescpt.curves.model.laws.cpt_options", "cpt_law_options"),
    "HparamsFit": ("bayescpt.hparams.fit", "HparamsFit"),
    "MixtureFit": ("bayescpt.mixture.fit", "MixtureFit"),
    # loading fit files
    "load_fit": ("bayescpt.core.fitfile", "load_fit"),
    # predicting
    "forecast": ("bayescpt.curves.forecast.forecast", "forecast"),
    "Forecast": ("bayescpt.curves.forecast.forecast", "Forecast"),
    "predict_frame": ("bayescpt.curves.forecast.predict", "predict_frame"),
    "predict_optimum": ("bayescpt.hparams.predict", "predict_optimum"),
    "law_text": ("bayescpt.hparams.predict", "law_text"),
    "cmr_results": ("bayescpt.mixture.decide", "cmr_results"),
    "cmr_report": ("bayescpt.mixture.decide", "cmr_report"),
    "cmr_vs_tokens": ("bayescpt.mixture.decide", "cmr_vs_tokens"),
    "feasibility": ("bayescpt.mixture.decide", "feasibility"),
    "CmrCriterion": ("bayescpt.mixture.decide", "CmrCriterion"),
    "score": ("bayescpt.curves.evaluate.scores", "score"),
    "percent_text": ("bayescpt.curves.evaluate.scores", "percent_text"),
    # planning
    "run_plan": ("bayescpt.cpt.run", "run_plan"),
    "PlanResult": ("bayescpt.cpt.run", "PlanResult"),
    "plan_request": ("bayescpt.cpt.plan.request", "plan_request"),
    "PlanRequest": ("bayescpt.cpt.plan.request", "PlanRequest"),
    "pt_schedule_from_table": ("bayescpt.cpt.plan.files", "pt_schedule_from_table"),
    # comparing
    "parameter_table": ("bayescpt.curves.evaluate.compare", "parameter_table"),
    "differences": ("bayescpt.curves.evaluate.compare", "differences"),
    "loo_table": ("bayescpt.curves.evaluate.compare", "loo_table"),
    # plots
    "plot_diagnostics": ("bayescpt.core.plotting", "plot_diagnostics"),
    "plot_ranks": ("bayescpt.core.plotting", "plot_ranks"),
    "plot_predictions": ("bayescpt.curves.evaluate.plots", "plot_predictions"),
    "plot_forest": ("bayescpt.curves.evaluate.plots", "plot_forest"),
    "plot_cv": ("bayescpt.curves.evaluate.plots", "plot_cv"),
    "plot_prior_check": ("bayescpt.curves.evaluate.plots", "plot_prior_check"),
    "plot_fit": ("bayescpt.hparams.plots", "plot_fit"),
    "plot_optimum": ("bayescpt.hparams.plots", "plot_optimum"),
    "plot_cmr": ("bayescpt.mixture.plots", "plot_cmr"),
    "plot_loss_vs_ratio": ("bayescpt.mixture.plots", "plot_loss_vs_ratio"),
    "plot_plans": ("bayescpt.cpt.plots", "plot_plans"),
    # schedules
    "Schedule": ("bayescpt.core.schedules", "Schedule"),
    "schedules": ("bayescpt.core.schedules", None),
}

__all__ = [
    "__version__",
    # reading tables and logs
    "read_curves",
    "validate_curves",
    "describe_curves",
    "read_observed",
    "thin_cpt",
    "read_grid",
    "validate_grid",
    "describe_grid",
    "read_mixture",
    "validate_mixture",
    "describe_mixture",
    "import_logs",
    "bundled_multipowerlaw",
    "split",
    "TRAIN_SCHEDULES",
    "data_hash",
    # fitting
    "Fit",
    "cpt_law_options",
    "HparamsFit",
    "MixtureFit",
    # loading fit files
    "load_fit",
    # predicting
    "forecast",
    "Forecast",
    "predict_frame",
    "predict_optimum",
    "law_text",
    "cmr_results",
    "cmr_report",
    "cmr_vs_tokens",
    "feasibility",
    "CmrCriterion",
    "score",
    "percent_text",
    # planning
    "run_plan",
    "PlanResult",
    "plan_request",
    "PlanRequest",
    "pt_schedule_from_table",
    # comparing
    "parameter_table",
    "differences",
    "loo_table",
    # plots
    "plot_diagnostics",
    "plot_ranks",
    "plot_predictions",
    "plot_forest",
    "plot_cv",
    "plot_prior_check",
    "plot_fit",
    "plot_optimum",
    "plot_cmr",
    "plot_loss_vs_ratio",
    "plot_plans",
    # schedules
    "Schedule",
    "schedules",
]


def __getattr__(name: str):
    """Import a public name's module on first use (PEP 562) and keep the name here after."""
    try:
        module, attribute = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'bayescpt' has no attribute {name!r}") from None
    value = importlib.import_module(module)
    if attribute is not None:
        value = getattr(value, attribute)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
