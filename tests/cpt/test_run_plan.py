"""run_plan: one library call gives what the plan command prints, the same numbers as the steps it
assembles, the optimal LR predicted once, and the reason when no plan is feasible."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bayescpt.cpt.plan import checks as checks_module
from bayescpt.cpt.plan.decide import Criterion, decide, infeasibility
from bayescpt.cpt.plan.evaluate import Evaluation, evaluate
from bayescpt.cpt.plan.files import pt_schedule_from_table
from bayescpt.cpt.plan.grid import plan_grid
from bayescpt.cpt.plan.request import plan_request
from bayescpt.cpt.run import run_plan
from bayescpt.curves.data.validate import read_curves
from bayescpt.curves.model.fit import Fit
from bayescpt.hparams.fit import HparamsFit
from bayescpt.hparams.predict import predict_optimum
from bayescpt.mixture.fit import MixtureFit

# module-scoped fixtures: the module's tests run on one xdist worker (--dist loadgroup)
pytestmark = pytest.mark.xdist_group("cpt/test_run_plan")

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "models"
HP = dict(n_params=1.07e9, init_loss=2.25, cpt_tokens=2e10)


@pytest.fixture(scope="module")
def setting():
    fit = Fit.load(MODELS / "cpt_simulated.nc", law="cpt")
    pt = pt_schedule_from_table(
        read_curves(ROOT / "data" / "cpt_simulated.csv", need_loss=False), "pt@10000/cosine"
    )
    return fit, pt


def test_run_plan_equals_the_steps_it_assembles(setting):
    fit, pt = setting
    res = run_plan(
        fit,
        pt,
        plan_request(
            tolerance=0.05,
            risk=0.1,
            transfers=[8000],
            shapes=["cosine", "linear"],
            peak_lrs=[1e-4, 2e-4],
            steps=[2000, 8000],
            seed=3,
            backend="numpy",
        ),
    )
    plans = plan_grid([8000], ["cosine", "linear"], [1e-4, 2e-4], [2000, 8000])
    table = decide(
        evaluate(fit, pt, plans, Evaluation(seed=3, backend="numpy")), Criterion(0.05, 0.1)
    )
    # run_plan adds where each plan leaves the fit's range (this fit does not record it)
    assert res.table["extrapolation"].isna().all() and res.range_note is not None
    pd.testing.assert_frame_equal(res.table.drop(columns="extrapolation"), table)
    assert res.peak_lrs == [1e-4, 2e-4] and res.peak_lrs_from == "given"
    assert res.optimum is None and res.mixture_failing is None and res.warnings == []
    assert res.chosen is not None and res.infeasible is None
    assert res.chosen.name == table.index[table["chosen"]][0]
    front = res.front()
    assert len(front) == table["pareto"].sum()
    assert front["p_within_tolerance"].is_monotonic_increasing


def test_peak_lrs_come_from_one_hparams_prediction(setting, monkeypatch):
    fit, pt = setting
    hp = HparamsFit.load(MODELS / "hparams_steplaw.nc")
    calls = []

    def counted(*args, **kw):
        calls.append(1)
        return predict_optimum(*args, **kw)

    monkeypatch.setattr(checks_module, "predict_optimum", counted)
    res = run_plan(
        fit,
        pt,
        plan_request(
            tolerance=0.05,
            transfers=[8000],
            shapes=["cosine"],
            steps=[2000],
            hparams_fit=hp,
            backend="numpy",
            **HP,
        ),
    )
    assert len(calls) == 1
    lr = predict_optimum(
        hp, HP["n_params"], init_loss=HP["init_loss"], cpt_tokens=HP["cpt_tokens"], prob=0.9
    )["lr_opt"]
    assert res.peak_lrs_from == "hparams"
    assert res.peak_lrs == sorted([lr["lower"], lr["median"], lr["upper"]])
    assert sorted(res.table["peak_lr"]) == res.peak_lrs
    assert np.allclose(res.table["lr_over_opt"], res.table["peak_lr"] / lr["median"])
    assert res.lr_opt == res.optimum["lr_opt"]


def test_missing_inputs_are_named(setting):
    fit, pt = setting
    hp = HparamsFit.load(MODELS / "hparams_steplaw.nc")
    with pytest.raises(ValueError, match="--hparams needs --init-loss, --cpt-tokens"):
        run_plan(fit, pt, plan_request(tolerance=0.05, steps=[2000], hparams_fit=hp, n_params=1e9))
    with pytest.raises(ValueError, match="give the peak learning rates"):
        run_plan(fit, pt, plan_request(tolerance=0.05, steps=[2000]))
    with pytest.raises(ValueError, match="--mixture-tokens"):
        run_plan(
            fit,
            pt,
            plan_request(
                tolerance=0.05,
                steps=[2000],
                peak_lrs=[1e-4],
                mixture_fit=MixtureFit.load(MODELS / "mixture_ct70m.nc"),
            ),
        )


def test_infeasible_plans_say_why(setting):
    fit, pt = setting
    res = run_plan(
        fit,
        pt,
        plan_request(
            tolerance=0.001,
            transfers=[8000],
            shapes=["linear"],
            peak_lrs=[2e-4],
            steps=[8000],
            backend="numpy",
        ),
    )
    assert res.chosen is None
    best = res.table["p_within_tolerance"].max()
    assert res.infeasible.startswith(
        "no plan is feasible: the best keeps the general rise "
        f"within 0.001 with probability {best:.3f} < 0.900"
    )
    mix = res.table.assign(mixture_ok=False)
    assert "by mix.nc no planned mixture" in infeasibility(mix, 0.001, 0.1, "mix.nc")
    chosen = res.table.assign(chosen=[True] + [False] * (len(res.table) - 1))
    assert infeasibility(chosen, 0.001, 0.1) is None
