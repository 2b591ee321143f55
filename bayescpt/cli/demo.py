"""The quick start on bundled data, end to end: fit -> diagnose -> predict -> compare -> plan.

1. fits the law on the multi-power-law authors' training split (``cosine_24000, constant_24000,
   wsdcon_9`` at 25M/100M/400M) with NUTS; saves the fit;
2. prints and draws its diagnostics (rank plots, energy, the most correlated pair);
3. predicts the six other schedules per size with 90 % intervals, reports error and coverage,
   draws the curves;
4. compares it with the other LR-schedule law's reference fit of the same runs
   (``models/``): forest plot of the shared parameters and PSIS-LOO;
5. plans a CPT run on the reference CPT-law fit (``models/cpt_simulated.nc``): the
   chance-constrained choice among schedule shapes, peak LRs, lengths and checkpoints, its
   Pareto front as CSV and plot.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

from bayescpt.cli.argtypes import seed_int
from bayescpt.cli.messages import say
from bayescpt.cli.outputs import csv_writer, save_figure, write_files
from bayescpt.cli.progress import stage
from bayescpt.core.plotting import plot_diagnostics
from bayescpt.cpt.plan.files import pt_schedule_from_table, write_plans
from bayescpt.cpt.plan.request import plan_request
from bayescpt.cpt.plots import plot_plans
from bayescpt.cpt.run import run_plan
from bayescpt.curves.data.validate import read_curves
from bayescpt.curves.evaluate.compare import (
    loo_table,
    loo_unavailable,
    parameter_table,
    shared_parameters,
)
from bayescpt.curves.evaluate.plots import plot_forest, plot_predictions
from bayescpt.curves.evaluate.scores import percent_text, score
from bayescpt.curves.forecast.extrapolation import QUANTITIES, ExtrapolationWarning
from bayescpt.curves.forecast.predict import predict_frame
from bayescpt.curves.model.fit import Fit
from bayescpt.datasets.bundled import (
    CPT_DATA,
    CPT_REFERENCE,
    MODELS,
    PLAN,
    TRAIN_SCHEDULES,
    bundled_multipowerlaw,
    split,
)

#: while the fit runs (about two minutes), a line after this many seconds, then every ``EVERY``
PROGRESS_AFTER, PROGRESS_EVERY = 5.0, 15.0


def add_demo(sub) -> None:
    q = sub.add_parser(
        "demo",
        help="the quick start: fit bundled curves, diagnose, predict "
        "unseen schedules, write CSV + plot",
    )
    q.add_argument("--out", type=Path, default=Path("out"), help="output folder (default out/)")
    q.add_argument("--law", default="annealing", choices=["annealing", "multipower"])
    q.add_argument("--force", action="store_true", help="replace existing outputs")
    q.add_argument("--sampler", default="auto", help="as for fit (default: nutpie if installed)")
    q.add_argument("--seed", type=seed_int, default=0)
    q.add_argument("--quiet", action="store_true", help="no progress output")


def cmd_demo(a) -> int:

    run_demo(
        a.out,
        law=a.law,
        sampler=a.sampler,
        seed=a.seed,
        force=a.force,
        log=(lambda m: None) if a.quiet else say,
        progress=not a.quiet and sys.stderr.isatty(),
    )
    return 0


def run_demo(
    out: Path,
    law: str = "annealing",
    sampler: str = "auto",
    seed: int = 0,
    force: bool = False,
    log=print,
    progress: bool = False,
) -> dict:
    """The quick start into ``out``; ``log`` gets a line per stage, and while the fit compiles
    and samples either the sampler's progress bar (``progress``, on a terminal) or a line every
    :data:`PROGRESS_EVERY` seconds."""

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    other = "multipower" if law == "annealing" else "annealing"
    targets = _targets(out, law, other, force)
    df = bundled_multipowerlaw()
    train, test = split(df)
    fit = _fit(train, law, sampler, seed, log, progress)
    fit.save(targets["fit"], overwrite=force)
    diag = _diagnose(fit, law, targets["diagnostics_png"], force, log)
    pred, table = _predict(fit, test, law, seed, targets, force, log)
    result = {"fit": fit, "predictions": pred, "score": table, "diagnostics": diag}
    result["loo"] = _compare(fit, law, other, targets["compare_png"], force, log)
    result["plans"] = _plan(targets["plans"], targets["plans_png"], seed, force, log)
    log("wrote " + ", ".join(str(t) for t in targets.values() if t.exists()))
    return result


def _targets(out: Path, law: str, other: str, force: bool) -> dict:
    """The demo's output files in ``out`` by kind; FileExistsError where one exists and not
    ``force``."""
    names = {
        "fit": f"{law}_fit.nc",
        "predictions": f"{law}_predictions.csv",
        "predictions_png": f"{law}_predictions.png",
        "diagnostics_png": f"{law}_diagnostics.png",
        "compare_png": f"{law}_vs_{other}_forest.png",
        "plans": "cpt_plans.csv",
        "plans_png": "cpt_plans.png",
    }
    targets = {k: out / v for k, v in names.items()}
    for t in targets.values():
        if t.exists() and not force:
            raise FileExistsError(f"{t} exists; pass --force to replace the demo outputs")
    return targets


def _fit(train, law: str, sampler: str, seed: int, log, progress: bool):
    """Step 1: the law fitted to the training curves, with the sampler's progress bar or a
    line now and then."""
    log(
        f"[1/5] fitting the {law} law on {train['run'].nunique()} training curves "
        f"({', '.join(TRAIN_SCHEDULES)} x 3 sizes) with NUTS ..."
    )
    if progress:
        return Fit.run(train, law=law, sampler=sampler, seed=seed, warn=False, progress=True)
    with stage(
        "      fitting (compiling the model, then sampling)",
        after=PROGRESS_AFTER,
        every=PROGRESS_EVERY,
        out=log,
    ):
        return Fit.run(train, law=law, sampler=sampler, seed=seed, warn=False)


def _diagnose(fit, law: str, path: Path, force: bool, log):
    """Step 2: the fit's diagnostics, said and drawn into ``path``."""
    diag = fit.diagnostics()
    log(
        f"[2/5] diagnostics: max R-hat {diag.max_rhat:.4f}, min bulk ESS {diag.min_ess_bulk:.0f}, "
        f"divergences {diag.divergences} -> {'OK' if diag.ok else 'PROBLEMS'}"
    )
    for msg in diag.problems():
        log(f"      warning: {msg}")
    save_figure(
        plot_diagnostics(
            fit.idata, diag, title=f"{law} law on the multipowerlaw runs: sampler diagnostics"
        ),
        path,
        force,
    )
    if fit.schedule_level is not None:
        log(f"      {fit.schedule_level.text()}")
    return diag


