"""Forecasts from a run's observed prefix (importance weights over draws x fresh deviations)."""

import numpy as np
import pytest

from bayescpt.curves.data import curve_info, decimate, schedules_of
from bayescpt.curves.fit import Fit
from bayescpt.curves.predict import curve_draws, parameter_draws, predict_frame
from bayescpt.curves.prefix import PrefixWarning, forecast_with_prefix, weighted_quantiles
from bayescpt.datasets.bundled import MODELS, bundled_multipowerlaw, split

RUN = "100M/wsd_20000_24000"          # a schedule the reference fit has not seen


@pytest.fixture(scope="module")
def fit():
    return Fit.load(MODELS / "annealing_multipowerlaw.nc")


@pytest.fixture(scope="module")
def run_table():
    test = split(bundled_multipowerlaw())[1]
    g = decimate(test[test["run"] == RUN].reset_index(drop=True), 40)
    keep = g["loss"].notna() | (g["step"] == 0) | (g["lr"] != g["lr"].shift())
    return g[keep].reset_index(drop=True)


def test_weighted_quantiles_match_repeated_values():
    v = np.array([[1.0], [2.0], [3.0]])
    w = np.array([0.25, 0.5, 0.25])            # as the sample 1, 2, 2, 3
    assert weighted_quantiles(v, w, [0.5])[0, 0] == pytest.approx(2.0)
    lo, hi = weighted_quantiles(v, np.array([0.0, 0.0, 1.0]), [0.05, 0.95])[:, 0]
    assert lo == hi == 3.0


def test_without_losses_the_weights_are_uniform_and_match_predict(fit, run_table):
    sched = run_table.assign(loss=np.nan)
    p = forecast_with_prefix(fit, sched, n_dev=4, seed=1)
    assert np.allclose(p["ess"], p["n_points"]) and not p["observed"].any()
    plain = predict_frame(fit, sched, seed=2)
    ok = p["mean"].notna()
    assert np.allclose(p.loc[ok, "mean"], plain.loc[ok, "mean"], rtol=1e-3)


def test_prefix_of_a_simulated_run_pulls_the_forecast_to_it(fit, run_table):
    """A run drawn from the fit's own predictive with a high deviation (its final loss at the
    95th percentile): conditioning on its first quarter and half moves the forecast of the rest
    to the run's true curve, narrows the band, and the band still holds the truth."""
    g = run_table
    rng = np.random.default_rng(5)
    th = parameter_draws(fit, "default", 1e8, rng, antithetic=False)
    rows = g["step"] >= 1
    X = fit.law.design(schedules_of(g)[RUN], g.loc[rows, "step"].to_numpy(),
                       fit.config["settings"], curve_info(g, RUN, "default"))
    mu = curve_draws(fit, th, X)
    k = int(np.argsort(mu[:, -1])[int(0.95 * len(mu))])
    truth = np.full(len(g), np.nan)
    truth[rows.to_numpy()] = mu[k]
    y = truth * np.exp(th["_sigma"][k] * rng.standard_normal(len(g)))
    last = g["step"].max()
    rest = (g["step"] > 0.5 * last) & g["loss"].notna()
    err, width = {}, {}
    for frac in (0.0, 0.25, 0.5):
        h = g.assign(loss=np.where(g["loss"].notna() & (g["step"] <= frac * last), y, np.nan))
        with pytest.warns(PrefixWarning) if frac else _no_warning():
            p = forecast_with_prefix(fit, h, n_dev=16, min_ess=2000 if frac else 0)
        assert p.loc[h["loss"].notna() & (h["step"] >= 1), "observed"].all()
        m = rest & p["mean"].notna()
        err[frac] = np.mean(np.abs(p["mean"][m] - truth[m]) / truth[m])
        width[frac] = np.mean((p["curve_upper"] - p["curve_lower"])[m] / p["mean"][m])
        inside = (truth[m] >= p["curve_lower"][m]) & (truth[m] <= p["curve_upper"][m])
        assert inside.mean() >= 0.9
        assert p["ess"].iloc[0] < p["n_points"].iloc[0] or frac == 0
    assert err[0.25] < 0.5 * err[0.0] and err[0.5] < 0.5 * err[0.0]
    assert width[0.5] < 0.5 * width[0.0] and width[0.25] < 0.5 * width[0.0]


class _no_warning:
    def __enter__(self):
        import warnings
        self._c = warnings.catch_warnings()
        self._c.__enter__()
        warnings.simplefilter("error", PrefixWarning)

    def __exit__(self, *exc):
        return self._c.__exit__(*exc)
