"""Draws as ArviZ/xarray objects (issue 18, items 2 and 3): predictive draws as a Dataset and an
InferenceData file (``predict --draws-out``), prior checks (``prior-check``, ``fit
--prior-predictive``). Predictions use the reference fit in models/ (no sampling); the prior
checks a tiny simulated table."""

import arviz as az
import numpy as np
import pandas as pd
import pytest
import xarray as xr

from bayescpt.cli.main import main
from bayescpt.curves.data.validate import read_curves
from bayescpt.curves.forecast.predict import predict_draws, predict_frame, predictive_idata
from bayescpt.curves.model.fit import Fit
from tests.conftest import ROOT
from tests.helpers import quiet as _quiet

# module-scoped fixtures: the module's tests run on one xdist worker (--dist loadgroup)
pytestmark = pytest.mark.xdist_group("curves/test_arviz_native")

FIT = ROOT / "models" / "annealing_multipowerlaw.nc"
HELD = ["100M/wsd_20000_24000", "25M/cosine_72000"]


@pytest.fixture(scope="module")
def fit():
    return Fit.load(FIT)


@pytest.fixture(scope="module")
def schedule():
    """Two runs the reference fit has not seen, every 4th logged step, with their losses."""
    df = read_curves(ROOT / "data" / "multipowerlaw.csv")
    df = df[df["run"].isin(HELD)]
    keep = df["loss"].isna() | (df.groupby("run").cumcount() % 4 == 0)
    return df[keep]


def test_predict_draws_are_exactly_what_predict_frame_summarises(fit, schedule):
    draws, table = _quiet(predict_draws, fit, schedule, prob=0.8, seed=4)
    frame = _quiet(predict_frame, fit, schedule, prob=0.8, seed=4)
    pd.testing.assert_frame_equal(table, frame)
    rows = frame[frame["mean"].notna()]
    post = fit.idata.posterior
    assert dict(draws.sizes) == {
        "chain": post.sizes["chain"],
        "draw": 2 * post.sizes["draw"],
        "point": len(rows),
    }
    assert set(draws.data_vars) == {"loss", "curve"}
    flat = draws.stack(sample=("chain", "draw")).transpose("sample", "point")
    curve, loss = flat["curve"].values, flat["loss"].values
    assert np.allclose(curve.mean(axis=0), rows["mean"], rtol=0, atol=1e-12)
    assert np.allclose(np.median(curve, axis=0), rows["median"], rtol=0, atol=1e-12)
    lo, hi = np.quantile(loss, [0.1, 0.9], axis=0)
    assert np.allclose(lo, rows["lower"], rtol=0, atol=1e-12)
    assert np.allclose(hi, rows["upper"], rtol=0, atol=1e-12)
    clo, chi = np.quantile(curve, [0.1, 0.9], axis=0)
    assert np.allclose(clo, rows["curve_lower"], rtol=0, atol=1e-12)
    assert np.allclose(chi, rows["curve_upper"], rtol=0, atol=1e-12)
    # the point index: selection by run and step, in the table's order
    assert list(draws["run"].values) == list(rows["run"])
    step = int(rows[rows["run"] == HELD[1]]["step"].iloc[-1])
    one = draws.sel(run=HELD[1], step=step)
    assert one["loss"].squeeze().shape == (post.sizes["chain"], 2 * post.sizes["draw"])
    # antithetic halves: same posterior draw, so the noise-free curves of the two halves are
    # the same law with opposite run deviations, not copies
    D = post.sizes["draw"]
    assert not np.allclose(draws["curve"].values[:, :D], draws["curve"].values[:, D:])


def test_predictive_idata_refuses_a_table_of_other_points(fit, schedule):
    draws, table = _quiet(predict_draws, fit, schedule, seed=0)
    with pytest.raises(ValueError, match="does not match"):
        predictive_idata(draws, table.iloc[::-1])


