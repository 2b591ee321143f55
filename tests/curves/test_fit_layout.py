"""Labelled fit files (issue 18, item 1): every reference fit in models/ opens in ArviZ and xarray
with its tables in ``constant_data`` and its dimensions labelled, and works there without any
bayescpt code; files written before (tables as JSON attrs, tests/data/old_layout) still load and
predict exactly as after they are rewritten in the new layout."""

from __future__ import annotations

import arviz as az
import matplotlib
import numpy as np
import pandas as pd
import pytest

from bayescpt.core.fitfile import TABLE_ATTR, load_fit, read_tables
from bayescpt.curves.data.validate import read_curves
from bayescpt.curves.forecast.predict import predict_draws, predictive_idata
from bayescpt.hparams.predict import predict_optimum
from bayescpt.mixture.decide import CmrCriterion, cmr_results
from tests.conftest import ROOT, SHARED
from tests.helpers import quiet as _quiet

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

FILES = sorted((ROOT / "models").glob("*.nc"))
OLD = sorted((ROOT / "tests" / "data" / "old_layout").glob("*.nc"))
#: posterior attrs that held the index tables as JSON before the labelled layout
TABLE_KEYS = {"groups", "curves", "cells", "points"}


def _held_out_runs():
    df = read_curves(ROOT / "data" / "multipowerlaw.csv")
    df = df[df["run"].isin(["100M/wsd_20000_24000", "25M/cosine_72000"])]
    return df[df["loss"].isna() | (df.groupby("run").cumcount() % 8 == 0)]


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_reference_file_is_labelled_and_plain_arviz(path):
    idata = az.from_netcdf(path)  # from here on: ArviZ and xarray only
    post = idata.posterior
    assert not TABLE_KEYS & set(post.attrs), "tables are in constant_data, not attrs"
    cd = idata.constant_data
    assert any(TABLE_ATTR in cd[v].attrs for v in cd.data_vars)
    summary = az.summary(idata, kind="stats")
    assert len(summary) > 5 and np.isfinite(summary["mean"]).all()
    names = [v for v in post.data_vars if post[v].ndim == 3][:2]
    axes = az.plot_trace(idata, var_names=names, compact=True)
    assert axes.shape == (2, 2)
    plt.close("all")
    if "log_likelihood" in idata.groups():
        loo = az.loo(idata)
        assert np.isfinite(loo.elpd_loo)
    obs = idata.observed_data
    if "group" in post.dims:  # loss-curve and mixture fits
        size = float(post["model_size"].values[-1])
        one = post.where(post["model_size"] == size, drop=True)
        assert one.sizes["group"] == int((post["model_size"].values == size).sum())
        vs = str(post["val_set"].values[0])
        assert post.sel(group=post["val_set"] == vs).sizes["group"] >= 1
        run = str(obs["run"].values[0])
        y = obs.where(obs["run"] == run, drop=True)
        assert 0 < y.sizes["obs"] < obs.sizes["obs"]
        if "step" in obs.coords:  # loss curves: (run, val_set, step) identify a point
            idx = obs.set_index(obs=["run", "val_set", "step"])
            assert idx.indexes["obs"].is_unique
            step = int(y["step"].values[-1])
            assert float(
                idx.sel(run=run, val_set=str(y["val_set"].values[-1]), step=step)["y"]
            ) == float(y["y"].values[-1])
        else:  # mixture: run, ratio, tokens
            assert {"ratio", "tokens", "val_set"} <= set(obs.coords)
    else:  # the grid fit: cells by size and tokens, runs by all
        assert {"model_size", "tokens"} <= set(post.coords)
        assert {"model_size", "tokens", "lr", "batch_size"} <= set(obs.coords)
        big = obs.where(obs["model_size"] == obs["model_size"].max(), drop=True)
        assert 0 < big.sizes["run"] < obs.sizes["run"]


CURVE_FILES = [p for p in FILES if not p.stem.startswith(("hparams", "mixture"))]


@pytest.mark.parametrize("path", CURVE_FILES, ids=[p.stem for p in CURVE_FILES])
def test_plot_ppc_on_the_predictions_of_a_curve_fit(path):
    """Predictions of runs with losses as an InferenceData (posterior_predictive, predictions,
    observed_data); the hparams and mixture files' predictions (optima, CMRs) have no observed
    counterpart to compare, their draws are checked in test_arviz_native."""
    fit = load_fit(path)
    if fit.law.name == "cpt":
        df = read_curves(ROOT / "data" / "cpt_simulated.csv")
        df = df[df["run"] == df["run"].iloc[0]]
    elif "olmo" in path.stem:
        from bayescpt.datasets.public import load_olmo_ladder

        ladder = SHARED / "olmo-ladder" / "peteish-moreeval"
        if not ladder.exists():
            pytest.skip("the OLMo-2 ladder logs (shared data) are not here")
        df = load_olmo_ladder(ladder, runs=["370M-1xC"])
        df = df[df.groupby("run").cumcount() % 8 == 0]
    else:
        df = _held_out_runs()
    draws, table = _quiet(predict_draws, fit, df, seed=1)
    idata = predictive_idata(draws, table)
    ax = az.plot_ppc(idata, num_pp_samples=10, random_seed=0)
    assert ax is not None
    plt.close("all")
    assert az.hdi(idata.posterior_predictive, hdi_prob=0.9)["loss"].shape[-1] == 2


@pytest.mark.parametrize("path", OLD, ids=[p.stem for p in OLD])
def test_file_written_before_loads_and_predicts_as_the_relabelled_one(path, tmp_path):
    old = load_fit(path)
    assert "constant_data" not in old.idata.groups()  # a genuine old-layout file
    new_path = tmp_path / path.name
    old.save(new_path)
    new = load_fit(new_path)
    assert read_tables(new.idata)  # the tables moved to constant_data
    for key in new.tables:
        a, b = getattr(old, key), getattr(new, key)
        if a is None:
            continue
        assert list(a.columns) == list(b.columns)
        for col in a.columns:
            assert (
                a[col].astype(object).fillna("na").tolist()
                == b[col].astype(object).fillna("na").tolist()
            ), (key, col)
    if path.stem.startswith("hparams"):
        kw = dict(
            n_params=1.07e9,
            init_loss=2.25,
            cpt_tokens=2e10,
            seed=3,
            grid=([1e-3, 2e-3], [1e6, 2e6]),
            keep_draws=True,
        )
        a, b = (_quiet(predict_optimum, f, **kw) for f in (old, new))
        for k in ("_draws",):
            for v in a[k]:
                assert np.array_equal(a[k][v], b[k][v]), v
    elif path.stem.startswith("mixture"):
        kw = dict(tokens=10000, criterion=CmrCriterion(0.0), keep_draws=True)
        a, b = (_quiet(cmr_results, f, **kw) for f in (old, new))
        assert np.array_equal(a[0]["_draws"]["cmr"], b[0]["_draws"]["cmr"])
    else:
        df = (
            _held_out_runs()
            if "multipowerlaw" in path.stem
            else read_curves(ROOT / "data" / "cpt_simulated.csv")
        )
        (da, ta), (db, tb) = (_quiet(predict_draws, f, df, seed=5) for f in (old, new))
        assert np.array_equal(da["loss"].values, db["loss"].values)  # max difference 0
        pd.testing.assert_frame_equal(ta, tb)
