"""Planning speed: thousands of CPT plans x thousands of draws over tens of thousands of steps.

The reference CPT fit ``models/cpt_simulated.nc`` (or ``--fit FIT.nc`` with ``--pt PT.csv --pt-run
RUN``), a decision grid of ``--plans`` plans (transfer x shape x peak LR x length x decay fraction;
CPT lengths up to 40000 steps on a 10000-step PT), every posterior draw. Reported, in one run:

* the design (S1/S2 areas of every plan's full schedule, O(T) each) time;
* the evaluation of the same design arrays with ``bayescpt.cpt.plan.evaluate.evaluate``
  (vectorised over draws x plans x steps; numpy and, when installed, JAX) against a plain numpy
  loop over plans that evaluates each plan's draws one plan at a time, and their ratio;
* the chance-constrained decision on the demo's planning question (``bayescpt.demo.PLAN``): the
  chosen plan's P(rise <= eps) re-estimated by the plain loop from its own draws (independent
  new-run deviations, float64), and whether the Pareto front is monotone.

    python benchmarks/plan_speed.py [--plans 2000] [--json benchmarks/plan_speed.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bayescpt.cpt.plan.decide import Criterion, decide
from bayescpt.cpt.plan.evaluate import Evaluation, designs, evaluate
from bayescpt.cpt.plan.files import pt_schedule_from_table
from bayescpt.cpt.plan.grid import plan_grid
from bayescpt.curves.data.validate import read_curves
from bayescpt.curves.model.fit import Fit
from bayescpt.curves.model.hierarchy import parameter_draws
from bayescpt.datasets.bundled import PLAN

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def grid(n_plans: int):
    transfers = [6000, 7000, 8000, 9000, 10000]
    shapes = ["cosine", "linear", "constant", "1-sqrt"]
    peaks = list(np.geomspace(2.5e-5, 8e-4, 10))
    steps = [2000, 5000, 10000, 20000, 40000]
    fracs = [0.1, 0.2, 0.3]
    plans = plan_grid(transfers, shapes, peaks, steps, fracs)
    return plans.sample(n=min(n_plans, len(plans)), random_state=0).reset_index(drop=True)


def plain_numpy(fit, X, n_draws, seed=0):
    """Plan by plan: the law over (draws, points) for one plan at a time."""
    rng = np.random.default_rng(seed)
    th = {
        role: {
            k: v[:, None]
            for k, v in parameter_draws(fit, role, None, rng, antithetic=False).items()
            if not k.startswith("_")
        }
        for role in ("general", "domain")
    }
    n_plans = X["cpt_steps"].shape[0]
    out = np.empty((5, n_draws, n_plans))
    for i in range(n_plans):  # the same outcomes as evaluate(): final losses, rise, peak, turn
        gen = fit.law.mean(np, th["general"], {k: v[i] for k, v in X["general"].items()})
        dom = fit.law.mean(np, th["domain"], {k: v[i] for k, v in X["domain"].items()})
        peak = gen.argmax(axis=1)
        out[0, :, i], out[1, :, i] = dom[:, -1], gen[:, -1]
        out[2, :, i] = gen[:, -1] - gen[:, 0]
        out[3, :, i] = gen[np.arange(n_draws), peak] - gen[:, 0]
        out[4, :, i] = X["cpt_steps"][i][peak]
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fit", type=Path, default=ROOT / "models" / "cpt_simulated.nc")
    ap.add_argument("--pt", type=Path, default=ROOT / "data" / "cpt_simulated.csv")
    ap.add_argument("--pt-run", default="pt@10000/cosine")
    ap.add_argument("--plans", type=int, default=2000)
    ap.add_argument("--points", type=int, default=48)
    ap.add_argument("--json", type=Path, default=HERE / "plan_speed.json")
    a = ap.parse_args(argv)
    fit = Fit.load(a.fit, law="cpt")
    pt = pt_schedule_from_table(read_curves(a.pt, need_loss=False), a.pt_run)
    plans = grid(a.plans)
    t0 = time.perf_counter()
    X = designs(fit, pt, plans, a.points)
    t_design = time.perf_counter() - t0
    total_steps = int(plans["steps"].sum() + plans["transfer"].sum())
    out = {
        "fit": str(a.fit.relative_to(ROOT)) if a.fit.is_relative_to(ROOT) else str(a.fit),
        "plans": len(plans),
        "points_per_plan": a.points,
        "schedule_steps_total": total_steps,
        "design_seconds": round(t_design, 2),
    }
    res, draws = {}, {}
    for backend in ("numpy", "jax"):
        try:
            evaluate(
                fit,
                pt,
                plans.head(8),
                Evaluation(a.points, backend),
                X={
                    k: (v[:8] if k == "cpt_steps" else {f: x[:8] for f, x in v.items()})
                    for k, v in X.items()
                },
            )
        except ImportError:
            continue
        t0 = time.perf_counter()
        draws[backend] = evaluate(fit, pt, plans, Evaluation(a.points, backend), X=X)
        res[backend] = time.perf_counter() - t0
        out["draws"] = int(draws[backend].domain.shape[0])
    t0 = time.perf_counter()
    plain_numpy(fit, X, out["draws"], seed=12345)
    t_plain = time.perf_counter() - t0
    out["plain_numpy_loop_seconds"] = round(t_plain, 2)
    for k, v in res.items():
        out[f"evaluate_{k}_seconds"] = round(v, 2)
        out[f"speedup_{k}_vs_plain_loop"] = round(t_plain / v, 2)

    # The decision on the demo's planning question (bayescpt.demo.PLAN), checked independently:
    # the plain loop draws its own new-run deviations (another seed) and evaluates in float64,
    # so its P(rise <= eps) for the chosen plan is an independent estimate.
    demo = plan_grid(PLAN["transfers"], PLAN["shapes"], PLAN["peak_lrs"], PLAN["steps"])
    Xd = designs(fit, pt, demo, a.points)
    table = decide(
        evaluate(fit, pt, demo, Evaluation(a.points, "numpy"), X=Xd),
        Criterion(PLAN["tolerance"], PLAN["risk"]),
    )
    plain = plain_numpy(fit, Xd, out["draws"], seed=12345)
    front = table[table["pareto"]].sort_values("p_within_tolerance")
    out["decision"] = {
        "plans": len(demo),
        "tolerance": PLAN["tolerance"],
        "risk": PLAN["risk"],
        "feasible_plans": int(table["feasible"].sum()),
        "pareto_plans": int(len(front)),
        "pareto_monotone": bool(front["domain_mean"].is_monotonic_increasing),
    }
    if table["chosen"].any():
        i = int(np.flatnonzero(table["chosen"].to_numpy())[0])
        p_ind = float((plain[2, :, i] <= PLAN["tolerance"]).mean())
        se = float(np.sqrt(p_ind * (1 - p_ind) / plain.shape[1]))
        c = table.iloc[i]
        out["decision"].update(
            {
                "chosen": {
                    k: (
                        None
                        if not isinstance(c[k], str) and np.isnan(c[k])
                        else c[k].item()
                        if hasattr(c[k], "item")
                        else c[k]
                    )
                    for k in ("transfer", "shape", "peak_lr", "steps", "decay_frac")
                },
                "chosen_domain_mean": round(float(c["domain_mean"]), 5),
                "p_within_tolerance_planner": round(float(c["p_within_tolerance"]), 4),
                "p_within_tolerance_independent": round(p_ind, 4),
                "independent_se": round(se, 4),
                "meets_1_minus_risk": bool(p_ind >= 1 - PLAN["risk"] - 2 * se),
            }
        )
    print(json.dumps(out, indent=1))
    a.json.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
