"""What every command group of the command line shares: messages, refusals to overwrite, the
sampler options, config files, the diagnostics verdict, saving fits and figures.

Exit codes: 0 success, 1 diagnostics failed under --strict (:data:`EXIT_STRICT`), 2 bad input or
usage (:data:`EXIT_INPUT`), 3 internal error (:data:`EXIT_INTERNAL`), 130 interrupted by Ctrl-C
(:data:`EXIT_INTERRUPTED`), 141 standard output closed by its reader (:data:`EXIT_PIPE`).
"""

from __future__ import annotations

import _thread
import argparse
import json
import math
import signal
import sys
import threading
import time
import warnings
from contextlib import contextmanager
from pathlib import Path

from bayescpt.cli.argtypes import (  # noqa: F401 - the argument types, importable from here
    allow_negative_numbers,
    finite_float,
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
from bayescpt.core.chains import drop_stuck_chains
from bayescpt.core.fitfile import FitBase
from bayescpt.core.outputs import check_not_input, check_output, write_outputs
from bayescpt.core.tables import plain

EXIT_STRICT = 1
EXIT_INPUT = 2
EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130   # 128 + SIGINT, as shells report a command stopped by Ctrl-C
EXIT_PIPE = 141          # 128 + SIGPIPE: the reader of stdout went away (``| head``)


#: warning lines about the inputs a command uses (a fit that failed its diagnostics), held back
#: until the command goes on past reading its inputs: printed before its next status line or at
#: its end, dropped when it stops on bad input (whose one line is then the only one)
_PENDING: list[str] = []


def warn_later(msg: str) -> None:
    """Hold ``warning: msg`` back until the command's next status line (see ``_PENDING``)."""
    _PENDING.append(msg)


def flush_pending(drop: bool = False) -> None:
    """Print (or with ``drop`` forget) the held-back warning lines."""
    while _PENDING:
        msg = _PENDING.pop(0)
        if not drop:
            print(f"warning: {msg}", file=sys.stderr, flush=True)


def say(msg: str) -> None:
    """A progress or status line, on stderr (stdout holds the results)."""
    flush_pending()
    print(msg, file=sys.stderr, flush=True)


def refuse_overwrite(path, force: bool) -> None:
    """Raise FileExistsError when ``path`` exists and ``force`` is off (None: nothing to check)."""
    if path is not None and Path(path).exists() and not force:
        raise FileExistsError(f"{path} exists; choose another --out or pass --force to replace it")


def prepare_outputs(force: bool, inputs=None, **outputs) -> None:
    """The checks a command runs on its outputs before any work: each (``outputs`` maps an
    option name, ``_`` for ``-``, to a path or None) is refused when it exists and ``force`` is
    off, when it is one of ``inputs`` (label -> path, or (label, path) pairs) or another output,
    when it exists and is not a regular file, or when its folder is missing or not writable; a
    ValueError / FileExistsError naming the option otherwise."""
    named = {"--" + k.replace("_", "-"): v for k, v in outputs.items()}
    for option, path in named.items():
        check_output(path, option)
    check_not_input(named, inputs or {})     # before "pass --force", which would not help
    for path in named.values():
        refuse_overwrite(path, force)


def csv_writer(df, float_format: str = "%.10g"):
    """A writer for :func:`write_files`: ``df`` as CSV without its index."""
    return lambda tmp: df.to_csv(tmp, index=False, float_format=float_format)


def text_writer(text: str):
    """A writer for :func:`write_files`: ``text`` as UTF-8."""
    return lambda tmp: Path(tmp).write_text(text, encoding="utf-8")


def figure_writer(fig, path, dpi: int = 110):
    """A writer for :func:`write_files`: a matplotlib figure in the format of ``path``'s suffix
    (matplotlib's default format, PNG, when there is none)."""
    import matplotlib

    fmt = Path(path).suffix[1:].lower() or matplotlib.rcParams["savefig.format"]
    return lambda tmp: fig.savefig(tmp, dpi=dpi, format=fmt)


def write_files(writers: dict, force: bool) -> list[Path]:
    """Write several outputs all or none (``writers``: path -> writer; None paths skipped), each
    atomically (:func:`bayescpt.core.outputs.write_outputs`); refuses to replace an existing
    file unless ``force``. Returns the paths written."""
    writers = {Path(p): w for p, w in writers.items() if p is not None}
    for path in writers:
        refuse_overwrite(path, force)
    return write_outputs(writers)


def write_csv(df, path, force: bool, float_format: str = "%.10g") -> Path:
    """Write a table as CSV to ``path`` atomically (a unique temporary file in the same folder,
    synced, then ``os.replace``), so a reader never sees half a file; refuses to replace an
    existing file unless ``force``. Returns the path."""
    return write_files({path: csv_writer(df, float_format)}, force)[0]


def write_json_text(text: str, path, force: bool) -> Path:
    """Write ``text`` plus a newline to ``path`` atomically; refuses to replace an existing file
    unless ``force``. Returns the path."""
    return write_files({path: text_writer(text + "\n")}, force)[0]


def close_figure(fig) -> None:
    """Release a matplotlib figure (None: nothing)."""
    if fig is not None:
        import matplotlib.pyplot as plt

        plt.close(fig)


def save_figure(fig, path, force: bool, dpi: int = 110) -> Path:
    """Write a matplotlib figure to ``path`` and close it; the format follows the suffix
    (matplotlib's default format, PNG, when there is none).

    Atomic: the image is written under a unique temporary name in the same folder, then moved
    over ``path`` with ``os.replace``, so a reader never sees half a file. Refuses to replace an
    existing file unless ``force``. Returns the path."""
    try:
        return write_files({path: figure_writer(fig, path, dpi)}, force)[0]
    finally:
        close_figure(fig)


def sampler_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--sampler", default="auto",
                   help="nutpie (default when installed), pymc, numpyro or blackjax (JAX: GPU path)")
    p.add_argument("--chains", type=positive_int, help="number of chains (default 4)")
    p.add_argument("--draws", type=positive_int,
                   help="draws per chain after tuning (default: the law's; 1000, 2000 for the cpt "
                        "and mixture laws, 3000-4000 for the cpt law's checkpoint and anchored "
                        "forms)")
    p.add_argument("--tune", type=nonneg_int,
                   help="tuning steps per chain (default: the law's; 1000, 400 for the plain "
                        "LR-annealing law from the mode (1000 with --init jitter), 2000 for the "
                        "mixture law and the cpt law's checkpoint form)")
    p.add_argument("--seed", type=seed_int,
                   help="random seed (default 0); same seed, same numbers")
    p.add_argument("--config", type=Path,
                   help="JSON file overriding priors/structure (see `bayescpt config --law L`)")
    p.add_argument("--strict", action="store_true",
                   help="exit 1 when R-hat > 1.01, bulk ESS < 400 or any divergence")
    p.add_argument("--init", choices=["map", "jitter"],
                   help="where chains start: map (default) = each its own draw around the "
                        "posterior mode found by multi-start optimisation; jitter = each "
                        "sampler's own start (prior support point + U(-1, 1)); a law with a "
                        "short warmup from the mode tunes longer from these (the LR-annealing "
                        "law: 1000 instead of 400)")
    p.add_argument("--drop-stuck-chains", action="store_true",
                   help="drop chains stuck in a minor mode (mean log density far below the "
                        "others); the drop is recorded in the fit file and shown by diagnose")
    p.add_argument("--force", action="store_true", help="replace an existing --out file")
    p.add_argument("--quiet", action="store_true", help="no progress output")


