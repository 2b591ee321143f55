"""Prior checks: what a law's priors say about a table's curves before any fitting.

:func:`prior_check` builds the same hierarchical model :func:`bayescpt.curves.model.fit.Fit.run`
would build for the table (:func:`bayescpt.curves.model.hierarchy.build_model`) and draws from its
prior and prior predictive (``pm.sample_prior_predictive``): an ArviZ InferenceData with the
groups ``prior`` (every parameter of the hierarchy), ``prior_predictive`` (``y``, the log loss at
every observed point) and ``observed_data``. :func:`prior_ranges` gives each law parameter's central
prior interval (over draws and groups), :func:`prior_band` the prior predictive band of the loss at
every point, which :func:`bayescpt.curves.evaluate.plots.plot_prior_check` draws under the data.
:func:`prior_predictive_idata` is what ``Fit.run(prior_predictive=N)`` adds to a fit.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import pandas as pd

from bayescpt.curves.model.config import make_config
from bayescpt.curves.model.hierarchy import Prepared, build_model, prepare
from bayescpt.curves.model.laws import get_law
from bayescpt.curves.model.laws.base import Law

DEFAULT_PRIOR_DRAWS = 500


@dataclass
class PriorCheck:
    """The prior of ``law`` on a table: ``idata`` (prior, prior_predictive, observed_data),
    ``points`` (one row per observed loss: run, val_set, step, loss, curve, group; the order
    of the ``obs`` dimension) and the ``config`` the model was built with."""

    idata: object
    points: pd.DataFrame
    law: Law
    config: dict


def prior_predictive_idata(model, draws: int = DEFAULT_PRIOR_DRAWS, seed: int = 0):
    """``prior`` and ``prior_predictive`` (and ``observed_data``) of a built model: ``draws``
    draws, one chain, reproducible by ``seed``."""
    import pymc as pm

    if int(draws) < 1:
        raise ValueError(f"draws {draws!r}; expected a whole number >= 1")
    log = logging.getLogger("pymc")  # its "Sampling: [every variable]" line: noise here
    level = log.level
    log.setLevel(logging.WARNING)
    try:
        return pm.sample_prior_predictive(draws=int(draws), model=model, random_seed=int(seed))
    finally:
        log.setLevel(level)


def prior_check(
    df: pd.DataFrame,
    law: str = "annealing",
    law_options: dict | None = None,
    config: dict | None = None,
    draws: int = DEFAULT_PRIOR_DRAWS,
    seed: int = 0,
) -> PriorCheck:
    """Draw the prior and prior predictive of ``law``'s hierarchical model on the validated
    table ``df`` (the loss rows the fit would use; warmup rows left out as there) without
    fitting. ``config`` overrides the priors as for a fit. Returns a :class:`PriorCheck`."""
    law_obj = get_law(law, **(law_options or {}))
    cfg = make_config(law_obj, config)
    df_law, _ = law_obj.split_data(df)  # the cpt law's 'other' sets are fitted apart
    prep: Prepared = prepare(df_law, law_obj, cfg["settings"])
    idata = prior_predictive_idata(build_model(law_obj, prep, cfg), draws, seed)
    return PriorCheck(idata, prep.points, law_obj, cfg)


def prior_ranges(check: PriorCheck, prob: float = 0.9) -> pd.DataFrame:
    """One row per law parameter: its central ``prob`` prior interval and median on the natural
    scale, over all draws and groups (columns param, lower, median, upper)."""
    if not 0 < prob < 1:
        raise ValueError(f"prob={prob}; expected a probability strictly between 0 and 1")
    prior = check.idata.prior
    rows = []
    for p in check.law.params:
        v = np.asarray(prior[p.name].values, dtype=float).ravel()
        lo, med, hi = np.quantile(v, [(1 - prob) / 2, 0.5, (1 + prob) / 2])
        rows.append({"param": p.name, "lower": lo, "median": med, "upper": hi})
    return pd.DataFrame(rows)


def prior_band(check: PriorCheck, prob: float = 0.9) -> pd.DataFrame:
    """``check.points`` plus the prior predictive loss's median and central ``prob`` band
    (``lower``, ``upper``), a 50 % band (``lower50``, ``upper50``) and ``inside`` (the observed
    loss lies in the ``prob`` band)."""
    if not 0 < prob < 1:
        raise ValueError(f"prob={prob}; expected a probability strictly between 0 and 1")
    y = check.idata.prior_predictive["y"]
    y = np.asarray(y.stack(sample=("chain", "draw")).transpose("sample", ...).values)
    q = np.quantile(y, [(1 - prob) / 2, 0.25, 0.5, 0.75, (1 + prob) / 2], axis=0)
    out = check.points.copy()
    with np.errstate(over="ignore"):
        for name, row in zip(("lower", "lower50", "median", "upper50", "upper"), np.exp(q)):
            out[name] = row
    out["inside"] = (out["loss"] >= out["lower"]) & (out["loss"] <= out["upper"])
    return out
