"""The ``plan`` command: a risk-aware CPT plan from a cpt fit
(:func:`bayescpt.cpt.run.run_plan`)."""

from __future__ import annotations

from pathlib import Path

from bayescpt.cli.argtypes import (
    float_list,
    int_list,
    nonneg_float,
    nonneg_int,
    positive_float,
    positive_int,
    probability,
    seed_int,
    share,
    str_list,
)
from bayescpt.cli.fitting import load_fit_checked
from bayescpt.cli.messages import say
from bayescpt.cli.options import add_options
from bayescpt.cli.outputs import close_figure, figure_writer, prepare_outputs, write_files
from bayescpt.cli.report import report_args
from bayescpt.cpt.plan.files import pt_schedule_from_table, write_plans
from bayescpt.cpt.plan.request import OPTION_NAMES, PlanRequest, plan_request
from bayescpt.cpt.plots import plot_plans
from bayescpt.cpt.run import run_plan
from bayescpt.curves.data.validate import read_curves
from bayescpt.curves.forecast.extrapolation import range_warnings
from bayescpt.curves.model.fit import Fit
from bayescpt.hparams.fit import HparamsFit
from bayescpt.mixture.fit import MixtureFit

#: the plan question: the fit, the PT schedule, the risk and the grid of plans
PLAN_OPTIONS = (
    ("fit", dict(type=Path, metavar="FIT.nc")),
    (
        "--pt",
        dict(
            required=True,
            type=Path,
            metavar="PT.csv",
            help="the PT schedule (a table with run, step, lr [, phase]; e.g. the fit's "
            "data); CPT starts from its checkpoints at --transfers",
        ),
    ),
    ("--pt-run", dict(help="the run of --pt whose PT rows to use (when it has several)")),
    (
        "--tolerance",
        dict(
            required=True,
            type=nonneg_float,
            metavar="EPS",
            help="allowed rise of the final general loss over its value at the checkpoint (nats)",
        ),
    ),
    (
        "--risk",
        dict(
            type=probability,
            default=0.1,
            metavar="DELTA",
            help="allowed probability of exceeding the tolerance (default 0.1)",
        ),
    ),
    (
        "--transfers",
        dict(
            type=int_list,
            help="PT steps of the checkpoints to start "
            "from (comma-separated; default: the end of the PT schedule)",
        ),
    ),
    (
        "--shapes",
        dict(
            type=str_list,
            default=["cosine", "linear", "constant"],
            help="CPT schedule shapes: cosine, linear (WSD), 1-sqrt, exponential, constant",
        ),
    ),
    (
        "--peak-lrs",
        dict(
            type=float_list,
            help="CPT peak learning rates, raw (e.g. 1e-4,2e-4,4e-4); with --hparams "
            "the default is the predicted optimal LR's lower end, median and upper "
            "end",
        ),
    ),
    ("--steps", dict(type=int_list, required=True, help="CPT lengths in steps")),
    (
        "--decay-fracs",
        dict(type=float_list, default=[0.2], help="WSD decay share of the CPT steps (default 0.2)"),
    ),
    (
        "--replay-ratios",
        dict(
            type=float_list,
            default=[0.0],
            help="shares of PT data in the CPT mixture (needs a fit with --replay)",
        ),
    ),
    ("--warmup", dict(type=nonneg_int, default=100, help="re-warmup steps (default 100)")),
    (
        "--final-frac",
        dict(type=share, default=0.0, help="final LR as a share of the peak (default 0)"),
    ),
    (
        "--objective",
        dict(
            default="chance",
            choices=["chance", "quantile", "weighted"],
            help="chance: min expected domain loss s.t. the risk constraint (default); "
            "quantile: min --quantile of the domain loss s.t. the constraint; weighted: "
            "min w_general * rise + w_domain * domain loss (no constraint)",
        ),
    ),
    ("--quantile", dict(type=probability, default=0.9)),
    ("--w-general", dict(type=nonneg_float, default=1.0)),
    ("--w-domain", dict(type=nonneg_float, default=1.0)),
    ("--general", dict(help="the general validation set (when the fit has several)")),
    ("--domain", dict(help="the domain validation set (when the fit has several)")),
    ("--model-size", dict(type=positive_float, help="model size (when the fit has several)")),
    (
        "--points",
        dict(
            type=positive_int,
            default=48,
            help="CPT steps evaluated per plan (turning-point resolution; default 48)",
        ),
    ),
    ("--prob", dict(type=probability, default=0.9, help="interval probability (default 0.9)")),
    ("--backend", dict(default="auto", choices=["auto", "numpy", "jax"])),
    ("--seed", dict(type=seed_int, default=0)),
)
PLAN_OTHER_FITS_TITLE = (
    "other fits (optional): the optimal LR of an hparams fit and the feasibility of the "
    "mixture by a mixture fit, for the same model family"
)
#: the optional hparams and mixture fits the plans are checked against
PLAN_OTHER_FITS = (
    (
        "--hparams",
        dict(
            type=Path,
            metavar="HP.nc",
            help="an hparams fit: each plan's peak LR against the checkpoint's optimal LR",
        ),
    ),
    ("--n-params", dict(type=positive_float, help="with --hparams: the model's parameters")),
    (
        "--init-loss",
        dict(
            type=positive_float,
            help="with --hparams: the checkpoint's validation loss on the CPT data",
        ),
    ),
    ("--cpt-tokens", dict(type=positive_float, help="with --hparams: CPT tokens of the plans")),
    (
        "--mixture",
        dict(
            type=Path,
            metavar="MIX.nc",
            help="a mixture fit: a plan is feasible only if its mixture (domain share "
            "1 - replay ratio) is, with probability >= 1 - DELTA",
        ),
    ),
    (
        "--mixture-tokens",
        dict(
            type=positive_float,
            help="with --mixture: the CPT budget in the mixture fit's token unit",
        ),
    ),
    (
        "--mixture-model-size",
        dict(
            type=positive_float,
            help="with --mixture: the model size, when the mixture fit has several",
        ),
    ),
)
#: the files the plan command writes
PLAN_OUTPUTS = (
    ("--out", dict(required=True, type=Path, metavar="PLANS.csv")),
    ("--plot", dict(type=Path, metavar="PLANS.png", help="also draw the plans")),
    ("--force", dict(action="store_true", help="replace existing --out/--plot files")),
)