def _predict(fit, test, law: str, seed: int, targets: dict, force: bool, log):
    """Step 3: the unseen schedules predicted, scored, written and drawn; the predictions and
    their score."""
    log(f"[3/5] predicting {test['run'].nunique()} unseen schedules with 90 % intervals ...")
    with warnings.catch_warnings():  # summarised in one line below
        warnings.simplefilter("ignore", ExtrapolationWarning)
        pred = predict_frame(fit, test, prob=0.9, seed=seed)
    beyond = pred.attrs.get("extrapolation", [])
    if beyond:
        worst = {}
        for w in beyond:
            worst[w.quantity] = max(worst.get(w.quantity, 1.0), w.factor)
        log(
            f"      {len({w.run for w in beyond})} of {test['run'].nunique()} unseen schedules "
            "run beyond the training range (up to "
            + ", ".join(f"{f:.3g}x in {QUANTITIES[q]}" for q, f in worst.items())
            + "): extrapolation, which is what this check tests"
        )
    write_files({targets["predictions"]: csv_writer(pred, "%.6g")}, force)
    table = score(pred)
    log(percent_text(table))
    save_figure(
        plot_predictions(
            pred, prob=0.9, title=f"{law} law: unseen schedules, posterior mean and 90 % intervals"
        ),
        targets["predictions_png"],
        force,
    )
    return pred, table


def _compare(fit, law: str, other: str, path: Path, force: bool, log):
    """Step 4: this fit beside the other law's reference fit of the same runs."""

    ref_path = MODELS / f"{other}_multipowerlaw.nc"
    if not ref_path.exists():
        log(f"[4/5] skipped: no reference fit {ref_path}")
        return None
    ref = Fit.load(ref_path, law=other)
    labels = [f"{law} (this fit)", f"{other} (models/)"]
    loo = loo_table([fit, ref], labels)
    if loo is None:
        log(f"[4/5] no LOO comparison with {ref_path.name}: {loo_unavailable([fit, ref], labels)}")
    else:
        log("[4/5] PSIS-LOO on the same runs (higher elpd is better):")
        log(
            loo[["rank", "elpd_loo", "p_loo", "elpd_diff", "dse"]].to_string(
                float_format=lambda v: f"{v:.1f}"
            )
        )
    params = shared_parameters([fit, ref])
    table = parameter_table([fit, ref], labels)
    save_figure(plot_forest(table[table["param"].isin(params)]), path, force)
    return loo


def _plan(csv: Path, png: Path, seed: int, force: bool, log):
    """Step 5: a chance-constrained CPT plan on the reference CPT-law fit."""

    if not CPT_REFERENCE.exists():
        log(f"[5/5] skipped: no reference fit {CPT_REFERENCE}")
        return None
    fit = Fit.load(CPT_REFERENCE, law="cpt")
    pt = pt_schedule_from_table(read_curves(CPT_DATA, need_loss=False), "pt@10000/cosine")
    res = run_plan(fit, pt, plan_request(**PLAN, seed=seed))
    table, draws = res.table, res.draws
    log(
        f"[5/5] planning CPT on {CPT_REFERENCE.name} (simulated PT -> CPT runs, paper Fig. 3 "
        f"values): {len(table)} plans x {draws.domain.shape[0]} draws in {draws.seconds:.2f} s"
    )
    write_files({csv: lambda tmp: write_plans(table, tmp)}, force)
    c = res.chosen
    if c is not None:
        log(
            f"      chosen: {c['shape']} CPT, peak LR {c['peak_lr']:g}, {int(c['steps'])} steps "
            f"from PT step {int(c['transfer'])}: domain loss {c['domain_mean']:.4f} "
            f"[{c['domain_lower']:.4f}, {c['domain_upper']:.4f}], P(general rise <= "
            f"{PLAN['tolerance']:g}) = {c['p_within_tolerance']:.3f}"
        )
    else:
        log("      no plan keeps the general rise within tolerance at this risk")
    save_figure(plot_plans(table, tolerance=PLAN["tolerance"], risk=PLAN["risk"]), png, force)
    return table
