"""Forecasts from a run's observed prefix (importance weights over draws x fresh deviations)."""

import warnings

import numpy as np
import pytest

from bayescpt.curves.data.table import curve_info, schedules_of
from bayescpt.curves.data.thinning import decimate
from bayescpt.curves.forecast.discrepancy import Discrepancy
from bayescpt.curves.forecast.discrepancy_fit import training_residuals
from bayescpt.curves.forecast.particles import PrefixWarning, weighted_quantiles
from bayescpt.curves.forecast.predict import curve_draws, predict_frame
from bayescpt.curves.forecast.prefix import forecast_with_prefix
from bayescpt.curves.model.fit import Fit
from bayescpt.curves.model.hierarchy import parameter_draws
from bayescpt.datasets.bundled import MODELS, bundled_multipowerlaw, split

# module-scoped fixtures: the module's tests run on one xdist worker (--dist loadgroup)
pytestmark = pytest.mark.xdist_group("curves/test_prefix")

RUN = "100M/wsd_20000_24000"  # a schedule the reference fit has not seen


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
    w = np.array([0.25, 0.5, 0.25])  # as the sample 1, 2, 2, 3
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


@pytest.mark.parametrize("model", ["iid", "auto"])
def test_prefix_of_a_simulated_run_pulls_the_forecast_to_it(fit, run_table, model):
    """A run drawn from the fit's own predictive with a high deviation (its final loss at the
    95th percentile), iid noise as the fit assumes: conditioning on its first quarter and half
    moves the forecast of the rest to the run's true curve, narrows the band, and the band still
    holds the truth; with the iid weights (``model`` "iid") and with the fit's own discrepancy
    model (stored with the reference fit: "auto"), whose weights do not degenerate."""
    g = run_table
    rng = np.random.default_rng(5)
    th = parameter_draws(fit, "default", 1e8, rng, antithetic=False)
    rows = g["step"] >= 1
    X = fit.law.design(
        schedules_of(g)[RUN],
        g.loc[rows, "step"].to_numpy(),
        fit.config["settings"],
        curve_info(g, RUN, "default"),
    )
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
        if model == "iid":
            with pytest.warns(PrefixWarning) if frac else _no_warning():
                p = forecast_with_prefix(
                    fit, h, n_dev=16, min_ess=2000 if frac else 0, discrepancy="iid"
                )
        else:
            with _no_warning():
                p = forecast_with_prefix(fit, h, n_dev=16)
            assert p["ess"].iloc[0] > 1000
        assert p.loc[h["loss"].notna() & (h["step"] >= 1), "observed"].all()
        m = rest & p["mean"].notna()
        err[frac] = np.mean(np.abs(p["mean"][m] - truth[m]) / truth[m])
        flat = m & (g["lr"] >= g["lr"].max())  # before the decay: no LR-drop term there
        width[frac] = np.mean((p["curve_upper"] - p["curve_lower"])[flat] / p["mean"][flat])
        inside = (truth[m] >= p["curve_lower"][m]) & (truth[m] <= p["curve_upper"][m])
        assert inside.mean() >= 0.9
        assert p["ess"].iloc[0] < p["n_points"].iloc[0] or frac == 0
    assert err[0.25] < 0.5 * err[0.0] and err[0.5] < 0.5 * err[0.0]
    # the discrepancy model keeps room for a smooth departure (0.2 % sd) the iid weights rule
    # out: its band narrows less (measured at half: 0.77 % against 1.06 % with no prefix);
    # widths on the stretch before the WSD decay, where a model with an LR-drop term
    # (lr_scale > 0) widens the band on purpose
    shrink = 0.5 if model == "iid" else 0.85
    assert width[0.5] < shrink * width[0.0] and width[0.25] < shrink * width[0.0]


