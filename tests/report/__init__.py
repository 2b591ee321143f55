"""Tests of bayescpt.report: the HTML report and MLflow tracking."""
