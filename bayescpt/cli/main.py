"""Command line: a thin layer over the library (parse, call, print, exit codes).

The commands live in command-group modules (``cli.curves``: fit, predict, compare, diagnose,
config; ``cli.cpt``: plan; ``cli.demo``; the plugins ``cli.lab``, ``cli.mixture``,
``cli.hparams``); this module assembles the parser and dispatches.

Exit codes: 0 success, 1 diagnostics failed under --strict, 2 bad input or usage.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from importlib import import_module

from bayescpt import __version__
from bayescpt.cli import cpt, curves, demo
from bayescpt.cli.common import EXIT_INPUT, allow_negative_numbers, sampler_args
from bayescpt.core.tables import DataError, DataWarning
from bayescpt.curves.fit import FitError

# Command groups living next to their models: each module has
# ``add_commands(subparsers, sampler_args) -> {command: function(args) -> exit code}``.
PLUGINS: tuple[str, ...] = ("cli.lab", "cli.mixture", "cli.hparams", "cli.logs")


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="bayescpt", description="Bayesian scaling laws for "
                                 "planning continual pre-training: fit, diagnose, predict.")
    ap.add_argument("--version", action="version", version=_version())
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")
    curves.add_fit(sub)
    curves.add_predict(sub)
    cpt.add_plan(sub)
    curves.add_compare(sub)
    curves.add_diagnose(sub)
    curves.add_config(sub)
    demo.add_demo(sub)
    for name in PLUGINS:
        COMMANDS.update(import_module(f"bayescpt.{name}").add_commands(sub, sampler_args))
    allow_negative_numbers(ap)
    return ap


def _version() -> str:
    return f"bayescpt {__version__}"


COMMANDS = {**curves.COMMANDS, **cpt.COMMANDS, "demo": demo.cmd_demo}


def main(argv=None) -> int:

    args = build_parser().parse_args(argv)
    # PyTensor's C backend warns when pip's numpy exposes no BLAS; nutpie (numba) is unaffected.
    warnings.filterwarnings("ignore", message=".*could not link to a BLAS.*")
    warnings.filterwarnings("ignore", category=FutureWarning)
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            warnings.simplefilter("always", DataWarning)
            return COMMANDS[args.command](args)
    except (DataError, FitError, FileExistsError, ValueError) as err:
        print(f"bayescpt: error: {err}", file=sys.stderr)
        return EXIT_INPUT


_SHOW = warnings.showwarning


def _show_warning(message, category, filename, lineno, file=None, line=None):
    """Data warnings as one ``bayescpt: warning: ...`` line; others as Python shows them."""
    if issubclass(category, DataWarning):
        print(f"bayescpt: warning: {message}", file=sys.stderr, flush=True)
    else:
        _SHOW(message, category, filename, lineno, file, line)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
