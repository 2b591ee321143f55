"""The fit commands' common part and the fits other commands read: sample (a Ctrl-C stops it
with nothing written, a partial trace is never saved), save, report the time and diagnostics;
load a fit with one held-back warning line when it failed its diagnostics; the diagnostics'
verdict as an exit code (1 under ``--strict``)."""

from __future__ import annotations

import math
import sys
import time
import warnings

from bayescpt.cli.interrupts import Interrupted, interrupt_guard
from bayescpt.cli.messages import EXIT_STRICT, say, warn_later
from bayescpt.core.chains import drop_stuck_chains
from bayescpt.core.fit_template import SamplerSettings
from bayescpt.core.fitfile import FitBase


def refuse_partial(fit, out) -> None:
    """Raise :class:`Interrupted` when ``fit`` holds fewer draws per chain, or fewer chains, than
    its sampler settings asked for (a sampler stopped early returns a partial trace): such a
    trace is never saved."""
    asked = fit.config.get("sampler", {})
    post = fit.idata.posterior
    draws, want = post.sizes.get("draw", 0), asked.get("draws")
    if want is not None and draws < int(want):
        raise Interrupted(
            f"sampling stopped after {draws} of {want} draws per chain: the partial "
            f"trace is not saved; nothing written to {out}"
        )
    chains, want_chains = post.sizes.get("chain", 0), asked.get("chains")
    dropped = "dropped_chains" in post.attrs
    if want_chains is not None and chains < int(want_chains) and not dropped:
        raise Interrupted(
            f"sampling returned {chains} of {want_chains} chains: the partial "
            f"trace is not saved; nothing written to {out}"
        )


def sampler_settings(a) -> SamplerSettings:
    """The sampler settings of a fit command's options (:func:`~bayescpt.cli.options.sampler_args`):
    a progress bar only when not ``--quiet`` and stderr is a terminal; the sampler's own
    diagnostics warnings off (the command reports the diagnostics)."""
    return SamplerSettings(
        sampler=a.sampler,
        chains=a.chains,
        draws=a.draws,
        tune=a.tune,
        seed=a.seed,
        init=a.init,
        progress=not a.quiet and sys.stderr.isatty(),
        warn=False,
    )


def sample_and_save(a, run):
    """The fit commands' common part: ``run(sampling=SamplerSettings)`` -> fit (the settings:
    :func:`sampler_settings`), saved to ``a.out``, its time and diagnostics reported (the
    sampler's own warnings are replaced by that report). Returns (fit, diagnostics)."""
    t0 = time.perf_counter()
    stopped = f"interrupted (Ctrl-C) while fitting: nothing written to {a.out}"
    hit: list[int] = []
    try:
        with warnings.catch_warnings(), interrupt_guard() as hit:
            warnings.simplefilter("ignore")
            fit = run(sampling=sampler_settings(a))
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
        drop_stuck_chains(fit.idata, inplace=True)  # recorded in the fit's attrs
    fit.save(a.out, overwrite=a.force)
    diag = fit.diagnostics()
    if not a.quiet:
        say(f"done in {time.perf_counter() - t0:.1f} s; saved {a.out}")
    print(diag.to_text())
    return fit, diag


def failed_fit_line(fit, path) -> str | None:
    """One line saying that the fit in ``path`` failed its diagnostics when it was fitted (the
    same verdict ``bayescpt diagnose`` gives on its stored draws), with its worst R-hat, bulk ESS
    and divergences; None when it passed. A fit file stores its draws, not their diagnostics,
    so they are computed here, once per fit read."""
    diag = fit.diagnostics(prior_check=False)  # prior conflicts only word the verdict
    if diag.ok:
        return None
    div = diag.divergences
    rhat, ess = _finite_text(diag.max_rhat, ".3f"), _finite_text(diag.min_ess_bulk, ".0f")
    return (
        f"{path} failed its diagnostics when it was fitted (R-hat {rhat}"
        f", bulk ESS {ess}, {div} divergence"
        f"{'' if div == 1 else 's'}): its predictions may be wrong; see `bayescpt diagnose "
        f"{path}`"
    )


def load_fit_checked(path, cls=FitBase, law=None):
    """The fit file ``path`` read as ``cls`` (FitBase: the class registered for its law; ``law``
    the accepted law names, see :meth:`FitBase.load`) for a command that uses it: when the fit
    failed its diagnostics, one warning line on stderr says so (:func:`failed_fit_line`), once the
    command has read its other inputs (:func:`~bayescpt.cli.messages.warn_later`)."""
    fit = cls.load(path, law)
    line = failed_fit_line(fit, path)
    if line is not None:
        warn_later(line)
    return fit


def verdict(diag, strict: bool) -> int:
    """The exit code of a fit or diagnose command: problems are warned about; under ``strict``
    they fail it (:data:`~bayescpt.cli.messages.EXIT_STRICT`)."""
    if diag.ok:
        return 0
    for msg in diag.problems():
        say(f"warning: {msg}")
    if strict:
        say("bayescpt: diagnostics failed (--strict)")
        return EXIT_STRICT
    return 0


def _finite_text(v, fmt: str) -> str:
    """``v`` formatted by ``fmt``; ``n/a`` where it is not finite."""
    return "n/a" if not math.isfinite(v) else format(v, fmt)
