"""The stage-1 fit: the hyperparameter model of :mod:`bayescpt.hparams.model` sampled with NUTS,
saved and reloaded as a :class:`~bayescpt.core.fitfile.FitBase` fit file (law ``"hparams"``).

Its own attrs: ``cells`` (the cell table, JSON records: group, model_size, tokens, best_lr,
best_batch_size, best_loss, ...) and ``refs`` (the centring constants ln N_ref, ln D_ref, ln L_ref).
"""

from __future__ import annotations

import copy
import json
import time
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from bayescpt import __version__
from bayescpt.core.diagnostics import warn_if_bad
from bayescpt.core.fitfile import FORMAT, FitBase, as_table
from bayescpt.core.modelcache import cached, fingerprint
from bayescpt.core.priorcheck import model_priors
from bayescpt.core.priorspec import priors_json
from bayescpt.core.sampling import resolve_settings, sample_model
from bayescpt.hparams.data import grid_hash
from bayescpt.hparams.model import (
    CELL_VARS,
    EXPONENTS,
    LAW,
    LAW_VARS,
    SHAPE_VARS,
    Refs,
    build_model,
    make_config,
)

__all__ = ["HparamsFit", "quick_fit"]


@dataclass
class HparamsFit(FitBase, laws=(LAW,)):
    """A sampled stage-1 model: InferenceData, its config, cell table and centring refs."""

    idata: object
    config: dict
    cells: pd.DataFrame
    refs: Refs
    meta: dict = field(default_factory=dict)

    own_keys = ("cells", "refs")
    tables = {"cells": "cell"}

    @classmethod
    def run(cls, df: pd.DataFrame, config: dict | None = None, sampler: str = "auto",
            chains: int | None = None, draws: int | None = None, tune: int | None = None,
            seed: int | None = None, target_accept: float | None = None, init: str | None = None,
            progress: bool = False, cores: int | None = None,
            warn: bool = True) -> "HparamsFit":
        """Fit the grid ``df`` (validated, see :mod:`.data`) with NUTS; diagnostics warned."""
        cfg = make_config(config)
        s = resolve_settings(cfg.get("sampler"), sampler, chains=chains, draws=draws, tune=tune,
                             seed=seed, target_accept=target_accept, init=init)
        cfg["sampler"] = s
        key = fingerprint("hparams", {k: v for k, v in cfg.items() if k != "sampler"}, df)
        t0 = time.perf_counter()
        with cached(key, lambda: build_model(df, cfg)) as entry:
            model, ct, refs = entry.value
            ct, refs = ct.copy(), copy.deepcopy(refs)   # the fit's own: the entry stays as built
            idata = sample_model(model, s, progress=progress, cores=cores,
                                 judge=lambda i: cls(i, cfg, ct, refs).diagnostics(),
                                 compiled=entry.compiled)
            meta = {"format": FORMAT, "law": LAW, "bayescpt_version": __version__,
                    "data_hash": grid_hash(df), "fit_seconds": round(time.perf_counter() - t0, 3),
                    "priors": priors_json(model_priors(model))}
        fit = cls(idata, cfg, ct, refs, meta)
        fit._write_attrs()
        fit.label_observations(df)
        if warn:
            warn_if_bad(fit.diagnostics())
        return fit

    def param_vars(self) -> list[str]:
        """The law, shape and cell parameters of the fitted optimum law (its own exponents)."""
        law = self.config["optimum_law"]
        names = [v for v in LAW_VARS + SHAPE_VARS + CELL_VARS if v in self.idata.posterior]
        return [v for v in names if v not in EXPONENTS["size_tokens"]] + EXPONENTS[law]

    def _own_attrs(self) -> dict:
        return {"refs": json.dumps({"ln_n": self.refs.ln_n, "ln_d": self.refs.ln_d,
                                    "ln_l": self.refs.ln_l})}

    def _labels(self) -> dict:
        c = self.cells
        return {"cell": {"model_size": c["model_size"].astype(float).to_numpy(),
                         "tokens": c["tokens"].astype(float).to_numpy()}}

    def label_observations(self, df: pd.DataFrame) -> None:
        """Label the ``run`` dimension of the observed losses (model_size, tokens, lr,
        batch_size of each run) from the grid the fit was made of (validated, same order)."""
        y = self.idata.observed_data["loss"].values
        if len(df) != len(y) or not np.allclose(df["loss"].to_numpy(), y, rtol=0, atol=1e-12):
            raise ValueError(f"the grid's {len(df)} runs are not the fit's {len(y)} observations")
        self.label({"run": {k: df[k].astype(float).to_numpy()
                            for k in ("model_size", "tokens", "lr", "batch_size")}})

    @classmethod
    def _from_attrs(cls, idata, attrs: dict) -> "HparamsFit":
        cfg = json.loads(attrs["config"])
        ct = as_table(attrs["cells"], orient="records")
        refs = Refs(**json.loads(attrs["refs"]))
        return cls(idata, cfg, ct, refs, cls._meta_of(attrs))


def quick_fit(df, **kw) -> HparamsFit:
    """A fit with warnings silenced (diagnostics still computed by the caller)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return HparamsFit.run(df, warn=False, **kw)
