"""Slow mixing is run longer; stuck chains and divergences are not (what more draws can fix).

With a ``judge`` (the fit's own diagnostics, :mod:`bayescpt.core.diagnostics`), a run whose
only problems are a bulk ESS below 400 or an R-hat above 1.01 (no divergences, no chain stuck in
a minor mode) is sampled again with k times the draws, k = ceil(1.25 x 400 / ESS) (at least 2
when R-hat fails), and so on while it still mixes too slowly, up to the sampler setting
``extend`` times the draws asked for (``None``, the default: 4 when at least the default 1000
draws were asked for, else 1, so a quick look stays quick; 1 turns it off). Same seed and starts:
with nutpie the first draws of each chain are the draws of the shorter run (tested), so this is
the same chains run longer, at the cost of one more tuning phase; the other samplers give a
longer, valid run. What was done is recorded in
``sample_stats.attrs['extended']`` and said by the diagnostics.

Used by :func:`bayescpt.core.sampling.sample_model` and by callers that run nutpie on a compiled
model themselves (:class:`bayescpt.curves.model.fit.CompiledFit`).
"""

from __future__ import annotations

import json
import math

from bayescpt.core.diagnostics import ESS_MIN, RHAT_MAX

#: the package's default draws per chain (``core.sampling.DEFAULT_SAMPLER_SETTINGS``): runs asked
#: for at least this many are extended by default
AUTO_FROM_DRAWS = 1000


def extend_cap(s: dict) -> int:
    """The most times the draws a slowly mixing run of settings ``s`` may be run with (module
    doc): the setting ``extend``, or with None 4 from the default draws up, else 1."""
    if s.get("extend") is not None:
        return int(s["extend"])
    return 4 if int(s["draws"]) >= AUTO_FROM_DRAWS else 1


def extension(diag, s: dict, base: int | None = None) -> tuple[int, str] | None:
    """(new draws, why) when the diagnostics ``diag`` of a run with settings ``s`` fail only by
    slow mixing and a longer run is allowed: at most :func:`extend_cap` times ``base`` draws (the
    draws asked for; default ``s['draws']``); else None."""
    base = int(base or s["draws"])
    cap = extend_cap(dict(s, draws=base)) * base
    if cap <= int(s["draws"]) or diag.divergences or diag.stuck:
        return None
    ess, rhat = diag.min_ess_bulk, diag.max_rhat
    if not (math.isfinite(ess) and math.isfinite(rhat)) or (ess >= ESS_MIN and rhat <= RHAT_MAX):
        return None
    k = math.ceil(1.25 * ESS_MIN / max(ess, 1.0)) if ess < ESS_MIN else 1
    if rhat > RHAT_MAX:
        k = max(k, 2)
    why = [f"bulk ESS {ess:.0f} < {ESS_MIN}"] if ess < ESS_MIN else []
    why += [f"R-hat {rhat:.3f} > {RHAT_MAX}"] if rhat > RHAT_MAX else []
    return min(k * int(s["draws"]), cap), " and ".join(why)


def _complete(idata, s: dict) -> bool:
    """Whether the trace holds the draws per chain that the settings ``s`` asked for."""
    post = getattr(idata, "posterior", None)
    return post is not None and post.sizes.get("draw", 0) >= int(s["draws"])


def run_longer(idata, s: dict, judge, sample):
    """``idata``, or while ``judge(idata)`` shows slow mixing only (:func:`extension`) the run
    ``sample(settings)`` with more draws, up to the cap; its attrs say what was done (module
    doc). A trace shorter than asked (a sampler stopped by Ctrl-C returns the draws it had,
    possibly none) is returned as it is, unjudged: it is not a fit to extend, and its caller
    refuses it."""
    if judge is None:
        return idata
    steps, cur = [], dict(s)
    while (
        _complete(idata, cur)
        and (more := extension(judge(idata), cur, base=s["draws"])) is not None
    ):
        draws, why = more
        steps.append({"draws": int(cur["draws"]), "to": draws, "why": why})
        cur = dict(cur, draws=draws)
        idata = sample(cur)
    if steps:
        idata.sample_stats.attrs["extended"] = json.dumps(
            {
                "draws": steps[0]["draws"],
                "to": steps[-1]["to"],
                "why": steps[0]["why"],
                "steps": steps,
            }
        )
    return idata
