"""The pure parts of ``benchmarks/calibration_sets.py`` on numbers with known answers (no
sampling, no fitting)."""

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "calibration_sets.py"
_spec = importlib.util.spec_from_file_location("calibration_sets", _PATH)
cs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cs)


def test_conformal_quantile_is_the_ceil_n_plus_1_order_statistic():
    rng = np.random.default_rng(0)
    # n = 9: ceil(10 * 0.9) = 9 -> the largest (despite 10 * 0.9 = 9.000000000000002)
    assert cs.conformal_quantile(rng.permutation(np.arange(1.0, 10.0))) == 9.0
    # n = 19: ceil(20 * 0.9) = 18 -> the 18th smallest
    assert cs.conformal_quantile(rng.permutation(np.arange(1.0, 20.0))) == 18.0
    # n = 10: ceil(11 * 0.9) = 10
    assert cs.conformal_quantile(np.arange(1.0, 11.0)) == 10.0
    # n = 3 (three runs per size as one score each): ceil(3.6) = 4 > 3 -> no finite band
    assert cs.conformal_quantile([0.1, 0.2, 0.3]) == np.inf
    assert cs.conformal_quantile([1.0, 2.0, 3.0, 4.0], prob=0.5) == 3.0  # ceil(2.5) = 3


def test_conformal_band_is_symmetric_in_log():
    lo, hi = cs.conformal_band([2.0, 4.0], np.log(2.0))
    np.testing.assert_allclose(lo, [1.0, 2.0])
    np.testing.assert_allclose(hi, [4.0, 8.0])
    lo, hi = cs.conformal_band([2.0, 4.0], [0.0, np.log(4.0)])  # one q per point
    np.testing.assert_allclose(lo, [2.0, 1.0])
    np.testing.assert_allclose(hi, [2.0, 16.0])


def _pred(mean, lower, upper, method_shift=0.0):
    return pd.DataFrame(
        {
            "model_size": [25e6, 25e6, 25e6],
            "run": ["25M/a", "25M/a", "25M/b"],
            "loss": [1.0, 1.0, 2.0],
            "mean": mean,
            "lower": lower,
            "upper": upper,
        }
    )


def test_score_table_interval_score_bias_and_width_ratio():
    # run a: point 1 inside (width 0.25, score 0.25); point 2 below the band by 0.05:
    # width 0.05 + (2 / 0.1) 0.05 = 1.05. Run b (y = 2): inside, width 0.2, score 0.2 / 2 = 0.1.
    p = _pred([1.1, 0.9, 2.2], [0.95, 1.05, 2.0], [1.2, 1.1, 2.2])
    t = cs.score_table(p, ["model_size", "run"]).set_index("run")
    assert t.loc["25M/a", "coverage"] == 0.5
    assert t.loc["25M/a", "interval_score"] == pytest.approx(0.65)
    assert t.loc["25M/a", "rel_width"] == pytest.approx(0.15)
    assert t.loc["25M/a", "bias"] == pytest.approx(0.0)
    assert t.loc["25M/a", "mean_rel_err"] == pytest.approx(0.1)
    assert t.loc["25M/a", "width_over_mae"] == pytest.approx(1.5)
    assert t.loc["25M/b", "bias"] == pytest.approx(0.1)
    assert t.loc["25M/b", "interval_score"] == pytest.approx(0.1)
    s = cs.score_table(p, "model_size")
    assert s.loc[0, "model_size"] == "25M"
    assert s.loc[0, "interval_score"] == pytest.approx((0.25 + 1.05 + 0.1) / 3)
    assert s.loc[0, "bias"] == pytest.approx(0.1 / 3)


def test_summarize_and_bars():
    good = _pred([1.01, 0.99, 2.0], [0.98, 0.97, 1.96], [1.03, 1.01, 2.04])
    wide = good.assign(lower=good["mean"] * 0.5, upper=good["mean"] * 1.5)
    sizes, runs = cs.summarize({"bayes": good, "bootstrap": wide, "conformal": wide})
    assert set(runs["schedule"]) == {"a", "b"}
    b = cs.bars(sizes).iloc[0]
    # bayes covers 3/3 (> 95 %): the coverage bar fails
    assert not b["coverage_85_95"] and not b["all"]
    assert b["no_run_below_70"] and b["error_le_point"]
    assert b["score_beats_bootstrap"] and b["score_beats_conformal"]
    # widths 0.05, 0.04, 0.04 (mean 0.13 / 3) vs errors 0.01, 0.01, 0 (mean 0.02 / 3): 6.5x
    r = sizes.loc[sizes["method"] == "bayes", "width_over_mae"].item()
    assert r == pytest.approx(6.5) and not b["width_le_5x_mae"]
    assert sizes.loc[sizes["method"] == "bayes", "min_run_coverage"].item() == 1.0


def test_nearest_step_hit_and_ols():
    grid = [1.0, 2.0, 4.0, 8.0, 16.0]
    assert cs.nearest_step_hit(grid, 2.5, 4.0) == (True, 2.0, 1)
    assert cs.nearest_step_hit(grid, 2.5, 8.0) == (False, 2.0, 2)
    assert cs.nearest_step_hit(grid, 3.0, 1.0) == (False, 4.0, -2)  # 3 is nearer 4 than 2 in log
    # exact power laws are recovered: ln y = 1 - 0.5 ln N + 0.25 ln D
    tr = pd.DataFrame({"model_size": [1e8, 1e8, 1e9, 1e9], "tokens": [1e9, 1e10, 1e9, 1e10]})
    for col, (a, b, c) in (("best_lr", (1.0, -0.5, 0.25)), ("best_batch_size", (2.0, 0.1, 0.6))):
        tr[col] = np.exp(a + b * np.log(tr["model_size"]) + c * np.log(tr["tokens"]))
    te = pd.DataFrame({"model_size": [3e8], "tokens": [1e11]})
    o = cs.ols_optimum(tr, te)
    assert o["lr_ols"].item() == pytest.approx(np.exp(1 - 0.5 * np.log(3e8) + 0.25 * np.log(1e11)))
    assert o["bs_ols"].item() == pytest.approx(np.exp(2 + 0.1 * np.log(3e8) + 0.6 * np.log(1e11)))


def test_schedule_of():
    assert cs.schedule_of("25M/cosine_72000") == "cosine_72000"
    assert cs.schedule_of("190M-5xC") == "5xC"
