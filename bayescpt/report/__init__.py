"""Reports and run tracking: one self-contained HTML page per fit, plan or sweep, and MLflow.

* :func:`~bayescpt.report.build.build_report` / :func:`~bayescpt.report.build.write_report`:
  the page for fit files (curve, hparams, mixture), optionally with a schedule or grid table
  (predictions), a plan table, or a sweep's folder. The sections (data, diagnostics, sampler,
  parameters, predictions, extrapolation, plan, provenance) are assembled from the package's own
  plot functions and diagnostics (:mod:`bayescpt.report.sections`,
  :mod:`bayescpt.report.predictions`) and rendered by Jinja2 (:mod:`bayescpt.report.render`).
* :mod:`bayescpt.report.tracking`: log a fit, plan or sweep to an MLflow tracking store (the
  optional ``tracking`` extra).

This layer sits between the command line and ``datasets | lab | parallel``: the CLI only calls it.
"""
