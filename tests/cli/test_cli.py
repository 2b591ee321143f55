import json

import numpy as np
import pandas as pd
import pytest

from bayescpt.cli.main import main
from bayescpt.curves.model.fit import Fit


def test_fit_writes_a_reloadable_file_with_attrs(small_fit_file):
    _, out = small_fit_file
    fit = Fit.load(out, law="annealing")
    assert fit.meta["law"] == "annealing" and fit.meta["bayescpt_version"]
    assert len(fit.meta["data_hash"]) == 16
    assert set(fit.config["priors"]) == {"L0", "A", "alpha", "C"}
    groups = set(fit.idata.groups())
    assert {"posterior", "sample_stats", "observed_data", "log_likelihood"} <= groups
    assert fit.idata.log_likelihood["y"].shape[-1] == 270


def test_predict_cli_columns_and_reproducibility(small_fit_file, tmp_path, capsys):
    data, out = small_fit_file
    df = pd.read_csv(data)
    sched = df[df["run"].str.endswith("wsd")][["run", "step", "lr", "model_size"]]
    sched = sched[sched["step"] % 100 == 0].copy()
    sched.loc[:, "run"] = sched["run"] + "-plan"
    sched_path = tmp_path / "sched.csv"
    sched.to_csv(sched_path, index=False)
    outs = []
    for name in ("a.csv", "b.csv"):
        rc = main(
            [
                "predict",
                str(out),
                "--schedule",
                str(sched_path),
                "--prob",
                "0.8",
                "--out",
                str(tmp_path / name),
                "--seed",
                "5",
            ]
        )
        assert rc == 0
        outs.append(pd.read_csv(tmp_path / name))
    pred = outs[0]
    assert list(pred.columns) == [
        "run",
        "step",
        "lr",
        "val_set",
        "model_size",
        "mean",
        "median",
        "lower",
        "upper",
        "curve_lower",
        "curve_upper",
    ]
    assert len(pred) == int((sched["step"] >= 1).sum())
    pd.testing.assert_frame_equal(outs[0], outs[1])
    # rows inside the initial warmup (200 steps) get no prediction: the law does not hold there
    assert pred.loc[pred["step"] < 200, "mean"].isna().all()
    pred = pred[pred["step"] >= 200]
    assert pred[["mean", "median", "lower", "upper"]].notna().all().all()
    # the predictive interval adds observation noise to the curve band (up to Monte Carlo error)
    assert (pred["upper"] - pred["lower"]).mean() > (
        pred["curve_upper"] - pred["curve_lower"]
    ).mean()
    assert np.mean(pred["lower"] <= pred["curve_lower"]) > 0.9
    assert np.mean(pred["upper"] >= pred["curve_upper"]) > 0.9
    assert np.all(pred["curve_lower"] <= pred["median"]) and np.all(
        pred["median"] <= pred["curve_upper"]
    )


def test_saved_fit_reloads_and_predicts_identically(small_fit_file, small_curves):
    from bayescpt.curves.forecast.predict import predict_frame

    _, out = small_fit_file
    a, b = Fit.load(out), Fit.load(out)
    df = small_curves[0]
    p1 = predict_frame(a, df[df["run"] == "100M/cosine"], seed=1)
    p2 = predict_frame(b, df[df["run"] == "100M/cosine"], seed=1)
    pd.testing.assert_frame_equal(p1, p2)


def test_diagnose_prints_table_and_strict_exit_code(small_fit_file, capsys):
    _, out = small_fit_file
    rc = main(["diagnose", str(out)])
    text = capsys.readouterr().out
    assert rc == 0 and "R-hat" in text and "ess_bulk" in text and "L0_mu" in text
    fit = Fit.load(out)
    rc_strict = main(["diagnose", str(out), "--strict"])
    assert rc_strict == (0 if fit.diagnostics().ok else 1)


def test_strict_fails_on_bad_sampling(small_curves, tmp_path, capsys):
    data = tmp_path / "c.csv"
    small_curves[0].to_csv(data, index=False)
    # 2 chains x 20 draws cannot reach bulk ESS 400: --strict must fail, the fit is still saved
    rc = main(
        [
            "fit",
            str(data),
            "--law",
            "annealing",
            "--out",
            str(tmp_path / "f.nc"),
            "--chains",
            "2",
            "--draws",
            "20",
            "--tune",
            "50",
            "--strict",
            "--quiet",
        ]
    )
    assert rc == 1
    assert (tmp_path / "f.nc").exists()
    assert "bulk ESS" in capsys.readouterr().err