def test_predict_draws_out_is_plain_arviz(tmp_path, schedule, capsys):
    sched = tmp_path / "sched.csv"
    schedule.to_csv(sched, index=False)
    nc = tmp_path / "pred.nc"
    rc = main(
        [
            "predict",
            str(FIT),
            "--schedule",
            str(sched),
            "--out",
            str(tmp_path / "p.csv"),
            "--draws-out",
            str(nc),
            "--seed",
            "2",
        ]
    )
    assert rc == 0
    pred = pd.read_csv(tmp_path / "p.csv")
    idata = az.from_netcdf(nc)  # from here on: ArviZ and xarray only
    assert {"posterior_predictive", "predictions", "observed_data"} <= set(idata.groups())
    pp = idata.posterior_predictive
    assert pp["loss"].dims == ("chain", "draw", "point")
    assert np.allclose(
        pp["loss"].quantile([0.05, 0.95], dim=("chain", "draw")).values,
        pred.dropna(subset=["mean"])[["lower", "upper"]].to_numpy().T,
        atol=1e-5,
    )
    summary = az.summary(idata.predictions.isel(point=slice(0, 5)))
    assert len(summary) == 5 and np.allclose(
        summary["mean"], pred.dropna(subset=["mean"])["mean"][:5], atol=1e-3
    )
    hdi = az.hdi(pp, hdi_prob=0.9)
    assert hdi["loss"].shape == (pp.sizes["point"], 2)
    ax = az.plot_ppc(idata, num_pp_samples=20, random_seed=0)
    assert ax is not None
    obs = idata.observed_data["loss"].values
    assert np.allclose(obs, pred.dropna(subset=["mean"])["loss"], equal_nan=True)
    sel = pp.set_index(point=["run", "val_set", "step", "model_size"]).sel(run=HELD[0])
    assert sel.sizes["point"] == int((pred.dropna(subset=["mean"])["run"] == HELD[0]).sum())
    # an existing --draws-out is refused before any work, kept unchanged; --force replaces it
    before = nc.read_bytes()
    rc = main(
        [
            "predict",
            str(FIT),
            "--schedule",
            str(sched),
            "--out",
            str(tmp_path / "q.csv"),
            "--draws-out",
            str(nc),
            "--seed",
            "3",
        ]
    )
    assert rc == 2 and nc.read_bytes() == before and not (tmp_path / "q.csv").exists()
    assert "pred.nc exists" in capsys.readouterr().err
    rc = main(
        [
            "predict",
            str(FIT),
            "--schedule",
            str(sched),
            "--out",
            str(tmp_path / "q.csv"),
            "--draws-out",
            str(nc),
            "--seed",
            "3",
            "--force",
        ]
    )
    assert rc == 0 and nc.read_bytes() != before


def test_draws_out_without_losses_has_no_observed_data(tmp_path, schedule):
    sched = tmp_path / "sched.csv"
    schedule.drop(columns="loss").to_csv(sched, index=False)
    nc = tmp_path / "pred.nc"
    assert (
        main(
            [
                "predict",
                str(FIT),
                "--schedule",
                str(sched),
                "--out",
                str(tmp_path / "p.csv"),
                "--draws-out",
                str(nc),
            ]
        )
        == 0
    )
    assert set(az.from_netcdf(nc).groups()) == {"posterior_predictive", "predictions"}


def test_draws_out_refusals_are_one_line_exit_2(tmp_path, schedule, capsys):
    sched = tmp_path / "sched.csv"
    schedule.to_csv(sched, index=False)
    out = str(tmp_path / "p.csv")
    rc = main(
        [
            "predict",
            str(FIT),
            "--schedule",
            str(sched),
            "--out",
            out,
            "--draws-out",
            str(tmp_path / "nowhere" / "d.nc"),
        ]
    )
    assert rc == 2 and "--draws-out" in capsys.readouterr().err
    rc = main(["predict", str(FIT), "--schedule", str(sched), "--out", out, "--draws-out", out])
    assert rc == 2 and "same file" in capsys.readouterr().err
    rc = main(
        [
            "predict",
            str(FIT),
            "--schedule",
            str(sched),
            "--out",
            out,
            "--draws-out",
            str(tmp_path / "d.nc"),
            "--observed",
            str(sched),
        ]
    )
    err = capsys.readouterr().err
    assert rc == 2 and "--draws-out and --observed" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "p.csv").exists() and not (tmp_path / "d.nc").exists()


# ---- prior checks -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """Two sizes x three schedules, 12 points each (simulated from the annealing law)."""
    from bayescpt.curves.evaluate import simulate
    from bayescpt.curves.model.laws import get_law

    df, _ = simulate.simulate_hierarchy(
        get_law("annealing"),
        {"L0": 2.8, "A": 0.55, "alpha": 0.5, "C": 0.45},
        {"L0": 0.05, "A": 0.15, "alpha": 0.1, "C": 0.15},
        [25e6, 100e6],
        simulate.default_schedules(total=2000),
        points=12,
        seed=3,
    )
    path = tmp_path_factory.mktemp("prior") / "tiny.csv"
    df.to_csv(path, index=False)
    return path


