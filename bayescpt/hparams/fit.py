"""The stage-1 fit: the hyperparameter model of :mod:`bayescpt.hparams.model` sampled with NUTS,
saved and reloaded as a :class:`~bayescpt.core.fitfile.FitBase` fit file (law ``"hparams"``).

Its own attrs: ``cells`` (the cell table, JSON records: group, model_size, tokens, best_lr,
best_batch_size, best_loss, ...) and ``refs`` (the centring constants ln N_ref, ln D_ref, ln L_ref).
"""

from __future__ import annotations

import copy
import json
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from bayescpt import __version__
from bayescpt.core.fit_template import Recipe, SampledFit
from bayescpt.core.fitfile import FORMAT, as_table
from bayescpt.core.modelcache import fingerprint
from bayescpt.core.priorcheck import model_priors
from bayescpt.core.priorspec import priors_json
from bayescpt.hparams.data import grid_hash, read_any_grid
from bayescpt.hparams.laws import Refs
from bayescpt.hparams.model import (
    CELL_VARS,
    EXPONENTS,
    LAW,
    LAW_VARS,
    SHAPE_VARS,
    build_model,
    make_config,
)

__all__ = ["HparamsFit", "quick_fit"]


class HparamsRecipe(Recipe):
    """The hparams family's part of a fit (:class:`~bayescpt.core.fit_template.Recipe`): its
    config, the model of the grid with its cell table and centring refs, the fit's meta."""

    def __init__(self, cls, df: pd.DataFrame, config: dict | None = None):
        self.cls, self.df = cls, df
        self.config = make_config(config)

    def prepare(self) -> None:
        self.key = fingerprint(
            "hparams", {k: v for k, v in self.config.items() if k != "sampler"}, self.df
        )

    def build(self):
        return build_model(self.df, self.config)

    def model(self, value):
        model, ct, refs = value
        self.ct, self.refs = ct.copy(), copy.deepcopy(refs)  # the fit's own: the entry stays
        return model

    def judge(self, idata):
        return self.cls(idata, self.config, self.ct, self.refs).diagnostics()

    def sampled(self, idata, model, s: dict) -> None:
        self.priors = priors_json(model_priors(model))

    def fit(self, idata, seconds: float):
        meta = {
            "format": FORMAT,
            "law": LAW,
            "bayescpt_version": __version__,
            "data_hash": grid_hash(self.df),
            "fit_seconds": round(seconds, 3),
            "priors": self.priors,
        }
        self.fitted = self.cls(idata, self.config, self.ct, self.refs, meta)
        return self.fitted

    def labels(self) -> dict:
        return self.fitted.observation_labels(self.df)


@dataclass
class HparamsFit(SampledFit):
    """A sampled stage-1 model: InferenceData, its config, cell table and centring refs.
    :meth:`run` (``config``) fits a validated grid (see :mod:`.data`)."""

    idata: object
    config: dict
    cells: pd.DataFrame
    refs: Refs
    meta: dict = field(default_factory=dict)

    laws = (LAW,)
    recipe = HparamsRecipe
    table_hash = staticmethod(grid_hash)
    own_keys = ("cells", "refs")
    tables = {"cells": "cell"}
    read_table = staticmethod(read_any_grid)

    @classmethod
    def check_sweep_config(cls, law, law_options: dict, config: dict) -> None:
        make_config(config or None)

    def param_vars(self) -> list[str]:
        """The law, shape and cell parameters of the fitted optimum law (its own exponents)."""
        law = self.config["optimum_law"]
        names = [v for v in LAW_VARS + SHAPE_VARS + CELL_VARS if v in self.idata.posterior]
        return [v for v in names if v not in EXPONENTS["size_tokens"]] + EXPONENTS[law]

    def _own_attrs(self) -> dict:
        return {
            "refs": json.dumps(
                {"ln_n": self.refs.ln_n, "ln_d": self.refs.ln_d, "ln_l": self.refs.ln_l}
            )
        }

    def _labels(self) -> dict:
        c = self.cells
        return {
            "cell": {
                "model_size": c["model_size"].astype(float).to_numpy(),
                "tokens": c["tokens"].astype(float).to_numpy(),
            }
        }

    def label_observations(self, df: pd.DataFrame) -> None:
        """Label the ``run`` dimension of the observed losses (:meth:`observation_labels`)."""
        self.label(self.observation_labels(df))

    def observation_labels(self, df: pd.DataFrame) -> dict:
        """The ``run`` dimension's labels (model_size, tokens, lr, batch_size of each run) from
        the grid the fit was made of (validated, same order); a ValueError for another grid."""
        y = self.idata.observed_data["loss"].values
        if len(df) != len(y) or not np.allclose(df["loss"].to_numpy(), y, rtol=0, atol=1e-12):
            raise ValueError(f"the grid's {len(df)} runs are not the fit's {len(y)} observations")
        return {
            "run": {
                k: df[k].astype(float).to_numpy()
                for k in ("model_size", "tokens", "lr", "batch_size")
            }
        }

    @classmethod
    def _from_attrs(cls, idata, attrs: dict) -> HparamsFit:
        cfg = json.loads(attrs["config"])
        ct = as_table(attrs["cells"], orient="records")
        refs = Refs(**json.loads(attrs["refs"]))
        return cls(idata, cfg, ct, refs, cls._meta_of(attrs))


def quick_fit(df, **kw) -> HparamsFit:
    """A fit with warnings silenced (diagnostics still computed by the caller)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return HparamsFit.run(df, warn=False, **kw)
