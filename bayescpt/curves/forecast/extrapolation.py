"""How far a prediction leaves what the fit saw, and the check that a prediction is a loss at all.

A fit records its training range (:func:`~bayescpt.curves.data.table.training_range`, saved in
the fit's attrs as the JSON ``train_range``)::

    lr_min, lr_max   smallest and largest peak learning rate of the fitted runs (raw units)
    max_steps        the longest fitted run, in optimizer steps
    max_s1           the largest forward area S1 of a fitted run at its last step,
                     S1(t) = sum_{i=1..t} eta_i (raw learning rate x steps; warmup included)
    sizes            the fitted model sizes (non-embedding parameters), ascending; [] without sizes

Fit files written before the range was stored give only what their index tables hold: the model
sizes (``groups``); the rest is ``None`` ("unknown") and is not checked.

:func:`check_extrapolation` compares every predicted run (rows with step >= 1) with that range and
returns one :class:`ExtrapolationWarning` per quantity that leaves it, with ``factor`` = how many
times beyond the nearest bound (value / max above it, min / value below it; ``inf`` for a peak LR
of zero). Model sizes also give the log-distance beyond the nearest fitted size in units of the
fitted log-size range, ln(N / N_max) / ln(N_max / N_min) (``inf`` with one fitted size).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from bayescpt.core.schedules import Schedule
from bayescpt.core.tables import DataError
from bayescpt.curves.data.table import s1_end

__all__ = [
    "ExtrapolationWarning",
    "RangeUnknownWarning",
    "ImpossiblePrediction",
    "unknown_note",
    "range_of_fit",
    "check_extrapolation",
    "range_warnings",
    "check_possible",
]

#: relative slack before a value counts as outside the range (float noise in areas and LRs)
RTOL = 1e-6
QUANTITIES = {
    "lr": "peak LR",
    "steps": "length",
    "s1": "forward area S1",
    "model_size": "model size",
}


class ExtrapolationWarning(UserWarning):
    """A predicted run leaves the fit's training range in one quantity.

    ``run`` (str), ``quantity`` ('lr', 'steps', 's1', 'model_size'), ``value`` (the run's),
    ``low``/``high`` (the fitted range), ``factor`` (>= 1, times beyond the nearest bound), for
    model sizes ``size_ranges`` (log-distance in fitted log-size ranges), and ``label``: what the
    line names instead of ``run RUN`` (the planner's sets of plans). ``str()`` is one line.
    """

    def __init__(self, run, quantity, value, low, high, factor, size_ranges=None, label=None):
        self.run, self.quantity, self.value = run, quantity, value
        self.low, self.high, self.factor, self.size_ranges = low, high, factor, size_ranges
        self.label = label  # what the line names instead of "run RUN" (e.g. a set of plans)
        super().__init__(self.describe())

    def _fields(self, label) -> tuple:
        """The constructor's arguments of this finding, its line naming ``label``."""
        fields = (self.run, self.quantity, self.value, self.low, self.high, self.factor)
        return (*fields, self.size_ranges, label)

    def __reduce__(self):  # copies (pandas attrs, pickling) rebuild it from its fields
        return (type(self), self._fields(self.label))

    def relabelled(self, label: str) -> ExtrapolationWarning:
        """The same finding, its line naming ``label`` instead of the run."""
        return type(self)(*self._fields(label))

    def short(self) -> str:
        """A few words for a table cell: quantity, value, the bound crossed and the factor."""
        above = self.value > self.high
        times = "inf" if not np.isfinite(self.factor) else f"{self.factor:.3g}"
        return (
            f"{QUANTITIES[self.quantity]} {self.value:.3g} {'>' if above else '<'} "
            f"{self.high if above else self.low:.3g} ({times}x)"
        )

    def describe(self) -> str:
        what = QUANTITIES[self.quantity]
        unit = " steps" if self.quantity == "steps" else ""
        above = self.value > self.high
        bound = self.high if above else self.low
        word = ("largest" if above else "smallest") + (
            " fitted" if self.quantity == "model_size" else " training"
        )
        noun = {"lr": "peak LR", "steps": "run", "s1": "S1", "model_size": "size"}[self.quantity]
        times = "inf" if not np.isfinite(self.factor) else f"{self.factor:.3g}"
        rel = f"{times}x the" if above else f"1/{times} of the"
        head = f"run {self.run}" if self.label is None else self.label
        line = f"{head}: {what} {self.value:.3g}{unit} is {rel} {word} {noun} {bound:.3g}{unit}"
        if self.size_ranges is not None:
            line += (
                " (the fit saw one size)"
                if not np.isfinite(self.size_ranges)
                else f" ({self.size_ranges:.2g} fitted log-size ranges beyond)"
            )
        line += ": extrapolation"
        if self.quantity == "steps" and above:
            # issue 16 (benchmarks/RESULTS.md, "Calibration on independent sets"): the laws'
            # misses on public ladders are biases on runs longer than every fitted one, which no
            # calibration learned from the training runs saw
            line += (
                "; the band assumes the law holds past the longest training run, which "
                "these runs do not test"
            )
        return line

    def as_dict(self) -> dict:
        return {
            "run": self.run,
            "quantity": self.quantity,
            "value": self.value,
            "low": self.low,
            "high": self.high,
            "factor": self.factor,
            "size_ranges": self.size_ranges,
        }


class RangeUnknownWarning(UserWarning):
    """The fit file does not record part of its training range (written before it was stored):
    those quantities are not checked."""


class ImpossiblePrediction(DataError):
    """A predicted loss (mean, median or an interval bound) that is not a finite positive number."""


def range_of_fit(fit) -> dict:
    """The training range a fit records (``meta['train_range']``), or for older files the part
    its index tables give (model sizes from ``groups``; None = unknown)."""
    raw = fit.meta.get("train_range")
    if raw is not None:
        return json.loads(raw) if isinstance(raw, str) else dict(raw)
    sizes = fit.groups["size"].dropna() if "size" in fit.groups.columns else pd.Series([])
    return {
        "lr_min": None,
        "lr_max": None,
        "max_steps": None,
        "max_s1": None,
        "sizes": sorted(float(s) for s in sizes.unique()),
    }


def unknown_note(rng: dict) -> str | None:
    """One line naming the quantities ``rng`` does not know (None when it knows them all)."""
    names = {"lr_max": "peak LRs", "max_steps": "run lengths", "max_s1": "forward areas S1"}
    missing = [text for key, text in names.items() if rng.get(key) is None]
    if not missing:
        return None
    return (
        f"the fit file does not record the {', '.join(missing)} it was trained on (written "
        "before the training range was stored): unknown, so not checked for extrapolation"
    )


def _beyond(run, quantity, value, low, high, **extra):
    if low is None or high is None:
        return None
    if value > high * (1 + RTOL):
        return ExtrapolationWarning(run, quantity, value, low, high, value / high, **extra)
    if value < low * (1 - RTOL):
        factor = low / value if value > 0 else float("inf")
        return ExtrapolationWarning(run, quantity, value, low, high, factor, **extra)
    return None


def check_extrapolation(
    rng: dict, df: pd.DataFrame, schedules: dict[str, Schedule]
) -> list[ExtrapolationWarning]:
    """One warning per (predicted run, quantity) outside the training range ``rng``.

    ``df`` is the validated table to predict; each run is judged on its rows with step >= 1
    (its last such step for the length and S1).
    """
    out = []
    sizes = rng.get("sizes") or []
    rows = df[df["step"] >= 1]
    for run, g in rows.groupby("run", sort=False):
        sched, last = schedules[run], int(g["step"].max())
        found = [
            _beyond(run, "lr", sched.peak, rng.get("lr_min"), rng.get("lr_max")),
            _beyond(run, "steps", last, 0, rng.get("max_steps")),
            _beyond(run, "s1", s1_end(sched, last), 0, rng.get("max_s1")),
        ]
        if sizes and "model_size" in g.columns and g["model_size"].notna().any():
            size = float(g["model_size"].dropna().iloc[0])
            lo, hi = sizes[0], sizes[-1]
            span = np.log(hi / lo)
            edge = hi if size > hi else lo
            dist = abs(np.log(size / edge)) / span if span > 0 else float("inf")
            found.append(_beyond(run, "model_size", size, lo, hi, size_ranges=dist))
        out += [w for w in found if w is not None]
    return out


def range_warnings(note: str | None, found: list) -> list:
    """The warnings of a prediction's range, in the order they are told (by ``predict`` and by
    the planner): the part of the range the fit does not record (``note``, from
    :func:`unknown_note`, as a :class:`RangeUnknownWarning`; none when None), then each
    :class:`ExtrapolationWarning` of ``found``."""
    return ([RangeUnknownWarning(note)] if note is not None else []) + list(found)


def check_possible(res: pd.DataFrame, columns) -> None:
    """Raise :class:`ImpossiblePrediction` naming the run and step of the first row whose
    predicted loss (any of ``columns``) is not finite and positive; NaN rows left empty on
    purpose (warmup) are passed over by the caller."""
    vals = res[list(columns)].to_numpy(dtype=float)
    bad = ~np.isfinite(vals) | (vals <= 0)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        row = res.iloc[i]
        where = f"val_set {row['val_set']!r}, " if "val_set" in res.columns else ""
        raise ImpossiblePrediction(
            f"run {row['run']!r}, {where}step {int(row['step'])}: predicted {columns[j]} loss "
            f"{vals[i, j]:.4g} is not a finite positive number of nats; the schedule is outside "
            "what the law can describe (see the extrapolation warnings)"
        )
