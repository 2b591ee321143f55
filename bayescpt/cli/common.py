"""What every command group of the command line shares: messages, refusals to overwrite, the
sampler options, config files, the diagnostics verdict, saving fits and figures.

Exit codes: 0 success, 1 diagnostics failed under --strict (:data:`EXIT_STRICT`), 2 bad input or
usage (:data:`EXIT_INPUT`).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

from bayescpt.core.chains import drop_stuck_chains
from bayescpt.core.tables import PLAIN_NUMBER

EXIT_STRICT = 1
EXIT_INPUT = 2


def say(msg: str) -> None:
    """A progress or status line, on stderr (stdout holds the results)."""
    print(msg, file=sys.stderr, flush=True)


def refuse_overwrite(path, force: bool) -> None:
    """Raise FileExistsError when ``path`` exists and ``force`` is off (None: nothing to check)."""
    if path is not None and Path(path).exists() and not force:
        raise FileExistsError(f"{path} exists; choose another --out or pass --force to replace it")


def write_csv(df, path, force: bool, float_format: str = "%.10g") -> Path:
    """Write a table as CSV to ``path`` atomically (a unique temporary file in the same folder,
    then ``os.replace``), so a reader never sees half a file; refuses to replace an existing
    file unless ``force``. Returns the path."""
    path = Path(path)
    refuse_overwrite(path, force)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", newline="") as fh:
            df.to_csv(fh, index=False, float_format=float_format)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def save_figure(fig, path, force: bool, dpi: int = 110) -> Path:
    """Write a matplotlib figure to ``path`` and close it; the format follows the suffix
    (matplotlib's default format, PNG, when there is none).

    Atomic: the image is written under a temporary name in the same folder, then moved over
    ``path`` with ``os.replace``, so a reader never sees half a file. Refuses to replace an
    existing file unless ``force``. Returns the path."""
    import matplotlib
    import matplotlib.pyplot as plt

    path = Path(path)
    refuse_overwrite(path, force)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fmt = path.suffix[1:].lower() or matplotlib.rcParams["savefig.format"]
    try:
        fig.savefig(tmp, dpi=dpi, format=fmt)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
        plt.close(fig)
    return path


def sampler_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--sampler", default="auto",
                   help="nutpie (default when installed), pymc, numpyro or blackjax (JAX: GPU path)")
    p.add_argument("--chains", type=positive_int, help="number of chains (default 4)")
    p.add_argument("--draws", type=positive_int, help="draws per chain after tuning (default 1000)")
    p.add_argument("--tune", type=nonneg_int, help="tuning steps per chain (default 1000)")
    p.add_argument("--seed", type=nonneg_int,
                   help="random seed (default 0); same seed, same numbers")
    p.add_argument("--config", type=Path,
                   help="JSON file overriding priors/structure (see `bayescpt config --law L`)")
    p.add_argument("--strict", action="store_true",
                   help="exit 1 when R-hat > 1.01, bulk ESS < 400 or any divergence")
    p.add_argument("--drop-stuck-chains", action="store_true",
                   help="drop chains stuck in a minor mode (mean log density far below the "
                        "others); the drop is recorded in the fit file and shown by diagnose")
    p.add_argument("--force", action="store_true", help="replace an existing --out file")
    p.add_argument("--quiet", action="store_true", help="no progress output")


def _number(text: str, cast, what: str, ok=lambda v: True):
    """An argparse ``type``: ``text`` in plain decimal notation, finite, passing ``ok``; otherwise
    ArgumentTypeError, which argparse prints naming the option (exit 2)."""
    t = str(text).strip()
    try:
        if not PLAIN_NUMBER.fullmatch(t):
            raise ValueError
        v = float(t)
        if cast is int:
            if v != round(v) or abs(v) >= 2 ** 53:
                raise ValueError
            v = int(v)
    except (ValueError, OverflowError):
        raise argparse.ArgumentTypeError(f"{text!r}: expected {what}") from None
    if not math.isfinite(v) or not ok(v):
        raise argparse.ArgumentTypeError(f"{text!r}: expected {what}")
    return v


def finite_float(text) -> float:
    return _number(text, float, "a finite number")


def positive_float(text) -> float:
    return _number(text, float, "a finite number > 0", lambda v: v > 0)


def nonneg_float(text) -> float:
    return _number(text, float, "a finite number >= 0", lambda v: v >= 0)


def share(text) -> float:
    """A fraction in [0, 1]."""
    return _number(text, float, "a share in [0, 1]", lambda v: 0 <= v <= 1)


def probability(text) -> float:
    """A probability strictly between 0 and 1 (interval probabilities, risks, quantiles)."""
    return _number(text, float, "a probability strictly between 0 and 1", lambda v: 0 < v < 1)


def positive_int(text) -> int:
    return _number(text, int, "a whole number >= 1", lambda v: v >= 1)


def nonneg_int(text) -> int:
    return _number(text, int, "a whole number >= 0", lambda v: v >= 0)


def _list(cast, what):
    def parse(text):
        items = [x for x in text.split(",") if x.strip()]
        if not items:
            raise argparse.ArgumentTypeError(f"{text!r}: expected comma-separated {what}, "
                                             "at least one")
        try:
            return [cast(x) for x in items]
        except (ValueError, argparse.ArgumentTypeError):
            raise argparse.ArgumentTypeError(f"{text!r}: expected comma-separated {what}") from None
    return parse


int_list = _list(lambda x: _number(x, int, "a whole number"), "whole numbers")
float_list = _list(finite_float, "finite numbers")
str_list = _list(str.strip, "names")


def allow_negative_numbers(parser: argparse.ArgumentParser) -> None:
    """Let an option take a negative number in exponent notation (``--n-params -1e8``), which
    argparse otherwise reads as an unknown option; the option's type then judges the value.
    Applied to ``parser`` and every subcommand parser below it."""
    import re
    parser._negative_number_matcher = re.compile(
        r"^-(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$|^-(?:inf|infinity|nan)$",
        re.IGNORECASE)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in set(action.choices.values()):
                allow_negative_numbers(sub)


def json_text(obj, indent: int = 2) -> str:
    """Standard JSON (RFC 8259): a NaN or infinite float, a value that is legitimately missing,
    becomes ``null``; numpy scalars and arrays become numbers and lists."""
    def clean(x):
        if isinstance(x, dict):
            return {k: clean(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return [clean(v) for v in x]
        if hasattr(x, "tolist") and not isinstance(x, (str, bytes)):
            return clean(x.tolist())
        if isinstance(x, float) and not math.isfinite(x):
            return None
        return x
    return json.dumps(clean(obj), indent=indent, allow_nan=False)


def load_config(path):
    """A JSON config file as a dict (None: None); a clear ValueError when missing or invalid."""
    if path is None:
        return None
    def no_constant(name):
        raise ValueError(f"{path}: {name} in the config; expected finite numbers")

    if Path(path).is_dir():
        raise ValueError(f"{path}: a directory, not a JSON config file")
    try:
        return json.loads(Path(path).read_text(), parse_constant=no_constant)
    except FileNotFoundError:
        raise ValueError(f"{path}: no such config file") from None
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not valid JSON ({err})") from None


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
        say(f"done in {time.perf_counter() - t0:.1f} s; saved {a.out}")
    print(diag.to_text())
    return fit, diag


def verdict(diag, strict: bool) -> int:
    """The exit code of a fit or diagnose command: problems are warned about; under ``strict``
    they fail it (:data:`EXIT_STRICT`)."""
    if diag.ok:
        return 0
    for msg in diag.problems():
        say(f"warning: {msg}")
    if strict:
        say("bayescpt: diagnostics failed (--strict)")
        return EXIT_STRICT
    return 0
