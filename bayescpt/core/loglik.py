"""The pointwise log likelihood of a fit: stored with its draws when small enough, for PSIS-LOO.

:func:`store_log_likelihood` adds it after sampling (:mod:`bayescpt.core.sampling`) unless the
chains x draws x observed points would take more than :data:`LOGLIK_MAX_BYTES`; then the fit
says why in ``sample_stats.attrs['log_likelihood']`` and a :class:`LogLikelihoodSkipped` warning.
"""

from __future__ import annotations

import warnings

#: the pointwise log likelihood (chains x draws x observed points, float64) is stored only up to
#: this size: 4 x 1000 draws of 1e6 points would be 32 GB, more than the fit itself needs
LOGLIK_MAX_BYTES = 2 * 2**30


def store_log_likelihood(idata, model, s: dict) -> None:
    """Add the pointwise log likelihood to ``idata`` (in place) unless it is there already or
    too large (:func:`loglik_too_large`): then say so, in a warning and in
    ``sample_stats.attrs['log_likelihood']``."""
    why = loglik_too_large(model, s)
    if why is not None:
        idata.sample_stats.attrs["log_likelihood"] = why
        warnings.warn(why, LogLikelihoodSkipped, stacklevel=3)
    elif "log_likelihood" not in idata:
        add_log_likelihood(idata, model)


class LogLikelihoodSkipped(UserWarning):
    """The pointwise log likelihood was not stored (too large): LOO is not available."""


def observed_points(model) -> int:
    """Number of observed values of ``model`` (all its observed variables)."""
    import numpy as np

    n = 0
    for rv in model.observed_RVs:
        v = model.rvs_to_values[rv]
        data = v.get_value() if hasattr(v, "get_value") else getattr(v, "data", None)
        n += int(np.size(data)) if data is not None else 0
    return n


def loglik_too_large(model, s: dict) -> str | None:
    """None when the pointwise log likelihood of a fit with settings ``s`` fits in
    :data:`LOGLIK_MAX_BYTES`; else the one line saying it is not stored, and why."""
    n = observed_points(model)
    size = 8 * s["chains"] * s["draws"] * n
    if size <= LOGLIK_MAX_BYTES:
        return None

    def gib(b):
        return f"{b / 2**30:.1f} GiB" if b >= 2**30 else f"{b / 2**20:.0f} MiB"

    return (
        f"pointwise log likelihood not stored: {s['chains']} chains x {s['draws']} draws x "
        f"{n} observed points would take {gib(size)} (limit {gib(LOGLIK_MAX_BYTES)}); "
        "PSIS-LOO (compare) needs it: fit fewer points (the default thinning of long "
        "curves) or fewer draws"
    )


def add_log_likelihood(idata, model) -> None:
    """The pointwise log likelihood of ``model`` (its current data) at the draws, in place."""
    import pymc as pm

    # PyMC cannot rebuild a model with custom initial values for this (NotImplementedError);
    # they have done their job once sampling is over.
    for rv in model.rvs_to_initial_values:
        model.rvs_to_initial_values[rv] = None
    pm.compute_log_likelihood(idata, model=model, progressbar=False)