def json_text(obj, indent: int = 2) -> str:
    """Standard JSON (RFC 8259): a NaN or infinite float, a value that is legitimately missing,
    becomes ``null``; numpy scalars and arrays become numbers and lists."""
    return json.dumps(plain(obj, nan_as_none=True), indent=indent, allow_nan=False)


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


class Interrupted(Exception):
    """The command was interrupted (Ctrl-C); the message says what was (not) written. Exit code
    :data:`EXIT_INTERRUPTED`."""


@contextmanager
def interrupt_guard(repeat_s: float = 0.5):
    """Within the block, SIGINT (Ctrl-C) raises KeyboardInterrupt as usual and is also recorded:
    the yielded list is non-empty once one arrived, so an interrupt that a library caught (a
    sampler returning its partial trace) is still seen afterwards. An interrupt that arrived
    where Python cannot raise it (a finaliser during compilation: "Exception ignored") would be
    lost, so after the first one KeyboardInterrupt is raised again every ``repeat_s`` seconds
    until the block is left, and such ignored interrupts print nothing. Outside the main thread
    (no signal handlers there) nothing is installed."""
    hits: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield hits
        return
    done = threading.Event()
    repeater: list[threading.Thread] = []

    def repeat():
        while not done.wait(repeat_s):
            _thread.interrupt_main()

    def handler(signum, frame):
        if not repeater:
            repeater.append(threading.Thread(target=repeat, daemon=True))
            repeater[0].start()
        hits.append(signum)
        raise KeyboardInterrupt

    def quiet_hook(unraisable):
        if not isinstance(unraisable.exc_value, KeyboardInterrupt):
            old_hook(unraisable)

    old_hook, sys.unraisablehook = sys.unraisablehook, quiet_hook
    old = signal.signal(signal.SIGINT, handler)
    try:
        yield hits
    finally:
        done.set()
        try:        # a last repeated interrupt lands here, still in our handler
            for t in repeater:
                t.join()
        finally:
            signal.signal(signal.SIGINT, old)
            sys.unraisablehook = old_hook