def test_the_reference_fit_carries_a_discrepancy_learned_from_its_training_residuals(fit):
    """The stored model is the maximum-likelihood one of the fit's own training residuals:
    learning it again on the training table gives the same numbers, and the residuals it was
    learned from are smooth (neighbouring residuals correlated), which is why it exists."""
    stored = Discrepancy.from_json(fit.meta["discrepancy"])
    curves = training_residuals(fit, split(bundled_multipowerlaw())[0])
    assert len(curves) == len(fit.curves)
    r = np.concatenate([np.diff(c[1][5:]) for c in curves])
    lag = np.concatenate([c[1][5:-1] for c in curves])
    ac1 = np.corrcoef(
        np.concatenate([c[1][5:-1] for c in curves]), np.concatenate([c[1][6:] for c in curves])
    )[0, 1]
    assert ac1 > 0.5 and r.std() < lag.std()
    assert 0 < stored.scale < 0.01 and 0.05 < stored.length < 5 and stored.early > 0
    with pytest.raises(Exception, match="not the fit's training table"):
        training_residuals(fit, split(bundled_multipowerlaw())[1])


def _ou_path(x, disc, rng):
    """A draw of the discrepancy d + e at ln steps ``x`` (the model's own covariance)."""
    K = disc.kernel(x, x, x[0]) + (disc.noise**2 + 1e-12) * np.eye(len(x))
    return np.linalg.cholesky(K) @ rng.standard_normal(len(x))


def test_runs_with_a_known_ou_discrepancy_get_calibrated_bands(fit, run_table):
    """Runs drawn from the fit's predictive (a posterior draw, a fresh deviation) plus a known
    smooth discrepancy (OU in ln step, 0.2 % sd): conditioned on their first half, the 90 %
    band of the rest covers about 90 % across runs with the true discrepancy model, with a
    better interval score than the iid weights, whose effective sample size is far smaller and
    whose bands cover far less (measured: coverage 0.92 / 0.49, interval score 0.86 / 1.64 %)."""
    g = run_table
    disc = Discrepancy(scale=0.002, length=0.3, noise=2e-4)
    rng = np.random.default_rng(11)
    rows = g["step"] >= 1
    steps = g.loc[rows, "step"].to_numpy()
    X = fit.law.design(
        schedules_of(g)[RUN], steps, fit.config["settings"], curve_info(g, RUN, "default")
    )
    th = parameter_draws(fit, "default", 1e8, rng, antithetic=False)
    mu = curve_draws(fit, th, X)
    last = g["step"].max()
    warm = schedules_of(g)[RUN].warmup_steps
    got = {"auto": [], "iid": []}
    for k in rng.choice(len(mu), 24, replace=False):
        y = np.full(len(g), np.nan)
        x = np.log(steps.astype(float))
        y[rows.to_numpy()] = mu[k] * np.exp(_ou_path(x, disc, rng))
        h = g.assign(loss=np.where(g["loss"].notna() & (g["step"] <= 0.5 * last), y, np.nan))
        rest = (g["step"] > 0.5 * last) & g["loss"].notna() & (g["step"] >= warm)
        for model, d in (("auto", disc), ("iid", "iid")):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", PrefixWarning)
                p = forecast_with_prefix(fit, h, n_dev=2, discrepancy=d, seed=int(k))
            lo, hi, yy = p["lower"][rest], p["upper"][rest], y[rest.to_numpy()]
            score = (hi - lo) + 20 * np.maximum(lo - yy, 0) + 20 * np.maximum(yy - hi, 0)
            got[model].append(
                (((yy >= lo) & (yy <= hi)).mean(), np.mean(score / yy), p["ess"].iloc[0])
            )
    cov = {m: np.mean([c for c, _, _ in v]) for m, v in got.items()}
    score = {m: np.mean([s for _, s, _ in v]) for m, v in got.items()}
    ess = {m: np.median([e for _, _, e in v]) for m, v in got.items()}
    assert 0.8 <= cov["auto"] <= 0.97, cov
    assert cov["iid"] < 0.6 and score["auto"] < 0.7 * score["iid"], (cov, score)
    assert ess["auto"] > 200 and ess["auto"] > 5 * ess["iid"], ess  # measured: 891 and 61


