"""Command line: a thin layer over the library (parse, call, print, exit codes).

Exit codes: 0 success, 1 diagnostics failed under --strict, 2 bad input or usage.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from importlib import import_module
from pathlib import Path

from bayescpt import __version__
from bayescpt.cli.demo import run_demo
from bayescpt.core.chains import drop_stuck_chains
from bayescpt.core.fitfile import saved_law
from bayescpt.core.plotting import plot_diagnostics
from bayescpt.core.tables import DataError
from bayescpt.cpt.outlook import outlook
from bayescpt.cpt.plan import (
    decide,
    evaluate,
    hparams_check,
    mixture_check,
    plan_grid,
    pt_schedule_from_table,
    write_plans,
)
from bayescpt.cpt.plots import plot_plans
from bayescpt.curves.compare import (
    differences,
    labels_for,
    loo_table,
    parameter_table,
    shared_parameters,
)
from bayescpt.curves.data import decimate, describe, read_curves
from bayescpt.curves.fit import Fit, FitError
from bayescpt.curves.hierarchy import default_config
from bayescpt.curves.laws import (
    cli_options,
    get_law,
    law_names,
    option_groups,
    resolve_law_options,
)
from bayescpt.curves.plots import plot_forest, plot_predictions
from bayescpt.curves.predict import predict_frame
from bayescpt.hparams.model import HparamsFit
from bayescpt.hparams.predict import predict_optimum
from bayescpt.mixture.model import MixtureFit

EXIT_STRICT = 1
EXIT_INPUT = 2

# Command groups living next to their models: each module has
# ``add_commands(subparsers, sampler_args) -> {command: function(args) -> exit code}``.
PLUGINS: tuple[str, ...] = ("cli.lab", "cli.mixture", "cli.hparams", "cli.logs")


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _refuse_overwrite(path: Path, force: bool) -> None:
    if path.exists() and not force:
        raise FileExistsError(f"{path} exists; choose another --out or pass --force to replace it")


def _sampler_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--sampler", default="auto",
                   help="nutpie (default when installed), pymc, numpyro or blackjax (JAX: GPU path)")
    p.add_argument("--chains", type=int, help="number of chains (default 4)")
    p.add_argument("--draws", type=int, help="draws per chain after tuning (default 1000)")
    p.add_argument("--tune", type=int, help="tuning steps per chain (default 1000)")
    p.add_argument("--seed", type=int, help="random seed (default 0); same seed, same numbers")
    p.add_argument("--config", type=Path,
                   help="JSON file overriding priors/structure (see `bayescpt config --law L`)")
    p.add_argument("--strict", action="store_true",
                   help="exit 1 when R-hat > 1.01, bulk ESS < 400 or any divergence")
    p.add_argument("--drop-stuck-chains", action="store_true",
                   help="drop chains stuck in a minor mode (mean log density far below the "
                        "others); the drop is recorded in the fit file and shown by diagnose")
    p.add_argument("--force", action="store_true", help="replace an existing --out file")
    p.add_argument("--quiet", action="store_true", help="no progress output")


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="bayescpt", description="Bayesian scaling laws for "
                                 "planning continual pre-training: fit, diagnose, predict.")
    ap.add_argument("--version", action="version", version=_version())
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")

    f = sub.add_parser("fit", help="fit a law to loss curves with NUTS",
                       description="Fit a hierarchical law to a tidy loss-curve CSV "
                       "(columns run, step, lr, loss [, val_set, model_size]).")
    f.add_argument("data", type=Path, metavar="DATA.csv")
    f.add_argument("--law", required=True, choices=law_names())
    f.add_argument("--out", required=True, type=Path, metavar="FIT.nc")
    f.add_argument("--max-points", type=int, default=None,
                   help="thin each curve to about this many loss points (decay phases kept dense)")
    for title, options in option_groups():   # every law's options, from the law registry
        grp = f.add_argument_group(title)
        for opt in options:
            kind = {"action": argparse.BooleanOptionalAction} if opt.type is bool else \
                {"type": opt.type}
            grp.add_argument(opt.cli_flag, dest=opt.name, default=None, help=opt.help, **kind)
    _sampler_args(f)

    p = sub.add_parser("predict", help="predict loss curves for schedules from a fit",
                       description="Posterior predictive loss for every row of a schedule CSV "
                       "(columns run, step, lr [, val_set, model_size]; loss optional).")
    p.add_argument("fit", type=Path, metavar="FIT.nc")
    p.add_argument("--schedule", required=True, type=Path, metavar="SCHED.csv")
    p.add_argument("--prob", type=float, default=0.9, help="interval probability (default 0.9)")
    p.add_argument("--out", required=True, type=Path, metavar="PRED.csv")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--outlook", type=Path, metavar="OUTLOOK.csv",
                   help="cpt fits: also write each plan's final losses, loss potential and "
                   "general-loss turning point (with intervals) here")
    p.add_argument("--plot", type=Path, metavar="PRED.png",
                   help="also draw the predicted curves with their bands, one panel per run")
    p.add_argument("--force", action="store_true",
                   help="replace existing --out/--outlook/--plot files")

    pl = sub.add_parser("plan", help="choose a CPT plan under a risk of forgetting",
                        description="Evaluate a grid of CPT plans from a PT checkpoint with a cpt "
                        "fit: per posterior draw the final domain and general losses, the general "
                        "rise and turning point; pick the plan with the lowest expected domain loss "
                        "among those with P(general rise <= TOLERANCE) >= 1 - RISK.")
    pl.add_argument("fit", type=Path, metavar="FIT.nc")
    pl.add_argument("--pt", required=True, type=Path, metavar="PT.csv",
                    help="the PT schedule (a table with run, step, lr [, phase]; e.g. the fit's "
                    "data); CPT starts from its checkpoints at --transfers")
    pl.add_argument("--pt-run", help="the run of --pt whose PT rows to use (when it has several)")
    pl.add_argument("--tolerance", required=True, type=float, metavar="EPS",
                    help="allowed rise of the final general loss over its value at the checkpoint "
                    "(nats)")
    pl.add_argument("--risk", type=float, default=0.1, metavar="DELTA",
                    help="allowed probability of exceeding the tolerance (default 0.1)")
    pl.add_argument("--transfers", type=_int_list, help="PT steps of the checkpoints to start "
                    "from (comma-separated; default: the end of the PT schedule)")
    pl.add_argument("--shapes", type=_str_list, default=["cosine", "linear", "constant"],
                    help="CPT schedule shapes: cosine, linear (WSD), 1-sqrt, exponential, constant")
    pl.add_argument("--peak-lrs", type=_float_list,
                    help="CPT peak learning rates, raw (e.g. 1e-4,2e-4,4e-4); with --hparams "
                         "the default is the predicted optimal LR's lower end, median and upper "
                         "end")
    pl.add_argument("--steps", type=_int_list, required=True, help="CPT lengths in steps")
    pl.add_argument("--decay-fracs", type=_float_list, default=[0.2],
                    help="WSD decay share of the CPT steps (default 0.2)")
    pl.add_argument("--replay-ratios", type=_float_list, default=[0.0],
                    help="shares of PT data in the CPT mixture (needs a fit with --replay)")
    pl.add_argument("--warmup", type=int, default=100, help="re-warmup steps (default 100)")
    pl.add_argument("--final-frac", type=float, default=0.0,
                    help="final LR as a share of the peak (default 0)")
    pl.add_argument("--objective", default="chance", choices=["chance", "quantile", "weighted"],
                    help="chance: min expected domain loss s.t. the risk constraint (default); "
                    "quantile: min --quantile of the domain loss s.t. the constraint; weighted: "
                    "min w_general * rise + w_domain * domain loss (no constraint)")
    pl.add_argument("--quantile", type=float, default=0.9)
    pl.add_argument("--w-general", type=float, default=1.0)
    pl.add_argument("--w-domain", type=float, default=1.0)
    pl.add_argument("--general", help="the general validation set (when the fit has several)")
    pl.add_argument("--domain", help="the domain validation set (when the fit has several)")
    pl.add_argument("--model-size", type=float, help="model size (when the fit has several)")
    pl.add_argument("--points", type=int, default=48,
                    help="CPT steps evaluated per plan (turning-point resolution; default 48)")
    pl.add_argument("--prob", type=float, default=0.9, help="interval probability (default 0.9)")
    pl.add_argument("--backend", default="auto", choices=["auto", "numpy", "jax"])
    pl.add_argument("--seed", type=int, default=0)
    h = pl.add_argument_group(
        "other fits (optional): the optimal LR of an hparams fit and the feasibility of the "
        "mixture by a mixture fit, for the same model family")
    h.add_argument("--hparams", type=Path, metavar="HP.nc",
                   help="an hparams fit: each plan's peak LR against the checkpoint's optimal LR")
    h.add_argument("--n-params", type=float, help="with --hparams: the model's parameters")
    h.add_argument("--init-loss", type=float,
                   help="with --hparams: the checkpoint's validation loss on the CPT data")
    h.add_argument("--cpt-tokens", type=float, help="with --hparams: CPT tokens of the plans")
    h.add_argument("--mixture", type=Path, metavar="MIX.nc",
                   help="a mixture fit: a plan is feasible only if its mixture (domain share "
                        "1 - replay ratio) is, with probability >= 1 - DELTA")
    h.add_argument("--mixture-tokens", type=float,
                   help="with --mixture: the CPT budget in the mixture fit's token unit")
    h.add_argument("--mixture-model-size", type=float,
                   help="with --mixture: the model size, when the mixture fit has several")
    pl.add_argument("--out", required=True, type=Path, metavar="PLANS.csv")
    pl.add_argument("--plot", type=Path, metavar="PLANS.png", help="also draw the plans")
    pl.add_argument("--force", action="store_true", help="replace existing --out/--plot files")

    cm = sub.add_parser("compare", help="fits side by side: parameters, differences, LOO",
                        description="Compare fits of the same law on different data (parameter "
                        "differences with P(difference > 0), against the first fit) and fits of "
                        "the same data with different laws or options (PSIS-LOO).")
    cm.add_argument("fits", nargs="+", type=Path, metavar="FIT.nc")
    cm.add_argument("--names", type=_str_list, help="labels for the fits (comma-separated)")
    cm.add_argument("--params", type=_str_list,
                    help="parameters to compare (default: every law parameter the fits share)")
    cm.add_argument("--prob", type=float, default=0.9, help="interval probability (default 0.9)")
    cm.add_argument("--out", type=Path, metavar="DIFF.csv", help="write the differences here")
    cm.add_argument("--plot", type=Path, metavar="FOREST.png", help="write a forest plot here")
    cm.add_argument("--force", action="store_true", help="replace existing --out/--plot files")

    d = sub.add_parser("diagnose", help="print R-hat, ESS and divergences of a fit")
    d.add_argument("fit", type=Path, metavar="FIT.nc")
    d.add_argument("--plot", type=Path, metavar="DIAG.png",
                   help="also draw rank plots of the worst parameters, the energy plot and the "
                        "most correlated pair")
    d.add_argument("--force", action="store_true", help="replace an existing --plot file")
    d.add_argument("--strict", action="store_true",
                   help="exit 1 when R-hat > 1.01, bulk ESS < 400 or any divergence")

    c = sub.add_parser("config", help="print a law's default priors and structure as JSON")
    c.add_argument("--law", required=True, choices=law_names())

    q = sub.add_parser("demo", help="the quick start: fit bundled curves, diagnose, predict "
                       "unseen schedules, write CSV + plot")
    q.add_argument("--out", type=Path, default=Path("out"), help="output folder (default out/)")
    q.add_argument("--law", default="annealing", choices=["annealing", "multipower"])
    q.add_argument("--force", action="store_true", help="replace existing outputs")
    q.add_argument("--sampler", default="auto", help="as for fit (default: nutpie if installed)")
    q.add_argument("--seed", type=int, default=0)
    q.add_argument("--quiet", action="store_true", help="no progress output")

    for name in PLUGINS:
        COMMANDS.update(import_module(f"bayescpt.{name}").add_commands(sub, _sampler_args))
    return ap


def _list(cast, what):
    def parse(text):
        try:
            return [cast(x) for x in text.split(",") if x.strip()]
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r}: expected comma-separated {what}") from None
    return parse


_int_list = _list(int, "integers")
_float_list = _list(float, "numbers")
_str_list = _list(str.strip, "names")


def _version() -> str:
    return f"bayescpt {__version__}"


def _load_config(path):
    if path is None:
        return None
    try:
        return json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise ValueError(f"{path}: no such config file") from None
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not valid JSON ({err})") from None


def cmd_fit(a) -> int:

    _refuse_overwrite(a.out, a.force)
    df = read_curves(a.data)
    if a.max_points:
        df = decimate(df, a.max_points)
    law_options = _law_options(a, df)
    if not a.quiet:
        _say(f"data: {a.data} {describe(df)}")
        opts = ", ".join(f"{k}={v}" for k, v in law_options.items()) if law_options else ""
        _say(f"fitting the {a.law} law{f' ({opts})' if opts else ''} (compiling, then "
             "sampling; this takes a minute or more)")
    _, diag = sample_and_save(a, lambda **kw: Fit.run(
        df, law=a.law, law_options=law_options, config=_load_config(a.config), **kw))
    return _verdict(diag, a.strict)


def sample_and_save(a, run):
    """The fit commands' common part: ``run(**sampler options)`` -> fit, saved to ``a.out``, its
    time and diagnostics reported (the sampler's own warnings are replaced by that report).
    Returns (fit, diagnostics)."""
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = run(sampler=a.sampler, chains=a.chains, draws=a.draws, tune=a.tune, seed=a.seed,
                  progress=not a.quiet and sys.stderr.isatty(), warn=False)
    if getattr(a, "drop_stuck_chains", False):
        drop_stuck_chains(fit.idata, inplace=True)   # recorded in the fit's attrs
    fit.save(a.out, overwrite=a.force)
    diag = fit.diagnostics()
    if not a.quiet:
        _say(f"done in {time.perf_counter() - t0:.1f} s; saved {a.out}")
    print(diag.to_text())
    return fit, diag


def _law_options(a, df) -> dict:
    return resolve_law_options(a.law, df, {o.name: getattr(a, o.name, None) for o in cli_options()})


def _verdict(diag, strict: bool) -> int:
    if diag.ok:
        return 0
    for msg in diag.problems():
        _say(f"warning: {msg}")
    if strict:
        _say("bayescpt: diagnostics failed (--strict)")
        return EXIT_STRICT
    return 0


def cmd_predict(a) -> int:

    _refuse_overwrite(a.out, a.force)
    for path in (a.outlook, a.plot):
        if path is not None:
            _refuse_overwrite(path, a.force)
    fit = Fit.load(a.fit)
    if a.outlook is not None and fit.law.name != "cpt":
        raise ValueError(f"--outlook: {a.fit} is a {fit.law.name} fit; the outlook of a plan "
                         "needs a cpt fit")
    sched = read_curves(a.schedule, need_loss=False)
    pred = predict_frame(fit, sched, prob=a.prob, seed=a.seed)
    cols = [c for c in ("run", "step", "lr", "phase", "val_set", "val_role", "model_size",
                        "replay_ratio", "loss") if c in pred.columns]
    if pred["loss"].isna().all():
        cols.remove("loss")
    cols += ["mean", "median", "lower", "upper", "curve_lower", "curve_upper"]
    pred[cols].to_csv(a.out, index=False, float_format="%.6g")
    _say(f"wrote {len(pred)} rows to {a.out}")
    if a.outlook is not None:

        out = outlook(fit, sched, prob=a.prob, seed=a.seed)
        out.to_csv(a.outlook, index=False, float_format="%.6g")
        _say(f"wrote the outlook of {out['run'].nunique()} plan(s) to {a.outlook}")
    if a.plot is not None:

        plot_predictions(pred, a.plot, prob=a.prob,
                         title=f"{fit.law.name} law ({a.fit.name}): posterior mean, "
                               f"{a.prob:.0%} credible band and predictive interval")
        _say(f"wrote {a.plot}")
    return 0


def cmd_plan(a) -> int:

    _refuse_overwrite(a.out, a.force)
    if a.plot is not None:
        _refuse_overwrite(a.plot, a.force)
    fit = Fit.load(a.fit, law="cpt")
    pt = pt_schedule_from_table(read_curves(a.pt, need_loss=False), a.pt_run)
    hp_res = None
    peak_lrs = a.peak_lrs
    if a.hparams is not None:

        missing = [o for o, v in (("--n-params", a.n_params), ("--init-loss", a.init_loss),
                                  ("--cpt-tokens", a.cpt_tokens)) if v is None]
        if missing:
            raise ValueError(f"--hparams needs {', '.join(missing)}")
        hp_fit = HparamsFit.load(a.hparams)
        if peak_lrs is None:

            lr = predict_optimum(hp_fit, a.n_params, init_loss=a.init_loss,
                                 cpt_tokens=a.cpt_tokens, prob=a.prob)["lr_opt"]
            peak_lrs = sorted({v for v in (lr["lower"], lr["median"], lr["upper"])
                               if v is not None})
    if peak_lrs is None:
        raise ValueError("give the peak learning rates (--peak-lrs), or an hparams fit "
                         "(--hparams) to take them from")
    if a.mixture is not None and a.mixture_tokens is None:
        raise ValueError("--mixture needs the CPT budget in the mixture fit's unit "
                         "(--mixture-tokens)")
    plans = plan_grid(a.transfers or [pt.total_steps], a.shapes, peak_lrs, a.steps,
                      a.decay_fracs, a.replay_ratios, a.warmup, a.final_frac)
    draws = evaluate(fit, pt, plans, a.points, a.general, a.domain, a.model_size, a.seed,
                     a.backend)
    also = None
    if a.mixture is not None:

        checked = mixture_check(draws.plans, MixtureFit.load(a.mixture), a.mixture_tokens,
                                a.tolerance, a.risk, a.mixture_model_size)
        draws.plans = checked
        also = checked["mixture_ok"].to_numpy()
    if a.hparams is not None:

        draws.plans, hp_res = hparams_check(draws.plans, hp_fit, a.n_params, a.cpt_tokens,
                                            a.init_loss, a.prob)
    table = decide(draws, a.tolerance, a.risk, a.prob, a.objective, a.quantile, a.w_general,
                   a.w_domain, also_feasible=also)
    write_plans(table, a.out)
    n_draws = draws.domain.shape[0]
    _say(f"evaluated {len(table)} plans x {n_draws} draws x {a.points} steps in "
         f"{draws.seconds:.2f} s; wrote {a.out}")
    if hp_res is not None:
        lr = hp_res["lr_opt"]
        fmt = (lambda v: "open" if v is None else f"{v:.3g}")
        print(f"optimal peak LR for this checkpoint ({a.hparams.name}): {fmt(lr['median'])} "
              f"[{fmt(lr['lower'])}, {fmt(lr['upper'])}]")
        for w in hp_res["warnings"]:
            _say(f"warning: {w}")
    if a.mixture is not None:
        bad = table.loc[~table["mixture_ok"], "replay_ratio"].unique()
        print(f"mixture ({a.mixture.name}): replay ratios failing its feasibility at risk "
              f"{a.risk:g}: {', '.join(f'{r:g}' for r in sorted(bad)) or 'none'}")
    show = ["shape", "peak_lr", "steps", "transfer", "decay_frac", "replay_ratio", "domain_mean",
            "domain_lower", "domain_upper", "general_rise_mean", "p_within_tolerance"] + [
        c for c in ("p_mixture_feasible", "lr_over_opt") if c in table.columns] + ["chosen"]
    front = table[table["pareto"]].sort_values("p_within_tolerance")[show]
    print(f"Pareto front (expected final domain loss vs P(general rise <= {a.tolerance:g})):")
    print(front.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    chosen = table[table["chosen"]]
    if len(chosen):
        c = chosen.iloc[0]
        print(f"chosen ({a.objective}): {c['shape']} CPT, peak LR {c['peak_lr']:g}, "
              f"{int(c['steps'])} steps from PT step {int(c['transfer'])}"
              + (f", replay {c['replay_ratio']:g}" if c["replay_ratio"] > 0 else "")
              + f": domain loss {c['domain_mean']:.4f} [{c['domain_lower']:.4f}, "
              f"{c['domain_upper']:.4f}], P(rise <= {a.tolerance:g}) = "
              f"{c['p_within_tolerance']:.3f}")
    elif "mixture_ok" in table.columns and not table["mixture_ok"].any():
        _say(f"no plan is feasible: by {a.mixture.name} no planned mixture keeps the general "
             f"loss within {a.tolerance:g} with probability >= {1 - a.risk:.3f}; add plans with "
             "more replay (--replay-ratios) or allow a larger --tolerance or --risk")
    else:
        pool = table[table["mixture_ok"]] if "mixture_ok" in table.columns else table
        best = pool["p_within_tolerance"].max()
        _say(f"no plan is feasible: the best keeps the general rise within {a.tolerance:g} with "
             f"probability {best:.3f} < {1 - a.risk:.3f}; allow a larger --tolerance or --risk, "
             "or add plans with lower peak LRs, fewer steps or more replay")
    if a.plot is not None:

        plot_plans(table, a.plot, a.tolerance, a.risk, a.prob)
        _say(f"wrote {a.plot}")
    return 0


def cmd_compare(a) -> int:

    for path in (a.out, a.plot):
        if path is not None:
            _refuse_overwrite(path, a.force)
    if len(a.fits) < 2:
        raise ValueError("compare needs at least two fit files")
    fits = [Fit.load(p) for p in a.fits]
    labels = labels_for(fits, a.names)
    params = a.params or shared_parameters(fits)
    if not params:
        raise ValueError("the fits share no law parameter (different laws): compare them by LOO "
                         "on the same data, or name --params")
    for label, path, f in zip(labels, a.fits, fits):
        d = f.diagnostics()
        print(f"{label}: {path} ({f.law.name}, data {f.meta.get('data_hash')}, max R-hat "
              f"{d.max_rhat:.3f}, min ESS {d.min_ess_bulk:.0f}, {d.divergences} divergences)")
    laws = {f.law.name for f in fits}
    if len(laws) > 1:
        print(f"\nthe fits are of different laws ({', '.join(sorted(laws))}): parameters are "
              f"compared where they share a name and meaning ({', '.join(params)})")
    diff = differences(fits, labels, params, a.prob)
    if len(diff):
        print(f"\ndifferences against {labels[0]} (later - reference, {a.prob:.0%} interval):")
        print(diff.drop(columns=["reference"]).to_string(
            index=False, float_format=lambda v: f"{v:.4g}"))
        if a.out is not None:
            diff.to_csv(a.out, index=False, float_format="%.6g")
            _say(f"wrote {a.out}")
    else:
        print("\nno validation set x model size in common: no pairwise differences (the forest "
              "plot, --plot, puts the fits' groups side by side)")
    loo = loo_table(fits, labels)
    if loo is None:
        print("\nPSIS-LOO: not comparable (the fits are of different data)")
    else:
        print("\nPSIS-LOO (same data; higher elpd_loo is better):")
        print(loo.to_string(float_format=lambda v: f"{v:.4g}"))
    if a.plot is not None:

        table = parameter_table(fits, labels, a.prob)
        plot_forest(table[table["param"].isin(params)], a.plot, a.prob)
        _say(f"wrote {a.plot}")
    return 0


def load_any_fit(path):
    """Any bayescpt fit file (loss-curve law, hparams or mixture), by the law its attrs name."""

    law = saved_law(path)
    if law == "hparams":

        return HparamsFit.load(path)
    if law == "mixture":

        return MixtureFit.load(path)
    return Fit.load(path)


def cmd_diagnose(a) -> int:

    if a.plot is not None:
        _refuse_overwrite(a.plot, a.force)
    fit = load_any_fit(a.fit)
    diag = fit.diagnostics()
    print(f"{a.fit}: law {fit.meta['law']}, bayescpt {fit.meta['bayescpt_version']}, data "
          f"{fit.meta['data_hash']}, sampler {fit.config['sampler']['sampler']}")
    print(diag.to_text())
    if a.plot is not None:

        plot_diagnostics(fit.idata, diag, a.plot, title=f"{a.fit.name}: {fit.meta['law']} law, "
                         f"{diag.chains} chains x {diag.draws} draws, {diag.divergences} "
                         "divergences")
        _say(f"wrote {a.plot}")
    return _verdict(diag, a.strict)


def cmd_config(a) -> int:

    print(json.dumps(default_config(get_law(a.law)), indent=2))
    return 0


def cmd_demo(a) -> int:

    run_demo(a.out, law=a.law, sampler=a.sampler, seed=a.seed, force=a.force,
             log=(lambda m: None) if a.quiet else _say)
    return 0


COMMANDS = {"fit": cmd_fit, "predict": cmd_predict, "plan": cmd_plan, "compare": cmd_compare,
            "diagnose": cmd_diagnose,
            "config": cmd_config, "demo": cmd_demo}


def main(argv=None) -> int:

    args = build_parser().parse_args(argv)
    # PyTensor's C backend warns when pip's numpy exposes no BLAS; nutpie (numba) is unaffected.
    warnings.filterwarnings("ignore", message=".*could not link to a BLAS.*")
    warnings.filterwarnings("ignore", category=FutureWarning)
    try:
        return COMMANDS[args.command](args)
    except (DataError, FitError, FileExistsError, ValueError) as err:
        print(f"bayescpt: error: {err}", file=sys.stderr)
        return EXIT_INPUT


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
