"""Command line: a thin layer over the library (parse, call, print, exit codes).

The commands live in command-group modules (``cli.curves``: fit, compare, diagnose, config;
``cli.predict``: predict; ``cli.cpt``: plan; ``cli.demo``; the plugins ``cli.lab``,
``cli.mixture``, ``cli.hparams``, ``cli.logs``, ``cli.sweep``, ``cli.watch``, ``cli.priors``);
this module assembles the parser and dispatches.

Exit codes: 0 success, 1 diagnostics failed under --strict, 2 bad input or usage, 3 internal
error (a bug: one line asking for a report; the traceback with ``BAYESCPT_DEBUG=1``), 4 an
alert of ``watch --exit-on-alert``, 130
interrupted (Ctrl-C), 141 standard output closed by its reader (``bayescpt config | head -1``:
quiet, as command-line tools are).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import traceback
import warnings

from bayescpt import __version__
from bayescpt.cli import (
    cpt,
    curves,
    demo,
    hparams,
    lab,
    logs,
    mixture,
    predict,
    priors,
    report,
    sweep,
    watch,
)
from bayescpt.cli.argtypes import allow_negative_numbers
from bayescpt.cli.interrupts import Interrupted
from bayescpt.cli.messages import (
    EXIT_INPUT,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_PIPE,
    flush_pending,
)
from bayescpt.cli.options import sampler_args
from bayescpt.cli.report import with_outputs
from bayescpt.core.fitfile import FitError
from bayescpt.core.tables import DataError, DataWarning

# Command groups living next to their models, imported here like the others (so the import
# contract sees them): each module has
# ``add_commands(subparsers, sampler_args) -> {command: function(args) -> exit code}``.
PLUGIN_MODULES = (lab, mixture, hparams, logs, sweep, watch, priors, report)
#: their names under the package, in the order their commands are added
PLUGINS: tuple[str, ...] = tuple(m.__name__.removeprefix("bayescpt.") for m in PLUGIN_MODULES)


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="bayescpt",
        description="Bayesian scaling laws for "
        "planning continual pre-training: fit, diagnose, predict.",
    )
    ap.add_argument("--version", action="version", version=_version())
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")
    curves.add_fit(sub)
    predict.add_predict(sub)
    cpt.add_plan(sub)
    curves.add_compare(sub)
    curves.add_diagnose(sub)
    curves.add_config(sub)
    demo.add_demo(sub)
    for module in PLUGIN_MODULES:
        COMMANDS.update(module.add_commands(sub, sampler_args))
    allow_negative_numbers(ap)
    return ap


def _version() -> str:
    return f"bayescpt {__version__}"


COMMANDS = {**curves.COMMANDS, **predict.COMMANDS, **cpt.COMMANDS, "demo": demo.cmd_demo}


def main(argv=None) -> int:

    args = build_parser().parse_args(argv)
    # PyTensor's C backend warns when pip's numpy exposes no BLAS; nutpie (numba) is unaffected.
    warnings.filterwarnings("ignore", message=".*could not link to a BLAS.*")
    warnings.filterwarnings("ignore", category=FutureWarning)
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            warnings.simplefilter("always", DataWarning)
            code = with_outputs(COMMANDS[args.command], args)
        flush_pending()
        sys.stdout.flush()  # a closed pipe shows here, not at exit
        return code
    except (DataError, FitError, FileExistsError, ValueError) as err:
        flush_pending(drop=True)  # bad input: its one line is the answer
        print(f"bayescpt: error: {err}", file=sys.stderr)
        return EXIT_INPUT
    except Interrupted as err:
        flush_pending(drop=True)
        print(f"bayescpt: {err}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except KeyboardInterrupt:
        print("bayescpt: interrupted (Ctrl-C)", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_PIPE
    except OSError as err:  # a file the system refused (permissions, a folder, disk full)
        flush_pending(drop=True)
        where = f"{err.filename}: " if err.filename else ""
        print(f"bayescpt: error: {where}{err.strerror or err}", file=sys.stderr)
        return EXIT_INPUT
    except Exception as err:  # noqa: BLE001 - anything else is a bug of ours: its own exit code
        if os.environ.get("BAYESCPT_DEBUG", "") not in ("", "0"):
            traceback.print_exc()
        msg = str(err).splitlines()[0] if str(err) else ""
        print(
            f"bayescpt: internal error: {type(err).__name__}{': ' + msg if msg else ''} -- "
            "please report it (BAYESCPT_DEBUG=1 shows the traceback)",
            file=sys.stderr,
        )
        return EXIT_INTERNAL


def _silence_stdout() -> None:
    """Point stdout at /dev/null so Python's flush at exit raises no second BrokenPipeError."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


_SHOW = warnings.showwarning


def _show_warning(message, category, filename, lineno, file=None, line=None):
    """Data warnings as one ``bayescpt: warning: ...`` line; others as Python shows them."""
    if issubclass(category, DataWarning):
        flush_pending()
        print(f"bayescpt: warning: {message}", file=sys.stderr, flush=True)
    else:
        _SHOW(message, category, filename, lineno, file, line)


def entry() -> None:
    """The console script: :func:`main`'s exit code as the process's. An interrupt that lands
    after a command has handled the first (the interrupt guard's repeated one still pending, a
    second Ctrl-C while exiting) is the same outcome, exit 130, not a death by SIGINT; once
    exiting, SIGINT gets the system's default action (Python runs a pending handler first)."""
    code = EXIT_INTERRUPTED
    try:
        code = main()
    except KeyboardInterrupt:
        pass
    for _ in range(3):
        try:
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            break
        except KeyboardInterrupt:
            pass  # the handler of a pending interrupt ran: the outcome is decided
    # CPython (3.11, 3.12) under ``python -m``: a string ``exec`` that ended in KeyboardInterrupt
    # (code generated and exec'd while compiling, which the interrupt hit) leaves a flag set,
    # even when the interrupt was caught, and after exit the process kills itself with SIGINT
    # instead of returning our code. Every string evaluation resets that flag at its start.
    exec("pass", {})  # noqa: S102
    sys.exit(code)


if __name__ == "__main__":  # pragma: no cover
    entry()
