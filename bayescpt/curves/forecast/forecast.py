"""The one library entry point of a loss-curve forecast: :func:`forecast`.

It predicts the rows of a schedule table from a fit's stored posterior draws in one of three
ways: from the posterior alone (:func:`~bayescpt.curves.forecast.predict.predict_frame`), with
the draws behind that table (:func:`~bayescpt.curves.forecast.predict.predict_draws`:
``(chain, draw, point)`` losses in nats), or weighted by a run's observed prefix
(:func:`~bayescpt.curves.forecast.prefix.forecast_with_prefix`: importance sampling). The
warnings of the prediction's range and weights (:class:`ExtrapolationWarning`,
:class:`RangeUnknownWarning`, :class:`PrefixWarning`) are returned as the library words them,
each also told to ``tell`` as soon as the prediction ends (with its result or its refusal);
other warnings pass on unchanged.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import pandas as pd

from bayescpt.curves.data.observed import merge_observed
from bayescpt.curves.forecast.extrapolation import ExtrapolationWarning, RangeUnknownWarning
from bayescpt.curves.forecast.particles import PrefixWarning
from bayescpt.curves.forecast.predict import predict_draws, predict_frame
from bayescpt.curves.forecast.prefix import forecast_with_prefix

#: the warnings a forecast words itself (the rest pass on as they are)
TOLD = (ExtrapolationWarning, RangeUnknownWarning, PrefixWarning)


@dataclass
class Forecast:
    """A forecast: ``table`` (the schedule's rows with mean, median, lower, upper, curve_lower,
    curve_upper; with a prefix also ess and observed), ``draws`` (the xarray draws behind it,
    where asked for; None otherwise) and ``warnings`` (the told warnings' text, in order)."""

    table: pd.DataFrame
    draws: object = None
    warnings: list = field(default_factory=list)


def forecast(
    fit,
    schedule: pd.DataFrame,
    prob: float = 0.9,
    seed: int = 0,
    observed: pd.DataFrame | None = None,
    draws: bool = False,
    tell=None,
) -> Forecast:
    """Predict the validated ``schedule`` table with ``fit`` (credible level ``prob``, ``seed``).

    ``observed`` (a run's observed prefix, :func:`~bayescpt.curves.data.observed.read_observed`):
    merged into the schedule and the forecast weighted by it; ``draws``: also return the draws
    (not with ``observed``: the weighted draws are not written yet). ``tell(text)`` (optional) is
    called with each told warning's text when the prediction ends, also when it is refused
    (ImpossiblePrediction) before the refusal propagates."""
    if observed is not None:
        if draws:
            raise ValueError(
                "draws with an observed prefix: a forecast from a run's prefix "
                "weights its draws (importance sampling), not written yet"
            )
        schedule = merge_observed(schedule, observed)
    caught: list = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            for category in TOLD:
                warnings.simplefilter("always", category)
            table, ds = _predicted(fit, schedule, prob, seed, observed, draws)
    finally:
        told = _pass_on(caught, tell)
    return Forecast(table, ds, told)


def _predicted(fit, schedule, prob, seed, observed, draws):
    """(table, draws or None) of the one prediction :func:`forecast` makes."""
    if observed is not None:
        return forecast_with_prefix(fit, schedule, prob=prob, seed=seed), None
    if draws:
        ds, table = predict_draws(fit, schedule, prob=prob, seed=seed)
        return table, ds
    return predict_frame(fit, schedule, prob=prob, seed=seed), None


def _pass_on(caught: list, tell) -> list[str]:
    """The told warnings' text (each also to ``tell``); the other warnings shown as they are."""
    told = []
    for w in caught:
        if issubclass(w.category, TOLD):
            told.append(str(w.message))
            if tell is not None:
                tell(str(w.message))
        else:
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    return told
