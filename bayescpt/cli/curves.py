"""Commands on loss-curve fits: ``fit``, ``compare``, ``diagnose``, ``config`` (``predict``:
:mod:`bayescpt.cli.predict`).

Each ``add_*`` function adds one sub-command's parser; :data:`COMMANDS` maps the command to its
function ``(args) -> exit code``.
"""

from __future__ import annotations

import json
from pathlib import Path

from bayescpt.cli.argtypes import positive_int, probability, str_list
from bayescpt.cli.fitting import load_fit_checked, sample_and_save, verdict
from bayescpt.cli.messages import say
from bayescpt.cli.options import add_law_options, load_config, sampler_args
from bayescpt.cli.outputs import (
    csv_writer,
    prepare_outputs,
    save_figure,
    write_files,
)
from bayescpt.cli.progress import stage
from bayescpt.cli.report import report_args
from bayescpt.core.fitfile import load_fit
from bayescpt.core.plotting import plot_diagnostics
from bayescpt.curves.data.table import describe
from bayescpt.curves.data.thinning import AUTO_MAX_POINTS, AUTO_THIN_ABOVE, thin_for_fit
from bayescpt.curves.data.validate import read_curves
from bayescpt.curves.evaluate.compare import (
    differences,
    labels_for,
    loo_table,
    loo_unavailable,
    parameter_table,
    shared_parameters,
)
from bayescpt.curves.evaluate.plots import plot_forest
from bayescpt.curves.forecast.discrepancy_fit import learn_discrepancy
from bayescpt.curves.model.config import default_config, make_config
from bayescpt.curves.model.fit import Fit
from bayescpt.curves.model.laws import (
    cli_options,
    get_law,
    law_names,
    resolve_law_options,
)
from bayescpt.curves.model.priors import DEFAULT_PRIOR_DRAWS
from bayescpt.parallel.engine import sweep_outputs


def add_fit(sub) -> None:
    f = sub.add_parser(
        "fit",
        help="fit a law to loss curves with NUTS",
        description="Fit a hierarchical law to a tidy loss-curve CSV "
        "(columns run, step, lr, loss [, val_set, model_size]).",
    )
    f.add_argument("data", type=Path, metavar="DATA.csv")
    f.add_argument("--law", required=True, choices=law_names())
    f.add_argument("--out", required=True, type=Path, metavar="FIT.nc")
    f.add_argument(
        "--max-points",
        type=positive_int,
        default=None,
        help="thin each curve with more loss points to about this many (decay phases kept "
        "dense; each kept loss the average of its window of logged losses)",
    )
    f.add_argument(
        "--all-points",
        action="store_true",
        help=f"fit every loss point; by default curves with more than "
        f"{AUTO_THIN_ABOVE} loss points are thinned to about {AUTO_MAX_POINTS}",
    )
    f.add_argument(
        "--prior-predictive",
        action="store_true",
        help=f"also store {DEFAULT_PRIOR_DRAWS} prior and prior predictive draws of the "
        "model in the fit file (groups prior, prior_predictive)",
    )
    f.add_argument(
        "--discrepancy",
        action="store_true",
        help="also learn the run-level discrepancy model from the fit's training "
        "residuals (for predict --observed and watch on real runs; 20-60 s more)",
    )
    add_law_options(f)
    sampler_args(f)
    report_args(f, mlflow=True)


def add_compare(sub) -> None:
    cm = sub.add_parser(
        "compare",
        help="fits side by side: parameters, differences, LOO",
        description="Compare fits of the same law on different data (parameter "
        "differences with P(difference > 0), against the first fit) and fits of "
        "the same data with different laws or options (PSIS-LOO).",
    )
    cm.add_argument(
        "fits",
        nargs="+",
        type=Path,
        metavar="FIT.nc",
        help="fit files; a sweep's folder or summary.csv stands for its finished "
        "fits (labelled by their names)",
    )
    cm.add_argument("--names", type=str_list, help="labels for the fits (comma-separated)")
    cm.add_argument(
        "--params",
        type=str_list,
        help="parameters to compare (default: every law parameter the fits share)",
    )
    cm.add_argument(
        "--prob", type=probability, default=0.9, help="interval probability (default 0.9)"
    )
    cm.add_argument("--out", type=Path, metavar="DIFF.csv", help="write the differences here")
    cm.add_argument("--plot", type=Path, metavar="FOREST.png", help="write a forest plot here")
    cm.add_argument("--force", action="store_true", help="replace existing --out/--plot files")


def add_diagnose(sub) -> None:
    d = sub.add_parser("diagnose", help="print R-hat, ESS and divergences of a fit")
    d.add_argument("fit", type=Path, metavar="FIT.nc")
    d.add_argument(
        "--plot",
        type=Path,
        metavar="DIAG.png",
        help="also draw rank plots of the worst parameters, the energy plot and the "
        "most correlated pair",
    )
    d.add_argument("--force", action="store_true", help="replace an existing --plot file")
    d.add_argument(
        "--strict",
        action="store_true",
        help="exit 1 when R-hat > 1.01, bulk ESS < 400 or any divergence",
    )


def add_config(sub) -> None:
    c = sub.add_parser("config", help="print a law's default priors and structure as JSON")
    c.add_argument("--law", required=True, choices=law_names())


