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

EXIT_STRICT = 1
EXIT_INPUT = 2

# Command groups living next to their models: each module has
# ``add_commands(subparsers, sampler_args) -> {command: function(args) -> exit code}``.
PLUGINS: tuple[str, ...] = ("hparams.cli",)


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
    f.add_argument("--law", required=True, choices=["annealing", "multipower"])
    f.add_argument("--out", required=True, type=Path, metavar="FIT.nc")
    f.add_argument("--max-points", type=int, default=None,
                   help="thin each curve to about this many loss points (decay phases kept dense)")
    _sampler_args(f)

    p = sub.add_parser("predict", help="predict loss curves for schedules from a fit",
                       description="Posterior predictive loss for every row of a schedule CSV "
                       "(columns run, step, lr [, val_set, model_size]; loss optional).")
    p.add_argument("fit", type=Path, metavar="FIT.nc")
    p.add_argument("--schedule", required=True, type=Path, metavar="SCHED.csv")
    p.add_argument("--prob", type=float, default=0.9, help="interval probability (default 0.9)")
    p.add_argument("--out", required=True, type=Path, metavar="PRED.csv")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--force", action="store_true", help="replace an existing --out file")

    d = sub.add_parser("diagnose", help="print R-hat, ESS and divergences of a fit")
    d.add_argument("fit", type=Path, metavar="FIT.nc")
    d.add_argument("--strict", action="store_true",
                   help="exit 1 when R-hat > 1.01, bulk ESS < 400 or any divergence")

    c = sub.add_parser("config", help="print a law's default priors and structure as JSON")
    c.add_argument("--law", required=True, choices=["annealing", "multipower"])

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


def _version() -> str:
    from . import __version__
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
    from .data import decimate, describe, read_curves
    from .fit import Fit

    _refuse_overwrite(a.out, a.force)
    df = read_curves(a.data)
    if a.max_points:
        df = decimate(df, a.max_points)
    if not a.quiet:
        _say(f"data: {a.data} {describe(df)}")
        _say(f"fitting the {a.law} law (compiling, then sampling; this takes a minute or more)")
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # diagnostics are reported below, with guidance
        fit = Fit.run(df, law=a.law, config=_load_config(a.config), sampler=a.sampler,
                      chains=a.chains, draws=a.draws, tune=a.tune, seed=a.seed,
                      progress=not a.quiet and sys.stderr.isatty(), warn=False)
    fit.save(a.out, overwrite=a.force)
    diag = fit.diagnostics()
    if not a.quiet:
        _say(f"done in {time.perf_counter() - t0:.1f} s; saved {a.out}")
    print(diag.to_text())
    return _verdict(diag, a.strict)


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
    from .data import read_curves
    from .fit import Fit
    from .predict import predict_frame

    _refuse_overwrite(a.out, a.force)
    fit = Fit.load(a.fit)
    sched = read_curves(a.schedule, need_loss=False)
    pred = predict_frame(fit, sched, prob=a.prob, seed=a.seed)
    cols = [c for c in ("run", "step", "lr", "val_set", "model_size", "loss") if c in pred.columns]
    if pred["loss"].isna().all():
        cols.remove("loss")
    cols += ["mean", "median", "lower", "upper", "curve_lower", "curve_upper"]
    pred[cols].to_csv(a.out, index=False, float_format="%.6g")
    _say(f"wrote {len(pred)} rows to {a.out}")
    return 0


def cmd_diagnose(a) -> int:
    from .fit import Fit

    fit = Fit.load(a.fit)
    diag = fit.diagnostics()
    print(f"{a.fit}: law {fit.meta['law']}, bayescpt {fit.meta['bayescpt_version']}, data "
          f"{fit.meta['data_hash']}, sampler {fit.config['sampler']['sampler']}")
    print(diag.to_text())
    return _verdict(diag, a.strict)


def cmd_config(a) -> int:
    from .hierarchy import default_config
    from .laws import get_law

    print(json.dumps(default_config(get_law(a.law)), indent=2))
    return 0


def cmd_demo(a) -> int:
    from .demo import run_demo

    run_demo(a.out, law=a.law, sampler=a.sampler, seed=a.seed, force=a.force,
             log=(lambda m: None) if a.quiet else _say)
    return 0


COMMANDS = {"fit": cmd_fit, "predict": cmd_predict, "diagnose": cmd_diagnose,
            "config": cmd_config, "demo": cmd_demo}


def main(argv=None) -> int:
    from .data import DataError
    from .fit import FitError

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