def test_prior_check_cli_prints_ranges_plots_and_writes(tiny, tmp_path, capsys):
    png, nc = tmp_path / "prior.png", tmp_path / "prior.nc"
    rc = main(
        [
            "prior-check",
            str(tiny),
            "--law",
            "annealing",
            "--draws",
            "60",
            "--seed",
            "1",
            "--plot",
            str(png),
            "--out",
            str(nc),
        ]
    )
    out = capsys.readouterr().out
    assert rc == 0 and png.stat().st_size > 10_000
    for p in ("L0", "A", "alpha", "C"):
        assert f"  {p}: " in out
    assert "inside the 90% prior predictive band" in out
    idata = az.from_netcdf(nc)
    assert {"prior", "prior_predictive", "observed_data"} <= set(idata.groups())
    assert idata.prior_predictive["y"].shape[:2] == (1, 60)
    assert idata.prior["A"].dims == ("chain", "draw", "group")
    # same seed, same draws
    rc = main(
        [
            "prior-check",
            str(tiny),
            "--law",
            "annealing",
            "--draws",
            "60",
            "--seed",
            "1",
            "--plot",
            str(tmp_path / "b.png"),
            "--out",
            str(tmp_path / "b.nc"),
        ]
    )
    assert rc == 0
    np.testing.assert_array_equal(
        az.from_netcdf(tmp_path / "b.nc").prior_predictive["y"], idata.prior_predictive["y"]
    )
    # an existing output is refused before any work
    rc = main(["prior-check", str(tiny), "--law", "annealing", "--plot", str(png)])
    assert rc == 2 and "exists" in capsys.readouterr().err


def test_prior_ranges_and_band(tiny):
    from bayescpt.curves.model.priors import prior_band, prior_check, prior_ranges

    check = prior_check(read_curves(tiny), "annealing", draws=40, seed=0)
    ranges = prior_ranges(check, 0.9).set_index("param")
    assert list(ranges.index) == ["L0", "A", "alpha", "C"]
    assert (ranges["lower"] < ranges["median"]).all() and (ranges["median"] < ranges["upper"]).all()
    assert (ranges.loc[["A", "alpha", "C"], "lower"] > 0).all()  # positive parameters
    band = prior_band(check, 0.9)
    assert len(band) == len(check.points) and (band["lower"] < band["upper"]).all()
    assert band["inside"].mean() > 0.9  # the default priors cover these curves


def test_fit_file_with_prior_groups_round_trips(fit, tmp_path):
    # the groups `fit --prior-predictive` adds, here drawn from a small model (no sampling)
    import pymc as pm

    from bayescpt.curves.model.priors import prior_predictive_idata

    with pm.Model() as model:
        pm.Normal("y", pm.Normal("mu", 0, 1), 1, observed=np.zeros(3))
    idata = fit.idata.copy()
    idata.extend(prior_predictive_idata(model, draws=20, seed=0))
    path = tmp_path / "with_prior.nc"
    Fit(idata, fit.law, fit.config, fit.groups, fit.curves, fit.size_ref, fit.meta).save(path)
    back = Fit.load(path)
    assert {"prior", "prior_predictive"} <= set(back.idata.groups())
    assert back.idata.prior_predictive["y"].shape == (1, 20, 3)
    pd.testing.assert_frame_equal(back.diagnostics().table, fit.diagnostics().table)


def test_fit_run_adds_the_prior_groups(tiny, monkeypatch):
    """Fit.run(prior_predictive=N) draws the prior of the model it samples (NUTS replaced by a
    stand-in posterior here: the sampling itself is tested elsewhere)."""
    import bayescpt.core.fit_template as fit_module  # the one sampling flow (issue 45)
    from bayescpt.curves.model.priors import prior_predictive_idata

    def fake_sample(model, s, **kw):
        prior = prior_predictive_idata(model, draws=8, seed=9).prior
        post = xr.concat(
            [
                prior.isel(chain=[0], draw=slice(4 * c, 4 * c + 4)).assign_coords(
                    chain=[c], draw=np.arange(4)
                )
                for c in range(2)
            ],
            "chain",
        )
        stats = xr.Dataset(
            {"diverging": (("chain", "draw"), np.zeros((2, 4), dtype=bool))},
            coords={"chain": [0, 1], "draw": np.arange(4)},
        )
        return az.InferenceData(posterior=post, sample_stats=stats)

    monkeypatch.setattr(fit_module, "sample_model", fake_sample)
    f = Fit.run(
        read_curves(tiny),
        law="annealing",
        chains=2,
        draws=4,
        warn=False,
        prior_predictive=30,
        seed=2,
    )
    assert {"posterior", "prior", "prior_predictive"} <= set(f.idata.groups())
    assert f.idata.prior_predictive["y"].shape == (1, 30, f.meta["n_points"])