def refuse_partial(fit, out) -> None:
    """Raise :class:`Interrupted` when ``fit`` holds fewer draws per chain, or fewer chains, than
    its sampler settings asked for (a sampler stopped early returns a partial trace): such a
    trace is never saved."""
    asked = fit.config.get("sampler", {})
    post = fit.idata.posterior
    draws, want = post.sizes.get("draw", 0), asked.get("draws")
    if want is not None and draws < int(want):
        raise Interrupted(f"sampling stopped after {draws} of {want} draws per chain: the partial "
                          f"trace is not saved; nothing written to {out}")
    chains, want_chains = post.sizes.get("chain", 0), asked.get("chains")
    dropped = "dropped_chains" in post.attrs
    if want_chains is not None and chains < int(want_chains) and not dropped:
        raise Interrupted(f"sampling returned {chains} of {want_chains} chains: the partial "
                          f"trace is not saved; nothing written to {out}")


def sample_and_save(a, run):
    """The fit commands' common part: ``run(**sampler options)`` -> fit, saved to ``a.out``, its
    time and diagnostics reported (the sampler's own warnings are replaced by that report).
    Returns (fit, diagnostics)."""
    t0 = time.perf_counter()
    stopped = f"interrupted (Ctrl-C) while fitting: nothing written to {a.out}"
    hit: list[int] = []
    try:
        with warnings.catch_warnings(), interrupt_guard() as hit:
            warnings.simplefilter("ignore")
            fit = run(sampler=a.sampler, chains=a.chains, draws=a.draws, tune=a.tune,
                      seed=a.seed, init=a.init, progress=not a.quiet and sys.stderr.isatty(),
                      warn=False)
    except KeyboardInterrupt:
        raise Interrupted(stopped) from None
    except Exception:
        if not hit:
            raise
        # else what failed was working on the partial trace the interrupt left
    if hit:
        # the sampler (nutpie, PyMC) caught the KeyboardInterrupt and returned what it had
        raise Interrupted(stopped)
    refuse_partial(fit, a.out)
    if getattr(a, "drop_stuck_chains", False):
        drop_stuck_chains(fit.idata, inplace=True)   # recorded in the fit's attrs
    fit.save(a.out, overwrite=a.force)
    diag = fit.diagnostics()
    if not a.quiet:
        say(f"done in {time.perf_counter() - t0:.1f} s; saved {a.out}")
    print(diag.to_text())
    return fit, diag


def failed_fit_line(fit, path) -> str | None:
    """One line saying that the fit in ``path`` failed its diagnostics when it was fitted (the
    same verdict ``bayescpt diagnose`` gives on its stored draws), with its worst R-hat, bulk ESS
    and divergences; None when it passed."""
    diag = fit.diagnostics(prior_check=False)   # prior conflicts only word the verdict
    if diag.ok:
        return None
    num = lambda v, fmt: "n/a" if not math.isfinite(v) else format(v, fmt)  # noqa: E731
    div = diag.divergences
    return (f"{path} failed its diagnostics when it was fitted (R-hat {num(diag.max_rhat, '.3f')}"
            f", bulk ESS {num(diag.min_ess_bulk, '.0f')}, {div} divergence"
            f"{'' if div == 1 else 's'}): its predictions may be wrong; see `bayescpt diagnose "
            f"{path}`")


def load_fit_checked(path, cls=FitBase, law=None):
    """The fit file ``path`` read as ``cls`` (FitBase: the class registered for its law; ``law``
    the accepted law names, see :meth:`FitBase.load`) for a command that uses it: when the fit
    failed its diagnostics, one warning line on stderr says so (:func:`failed_fit_line`), once the
    command has read its other inputs (:func:`warn_later`)."""
    fit = cls.load(path, law)
    line = failed_fit_line(fit, path)
    if line is not None:
        warn_later(line)
    return fit


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