class _no_warning:
    def __enter__(self):
        import warnings

        self._c = warnings.catch_warnings()
        self._c.__enter__()
        warnings.simplefilter("error", PrefixWarning)

    def __exit__(self, *exc):
        return self._c.__exit__(*exc)


def test_fit_discrepancy_flag_stores_one_and_a_fit_without_one_warns(
    small_curves, small_fit_file, tmp_path
):
    """``bayescpt fit --discrepancy`` stores the model a prefix forecast uses; a forecast with a
    fit that has none says that the prefix is weighted as iid noise (never silently)."""
    from bayescpt.cli.main import main

    data, plain = small_fit_file
    out = tmp_path / "with.nc"
    rc = main(
        [
            "fit",
            str(data),
            "--law",
            "annealing",
            "--out",
            str(out),
            "--chains",
            "2",
            "--draws",
            "100",
            "--tune",
            "150",
            "--seed",
            "3",
            "--quiet",
            "--discrepancy",
        ]
    )
    assert rc == 0
    disc = Discrepancy.from_json(Fit.load(out).meta["discrepancy"])
    assert disc.scale > 0 and disc.length > 0
    table = small_curves[0]
    run = table["run"].iloc[0]
    g = table[table["run"] == run].reset_index(drop=True)
    h = g.assign(loss=np.where(g["step"] <= 0.5 * g["step"].max(), g["loss"], np.nan))
    with pytest.warns(PrefixWarning, match="carries no discrepancy model"):
        forecast_with_prefix(Fit.load(plain), h, n_dev=2, min_ess=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrefixWarning)
        forecast_with_prefix(Fit.load(out), h, n_dev=2, min_ess=0)


def test_a_discrepancy_stored_before_the_lr_and_size_terms_reads_as_before():
    """A fit's JSON without ``lr_scale`` / ``size_scales`` (stored before they existed) gives the
    same model as before: no LR term, one scale for every size; the new fields round-trip."""
    old = '{"scale": 0.002, "length": 0.25, "noise": 1e-4, "early": 0.004, "early_length": 0.1}'
    d = Discrepancy.from_json(old)
    assert d.lr_scale == 0 and d.size_scales == () and d.for_size(4e8) is d
    x = np.log(np.array([3000.0, 8000.0, 20000.0]))
    c = np.array([0.0, 0.9, 0.0])
    assert np.allclose(d.sd(x, np.log(2000.0), c), d.sd(x, np.log(2000.0)))
    new = Discrepancy(0.002, 0.5, 1e-4, lr_scale=0.01, size_scales=((25e6, 0.001), (4e8, 0.004)))
    assert Discrepancy.from_json(new.to_json()) == new
    assert new.for_size(1e8).scale == pytest.approx(0.002)  # ln-linear in ln size
    assert new.for_size(1e9).scale == pytest.approx(0.004)  # the end value outside
    sd = new.for_size(25e6).sd(x, 0.0, c)
    assert sd[1] == pytest.approx(np.hypot(0.001, 0.009)) and sd[0] == pytest.approx(0.001)


def test_lr_drop_is_the_recent_drop_as_a_share_of_the_peak():
    from bayescpt.core.schedules import from_points
    from bayescpt.curves.forecast.discrepancy import lr_drop

    sched = from_points(
        np.array([0, 100, 8000, 8001, 20000]), np.array([0.0, 1e-3, 1e-3, 1e-4, 1e-4])
    )
    c = lr_drop(sched, np.array([5000, 8000, 8001, 8500, 8900, 12000]), 0.1)
    # the drop of 90 % at 8001 is seen for 10 % of the step (to about 8842), then forgotten
    assert np.allclose(c, [0, 0, 0.9, 0.9, 0, 0], atol=1e-9)


