"""Averaged thinning: each kept point is the mean of its window of logged losses, with the
noise scale the fit's likelihood uses; checked against simulated curves with known truth."""

import numpy as np
import pandas as pd
import pytest

from bayescpt.core.tables import DataError
from bayescpt.curves.data.table import NOISE_SCALE
from bayescpt.curves.data.thinning import AUTO_MAX_POINTS, average_windows, thin_long_curves
from bayescpt.curves.data.validate import validate_curves
from bayescpt.curves.model.config import default_config
from bayescpt.curves.model.hierarchy import build_model, prepare
from bayescpt.curves.model.laws import get_law


def ar1(n, rho, rng):
    e = np.empty(n)
    e[0] = rng.standard_normal()
    z = rng.standard_normal(n) * np.sqrt(1 - rho**2)
    for i in range(1, n):
        e[i] = rho * e[i - 1] + z[i]
    return e


@pytest.mark.parametrize("rho,every", [(0.9, 1), (0.0, 1), (0.5, 100)])
def test_windows_are_unbiased_and_their_scale_is_right(rho, every):
    """On a power-law curve that falls fast early, with AR(1) noise: the estimated rho is the
    truth's, the windowed means' errors divided by sigma x scale have sd ~1 and mean ~0, also
    in the first windows (where the curve bends most)."""
    rng = np.random.default_rng(7)
    n, sigma = 20000, 0.003
    st = np.arange(50, 50 + n * every, every, dtype=float)
    truth = np.log(2.8 + 1.5 * (st / (100 * every)) ** -0.5)
    keep = np.unique(np.linspace(0, n - 1, 500).astype(int))
    zs, rhos = [], []
    for _ in range(12):
        est, scale, used, rho_hat = average_windows(st, truth + sigma * ar1(n, rho, rng), keep)
        zs.append((est - truth[keep]) / (sigma * scale))
        rhos.append(rho_hat)
    zs = np.array(zs)
    assert abs(np.mean(rhos) - rho) < 0.04
    assert 0.9 < zs.std() < 1.1
    assert abs(zs.mean()) < 0.1
    assert abs(zs[:, 1:21].mean()) < 0.35  # early windows: 240 z's, se ~0.1 (correlated)
    assert used.sum() > 0.85 * n  # nearly every logged loss is used


def test_averaged_points_carry_their_scale_and_the_old_rule_stays_available():
    rng = np.random.default_rng(0)
    per = 6000
    step = np.arange(1, per + 1)
    lr = np.where(
        step < 100, 3e-4 * step / 100, 3e-4 * (0.1 + 0.45 * (1 + np.cos(np.pi * step / per)))
    )
    clean = 2.5 + 0.5 * (np.cumsum(lr) + 1e-3) ** -0.5
    df = validate_curves(
        pd.DataFrame(
            {
                "run": "r",
                "step": step,
                "lr": lr,
                "loss": clean * np.exp(0.003 * rng.standard_normal(per)),
            }
        )
    )
    out, note = thin_long_curves(df)
    assert "average of its window" in note and "lag-1 correlation 0.0" in note
    kept = out["loss"].notna()
    assert AUTO_MAX_POINTS // 2 <= kept.sum() <= AUTO_MAX_POINTS + 2
    scale = out.loc[kept, NOISE_SCALE]
    # iid noise, windows of ~12 losses: scale ~ 1 / sqrt(12); the first and last are not averaged
    assert scale.iloc[0] == 1.0 and scale.iloc[-1] == 1.0
    assert 0.2 < scale.iloc[1:-1].median() < 0.4
    # averaged losses are closer to the clean curve than the logged ones
    err_avg = np.abs(np.log(out.loc[kept, "loss"]) - np.log(clean[kept.to_numpy()]))
    err_one = np.abs(np.log(df.loc[kept, "loss"]) - np.log(clean[kept.to_numpy()]))
    assert err_avg.iloc[1:-1].mean() < 0.5 * err_one.iloc[1:-1].mean()
    old, old_note = thin_long_curves(df, average=False)
    assert NOISE_SCALE not in old.columns and "average" not in old_note
    assert old.loc[old["loss"].notna(), "loss"].equals(df.loc[old["loss"].notna(), "loss"])


def test_the_likelihood_uses_sigma_times_each_points_scale():
    step = np.arange(0, 410, 10)
    df = validate_curves(
        pd.DataFrame(
            {
                "run": "r",
                "step": step,
                "lr": 3e-4,
                "loss": np.where(step > 0, 3.0 - step / 1000, np.nan),
                NOISE_SCALE: np.where(step % 20 == 0, 0.25, 1.0),
            }
        )
    )
    law = get_law("annealing")
    config = default_config(law)
    prep = prepare(df, law, config["settings"])
    assert NOISE_SCALE in prep.points.columns
    model = build_model(law, prep, config)
    sigma = model["y"].owner.inputs[-1]  # the observed distribution's scale
    fn = model.compile_fn(
        [sigma, model["log_sigma"]], inputs=model.value_vars, on_unused_input="ignore"
    )
    s, log_sigma = fn(model.initial_point())
    np.testing.assert_allclose(s / np.exp(log_sigma[0]), prep.points[NOISE_SCALE].to_numpy())
    plain = prepare(df.drop(columns=NOISE_SCALE), law, config["settings"])
    assert NOISE_SCALE not in plain.points.columns  # no scale: the model as before
    assert "y_scale" not in build_model(law, plain, config).named_vars


def test_a_bad_noise_scale_names_file_column_and_value(tmp_path):
    p = tmp_path / "c.csv"
    p.write_text("run,step,lr,loss,_noise_scale\nr,1,3e-4,3.0,0.5\nr,2,3e-4,2.9,-1\n")
    from bayescpt.curves.data.validate import read_curves

    with pytest.raises(DataError, match=r"c\.csv.*line 3.*_noise_scale.*'-1'.*positive noise"):
        read_curves(p)
