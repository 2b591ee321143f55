from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bayescpt.core import tables
from bayescpt.core.tables import DataError
from bayescpt.curves.data.table import schedules_of
from bayescpt.curves.data.thinning import decimate
from bayescpt.curves.data.validate import read_curves, validate_curves
from bayescpt.datasets import public
from tests.helpers import GOOD, write

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"


def test_good_file_round_trip(tmp_path):
    df = read_curves(write(tmp_path, GOOD))
    assert list(df["step"]) == [0, 100, 200, 300]
    assert np.isnan(df["loss"].iloc[0]) and df["loss"].iloc[1] == 4.0
    assert (df["val_set"] == "default").all()
    sched = schedules_of(df)["a"]
    assert sched.total_steps == 300 and sched.warmup_steps == 100


@pytest.mark.parametrize(
    "text, expected",
    [
        (
            GOOD.replace("a,200,3e-4,3.5", "a,200,3e-4,nan"),
            r"curves.csv, line 4, run 'a', column 'loss', step 200: value 'nan'",
        ),
        (
            GOOD.replace("a,200,3e-4,3.5", "a,200,3e-4,-3.5"),
            r"column 'loss', step 200: value '-3.5'; expected a positive",
        ),
        (GOOD.replace("a,200,3e-4,3.5", "a,200,3e-4,0"), r"column 'loss', step 200: value '0'"),
        (
            GOOD.replace("a,200,3e-4,3.5", "a,200,3e-4,abc"),
            r"column 'loss': value 'abc' is not a number",
        ),
        (
            GOOD.replace("a,200,3e-4,3.5", "a,200,-3e-4,3.5"),
            r"column 'lr', step 200: value '-3e-4'; expected a finite, non-negative",
        ),
        (GOOD.replace("a,200,3e-4,3.5", "a,200,,3.5"), r"line 4, run 'a', column 'lr': empty"),
        (
            GOOD.replace("3e-4", "0.03").replace("1e-4", "0.01").replace("0.03", "3"),
            r"run 'a', column 'lr': peak learning rate 3 looks like the wrong unit",
        ),
        (
            GOOD.replace("a,300,1e-4,3.2", "a,150,1e-4,3.2"),
            r"run 'a', column 'step', step 150: comes after step 200",
        ),
        (
            GOOD.replace("a,300,1e-4,3.2", "a,200,3e-4,3.2"),
            r"run 'a', column 'step', step 200: duplicated step",
        ),
        (
            GOOD.replace("a,100,3e-4,4.0", "a,100.5,3e-4,4.0"),
            r"column 'step': value '100.5'; expected a non-negative whole number",
        ),
        (
            GOOD.replace("run,step,lr,loss", "run,step,learning_rate,loss"),
            r"missing column\(s\) \['lr'\]",
        ),
        (
            GOOD.replace("a,0,0,\n", ""),
            r"run 'a', column 'lr', step 100: the learning rate is given from step 100 on",
        ),
        (
            "run,step,lr,loss\na,0,0,\na,10,1e-4,\n",
            r"run 'a', column 'loss': the run has no loss values",
        ),
        (
            "run,step,lr,loss,model_size\na,0,0,,25\na,10,1e-4,3.0,25\n",
            r"column 'model_size': value '25' looks like millions",
        ),
        (
            "run,step,lr,loss,model_size\na,0,0,,25e6\na,10,1e-4,3.0,26e6\n",
            r"run 'a', column 'model_size': several values",
        ),
        (
            "run,step,lr,loss,val_set\na,0,0,,x\na,10,1e-4,3.0,x\na,10,2e-4,3.1,y\n",
            r"run 'a', column 'lr', step 10: different learning rates",
        ),
    ],
)
def test_bad_input_names_file_run_column_value(tmp_path, text, expected):
    with pytest.raises(DataError, match=expected) as info:
        read_curves(write(tmp_path, text))
    msg = str(info.value)
    assert "\n" not in msg and "curves.csv" in msg


def test_missing_and_unreadable_files(tmp_path):
    with pytest.raises(DataError, match="no such file"):
        read_curves(tmp_path / "nope.csv")
    with pytest.raises(DataError, match="no rows"):
        read_curves(write(tmp_path, "run,step,lr,loss\n"))


def test_dataframe_input_nan_loss_means_not_logged():
    df = pd.DataFrame(
        {"run": ["a"] * 3, "step": [0, 10, 20], "lr": [0, 1e-4, 1e-4], "loss": [np.nan, 3.0, 2.9]}
    )
    out = validate_curves(df)
    assert out["loss"].isna().sum() == 1
    df.loc[2, "loss"] = -1.0
    with pytest.raises(DataError, match="<DataFrame>, run 'a', column 'loss', step 20"):
        validate_curves(df)


def test_input_frame_not_modified():
    df = pd.DataFrame({"run": ["b", "b"], "step": [0, 10], "lr": [0, 1e-4], "loss": [None, 3.0]})
    before = df.copy()
    validate_curves(df)
    pd.testing.assert_frame_equal(df, before)


def test_schedule_without_loss_for_prediction(tmp_path):
    p = write(tmp_path, "run,step,lr\nnew,0,0\nnew,100,3e-4\nnew,1000,0\n")
    df = read_curves(p, need_loss=False)
    assert df["loss"].isna().all()
    with pytest.raises(DataError, match="missing column"):
        read_curves(p)


def test_multipowerlaw_loader_and_bundle_match():
    df = public.load_multipowerlaw(SHARED / "multipowerlaw")
    assert df["run"].nunique() == 27 and df["loss"].notna().sum() == 6265
    sched = schedules_of(df)
    assert all(s.warmup_steps == 2160 for s in sched.values())
    assert sched["100M/cosine_24000"].lr[2160] == pytest.approx(3e-4)
    bundled = read_curves(Path(__file__).resolve().parents[2] / "data" / "multipowerlaw.csv")
    assert tables.data_hash(bundled) == tables.data_hash(df)


def test_olmo_loader():
    df = public.load_olmo_ladder(
        SHARED / "olmo-ladder" / "peteish-moreeval",
        val_sets=("c4_en", "dolma_stack"),
        runs=["190M-1xC", "1B-2xC"],
    )
    assert set(df["val_set"]) == {"c4_en", "dolma_stack"}
    assert sorted(df["model_size"].unique()) == [190e6, 1e9]
    with pytest.raises(DataError, match="no validation set 'nope'"):
        public.load_olmo_ladder(
            SHARED / "olmo-ladder" / "peteish-moreeval", val_sets=("nope",), runs=["190M-1xC"]
        )


def test_decimate_keeps_schedule_and_decay_points():
    df = public.load_multipowerlaw(
        SHARED / "multipowerlaw", sizes=("25",), schedules=["wsd_20000_24000"]
    )
    thin = decimate(df, points=40)
    kept = thin[thin["loss"].notna()]
    assert 35 <= len(kept) <= 41
    assert (
        schedules_of(thin)["25M/wsd_20000_24000"].lr.tolist()
        == schedules_of(df)["25M/wsd_20000_24000"].lr.tolist()
    )
    # the decay (last 4000 of 24000 steps) keeps a larger share of points than its share of steps
    share = (kept["step"] > 20000).mean()
    assert share > 4000 / 24000
