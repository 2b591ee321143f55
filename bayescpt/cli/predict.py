"""The ``predict`` command: posterior predictive loss curves for the rows of a schedule from a
loss-curve fit, optionally conditioned on a run's observed prefix (``--observed``), with a cpt
fit's plan outlook (``--outlook``), a plot and the draws; every output computed first, then
written all or none.
"""

from __future__ import annotations

from pathlib import Path

from bayescpt.cli.argtypes import probability, seed_int
from bayescpt.cli.fitting import load_fit_checked
from bayescpt.cli.messages import say
from bayescpt.cli.outputs import (
    close_figure,
    csv_writer,
    figure_writer,
    prepare_outputs,
    write_files,
)
from bayescpt.cli.report import report_args
from bayescpt.cpt.outlook import outlook
from bayescpt.curves.data.observed import read_observed
from bayescpt.curves.data.validate import read_curves
from bayescpt.curves.evaluate.plots import plot_predictions
from bayescpt.curves.forecast.forecast import forecast
from bayescpt.curves.forecast.predict import check_sizes, predictive_idata
from bayescpt.curves.model.fit import Fit

#: the schedule's columns the predictions CSV repeats, where present, before the forecast's
KEY_COLUMNS = (
    "run",
    "step",
    "lr",
    "phase",
    "val_set",
    "val_role",
    "model_size",
    "replay_ratio",
    "loss",
)


def add_predict(sub) -> None:
    p = sub.add_parser(
        "predict",
        help="predict loss curves for schedules from a fit",
        description="Posterior predictive loss for every row of a schedule CSV "
        "(columns run, step, lr [, val_set, model_size]; loss optional).",
    )
    p.add_argument("fit", type=Path, metavar="FIT.nc")
    p.add_argument("--schedule", required=True, type=Path, metavar="SCHED.csv")
    p.add_argument(
        "--prob", type=probability, default=0.9, help="interval probability (default 0.9)"
    )
    p.add_argument("--out", required=True, type=Path, metavar="PRED.csv")
    p.add_argument("--seed", type=seed_int, default=0)
    p.add_argument(
        "--observed",
        type=Path,
        metavar="PREFIX.csv",
        help="the losses of a run in progress so far (run, step, loss [, val_set]; "
        "e.g. what `bayescpt import` writes; the schedule's LR is used): each "
        "curve's forecast is conditioned on its own (adds the columns ess, observed)",
    )
    p.add_argument(
        "--outlook",
        type=Path,
        metavar="OUTLOOK.csv",
        help="cpt fits: also write each plan's final losses, loss potential and "
        "general-loss turning point (with intervals) here",
    )
    p.add_argument(
        "--plot",
        type=Path,
        metavar="PRED.png",
        help="also draw the predicted curves with their bands, one panel per run",
    )
    p.add_argument(
        "--draws-out",
        type=Path,
        metavar="PRED.nc",
        help="also write the draws as ArviZ InferenceData (NetCDF): predictive loss "
        "in posterior_predictive, the curve in predictions, the schedule's losses "
        "(if any) in observed_data; dims chain, draw, point",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="replace existing --out/--outlook/--plot/--draws-out files",
    )
    report_args(p)


def cmd_predict(a) -> int:

    prepare_outputs(
        a.force,
        {"FIT.nc": a.fit, "--schedule": a.schedule, "--observed": a.observed},
        out=a.out,
        outlook=a.outlook,
        plot=a.plot,
        draws_out=a.draws_out,
    )
    if a.draws_out is not None and a.observed is not None:
        raise ValueError(
            "--draws-out and --observed: a forecast from a run's prefix weights its "
            "draws (importance sampling), which --draws-out does not write yet; give "
            "one of them"
        )
    fit = load_fit_checked(a.fit, Fit)
    if a.outlook is not None and fit.law.name != "cpt":
        raise ValueError(
            f"--outlook: {a.fit} is a {fit.law.name} fit; the outlook of a plan needs a cpt fit"
        )
    sched = read_curves(a.schedule, need_loss=False)
    check_sizes(fit, sched, str(a.schedule))
    if a.observed is not None and a.outlook is not None:
        raise ValueError(
            "--outlook and --observed: the outlook of a plan does not take a "
            "run's prefix yet; give one of them"
        )
    observed = None if a.observed is None else read_observed(a.observed)
    fc = forecast(
        fit,
        sched,
        a.prob,
        a.seed,
        observed=observed,
        draws=a.draws_out is not None,
        tell=lambda text: say(f"warning: {text}"),
    )
    pred = fc.table
    _say_conditioning(fit, pred, observed)
    idata = None if fc.draws is None else predictive_idata(fc.draws, pred)
    # every output computed and drawn first, then written all or none
    out = outlook(fit, sched, prob=a.prob, seed=a.seed) if a.outlook is not None else None
    _write_outputs(a, fit, pred, out, idata)
    return 0


def _say_conditioning(fit, pred, observed) -> None:
    """What the forecasts rest on: per run, the observed losses and the effective sample size
    of a forecast from a prefix; else what sets the band's width on a new schedule."""
    if observed is not None:
        for run, g in pred.groupby("run", sort=False):
            say(
                f"{run}: forecast from {int(g['observed'].sum())} observed losses, effective "
                f"sample size {g['ess'].min():.0f} of {int(g['n_points'].iloc[0])} particles"
            )
    elif fit.schedule_level is not None:
        say(fit.schedule_level.text())


def _columns(pred) -> list[str]:
    """The predictions CSV's columns: the schedule's (its loss only where it has any), the
    forecast's, and a prefix forecast's ess and observed."""
    cols = [c for c in KEY_COLUMNS if c in pred.columns]
    if pred["loss"].isna().all():
        cols.remove("loss")
    cols += ["mean", "median", "lower", "upper", "curve_lower", "curve_upper"]
    cols += [c for c in ("ess", "observed") if c in pred.columns]
    return cols


def _write_outputs(a, fit, pred, out, idata) -> None:
    """Draw the plot, write the predictions, the outlook ``out``, the plot and the draws
    ``idata`` (those asked for) all or none, and say what was written."""
    cols = _columns(pred)
    fig = (
        None
        if a.plot is None
        else plot_predictions(
            pred,
            prob=a.prob,
            title=f"{fit.law.name} law ({a.fit.name}): posterior mean, "
            f"{a.prob:.0%} credible band and predictive interval",
        )
    )
    try:
        write_files(
            {
                a.out: csv_writer(pred[cols], "%.6g"),
                a.outlook: None if out is None else csv_writer(out, "%.6g"),
                a.plot: None if fig is None else figure_writer(fig, a.plot),
                a.draws_out: None if idata is None else (lambda tmp: idata.to_netcdf(str(tmp))),
            },
            a.force,
        )
    finally:
        close_figure(fig)
    say(f"wrote {len(pred)} rows to {a.out}")
    if out is not None:
        say(f"wrote the outlook of {out['run'].nunique()} plan(s) to {a.outlook}")
    if a.plot is not None:
        say(f"wrote {a.plot}")
    if idata is not None:
        pp = idata.posterior_predictive
        say(
            f"wrote {pp.sizes['chain']} x {pp.sizes['draw']} draws at {pp.sizes['point']} "
            f"points to {a.draws_out}"
        )


COMMANDS = {"predict": cmd_predict}
