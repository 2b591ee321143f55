"""Comparing fits: differences of shared parameters, PSIS-LOO on the same data, the CLI."""

from __future__ import annotations

import pandas as pd

from bayescpt.cli.main import main
from bayescpt.curves.evaluate.compare import (
    differences,
    loo_table,
    parameter_table,
    shared_parameters,
)
from bayescpt.curves.model.fit import Fit


def test_a_fit_against_itself_differs_by_nothing(small_fit_file):
    _, path = small_fit_file
    a, b = Fit.load(path), Fit.load(path)
    params = shared_parameters([a, b])
    assert set(params) == {"L0", "A", "alpha", "C"}
    d = differences([a, b], ["a", "b"])
    assert ((d["diff_lower"] < 0) & (d["diff_upper"] > 0)).all()
    assert d["p_greater"].between(0.4, 0.6).all()
    loo = loo_table([a, b], ["a", "b"])
    assert loo is not None and abs(loo.loc["b", "elpd_diff"]) < 1e-9


def test_fits_of_different_data_are_not_loo_compared(small_fit_file, cpt_cli_fit):
    a = Fit.load(small_fit_file[1])
    c = Fit.load(cpt_cli_fit[0] / "fit.nc")
    assert loo_table([a, c]) is None
    assert shared_parameters([a, c]) == ["L0", "A", "alpha"]
    t = parameter_table([a, c], ["annealing", "cpt"])
    assert {"fit", "param", "group", "mean", "lower", "upper"} <= set(t.columns)
    assert (t["lower"] <= t["mean"]).all() and (t["mean"] <= t["upper"]).all()


def test_cli_compare(small_fit_file, tmp_path, capsys):
    _, path = small_fit_file
    args = [
        "compare",
        str(path),
        str(path),
        "--names",
        "x,y",
        "--out",
        str(tmp_path / "diff.csv"),
        "--plot",
        str(tmp_path / "forest.png"),
    ]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "differences against x" in out and "PSIS-LOO" in out
    assert len(pd.read_csv(tmp_path / "diff.csv")) >= 4
    assert (tmp_path / "forest.png").stat().st_size > 10_000
    assert main(args) == 2  # no silent overwrite
    assert main(["compare", str(path)]) == 2  # one fit is not a comparison
    assert "at least two" in capsys.readouterr().err


def test_a_pointwise_log_likelihood_too_large_is_not_stored_and_loo_says_why(
    small_fit_file, monkeypatch
):
    """4 x 1000 draws of 1e6 points would be 32 GB of log likelihood: above the limit the fit
    keeps none, says so, and LOO names the reason instead of failing inside ArviZ."""
    import numpy as np
    import pymc as pm
    import pytest

    from bayescpt.core import loglik as sampling

    with pm.Model() as model:
        mu = pm.Normal("mu")
        pm.Normal("y", mu, 1.0, observed=np.zeros(1000))
        pm.Normal("z", mu, 1.0, observed=pm.Data("zd", np.zeros(500)))
    assert sampling.observed_points(model) == 1500
    s = {"chains": 4, "draws": 1000}
    assert sampling.loglik_too_large(model, s) is None  # 48 MB
    monkeypatch.setattr(sampling, "LOGLIK_MAX_BYTES", 10 * 2**20)
    why = sampling.loglik_too_large(model, s)
    assert why.startswith(
        "pointwise log likelihood not stored: 4 chains x 1000 draws x 1500 "
        "observed points would take 46 MiB (limit 10 MiB)"
    )

    a, b = Fit.load(small_fit_file[1]), Fit.load(small_fit_file[1])
    idata = b.idata
    with pytest.warns(sampling.LogLikelihoodSkipped, match="not stored"):
        sampling.store_log_likelihood(idata, model, s)
    del idata.log_likelihood
    assert loo_table([a, b], ["a", "b"]) is None
    from bayescpt.curves.evaluate.compare import loo_unavailable

    assert loo_unavailable([a, b], ["a", "b"]) == f"b has no pointwise log likelihood ({why})"
    assert loo_unavailable([a, a]) is None