def cmd_fit(a) -> int:

    prepare_outputs(a.force, {"DATA.csv": a.data, "--config": a.config}, out=a.out)
    df = _read_for_fit(a)
    law_options = _law_options(a, df)
    # made once, here: a bad config is one line, before work
    config = make_config(get_law(a.law, **law_options), load_config(a.config))
    if not a.quiet:
        say(f"data: {a.data} {describe(df)}")
        opts = ", ".join(f"{k}={v}" for k, v in law_options.items()) if law_options else ""
        say(
            f"fitting the {a.law} law{f' ({opts})' if opts else ''} (compiling, then "
            "sampling; this takes a minute or more)"
        )
    prior = DEFAULT_PRIOR_DRAWS if a.prior_predictive else 0

    def run(**kw):
        fit = Fit.run(
            df, law=a.law, law_options=law_options, config=config, prior_predictive=prior, **kw
        )
        if a.discrepancy:  # stored in the fit's attrs, where prefix forecasts look for it
            fit.meta["discrepancy"] = learn_discrepancy(fit, df).to_json()
        return fit

    fit, diag = sample_and_save(a, run)
    if fit.schedule_level is not None:
        print(fit.schedule_level.text())
    return verdict(diag, a.strict)


def _read_for_fit(a):
    """The table to fit: read (progress lines when that is slow), then thinned as asked, or by
    default where curves are very long (:func:`thin_for_fit`, with one line saying so)."""
    quiet = {"out": lambda msg: None} if a.quiet else {}
    mb = a.data.stat().st_size / 1e6 if a.data.is_file() else 0.0
    with stage(f"reading {a.data} ({mb:.0f} MB)", **quiet):
        df = read_curves(a.data)
    with stage("thinning long curves", **quiet):
        df, note = thin_for_fit(df, a.max_points, a.all_points)
    if note is not None:
        say(
            note
            + (
                ""
                if a.max_points
                else " (--all-points keeps every point; --max-points N sets the number)"
            )
        )
    return df


def _law_options(a, df) -> dict:
    return resolve_law_options(a.law, df, {o.name: getattr(a, o.name, None) for o in cli_options()})


def cmd_compare(a) -> int:

    names, paths = [], []
    for p in a.fits:  # a sweep's folder or summary.csv stands for its finished fits
        if p.is_dir() or p.suffix == ".csv":
            for name, fit_path in sweep_outputs(p):
                names.append(name)
                paths.append(fit_path)
        else:
            names.append(None)
            paths.append(p)
    a.fits = paths
    if a.names is None and any(n is not None for n in names):
        a.names = [n or f"fit{i + 1}" for i, n in enumerate(names)]
    prepare_outputs(
        a.force, {f"FIT.nc #{i + 1}": p for i, p in enumerate(a.fits)}, out=a.out, plot=a.plot
    )
    if len(a.fits) < 2:
        raise ValueError("compare needs at least two fit files")
    fits = [load_fit_checked(p, Fit) for p in a.fits]
    labels = labels_for(fits, a.names)
    params = a.params or shared_parameters(fits)
    if not params:
        raise ValueError(
            "the fits share no law parameter (different laws): compare them by LOO "
            "on the same data, or name --params"
        )
    for label, path, f in zip(labels, a.fits, fits):
        d = f.diagnostics()
        print(
            f"{label}: {path} ({f.law.name}, data {f.meta.get('data_hash')}, max R-hat "
            f"{d.max_rhat:.3f}, min ESS {d.min_ess_bulk:.0f}, {d.divergences} divergences)"
        )
    laws = {f.law.name for f in fits}
    if len(laws) > 1:
        print(
            f"\nthe fits are of different laws ({', '.join(sorted(laws))}): parameters are "
            f"compared where they share a name and meaning ({', '.join(params)})"
        )
    diff = differences(fits, labels, params, a.prob)
    if len(diff):
        print(f"\ndifferences against {labels[0]} (later - reference, {a.prob:.0%} interval):")
        print(
            diff.drop(columns=["reference"]).to_string(
                index=False, float_format=lambda v: f"{v:.4g}"
            )
        )
        if a.out is not None:
            write_files({a.out: csv_writer(diff, "%.6g")}, a.force)
            say(f"wrote {a.out}")
    else:
        print(
            "\nno validation set x model size in common: no pairwise differences (the forest "
            "plot, --plot, puts the fits' groups side by side)"
        )
    loo = loo_table(fits, labels)
    if loo is None:
        print(f"\nPSIS-LOO: not comparable ({loo_unavailable(fits, labels)})")
    else:
        print("\nPSIS-LOO (same data; higher elpd_loo is better):")
        print(loo.to_string(float_format=lambda v: f"{v:.4g}"))
    if a.plot is not None:
        table = parameter_table(fits, labels, a.prob)
        save_figure(plot_forest(table[table["param"].isin(params)], prob=a.prob), a.plot, a.force)
        say(f"wrote {a.plot}")
    return 0


def cmd_diagnose(a) -> int:

    prepare_outputs(a.force, {"FIT.nc": a.fit}, plot=a.plot)
    fit = load_fit(a.fit)  # any family's: the family table gives the law's class
    diag = fit.diagnostics()
    print(
        f"{a.fit}: law {fit.meta['law']}, bayescpt {fit.meta['bayescpt_version']}, data "
        f"{fit.meta['data_hash']}, sampler {fit.config['sampler']['sampler']}"
    )
    print(diag.to_text())
    if getattr(fit, "schedule_level", None) is not None:
        print(fit.schedule_level.text())
    if a.plot is not None:
        save_figure(
            plot_diagnostics(
                fit.idata,
                diag,
                title=f"{a.fit.name}: {fit.meta['law']} "
                f"law, {diag.chains} chains x {diag.draws} draws, "
                f"{diag.divergences} divergences",
            ),
            a.plot,
            a.force,
        )
        say(f"wrote {a.plot}")
    return verdict(diag, a.strict)


def cmd_config(a) -> int:

    print(json.dumps(default_config(get_law(a.law)), indent=2))
    return 0


COMMANDS = {
    "fit": cmd_fit,
    "compare": cmd_compare,
    "diagnose": cmd_diagnose,
    "config": cmd_config,
}
