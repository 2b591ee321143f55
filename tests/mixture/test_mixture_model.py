"""The mixture law, the decisions per draw, and recovery of a known CMR through the CLI."""

import json

import numpy as np
import pytest

from bayescpt.mixture import simulate
from bayescpt.mixture.cmr_law import fit_cmr_law
from bayescpt.mixture.decide import Feasibility
from bayescpt.mixture.model import law_mean, ratio_shape

# module-scoped fixtures: the module's tests run on one xdist worker (--dist loadgroup)
pytestmark = pytest.mark.xdist_group("mixture/test_mixture_model")


@pytest.mark.parametrize("form", ["power", "exp"])
@pytest.mark.parametrize("c", [-2.0, -1e-8, 0.0, 0.7, 3.0])
def test_ratio_shape_anchors_and_monotone(form, c):
    R = np.linspace(0.2, 0.9, 50)
    f = ratio_shape(np, R, c, form, 0.2, 0.9)
    assert f[0] == pytest.approx(1.0) and f[-1] == pytest.approx(0.0, abs=1e-12)
    assert np.all(np.diff(f) < 0)


def test_power_form_is_the_papers_alpha_R_s_plus_beta():
    # m, d, c of our parametrisation give L(R) = alpha R^s + beta exactly at the final budget
    th = {"m": 1.40, "d": 0.08, "c": -0.6}
    R = np.array([0.25, 1 / 3, 0.5, 0.75, 1.0])
    r_lo, r_hi = 0.25, 1.0
    alpha = th["d"] / (r_lo ** th["c"] - r_hi ** th["c"])
    beta = th["m"] - alpha * r_hi ** th["c"]
    assert law_mean(np, R, 1.0, th, "power", r_lo, r_hi) == pytest.approx(alpha * R**-0.6 + beta)


def test_cmr_draws_and_risk_from_feasibility_table():
    R = np.linspace(0, 1, 11)
    i = np.arange(11)
    ok = np.array([i <= 3, i <= 5, i <= 5, np.zeros(11, bool)])
    f = Feasibility(1e8, 1.0, R, ok, np.zeros((4, 11)), None, 1.0, {}, False)
    assert list(f.cmr_draws()) == pytest.approx([0.3, 0.5, 0.5, 0.0])
    assert f.p_feasible[3] == pytest.approx(0.75)  # R = 0.3 feasible in 3 of 4 draws
    assert f.cmr_at_risk(0.25) == pytest.approx(0.3)  # P >= 0.75 up to 0.3
    assert f.cmr_at_risk(0.5) == pytest.approx(0.5)  # P >= 0.5 up to 0.5


def test_cmr_law_fit_recovers_known_power_law():
    import pandas as pd

    T = np.array([20, 50, 100, 150, 250.0])
    y = 0.225 * T**0.269 - 0.481  # the paper's 460M coefficients (T in 0.2B tokens)
    got = fit_cmr_law(pd.DataFrame({"tokens": T, "median": y}))
    assert got["a4"] == pytest.approx(0.225, rel=0.02) and got["s4"] == pytest.approx(
        0.269, rel=0.02
    )


# ------------------------------------------------------------------------------------------------
# one small fit, through the CLI, shared by the tests below
# ------------------------------------------------------------------------------------------------

SIM = dict(seed=3, ratios=(0.2, 0.35, 0.5, 0.65, 0.8), tokens=(2000, 4000, 6000, 8000, 10000))


@pytest.fixture(scope="module")
def sim_fit(tmp_path_factory):
    from bayescpt.cli.main import main

    tmp = tmp_path_factory.mktemp("mix")
    data = tmp / "sim.csv"
    simulate.simulate_cpt(**SIM).to_csv(data, index=False)
    out = tmp / "mix.nc"
    rc = main(
        [
            "mixture",
            "fit",
            str(data),
            "--out",
            str(out),
            "--chains",
            "2",
            "--draws",
            "250",
            "--tune",
            "250",
            "--seed",
            "1",
            "--quiet",
        ]
    )
    assert rc == 0
    return tmp, data, out


