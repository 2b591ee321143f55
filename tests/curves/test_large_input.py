"""Large inputs: long curves are thinned by default with a message; slow stages report progress."""

import time

import numpy as np
import pandas as pd
import pytest

import bayescpt.cli.curves as cli_curves
from bayescpt.cli.main import main
from bayescpt.cli.progress import stage
from bayescpt.curves.data.thinning import AUTO_MAX_POINTS, AUTO_THIN_ABOVE, thin_long_curves
from bayescpt.curves.data.validate import validate_curves


def curves(runs: int, per: int, seed: int = 0) -> pd.DataFrame:
    """``runs`` warmup-cosine runs logged at every step 1..per, three model sizes."""
    rng = np.random.default_rng(seed)
    frames = []
    for r in range(runs):
        step = np.arange(1, per + 1)
        lr = np.where(
            step < 100, 3e-4 * step / 100, 3e-4 * (0.1 + 0.45 * (1 + np.cos(np.pi * step / per)))
        )
        loss = (2.5 + 0.5 * (np.cumsum(lr) + 1e-3) ** -0.5) * np.exp(
            0.003 * rng.standard_normal(per)
        )
        frames.append(
            pd.DataFrame(
                {
                    "run": f"r{r}",
                    "step": step,
                    "lr": lr,
                    "loss": loss,
                    "model_size": [25e6, 100e6, 400e6][r % 3],
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


class Stop(BaseException):
    """Raised by the stand-in for sampling: the test stops the fit before compiling (a
    BaseException, so the CLI's internal-error handler does not turn it into exit 3)."""


def fit_until_sampling(monkeypatch, argv):
    seen = {}

    def no_sampling(a, run):
        seen["args"] = a
        raise Stop

    monkeypatch.setattr(cli_curves, "sample_and_save", no_sampling)
    with pytest.raises(Stop):
        main(argv)
    return seen


def table_given_to_the_fit(monkeypatch, argv) -> pd.DataFrame:
    """The table ``bayescpt`` with ``argv`` hands to the fit (stopped before it runs)."""
    kept = {}

    def capture(df, **kw):
        kept["df"] = df
        raise Stop

    monkeypatch.setattr(cli_curves.Fit, "run", capture)
    monkeypatch.setattr(cli_curves, "sample_and_save", lambda a, run: run())
    with pytest.raises(Stop):
        main(argv)
    return kept["df"]


def test_a_200k_row_table_is_thinned_with_a_message(tmp_path, monkeypatch, capsys):
    data = tmp_path / "big.csv"
    curves(20, 10_000).to_csv(data, index=False, float_format="%.6g")
    df = table_given_to_the_fit(
        monkeypatch, ["fit", str(data), "--law", "annealing", "--out", str(tmp_path / "f.nc")]
    )
    err = capsys.readouterr().err
    line = [x for x in err.splitlines() if x.startswith("thinned ")]
    assert len(line) == 1, err
    assert (
        f"thinned 20 curve(s) with more than {AUTO_THIN_ABOVE} loss points (up to 10000)" in line[0]
    )
    assert "200000 -> " in line[0] and "--all-points" in line[0]
    assert len(df) == 200_000  # every schedule row stays
    per_curve = df[df["loss"].notna()].groupby("run").size()
    assert per_curve.max() <= AUTO_MAX_POINTS + 2 and per_curve.min() >= AUTO_MAX_POINTS // 2


def test_all_points_turns_the_default_thinning_off(tmp_path, monkeypatch, capsys):
    data = tmp_path / "long.csv"
    curves(3, AUTO_THIN_ABOVE + 500).to_csv(data, index=False, float_format="%.6g")
    argv = ["fit", str(data), "--law", "annealing", "--out", str(tmp_path / "f.nc")]
    a = fit_until_sampling(monkeypatch, argv + ["--all-points"])["args"]
    assert "thinned" not in capsys.readouterr().err
    assert a.all_points
    fit_until_sampling(monkeypatch, argv)
    assert "thinned 3 curve(s)" in capsys.readouterr().err


def test_max_points_thins_to_that_many_by_the_same_averaging_rule(tmp_path, monkeypatch, capsys):
    data = tmp_path / "mid.csv"
    curves(3, 1500).to_csv(data, index=False, float_format="%.6g")  # under the default's 2000
    df = table_given_to_the_fit(
        monkeypatch,
        [
            "fit",
            str(data),
            "--law",
            "annealing",
            "--out",
            str(tmp_path / "f.nc"),
            "--max-points",
            "100",
        ],
    )
    err = capsys.readouterr().err
    assert "thinned 3 curve(s) with more than 100 loss points" in err
    assert "average of its window" in err and "--all-points" not in err
    per_curve = df[df["loss"].notna()].groupby("run").size()
    assert per_curve.max() <= 102 and per_curve.min() >= 50
    assert (df.loc[df["loss"].notna(), "_noise_scale"] < 1).mean() > 0.5  # averaged points


def test_only_long_curves_are_thinned():
    df = validate_curves(
        pd.concat([curves(2, 3000), curves(1, 800, seed=1).assign(run="short")], ignore_index=True)
    )
    out, note = thin_long_curves(df)
    assert note is not None and "thinned 2 curve(s)" in note
    short = out["run"] == "short"
    pd.testing.assert_series_equal(out.loc[short, "loss"], df.loc[short, "loss"])
    for run in ("r0", "r1"):
        mine = out[out["run"] == run]
        has = mine["loss"].notna()
        assert AUTO_MAX_POINTS // 2 <= has.sum() <= AUTO_MAX_POINTS + 2
        assert has.iloc[0] and has.iloc[-1]  # first and last loss kept
    assert out["lr"].equals(df["lr"])
    same, none = thin_long_curves(validate_curves(curves(2, 100)))
    assert none is None and len(same) == 200


def test_slow_stage_reports_progress_without_a_terminal(capsys):
    with stage("reading x.csv (9 MB)", after=0.05, every=0.05):
        time.sleep(0.3)
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("reading x.csv (9 MB) ... (")
    assert any("s so far" in x for x in err[1:-1])
    assert err[-1].startswith("reading x.csv (9 MB): done in ")
    with stage("quick", after=1.0):
        pass
    assert capsys.readouterr().err == ""