def add_plan(sub) -> None:
    pl = sub.add_parser(
        "plan",
        help="choose a CPT plan under a risk of forgetting",
        description="Evaluate a grid of CPT plans from a PT checkpoint with a cpt "
        "fit: per posterior draw the final domain and general losses, the general "
        "rise and turning point; pick the plan with the lowest expected domain loss "
        "among those with P(general rise <= TOLERANCE) >= 1 - RISK.",
    )
    add_options(pl, PLAN_OPTIONS)
    add_options(pl.add_argument_group(PLAN_OTHER_FITS_TITLE), PLAN_OTHER_FITS)
    add_options(pl, PLAN_OUTPUTS)
    report_args(pl, mlflow=True)


def request_of(a) -> PlanRequest:
    """The planner's request from the ``plan`` command's options (:func:`plan_request`'s, named
    alike), with the ``--hparams`` and ``--mixture`` fits loaded."""
    return plan_request(
        **{k: v for k, v in vars(a).items() if k in OPTION_NAMES},
        hparams_fit=None if a.hparams is None else load_fit_checked(a.hparams, HparamsFit),
        mixture_fit=None if a.mixture is None else load_fit_checked(a.mixture, MixtureFit),
        mixture_label=getattr(a.mixture, "name", "the mixture fit"),
    )


def cmd_plan(a) -> int:

    prepare_outputs(
        a.force,
        {"FIT.nc": a.fit, "--pt": a.pt, "--hparams": a.hparams, "--mixture": a.mixture},
        out=a.out,
        plot=a.plot,
    )
    fit = load_fit_checked(a.fit, Fit, law="cpt")
    pt = pt_schedule_from_table(read_curves(a.pt, need_loss=False), a.pt_run)
    res = run_plan(fit, pt, request_of(a))
    table = res.table
    for w in range_warnings(res.range_note or None, res.extrapolation):
        say(f"warning: {w}")  # as predict words them
    fig = (
        None
        if a.plot is None
        else plot_plans(table, tolerance=a.tolerance, risk=a.risk, prob=a.prob)
    )
    try:  # both outputs or neither
        write_files(
            {
                a.out: lambda tmp: write_plans(table, tmp),
                a.plot: None if fig is None else figure_writer(fig, a.plot),
            },
            a.force,
        )
    finally:
        close_figure(fig)
    say(
        f"evaluated {len(table)} plans x {res.draws.domain.shape[0]} draws x {a.points} steps "
        f"in {res.draws.seconds:.2f} s; wrote {a.out}"
    )
    if res.lr_opt is not None:
        lr = res.lr_opt
        print(
            f"optimal peak LR for this checkpoint ({a.hparams.name}): {_bound(lr['median'])} "
            f"[{_bound(lr['lower'])}, {_bound(lr['upper'])}]"
        )
        for w in res.warnings:
            say(f"warning: {w}")
    if res.mixture_failing is not None:
        print(
            f"mixture ({a.mixture.name}): replay ratios failing its feasibility at risk "
            f"{a.risk:g}: {', '.join(f'{r:g}' for r in res.mixture_failing) or 'none'}"
        )
    print(f"Pareto front (expected final domain loss vs P(general rise <= {a.tolerance:g})):")
    print(res.front().to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    c = res.chosen
    if c is not None:
        print(
            f"chosen ({a.objective}): {c['shape']} CPT, peak LR {c['peak_lr']:g}, "
            f"{int(c['steps'])} steps from PT step {int(c['transfer'])}"
            + (f", replay {c['replay_ratio']:g}" if c["replay_ratio"] > 0 else "")
            + f": domain loss {c['domain_mean']:.4f} [{c['domain_lower']:.4f}, "
            f"{c['domain_upper']:.4f}], P(rise <= {a.tolerance:g}) = "
            f"{c['p_within_tolerance']:.3f}"
        )
    else:
        say(res.infeasible)
    if a.plot is not None:
        say(f"wrote {a.plot}")
    return 0


def _bound(v) -> str:
    """An end of the optimal LR's interval; None where it is open."""
    return "open" if v is None else f"{v:.3g}"


COMMANDS = {"plan": cmd_plan}