@pytest.mark.parametrize("eps", [0.0, 0.02])
def test_recovers_known_cmr(sim_fit, eps):
    """The true CMR of the simulating law lies in the 90 % interval, which is informative."""
    from bayescpt.mixture.decide import CmrCriterion, cmr_report
    from bayescpt.mixture.fit import MixtureFit

    fit = MixtureFit.load(sim_fit[2])
    truth = simulate.true_cmr(simulate.DEFAULT_TRUTH, 10000, 10000, 0.2, 0.8, eps)
    rep = cmr_report(fit, 70e6, 10000, CmrCriterion(eps))
    c = rep["cmr"]
    assert c["lower"] <= truth <= c["upper"], (truth, c)
    assert c["upper"] - c["lower"] < 0.2
    p = dict(zip(rep["p_feasible"]["ratio"], rep["p_feasible"]["p"]))
    grid = np.array(list(p))
    assert p[grid[np.argmin(abs(grid - (truth - 0.15)))]] > 0.9
    assert p[grid[np.argmin(abs(grid - (truth + 0.15)))]] < 0.1
    assert rep["cmr_at_risk"] <= c["median"]


def test_cmr_cli_json_and_plot(sim_fit):
    from bayescpt.cli.main import main

    tmp, _, fit = sim_fit
    out, png = tmp / "cmr.json", tmp / "cmr.png"
    rc = main(
        [
            "mixture",
            "cmr",
            str(fit),
            "--tolerance",
            "0.01",
            "--relative",
            "--tokens",
            "10000",
            "--risk",
            "0.2",
            "--budgets",
            "4000",
            "6000",
            "8000",
            "10000",
            "--out",
            str(out),
            "--plot",
            str(png),
        ]
    )
    assert rc == 0
    res = json.loads(out.read_text())
    assert set(res["cmr"]) == {"mean", "median", "lower", "upper"}
    assert len(res["p_feasible"]["ratio"]) == len(res["p_feasible"]["p"]) > 100
    truth = simulate.true_cmr(simulate.DEFAULT_TRUTH, 10000, 10000, 0.2, 0.8, 0.01, relative=True)
    assert res["cmr"]["lower"] <= truth <= res["cmr"]["upper"]
    # a larger budget lets the general loss recover: the CMR grows with T in this simulation
    tab = res["results"][0]["cmr_vs_tokens"]
    med = [row["median"] for row in tab]
    assert med[-1] > med[0]
    # R_CMR(T): the known law's CMR at each budget lies in that budget's interval
    for row in tab:
        true_t = simulate.true_cmr(
            simulate.DEFAULT_TRUTH, row["tokens"], 10000, 0.2, 0.8, 0.01, relative=True
        )
        assert row["lower"] <= true_t <= row["upper"], (row, true_t)
    law = res["results"][0]["cmr_law"]
    assert all(law[k]["lower"] <= law[k]["median"] <= law[k]["upper"] for k in ("a4", "s4", "b3"))
    assert isinstance(law["identified"], bool)
    assert png.stat().st_size > 10_000
    # refuses to overwrite without --force; clear one-line errors
    assert (
        main(
            [
                "mixture",
                "cmr",
                str(fit),
                "--tolerance",
                "0.01",
                "--tokens",
                "10000",
                "--out",
                str(out),
            ]
        )
        == 2
    )
    assert main(["mixture", "cmr", str(fit), "--tolerance", "0.01", "--tokens", "0"]) == 2


