"""Risk-aware CPT planning: the chance constraint holds on an independent evaluation of the draws,
the Pareto front is monotone, exactly one plan is chosen when any is feasible, bad input is
refused."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bayescpt.cli.main import main
from bayescpt.core import schedules as S
from bayescpt.core.tables import DataError
from bayescpt.cpt.plan.decide import Criterion, decide, pareto_mask
from bayescpt.cpt.plan.evaluate import Evaluation, evaluate
from bayescpt.cpt.plan.grid import cpt_segment, plan_grid
from bayescpt.curves.forecast.predict import curve_draws
from bayescpt.curves.model.fit import Fit
from bayescpt.curves.model.hierarchy import parameter_draws

# module-scoped fixtures: the module's tests run on one xdist worker (--dist loadgroup)
pytestmark = pytest.mark.xdist_group("cpt/test_plan")

PT = S.wsd(10000, 2e-4, decay_steps=2000, final=2e-5, warmup_steps=200, name="pt")


@pytest.fixture(scope="module")
def fit(cpt_cli_fit):
    return Fit.load(cpt_cli_fit[0] / "fit.nc")


@pytest.fixture(scope="module")
def grid():
    return plan_grid(
        [8000, 10000], ["cosine", "linear", "constant"], [5e-5, 1e-4, 2e-4], [1000, 3000], [0.2]
    )


def _final_rise(fit, plan, seed):
    """Independent of bayescpt.plan: every step of the plan's schedule, the predict module's
    parameter draws (other random deviations), the rise of the final general loss."""
    t = int(plan["transfer"])
    head = S.Schedule(PT.lr[: t + 1], PT.warmup_steps)
    full = head.then(cpt_segment(plan, float(head.lr[-1])))
    steps = np.array([t, full.total_steps])
    info = {"val_role": "general", "val_set": "general", "pt_end": t}
    X = fit.law.design(full, steps, fit.config["settings"], info)
    theta = parameter_draws(fit, "general", None, np.random.default_rng(seed))
    c = curve_draws(fit, theta, X)
    return c[:, 1] - c[:, 0]


def test_chosen_plan_meets_the_chance_constraint_on_an_independent_evaluation(fit, grid):
    eps, risk = 0.02, 0.1
    table = decide(evaluate(fit, PT, grid, Evaluation(backend="numpy")), Criterion(eps, risk))
    assert table["chosen"].sum() == 1
    chosen = table[table["chosen"]].iloc[0]
    assert chosen["p_within_tolerance"] >= 1 - risk
    feasible = table[table["feasible"]]
    assert chosen["domain_mean"] == feasible["domain_mean"].min()
    p_indep = (_final_rise(fit, chosen, seed=99) <= eps).mean()
    assert p_indep >= 1 - risk - 0.03, p_indep
    # infeasible plans really are: the most aggressive one breaks the tolerance more often
    worst = table.loc[table["p_within_tolerance"].idxmin()]
    assert (_final_rise(fit, worst, seed=98) <= eps).mean() < 1 - risk


def test_pareto_front_is_monotone_and_undominated(fit, grid):
    table = decide(evaluate(fit, PT, grid, Evaluation(backend="numpy")), Criterion(0.02, 0.1))
    front = table[table["pareto"]].sort_values("p_within_tolerance")
    assert len(front) >= 2
    assert np.all(np.diff(front["domain_mean"]) > 0)  # safer plans cost domain loss
    for _, f in front.iterrows():
        dominated = (table["domain_mean"] < f["domain_mean"]) & (
            table["p_within_tolerance"] > f["p_within_tolerance"]
        )
        assert not dominated.any()


def test_pareto_mask_small_case():
    m = pareto_mask(np.array([1.0, 2.0, 1.5, 3.0]), np.array([0.2, 0.9, 0.1, 0.95]))
    assert m.tolist() == [True, True, False, True]


def test_numpy_and_jax_backends_agree(fit, grid):
    pytest.importorskip("jax")
    a = evaluate(fit, PT, grid.head(6), Evaluation(backend="numpy", seed=4, dtype="float64"))
    b = evaluate(fit, PT, grid.head(6), Evaluation(backend="jax", seed=4, dtype="float64"))
    np.testing.assert_allclose(a.domain, b.domain, rtol=1e-9)
    np.testing.assert_allclose(a.rise, b.rise, rtol=1e-7, atol=1e-10)
    c = evaluate(fit, PT, grid.head(6), Evaluation(backend="jax", seed=4))  # float32, the default
    np.testing.assert_allclose(a.domain, c.domain, atol=2e-5)
    np.testing.assert_allclose(a.rise, c.rise, atol=2e-5)
    import jax

    assert not jax.config.jax_enable_x64  # float64 only inside the evaluation (blackjax needs it)


def test_single_precision_and_chunking_do_not_change_the_outcomes(fit, grid):
    a = evaluate(
        fit, PT, grid, Evaluation(backend="numpy", seed=2, dtype="float64", chunk_elements=10**9)
    )
    b = evaluate(fit, PT, grid, Evaluation(backend="numpy", seed=2, chunk_elements=5000))
    np.testing.assert_allclose(a.domain, b.domain, atol=2e-5)
    np.testing.assert_allclose(a.general, b.general, atol=2e-5)
    np.testing.assert_allclose(a.rise, b.rise, atol=2e-5)
    assert np.mean(a.turning == b.turning) > 0.99


def test_no_feasible_plan_chooses_none(fit, grid):
    table = decide(evaluate(fit, PT, grid, Evaluation(backend="numpy")), Criterion(1e-6, 0.01))
    assert not table["feasible"].any() and not table["chosen"].any()


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(peak_lrs=[-1e-4]), "positive"),
        (dict(peak_lrs=[2.0]), "raw learning rate"),
        (dict(shapes=["triangle"]), "shape 'triangle'"),
        (dict(replay_ratios=[1.5]), r"replay ratio 1.5"),
        (dict(steps=[50]), "re-warmup"),
    ],
)
def test_bad_decisions_are_refused(kwargs, match):
    args = dict(transfers=[8000], shapes=["cosine"], peak_lrs=[1e-4], steps=[1000])
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        plan_grid(**args)


def test_replay_plans_need_a_replay_fit(fit):
    plans = plan_grid([8000], ["cosine"], [1e-4], [1000], replay_ratios=[0.25])
    with pytest.raises(DataError, match="no replay extension"):
        evaluate(fit, PT, plans)


def test_cli_plan_writes_the_table_and_plot(cpt_cli_fit, tmp_path, capsys):
    d, _ = cpt_cli_fit
    args = [
        "plan",
        str(d / "fit.nc"),
        "--pt",
        str(d / "fit.csv"),
        "--pt-run",
        "pt@10000/cosine",
        "--transfers",
        "8000,10000",
        "--peak-lrs",
        "5e-5,2e-4",
        "--steps",
        "1000,3000",
        "--tolerance",
        "0.02",
        "--risk",
        "0.1",
        "--out",
        str(tmp_path / "plans.csv"),
        "--plot",
        str(tmp_path / "plans.png"),
        "--backend",
        "numpy",
    ]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "Pareto front" in out and "chosen (chance)" in out
    t = pd.read_csv(tmp_path / "plans.csv")
    for col in (
        "domain_mean",
        "domain_lower",
        "domain_upper",
        "general_rise_mean",
        "p_within_tolerance",
        "feasible",
        "chosen",
        "shape",
        "peak_lr",
        "steps",
        "transfer",
        "loss_potential",
    ):
        assert col in t.columns
    assert t["chosen"].sum() == 1
    assert (tmp_path / "plans.png").stat().st_size > 10_000
    assert main(args) == 2  # no silent overwrite
    bad = args[:-2] + ["--peak-lrs", "abc"]
    with pytest.raises(SystemExit):
        main(bad)
