"""Predictions that leave the fit's training range say how far; impossible losses are refused."""

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bayescpt.cli.main import main
from bayescpt.core.tables import DataError
from bayescpt.curves.data.validate import read_curves, validate_curves
from bayescpt.curves.forecast.extrapolation import (
    ExtrapolationWarning,
    ImpossiblePrediction,
    RangeUnknownWarning,
    check_extrapolation,
    range_of_fit,
)
from bayescpt.curves.forecast.predict import predict_frame
from bayescpt.curves.model.fit import Fit

# module-scoped fixtures: the module's tests run on one xdist worker (--dist loadgroup)
pytestmark = pytest.mark.xdist_group("curves/test_extrapolation")

MODELS = Path(__file__).resolve().parents[2] / "models"

PEAK = 3e-4  # the peak LR of the conftest's simulated schedules
TOTAL = 4000  # their length in steps


def schedule(run, peak=PEAK, total=TOTAL, size=100e6, warmup=200):
    """A warmup-then-cosine-like schedule given by three points (linear in between)."""
    steps = [0, warmup, total]
    return pd.DataFrame(
        {
            "run": run,
            "step": steps,
            "lr": [0.0, peak, 0.1 * peak],
            "model_size": size,
            "val_set": "default",
            "loss": np.nan,
        }
    )


def table(*frames):
    return validate_curves(pd.concat(frames, ignore_index=True), need_loss=False)


def caught(fn):
    with warnings.catch_warnings(record=True) as ws:
        warnings.simplefilter("always")
        try:
            out = fn()
        except DataError as err:
            out = err
    return (
        out,
        [w.message for w in ws if issubclass(w.category, ExtrapolationWarning)],
        [w.message for w in ws if issubclass(w.category, RangeUnknownWarning)],
    )


@pytest.fixture(scope="module")
def fit(small_fit_file):
    return Fit.load(small_fit_file[1])


def test_fit_stores_its_training_range(fit, small_fit_file):
    data = read_curves(small_fit_file[0])
    rng = json.loads(fit.meta["train_range"])
    assert rng["lr_max"] == pytest.approx(data["lr"].max())
    assert rng["lr_min"] == pytest.approx(data.groupby("run")["lr"].max().min())
    assert rng["max_steps"] == int(data.loc[data["loss"].notna(), "step"].max())
    assert rng["sizes"] == sorted(data["model_size"].unique().astype(float).tolist())
    # S1 of the longest run at its last loss: the sum of its per-step LRs, about peak x steps
    assert 0.5 * PEAK * TOTAL < rng["max_s1"] <= PEAK * TOTAL
    assert range_of_fit(fit) == rng


def test_inside_the_range_no_warning(fit):
    pred, warned, unknown = caught(lambda: predict_frame(fit, table(schedule("in"))))
    assert isinstance(pred, pd.DataFrame) and warned == [] and unknown == []
    assert pred.attrs["extrapolation"] == []


def test_each_quantity_says_how_far(fit):
    df = table(
        schedule("hot", peak=100 * PEAK),
        schedule("long", total=100 * TOTAL),
        schedule("huge", size=1e12),
        schedule("cool", peak=PEAK / 10),
    )
    found = {
        (w.run, w.quantity): w for w in check_extrapolation(range_of_fit(fit), df, _schedules(df))
    }
    assert set(found) == {
        ("hot", "lr"),
        ("hot", "s1"),
        ("long", "steps"),
        ("long", "s1"),
        ("huge", "model_size"),
        ("cool", "lr"),
    }
    assert found["hot", "lr"].factor == pytest.approx(100)
    assert "peak LR 0.03 is 100x the largest training peak LR 0.0003" in str(found["hot", "lr"])
    assert found["long", "steps"].factor == pytest.approx(100)
    # a longer run says that the band does not test the law out there; a peak LR does not
    assert str(found["long", "steps"]).endswith(
        "extrapolation; the band assumes the law holds past the longest training run, which "
        "these runs do not test"
    )
    assert "\n" not in str(found["long", "steps"])
    assert str(found["hot", "lr"]).endswith(": extrapolation")
    assert found["cool", "lr"].factor == pytest.approx(10)
    assert "1/10 of the smallest" in str(found["cool", "lr"])
    w = found["huge", "model_size"]
    assert w.factor == pytest.approx(1e12 / 400e6)
    # log-distance in units of the fitted log-size range ln(400M / 25M)
    assert w.size_ranges == pytest.approx(np.log(1e12 / 400e6) / np.log(16))
    assert "fitted log-size ranges beyond" in str(w)