def test_wrong_law_file_is_refused(sim_fit, tmp_path, capsys):
    from bayescpt.cli.main import main
    from bayescpt.core.fitfile import FitError
    from bayescpt.mixture.fit import MixtureFit

    fit = MixtureFit.load(sim_fit[2])
    fit.idata.posterior.attrs["law"] = "annealing"
    other = tmp_path / "other.nc"
    fit.idata.to_netcdf(str(other))
    with pytest.raises(FitError, match="'annealing' law, expected 'mixture'"):
        MixtureFit.load(other)
    assert main(["mixture", "cmr", str(other), "--tolerance", "0.05", "--tokens", "1"]) == 2
    assert "expected 'mixture'" in capsys.readouterr().err


def test_plugin_registered_and_fit_input_errors(tmp_path, capsys):
    """`bayescpt mixture` comes from PLUGINS; bad input and existing outputs stop before any
    sampling with one line, no traceback."""
    from bayescpt.cli.main import PLUGINS, main

    assert "cli.mixture" in PLUGINS
    bad = tmp_path / "bad.csv"
    bad.write_text(
        "run,model_size,ratio,tokens,val_set,val_role,loss\n"
        "a,70e6,0.5,0,gen,general,2.9\na,70e6,0.5,100,gen,general,-1\n"
    )
    assert main(["mixture", "fit", str(bad), "--out", str(tmp_path / "m.nc")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "loss" in err and "Traceback" not in err
    out = tmp_path / "exists.nc"
    out.write_text("keep me")
    assert main(["mixture", "fit", str(bad), "--out", str(out)]) == 2
    assert out.read_text() == "keep me"
    assert "--force" in capsys.readouterr().err


def test_config_command_prints_the_defaults(capsys):
    from bayescpt.cli.main import main
    from bayescpt.mixture.model import default_config

    assert main(["mixture", "config"]) == 0
    assert json.loads(capsys.readouterr().out) == default_config()


@pytest.mark.parametrize(
    "cfg",
    [
        {},
        {"ratio_form": "exp", "token_terms": {"general": 2, "domain": 0}, "centered": False},
    ],
)
def test_model_starts_at_the_prior_centre(cfg):
    """nutpie starts chains near 0 on the unconstrained scale: that point must be the priors'
    centre with a finite log density (a start at m = 0 or run_sd = 1 once trapped a chain)."""
    import pandas as pd

    from bayescpt.core.config import merge_config
    from bayescpt.mixture.model import build_model, default_config, prepare

    kw = dict(ratios=(0.2, 0.5, 0.8), tokens=(2000, 6000, 10000))
    df = pd.concat(
        [
            simulate.simulate_cpt(seed=0, model_size=70e6, **kw),
            simulate.simulate_cpt(seed=1, model_size=160e6, **kw),
        ]
    )
    c = merge_config(default_config(), cfg)
    prep = prepare(df, c)
    model = build_model(prep, c)
    start = {k: np.zeros_like(v) for k, v in model.initial_point().items()}
    assert np.isfinite(model.compile_logp()(start))
    outs = [model["m"]] + ([model["run_sd"]] if "run_sd" in model.named_vars else [])
    fn = model.compile_fn(
        model.replace_rvs_by_values(outs), inputs=model.value_vars, on_unused_input="ignore"
    )
    vals = fn(start)
    assert np.allclose(vals[0], prep.groups["ybar"])
    if len(vals) > 1:
        assert np.allclose(vals[1], np.exp(c["run_sd"]["loc"]))


def test_priors_are_stored_and_each_groups_parameter_checked(sim_fit):
    """The mixture fit stores its fixed priors (read from its PyMC model: per-group vectors),
    so its diagnostics check every group's parameter against its own prior; on data simulated
    from the default law none is in conflict."""
    from bayescpt.mixture.fit import MixtureFit

    fit = MixtureFit.load(sim_fit[2])
    pri = fit.priors
    assert {"d", "B1"} <= set(pri) and not any(k.endswith("_z") for k in pri)
    assert pri["d"].distribution == "Normal"
    assert pri["d"].parameters["sigma"] == pytest.approx(fit.config["priors"]["d_scale"])
    assert fit.diagnostics().conflicts == ()