@pytest.mark.slow
def test_fit_prior_predictive_option_stores_the_groups(tiny, tmp_path):
    """Through the CLI with real sampling (about 2 minutes on a busy 2-core machine)."""
    out = tmp_path / "fit.nc"
    rc = main(
        [
            "fit",
            str(tiny),
            "--law",
            "annealing",
            "--out",
            str(out),
            "--chains",
            "2",
            "--draws",
            "20",
            "--tune",
            "20",
            "--prior-predictive",
            "--quiet",
        ]
    )
    assert rc == 0
    fit = Fit.load(out)
    assert {"posterior", "prior", "prior_predictive"} <= set(fit.idata.groups())
    assert fit.idata.prior_predictive["y"].shape[1] == 500
    assert fit.idata.prior_predictive.sizes["obs"] == fit.idata.observed_data.sizes["obs"]


# ---- hparams optima and mixture CMR draws -------------------------------------------------


def test_hparams_predict_draws_out(tmp_path):
    import json

    nc, js = tmp_path / "opt.nc", tmp_path / "opt.json"
    rc = main(
        [
            "hparams",
            "predict",
            str(ROOT / "models" / "hparams_steplaw.nc"),
            "--n-params",
            "1.07e9",
            "--init-loss",
            "2.25",
            "--cpt-tokens",
            "2e10",
            "--grid-lrs",
            "1e-3,2e-3",
            "--grid-batches",
            "1e6,2e6",
            "--out",
            str(js),
            "--draws-out",
            str(nc),
        ]
    )
    assert rc == 0
    res = json.loads(js.read_text())
    assert "_draws" not in res
    pred = az.from_netcdf(nc).predictions
    assert set(pred.data_vars) == {
        "lr_opt",
        "batch_size_opt",
        "C_pre",
        "C_total",
        "grid_best_lr",
        "grid_best_batch_size",
    }
    assert pred["lr_opt"].dims == ("chain", "draw")
    # the JSON's summaries are of these draws (its quantiles: method inverted_cdf)
    lr = pred["lr_opt"].values.ravel()
    assert np.isclose(
        np.quantile(lr, 0.5, method="inverted_cdf"), res["lr_opt"]["median"], rtol=1e-12
    )
    bs = pred["batch_size_opt"].values.ravel()
    assert np.isclose(
        np.quantile(bs, 0.05, method="inverted_cdf"), res["batch_size_opt"]["lower"], rtol=1e-12
    )
    assert set(np.unique(pred["grid_best_lr"])) <= {1e-3, 2e-3}
    assert az.summary(pred, var_names=["lr_opt"], kind="stats").shape[0] == 1


def test_mixture_cmr_draws_out(tmp_path, capsys):
    import json

    nc, js = tmp_path / "cmr.nc", tmp_path / "cmr.json"
    args = [
        "mixture",
        "cmr",
        str(ROOT / "models" / "mixture_ct70m.nc"),
        "--tolerance",
        "0",
        "--tokens",
        "10000",
        "--out",
        str(js),
        "--draws-out",
        str(nc),
    ]
    assert main(args) == 0
    res = json.loads(js.read_text())
    assert "_draws" not in json.dumps(res)
    pred = az.from_netcdf(nc).predictions
    assert pred["cmr"].dims == ("chain", "draw", "model_size")
    assert pred["general_loss"].dims == ("chain", "draw", "model_size", "ratio")
    cmr = res["results"][0]["cmr"]
    assert np.isclose(float(pred["cmr"].mean()), cmr["mean"], rtol=1e-9)
    p = pred["feasible"].mean(("chain", "draw")).isel(model_size=0).values
    assert np.allclose(p, res["p_feasible"]["p"], atol=1e-4)
    assert az.hdi(pred, var_names=["cmr"])["cmr"].shape == (1, 2)
    assert main(args) == 2 and "exists" in capsys.readouterr().err  # refused without --force