def test_existing_output_is_not_overwritten(small_fit_file, tmp_path, capsys):
    data, out = small_fit_file
    before = out.stat().st_mtime_ns
    rc = main(["fit", str(data), "--law", "annealing", "--out", str(out), "--quiet"])
    assert rc == 2 and out.stat().st_mtime_ns == before
    assert "exists" in capsys.readouterr().err


@pytest.mark.parametrize(
    "content, message",
    [
        ("run,step,lr\nx,0,0\nx,10,-1e-4\n", "column 'lr', step 10"),
        (
            "run,step,lr,model_size,val_set\nx,0,0,5e7,c4\nx,10,1e-4,5e7,c4\n",
            "validation set 'c4' is not in the fit",
        ),
        ("run,step,lr,model_size\nx,0,0,5e7\nx,10,1e-4,5e7\nx,10,1e-4,5e7\n", "duplicated step"),
        ("run,step,lr\nx,0,0\nx,10,1e-4\n", "no model_size column"),
    ],
)
def test_predict_bad_schedule_one_line_error(small_fit_file, tmp_path, capsys, content, message):
    _, out = small_fit_file
    sched = tmp_path / "s.csv"
    sched.write_text(content)
    rc = main(["predict", str(out), "--schedule", str(sched), "--out", str(tmp_path / "p.csv")])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and err.startswith("bayescpt: error:") and "\n" not in err
    assert message in err


def test_load_rejects_other_files(tmp_path, small_fit_file):
    from bayescpt.core.fitfile import FitError

    _, out = small_fit_file
    with pytest.raises(FitError, match="a fit of the 'annealing' law, expected 'multipower'"):
        Fit.load(out, law="multipower")
    bogus = tmp_path / "x.nc"
    bogus.write_text("not netcdf")
    with pytest.raises(FitError, match="not a NetCDF fit file"):
        Fit.load(bogus)
    import arviz as az

    other = tmp_path / "other.nc"
    az.from_dict(posterior={"a": np.zeros((1, 5))}).to_netcdf(str(other))
    with pytest.raises(FitError, match="not a bayescpt fit"):
        Fit.load(other)


def test_load_rejects_other_version(tmp_path, small_fit_file):
    import arviz as az

    from bayescpt.core.fitfile import FitError

    _, out = small_fit_file
    idata = az.from_netcdf(str(out))
    idata.posterior.attrs["bayescpt_version"] = "9.9.0"
    old = tmp_path / "old.nc"
    idata.to_netcdf(str(old))
    with pytest.raises(FitError, match="saved by bayescpt 9.9.0"):
        Fit.load(old)


def test_config_command_prints_json(capsys):
    assert main(["config", "--law", "multipower"]) == 0
    cfg = json.loads(capsys.readouterr().out)
    assert set(cfg["priors"]) == {"L0", "A", "alpha", "Br", "Cr", "beta", "gamma", "kappa"}
    assert cfg["settings"]["eta_ref"] == 3e-4 and cfg["settings"]["s1_ref"] == 3.0


def test_help_everywhere(capsys):
    for cmd in (
        ["--help"],
        ["fit", "--help"],
        ["predict", "--help"],
        ["diagnose", "--help"],
        ["demo", "--help"],
    ):
        with pytest.raises(SystemExit) as e:
            main(cmd)
        assert e.value.code == 0
    assert "--strict" in capsys.readouterr().out


def test_drop_progress_is_a_multipower_and_annealing_option(small_fit_file, tmp_path, capsys):
    from bayescpt.cli.curves import _law_options
    from bayescpt.cli.main import build_parser

    data, _ = small_fit_file
    rc = main(
        [
            "fit",
            str(data),
            "--law",
            "cpt",
            "--drop-progress",
            "--out",
            str(tmp_path / "f.nc"),
            "--quiet",
        ]
    )
    err = capsys.readouterr().err.strip()
    assert rc == 2 and "--drop-progress: an option of the multipower and annealing laws" in err
    assert "\n" not in err

    def opts(law, *flag):
        a = build_parser().parse_args(["fit", str(data), "--law", law, *flag, "--out", "f.nc"])
        return _law_options(a, None)

    # multipower: on by default; annealing: off by default
    assert opts("multipower", "--no-drop-progress") == {"progress": False}
    assert opts("multipower", "--drop-progress") == {} == opts("multipower")
    assert opts("annealing", "--drop-progress") == {"progress": True}
    assert opts("annealing", "--no-drop-progress") == {} == opts("annealing")