def test_learned_per_size_scales_and_lr_term_recover_a_simulated_discrepancy():
    """Residual curves drawn from a known model whose late scale differs by size (0.1 / 0.2 /
    0.4 %) and that rises after an LR drop: the maximum-likelihood model recovers each size's
    scale and the LR term (within sampling error), which the single scale cannot."""
    from bayescpt.core.schedules import from_points
    from bayescpt.curves.forecast.discrepancy import lr_drop
    from bayescpt.curves.forecast.discrepancy_fit import learn_from_residuals

    rng = np.random.default_rng(3)
    truth = {25e6: 0.001, 1e8: 0.002, 4e8: 0.004}
    sched = from_points(
        np.array([0, 500, 8000, 8001, 24000]), np.array([0.0, 1e-3, 1e-3, 2e-4, 2e-4])
    )
    steps = np.unique(np.geomspace(600, 24000, 60).astype(int))
    x, x0 = np.log(steps.astype(float)), np.log(500.0)
    c = lr_drop(sched, steps, 0.1)
    curves = []
    for size, scale in truth.items():
        d = Discrepancy(scale, 0.4, 1e-4, lr_scale=0.01)
        K = d.kernel(x, x, x0, c, c) + (d.noise**2 + 1e-12) * np.eye(len(x))
        for _ in range(3):
            r = np.linalg.cholesky(K) @ rng.standard_normal(len(x))
            curves.append((x, r, x0, c, size))
    got = learn_from_residuals(curves)
    per = dict(got.size_scales)
    for size, scale in truth.items():
        assert per[size] == pytest.approx(scale, rel=0.35), got
    assert got.lr_scale == pytest.approx(0.01, rel=0.5) and 0.2 < got.length < 0.8, got
    assert learn_from_residuals(curves, per_size=False).size_scales == ()


def test_residuals_without_a_correlated_part_learn_a_negligible_scale_not_an_error():
    """Residual curves of independent noise plus the LR term only, of three sizes: the
    correlated part's scale has its maximum likelihood at 0, where the likelihood is flat in ln
    scale; the search drifted there until exp underflowed to 0 and the per-size step stopped
    ("bounds must be finite": a default CLI fit with ``--discrepancy`` did). Now the scale stops
    at its floor, a negligible share of the noise, and every size gets a finite scale."""
    from bayescpt.core.schedules import from_points
    from bayescpt.curves.forecast.discrepancy import lr_drop
    from bayescpt.curves.forecast.discrepancy_fit import SCALE_FLOOR, learn_from_residuals

    sched = from_points(
        np.array([0, 500, 8000, 8001, 24000]), np.array([0.0, 1e-3, 1e-3, 2e-4, 2e-4])
    )
    steps = np.unique(np.geomspace(600, 24000, 40).astype(int))
    x, x0 = np.log(steps.astype(float)), np.log(500.0)
    c = lr_drop(sched, steps, 0.1)
    d = Discrepancy(1e-9, 0.4, 0.002, lr_scale=0.005)
    K = d.kernel(x, x, x0, c, c) + (d.noise**2 + 1e-12) * np.eye(len(x))
    for seed in (1, 4):  # seeds whose search ends at the boundary
        rng = np.random.default_rng(seed)
        curves = [
            (x, np.linalg.cholesky(K) @ rng.standard_normal(len(x)), x0, c, size)
            for size in (25e6, 1e8, 4e8)
            for _ in range(3)
        ]
        got = learn_from_residuals(curves)
        sd = np.std(np.concatenate([cv[1] for cv in curves]))
        assert got.noise == pytest.approx(0.002, rel=0.2), got
        assert sd * SCALE_FLOOR * 0.999 <= got.scale < 1e-3 * got.noise, got
        assert len(got.size_scales) == 3 and all(
            np.isfinite(s) and 0 < s < 1e-2 * got.noise for _, s in got.size_scales
        ), got
