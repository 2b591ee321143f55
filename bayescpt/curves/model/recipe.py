"""The loss-curve family's recipe: what a :class:`~bayescpt.curves.model.fit.Fit` adds to the
shared fitting template (:class:`~bayescpt.core.fit_template.Recipe`).

:class:`CurvesRecipe` prepares the table for the law, builds the hierarchical model, makes the Fit
with its meta (:func:`fit_meta`) and schedule level, and labels its ``obs`` dimension
(:func:`obs_labels`).
"""

from __future__ import annotations

import json

import pandas as pd

from bayescpt import __version__
from bayescpt.core.fit_template import Recipe
from bayescpt.core.fitfile import FORMAT
from bayescpt.core.modelcache import fingerprint
from bayescpt.core.priorspec import priors_json
from bayescpt.core.sampling import one_blas_thread
from bayescpt.core.tables import data_hash
from bayescpt.curves.data.table import schedules_of, training_range
from bayescpt.curves.model.config import make_config, node_priors
from bayescpt.curves.model.hierarchy import Prepared, build_model, is_multi_size, prepare
from bayescpt.curves.model.laws import get_law
from bayescpt.curves.model.laws.base import Law
from bayescpt.curves.model.other_sets import add_to_posterior, fit_other
from bayescpt.curves.model.priors import prior_predictive_idata


class CurvesRecipe(Recipe):
    """The loss-curve family's part of a fit (:class:`~bayescpt.core.fit_template.Recipe`): the
    law and its config; the table prepared for the law (a cpt law's 'other' validation sets
    split off, fitted after the sampling); the hierarchical model; the Fit with its meta and
    schedule level; the ``obs`` labels.

    ``prior_predictive`` > 0: also draw that many prior and prior predictive draws of the same
    model (groups ``prior``, ``prior_predictive``; :mod:`bayescpt.curves.model.priors`).
    """

    other = None

    def __init__(
        self,
        cls,
        df: pd.DataFrame,
        law: str = "annealing",
        law_options: dict | None = None,
        config: dict | None = None,
        prior_predictive: int = 0,
    ):
        self.cls, self.df, self.prior_predictive = cls, df, prior_predictive
        self.law = get_law(law, **(law_options or {}))
        self.law_options = law_options or {}
        self.config = make_config(self.law, config)

    @classmethod
    def of(cls, fit_cls, df, law: Law, law_options: dict, config: dict, prep: Prepared):
        """A recipe of a model prepared already (:class:`CompiledFit`)."""
        recipe = cls.__new__(cls)
        recipe.cls, recipe.df, recipe.prior_predictive = fit_cls, df, 0
        recipe.law, recipe.law_options, recipe.config, recipe.prep = law, law_options, config, prep
        return recipe

    def prepare(self) -> None:
        df_law, self.other = self.law.split_data(self.df)  # e.g. the cpt law's 'other' sets
        self.prep = prepare(df_law, self.law, self.config["settings"])
        self.key = fingerprint(
            "curves",
            [type(self.law), self.law_options],
            {k: v for k, v in self.config.items() if k != "sampler"},
            df_law,
        )

    def build(self):
        return build_model(self.law, self.prep, self.config)

    def _fit_of(self, idata, meta: dict | None = None):
        p = self.prep
        return self.cls(
            idata,
            self.law,
            self.config,
            p.groups,
            p.curves,
            p.size_ref,
            {} if meta is None else meta,
        )

    def judge(self, idata):
        return self._fit_of(idata).diagnostics(prior_check=False)

    def sampled(self, idata, model, s: dict) -> None:
        if self.prior_predictive:
            idata.extend(prior_predictive_idata(model, self.prior_predictive, seed=s["seed"]))

    def fit(self, idata, seconds: float):
        meta = fit_meta(self.law, self.law_options, self.df, self.prep, seconds, self.config)
        if self.other is not None:
            post = idata.posterior
            with one_blas_thread():  # same numbers on any machine (core.sampling)
                arrays, summary = fit_other(
                    self.df,
                    self.other,
                    post.sizes["chain"],
                    post.sizes["draw"],
                    seed=self.config["sampler"]["seed"],
                )
            add_to_posterior(idata, arrays, summary)
            meta["other_sets"] = json.dumps(summary)
        fit = self._fit_of(idata, meta)
        fit._add_schedule_level(self.prep)
        return fit

    def labels(self) -> dict:
        return obs_labels(self.prep.points)


def obs_labels(points: pd.DataFrame) -> dict:
    """The ``obs`` dimension's labels: run, val_set, step of each observed loss."""
    return {
        "obs": {
            "run": points["run"].astype(str).to_numpy(),
            "val_set": points["val_set"].astype(str).to_numpy(),
            "step": points["step"].to_numpy(),
        }
    }


def fit_meta(
    law: Law, law_options, df: pd.DataFrame, prep: Prepared, seconds: float, config: dict
) -> dict:
    """What a fit file records about where it came from, with the training range the
    extrapolation warnings compare predictions with (:func:`training_range`, JSON) and the
    prior of every top-level model variable (:func:`node_priors`, JSON of ``Prior`` dicts)."""
    priors = node_priors(law, config, len(prep.groups), is_multi_size(prep.groups))
    return {
        "format": FORMAT,
        "law": law.name,
        "law_options": law_options or {},
        "bayescpt_version": __version__,
        "data_hash": data_hash(df),
        "n_points": int(len(prep.points)),
        "fit_seconds": round(seconds, 3),
        "train_range": json.dumps(training_range(df, schedules_of(df))),
        "priors": priors_json(priors),
    }
