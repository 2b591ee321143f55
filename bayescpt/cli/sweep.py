"""Many fits on Dask: ``bayescpt sweep`` (a sweep file) and ``bayescpt cv`` (cross-validation).

    bayescpt sweep SWEEP.toml --out DIR [--workers N | --scheduler ADDRESS]
    bayescpt cv DATA.csv --law L --by schedule|run|model_size [--train G,G] [--prob 0.9] --out DIR
    bayescpt sbc --law L --sims N --out DIR [--design DESIGN.csv]

The sweep file's format is :mod:`bayescpt.parallel.spec`; how fits are run, resumed and
recorded is :mod:`bayescpt.parallel.engine`. Progress is one line per finished fit on stderr;
the summary table (``DIR/summary.csv``) is printed at the end. Exit 0 when every fit finished,
1 with ``--strict`` when one fails its diagnostics, 2 when a fit failed (the others still ran).
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

from bayescpt.cli.argtypes import (
    nonneg_int,
    positive_int,
    probability,
    seed_int,
    str_list,
)
from bayescpt.cli.messages import EXIT_INPUT, progress, say
from bayescpt.cli.options import add_law_options, load_config
from bayescpt.cli.outputs import save_figure
from bayescpt.cli.report import report_args
from bayescpt.core.config import ConfigError
from bayescpt.core.plotting import plot_ranks
from bayescpt.curves.data.thinning import decimate
from bayescpt.curves.data.validate import read_curves
from bayescpt.curves.evaluate.plots import plot_cv
from bayescpt.curves.evaluate.scores import percent_text
from bayescpt.curves.model.laws import cli_options, law_names
from bayescpt.datasets.bundled import bundled_multipowerlaw, split
from bayescpt.parallel.cv import run_cv
from bayescpt.parallel.engine import Cluster, run_sweep
from bayescpt.parallel.sbc import run_sbc
from bayescpt.parallel.spec import StudyFit, read_sweep

SHOWN = ["name", "status", "max_rhat", "min_ess_bulk", "divergences", "seconds"]


def add_commands(sub, sampler_args=None) -> dict:
    p = sub.add_parser(
        "sweep",
        help="run many fits (a sweep file) on Dask: local cores or a cluster; resumable",
        description="Run the fits listed in a TOML sweep file on Dask "
        "distributed, one NetCDF per fit in --out and a summary.csv; fits whose "
        "output already holds the same inputs are skipped.",
    )
    p.add_argument("sweep", type=Path, metavar="SWEEP.toml")
    p.add_argument(
        "--out",
        required=True,
        type=Path,
        metavar="DIR",
        help="folder for the fit files, summary.csv and journal.csv",
    )
    _where(p, "use a running Dask scheduler (e.g. a dask-jobqueue SLURMCluster's)")
    p.add_argument(
        "--strict",
        action="store_true",
        help="exit 1 when a fit fails R-hat <= 1.01, bulk ESS >= 400, 0 divergences",
    )
    p.add_argument(
        "--force", action="store_true", help="replace outputs that hold fits of other inputs"
    )
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    report_args(p, mlflow=True)
    add_cv(sub)
    add_sbc(sub)
    return {"sweep": cmd_sweep, "cv": cmd_cv, "sbc": cmd_sbc}


def _where(p, scheduler: str = "use a running Dask scheduler") -> None:
    """Where the fits run: ``--workers`` (local processes) or ``--scheduler`` (help
    ``scheduler``), one or the other."""
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--workers", type=positive_int, help="local worker processes (default: one per core)"
    )
    where.add_argument("--scheduler", metavar="tcp://HOST:PORT", help=scheduler)


def _sampling(p, what: str) -> None:
    s = p.add_argument_group(f"sampling ({what})")
    s.add_argument("--sampler", default="auto")
    s.add_argument("--chains", type=positive_int)
    s.add_argument("--draws", type=positive_int)
    s.add_argument("--tune", type=nonneg_int)
    s.add_argument("--init", choices=["map", "jitter"])
    s.add_argument("--config", type=Path, help="JSON file overriding priors/structure")


def _given(a) -> tuple[dict, dict]:
    """(law options, sampler settings) given on the command line."""
    options = {
        o.name: getattr(a, o.name) for o in cli_options() if getattr(a, o.name, None) is not None
    }
    sampler = {
        k: getattr(a, k) for k in ("chains", "draws", "tune", "init") if getattr(a, k) is not None
    }
    if a.sampler != "auto":
        sampler["sampler"] = a.sampler
    return options, sampler


def _check_out_folder(out) -> None:
    """``--out`` names a folder, or nothing yet."""
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out}: not a folder")


def _on_dask(a, run, *args, **kw):
    """``run`` (:func:`run_cv`, :func:`run_sbc`) called with ``args``, ``kw`` and what the
    options every fitting Dask command shares give it: the law options and sampler settings
    given, the ``--config`` read (a bad one named by its file), the seed, the workers or
    scheduler, ``--force`` and the progress lines (none with ``--quiet``)."""
    options, sampler = _given(a)
    with _config_named(a.config):
        study = StudyFit(a.law, options, load_config(a.config) or {}, sampler, a.seed)
        return run(
            *args,
            study,
            cluster=Cluster(a.workers, a.scheduler),
            force=a.force,
            say=progress(a.quiet),
            **kw,
        )


@contextmanager
def _config_named(path):
    """A bad --config (refused by run_cv / run_sbc before they start: only the config raises
    ConfigError) named by its file in the one error line."""
    try:
        yield
    except ConfigError as err:
        if path is None:
            raise
        raise ConfigError(f"--config {path}: {err}") from None


def add_sbc(sub) -> None:
    p = sub.add_parser(
        "sbc",
        help="simulation-based calibration of a law's default model, fitted on Dask",
        description="Simulate loss curves from the prior of a law's model on a "
        "design, fit every simulation (a sweep), rank the true values among the "
        "posterior draws and test the ranks for uniformity (chi-square per "
        "quantity); rank histograms in DIR/ranks.png.",
    )
    p.add_argument("--law", required=True, choices=law_names())
    p.add_argument("--sims", required=True, type=positive_int, help="number of simulations")
    p.add_argument("--out", required=True, type=Path, metavar="DIR")
    p.add_argument(
        "--design",
        type=Path,
        metavar="DESIGN.csv",
        help="runs, steps, learning rates (and sizes) to simulate on; default for the "
        "annealing and multipower laws: the bundled multi-power-law training "
        "curves (3 schedules x 25M/100M/400M) at 40 points per curve",
    )
    p.add_argument(
        "--ranks",
        type=positive_int,
        default=99,
        help="posterior draws each truth is ranked among (default 99)",
    )
    p.add_argument(
        "--bins",
        type=positive_int,
        default=10,
        help="bins of the uniformity test and histograms (default 10)",
    )
    p.add_argument(
        "--seed",
        type=seed_int,
        default=0,
        help="seed of the simulations; fit i uses seed + i (default 0)",
    )
    add_law_options(p)
    _sampling(p, "every simulation's fit")
    _where(p)
    p.add_argument("--force", action="store_true", help="replace fits that hold other inputs")
    p.add_argument("--quiet", action="store_true", help="no progress lines")


def cmd_sbc(a) -> int:

    _check_out_folder(a.out)
    if a.design is not None:
        design = read_curves(a.design, need_loss=False)
    elif a.law in ("annealing", "multipower"):
        design = decimate(split(bundled_multipowerlaw())[0], 40)
    else:
        raise ValueError(
            f"--design: the {a.law} law has no default design; give a curve "
            "table whose runs, steps and learning rates to simulate on"
        )
    res = _on_dask(a, run_sbc, design, a.out, sims=a.sims, ranks=a.ranks, bins=a.bins)
    t = res.tests
    print(
        f"SBC of the {a.law} law: {len(res.ranks)} simulations fitted, ranks 0-{res.ranks_max}, "
        f"{a.bins} bins"
    )
    print(t.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    bad = res.ranks[~res.ranks["diagnostics_ok"]]
    print(
        f"smallest p-value {t['p_value'].min():.3g} ({t.loc[t['p_value'].idxmin(), 'quantity']}); "
        f"Bonferroni-adjusted over {len(t)} quantities: {res.p_min_bonferroni:.3g}; "
        f"{len(bad)} of {len(res.ranks)} fits fail the diagnostics"
    )
    labels = list(t["quantity"])
    save_figure(
        plot_ranks(res.ranks, labels, res.ranks_max, a.bins, dict(zip(labels, t["p_value"]))),
        a.out / "ranks.png",
        force=True,
    )
    if not a.quiet:
        say(
            f"wrote {a.out / 'sbc.csv'}, {a.out / 'ranks.csv'}, {a.out / 'truth.csv'}, "
            f"{a.out / 'ranks.png'}"
        )
    return 0


def add_cv(sub) -> None:
    p = sub.add_parser(
        "cv",
        help="cross-validate a law's predictions on your curves (held-out "
        "schedules, runs or sizes), fitted on Dask",
        description="Leave-one-group-out cross-validation of a loss-curve law: "
        "each fold fits the law on every other group and predicts the held-out "
        "rows; prints per held-out group and model size the mean and worst "
        "relative error, the interval's coverage, width and interval score, and "
        "draws them (DIR/cv.png).",
    )
    p.add_argument("data", type=Path, metavar="DATA.csv")
    p.add_argument("--law", required=True, choices=law_names())
    p.add_argument(
        "--by",
        required=True,
        choices=["schedule", "run", "model_size"],
        help="what a fold holds out (schedule: the schedule column, else the run "
        "name after its last '/')",
    )
    p.add_argument(
        "--train",
        type=str_list,
        metavar="G,G",
        help="one fold instead: train on these groups, hold out all the others",
    )
    p.add_argument(
        "--prob",
        type=probability,
        default=0.9,
        help="predictive interval probability (default 0.9)",
    )
    p.add_argument(
        "--out",
        required=True,
        type=Path,
        metavar="DIR",
        help="folder for folds/, fits/, cv.csv, cv_by_size.csv, predictions.csv.gz, cv.png",
    )
    add_law_options(p)
    _sampling(p, "every fold")
    p.add_argument(
        "--seed",
        type=seed_int,
        default=0,
        help="seed of every fold's fit and prediction (default 0)",
    )
    _where(p)
    p.add_argument(
        "--strict",
        action="store_true",
        help="exit 1 when a fold's fit fails R-hat <= 1.01, bulk ESS >= 400, 0 divergences",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="replace fold fits that hold other inputs (cv.csv, cv_by_size.csv, "
        "predictions.csv.gz and cv.png are the folder's results, rewritten by "
        "every run)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress lines")


def cmd_cv(a) -> int:

    if not a.data.is_file():
        raise FileNotFoundError(f"{a.data}: no such file")
    _check_out_folder(a.out)
    res = _on_dask(a, run_cv, a.data, a.out, by=a.by, train=a.train, prob=a.prob)
    for note in res.notes:
        say(f"note: {note}")
    cols = [
        "fold",
        "group",
        "model_size",
        "points",
        "mean_rel_err",
        "worst_rel_err",
        "coverage",
        "rel_width",
        "interval_score",
    ]
    print(f"held-out groups ({a.prob:.0%} intervals):")
    print(percent_text(res.table[cols]))
    print("\nall held-out points, per model size:")
    print(percent_text(res.by_size.drop(columns=["r2"])))
    save_figure(plot_cv(res.table, prob=a.prob), a.out / "cv.png", force=True)
    if not a.quiet:
        say(
            f"wrote {a.out / 'cv.csv'}, {a.out / 'cv_by_size.csv'}, "
            f"{a.out / 'predictions.csv.gz'}, {a.out / 'cv.png'}"
        )
    bad = res.fits[res.fits["status"] == "diagnostics"]
    if len(bad):
        say(
            f"warning: {len(bad)} fold fit(s) fail the diagnostics: "
            + ", ".join(bad["name"])
            + f" (see {a.out / 'fits' / 'summary.csv'})"
        )
        if a.strict:
            return 1
    return 0


def cmd_sweep(a) -> int:

    specs = read_sweep(a.sweep)
    _check_out_folder(a.out)
    table = run_sweep(
        specs, a.out, workers=a.workers, scheduler=a.scheduler, force=a.force, say=progress(a.quiet)
    )
    print(table[SHOWN].to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    failed = table[table["status"] == "failed"]
    if len(failed):
        say(f"{len(failed)} of {len(table)} fits failed (their errors: {a.out / 'summary.csv'})")
        return EXIT_INPUT
    if a.strict and (table["status"] == "diagnostics").any():
        return 1
    return 0
