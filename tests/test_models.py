"""The reference fits in models/: they load, pass the diagnostics, match the data they claim, and
support planning and comparing without sampling."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bayescpt.cli.main import main
from bayescpt.core.fitfile import load_fit as load_any_fit

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "models"
FILES = sorted(MODELS.glob("*.nc"))


def _bundled_table(name):
    """The table a reference fit was made from (as models/build.py builds it)."""
    if name.endswith("multipowerlaw"):
        from bayescpt.datasets.bundled import bundled_multipowerlaw, split

        return split(bundled_multipowerlaw())[0]
    from bayescpt.curves.data.validate import read_curves

    return read_curves(ROOT / "data" / "cpt_simulated.csv")


def test_every_builder_has_its_file():
    import sys

    sys.path.insert(0, str(MODELS))
    import build  # noqa: PLC0415

    assert {f.stem for f in FILES} == set(build.BUILDERS)


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_reference_fit_loads_and_passes_the_diagnostics(path):
    fit = load_any_fit(path)
    assert fit.meta["made_by"] == f"python models/build.py {path.stem}"
    d = fit.diagnostics()
    assert d.ok, d.problems()
    assert path.stat().st_size < 8e6


@pytest.mark.parametrize(
    "name", ["annealing_multipowerlaw", "multipower_multipowerlaw", "cpt_simulated"]
)
def test_reference_fit_was_made_from_the_bundled_data(name):
    from bayescpt.core.tables import data_hash

    fit = load_any_fit(MODELS / f"{name}.nc")
    assert fit.meta["data_hash"] == data_hash(_bundled_table(name))


def test_the_hparams_and_mixture_fits_match_their_bundled_tables():
    from bayescpt.hparams.data import grid_hash, read_grid
    from bayescpt.mixture.data import mixture_hash, read_mixture

    hp = load_any_fit(MODELS / "hparams_steplaw.nc")
    assert hp.meta["data_hash"] == grid_hash(read_grid(ROOT / "data" / "steplaw_grid.csv"))
    mix = load_any_fit(MODELS / "mixture_ct70m.nc")
    assert mix.meta["data_hash"] == mixture_hash(read_mixture(ROOT / "data" / "mixture_ct70m.csv"))


def test_plan_on_the_reference_fit_meets_its_chance_constraint_independently():
    """The chosen plan's P(rise <= eps), re-estimated with other new-run deviations (another
    seed), still meets 1 - delta within Monte Carlo error; the Pareto front is monotone."""
    from bayescpt.cpt.plan.decide import Criterion, decide
    from bayescpt.cpt.plan.evaluate import Evaluation, evaluate
    from bayescpt.cpt.plan.files import pt_schedule_from_table
    from bayescpt.cpt.plan.grid import plan_grid
    from bayescpt.curves.data.validate import read_curves
    from bayescpt.curves.model.fit import Fit
    from bayescpt.datasets.bundled import CPT_DATA, PLAN

    fit = Fit.load(MODELS / "cpt_simulated.nc", law="cpt")
    pt = pt_schedule_from_table(read_curves(CPT_DATA, need_loss=False), "pt@10000/cosine")
    plans = plan_grid(PLAN["transfers"], PLAN["shapes"], PLAN["peak_lrs"], PLAN["steps"])
    eps, risk = PLAN["tolerance"], PLAN["risk"]
    table = decide(
        evaluate(fit, pt, plans, Evaluation(seed=0, backend="numpy")), Criterion(eps, risk)
    )
    assert table["chosen"].sum() == 1
    assert table["feasible"].sum() < len(table)  # the constraint binds somewhere
    i = int(np.flatnonzero(table["chosen"])[0])
    again = evaluate(fit, pt, plans.iloc[[i]], Evaluation(seed=99, backend="numpy"))
    p = float((again.rise[:, 0] <= eps).mean())
    se = np.sqrt(p * (1 - p) / again.rise.shape[0])
    assert p >= 1 - risk - 3 * max(se, 0.005)
    front = table[table["pareto"]].sort_values("p_within_tolerance")
    assert front["domain_mean"].is_monotonic_increasing


def test_diagnose_plots_a_reference_fit(tmp_path, capsys):
    png = tmp_path / "diag.png"
    assert main(["diagnose", str(MODELS / "cpt_simulated.nc"), "--plot", str(png), "--strict"]) == 0
    assert png.stat().st_size > 20_000
    assert "max R-hat" in capsys.readouterr().out
    assert main(["diagnose", str(MODELS / "cpt_simulated.nc"), "--plot", str(png)]) == 2


def test_diagnose_reads_hparams_and_mixture_fits(capsys):
    for name in ("hparams_steplaw", "mixture_ct70m"):
        assert main(["diagnose", str(MODELS / f"{name}.nc"), "--strict"]) == 0
    out = capsys.readouterr().out
    assert "law hparams" in out and "law mixture" in out


@pytest.mark.parametrize(
    "other, names, expected",
    [
        # two laws on the same runs: LOO compares them
        ("multipower_multipowerlaw", "annealing,multipower", ["PSIS-LOO (same data", "elpd_loo"]),
        # one law on two datasets: no group in common, no LOO; the forest plot still draws
        (
            "annealing_olmo_c4",
            "multipowerlaw,olmo",
            [
                "no validation set x model size in common",
                "not comparable (the fits are of different data)",
            ],
        ),
    ],
    ids=["two_laws_same_runs", "one_law_two_datasets"],
)
def test_compare_reference_fits(tmp_path, capsys, other, names, expected):
    png = tmp_path / "forest.png"
    assert (
        main(
            [
                "compare",
                str(MODELS / "annealing_multipowerlaw.nc"),
                str(MODELS / f"{other}.nc"),
                "--names",
                names,
                "--plot",
                str(png),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    for phrase in expected:
        assert phrase in out
    assert png.stat().st_size > 20_000


def test_predict_draws_a_cpt_plan_per_validation_set(tmp_path):
    import pandas as pd

    rows = pd.read_csv(ROOT / "data" / "cpt_simulated.csv")
    plan = tmp_path / "plan.csv"
    rows[rows["run"] == "pt@8000/wsd"].drop(columns="loss").to_csv(plan, index=False)
    out, png = tmp_path / "pred.csv", tmp_path / "pred.png"
    assert (
        main(
            [
                "predict",
                str(MODELS / "cpt_simulated.nc"),
                "--schedule",
                str(plan),
                "--out",
                str(out),
                "--plot",
                str(png),
            ]
        )
        == 0
    )
    pred = pd.read_csv(out)
    assert set(pred["val_set"]) == {"general", "domain"}
    assert png.stat().st_size > 20_000


def test_mixture_check_follows_the_critical_ratio():
    """More replay (a smaller domain share) is never less feasible, and the replay ratios the
    check passes are those whose domain share is at most the CMR at that risk."""
    from bayescpt.cpt.plan.checks import MixtureCheck, mixture_check
    from bayescpt.cpt.plan.grid import plan_grid
    from bayescpt.mixture.decide import feasibility
    from bayescpt.mixture.fit import MixtureFit

    mix = MixtureFit.load(MODELS / "mixture_ct70m.nc")
    plans = plan_grid(
        [8000], ["cosine"], [1e-4], [1000], replay_ratios=[0.125, 0.2, 0.25, 0.3, 0.4, 0.5]
    )
    out = mixture_check(plans, MixtureCheck(mix, 10000), 0.0, risk=0.1)
    p = out["p_mixture_feasible"].to_numpy()
    assert np.all(np.diff(p) >= -0.02)
    assert out["mixture_ok"].any() and not out["mixture_ok"].all()
    at_risk = feasibility(mix, 70e6, 10000, 0.0).cmr_at_risk(0.1)
    share = 1 - out["replay_ratio"]
    assert (out["mixture_ok"] == (share <= at_risk + 0.01)).mean() >= 5 / 6


def test_plan_takes_peak_lrs_from_an_hparams_fit_and_checks_the_mixture(tmp_path, capsys):
    import pandas as pd

    out = tmp_path / "plans.csv"
    assert (
        main(
            [
                "plan",
                str(MODELS / "cpt_simulated.nc"),
                "--pt",
                str(ROOT / "data" / "cpt_simulated.csv"),
                "--pt-run",
                "pt@10000/cosine",
                "--tolerance",
                "0.05",
                "--transfers",
                "8000",
                "--steps",
                "2000,8000",
                "--hparams",
                str(MODELS / "hparams_steplaw.nc"),
                "--n-params",
                "1.07e9",
                "--init-loss",
                "2.25",
                "--cpt-tokens",
                "2e10",
                "--mixture",
                str(MODELS / "mixture_ct70m.nc"),
                "--mixture-tokens",
                "10000",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    table = pd.read_csv(out)
    assert table["peak_lr"].nunique() == 3  # the LR_opt interval's ends and median
    assert {"lr_over_opt", "lr_in_opt_interval", "p_mixture_feasible"} <= set(table.columns)
    assert table["lr_in_opt_interval"].all()
    cap = capsys.readouterr()
    assert "optimal peak LR for this checkpoint" in cap.out and "mixture (" in cap.out
    assert not table["chosen"].any()  # a pure-domain mixture fails the mixture law's check...
    assert "no planned mixture keeps the general loss" in cap.err  # ...and says so
    # without the LRs and without --hparams: a clear error
    assert (
        main(
            [
                "plan",
                str(MODELS / "cpt_simulated.nc"),
                "--pt",
                str(ROOT / "data" / "cpt_simulated.csv"),
                "--pt-run",
                "pt@10000/cosine",
                "--tolerance",
                "0.05",
                "--steps",
                "2000",
                "--out",
                str(tmp_path / "x.csv"),
            ]
        )
        == 2
    )


def test_hparams_predict_draws_the_optimum_and_the_grid(tmp_path):
    import json

    png, out = tmp_path / "opt.png", tmp_path / "opt.json"
    assert (
        main(
            [
                "hparams",
                "predict",
                str(MODELS / "hparams_steplaw.nc"),
                "--n-params",
                "1.07e9",
                "--init-loss",
                "2.25",
                "--cpt-tokens",
                "2e10",
                "--grid-lrs",
                "9.8e-4,1.38e-3,1.95e-3",
                "--grid-batches",
                "2.6e5,5.2e5,1.05e6",
                "--plot",
                str(png),
                "--out",
                str(out),
            ]
        )
        == 0
    )
    res = json.loads(out.read_text())
    assert "_draws" not in res and res["grid_best"]["points"]
    assert png.stat().st_size > 20_000


def test_a_multipower_fit_saved_before_the_progress_term_loads_as_the_papers_law(tmp_path):
    """Fit files written before the progress term became the multi-power default (B sampled, no
    kappa, no law option) must reload as the paper's law, not as today's default. The old file is
    made from today's reference fit by undoing the two changes in its posterior and config."""
    import json

    import arviz as az

    from bayescpt.curves.forecast.predict import predict_frame
    from bayescpt.curves.model.fit import Fit

    idata = az.from_netcdf(MODELS / "multipower_multipowerlaw.nc")
    post = idata.posterior
    # today's B is derived from Br; in an old file B was sampled (B_mu, B_u, ... and B itself)
    post = post.drop_vars([v for v in post.data_vars if v.startswith("kappa") or v == "B"])
    post = post.rename({v: "B" + v[2:] for v in post.data_vars if v.startswith("Br")})
    idata.posterior = post
    config = json.loads(post.attrs["config"])
    config["priors"]["B"] = config["priors"].pop("Br")
    config["priors"].pop("kappa")
    post.attrs["config"] = json.dumps(config)
    assert json.loads(post.attrs["law_options"]) == {}
    old = tmp_path / "old_multipower.nc"
    idata.to_netcdf(old)

    fit = Fit.load(old)
    assert fit.law.progress is False
    assert [p.name for p in fit.law.params] == ["L0", "A", "alpha", "B", "Cr", "beta", "gamma"]
    assert Fit.load(MODELS / "multipower_multipowerlaw.nc").law.progress is True
    table = _bundled_table("multipowerlaw")
    run = table[table["run"] == table["run"].iloc[0]]
    pred = predict_frame(fit, run.iloc[::50], prob=0.9)
    assert np.isfinite(pred["mean"]).all()