def _schedules(df):
    from bayescpt.curves.data.table import schedules_of

    return schedules_of(df)


def test_predict_frame_warns_and_lists(fit):
    df = table(schedule("twice", peak=2 * PEAK, total=3 * TOTAL))
    pred, warned, _ = caught(lambda: predict_frame(fit, df))
    assert isinstance(pred, pd.DataFrame)
    assert {w.quantity for w in warned} == {"lr", "steps", "s1"}
    assert [w.as_dict() for w in pred.attrs["extrapolation"]] == [w.as_dict() for w in warned]


def test_all_zero_lr_is_an_error_not_inf(fit):
    err, _, _ = caught(lambda: predict_frame(fit, table(schedule("dead", peak=0.0))))
    # refused when the schedule is validated, before any prediction (never an inf loss)
    assert isinstance(err, DataError)
    assert "run 'dead'" in str(err) and "learning rate is 0 on every row" in str(err)


def test_negative_mean_is_an_error():
    old = Fit.load(MODELS / "annealing_multipowerlaw.nc")
    err, _, unknown = caught(
        lambda: predict_frame(old, table(schedule("hot", peak=3e-2, total=20000, warmup=2000)))
    )
    assert isinstance(err, ImpossiblePrediction)
    assert "run 'hot'" in str(err) and "step 20000" in str(err) and "mean loss -" in str(err)


def test_old_fit_file_derives_sizes_and_says_unknown():
    old = Fit.load(MODELS / "annealing_multipowerlaw.nc")
    assert "train_range" not in old.meta
    rng = range_of_fit(old)
    assert rng["sizes"] == [25e6, 100e6, 400e6] and rng["lr_max"] is None
    pred, warned, unknown = caught(
        lambda: predict_frame(old, table(schedule("big", size=1e12, total=20000, warmup=2000)))
    )
    assert isinstance(pred, pd.DataFrame) and np.isfinite(pred["mean"].dropna()).all()
    assert [w.quantity for w in warned] == ["model_size"]
    assert len(unknown) == 1 and "unknown" in str(unknown[0])


def test_cli_prints_one_line_per_warning_and_exits_2_on_impossible(
    small_fit_file, tmp_path, capsys
):
    sched = tmp_path / "s.csv"
    table(schedule("hot", peak=100 * PEAK), schedule("big", size=1e12)).to_csv(sched, index=False)
    rc = main(
        [
            "predict",
            str(small_fit_file[1]),
            "--schedule",
            str(sched),
            "--out",
            str(tmp_path / "p.csv"),
        ]
    )
    err = capsys.readouterr().err
    lines = [x for x in err.splitlines() if x.startswith("warning: run ")]
    assert any(
        "run hot: peak LR 0.03 is 100x the largest training peak LR 0.0003" in x for x in lines
    )
    assert any(x.startswith("warning: run big: model size 1e+12") for x in lines)
    if rc == 0:
        assert np.all(pd.read_csv(tmp_path / "p.csv")["mean"].dropna() > 0)
    else:
        assert rc == 2 and "bayescpt: error: run 'hot'" in err

    dead = tmp_path / "dead.csv"
    schedule("dead", peak=0.0).to_csv(dead, index=False)
    rc = main(
        [
            "predict",
            str(small_fit_file[1]),
            "--schedule",
            str(dead),
            "--out",
            str(tmp_path / "d.csv"),
        ]
    )
    err = capsys.readouterr().err
    assert rc == 2 and "run 'dead'" in err and not (tmp_path / "d.csv").exists()


def test_bad_input_gives_its_error_without_extrapolation_lines(fit):
    df = table(schedule("hot", peak=100 * PEAK).assign(val_set="elsewhere"))
    err, warned, unknown = caught(lambda: predict_frame(fit, df))
    assert isinstance(err, ValueError) and not isinstance(err, ImpossiblePrediction)
    assert warned == [] and unknown == []
