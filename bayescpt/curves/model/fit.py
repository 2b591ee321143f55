"""The Fit: build a law's hierarchical model on a data table, sample it with NUTS, store and reload.

A Fit is an ArviZ InferenceData (posterior, sample_stats, observed_data, log_likelihood,
constant_data) whose posterior ``attrs`` carry what is needed to rebuild the same model and to
predict (the law and its options, the prior/structure config, the package version, a hash of the
data, the sampler settings) and whose ``constant_data`` holds the group and curve index tables
(dims ``group``, ``curve``). Dimensions are labelled: ``group`` by ``val_set`` and ``model_size``,
``obs`` by ``run``, ``val_set`` and ``step`` (:mod:`bayescpt.core.fitfile`). It is saved as one
NetCDF file.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from bayescpt.core.fit_template import SampledFit, SamplerSettings, finish
from bayescpt.core.fitfile import as_table
from bayescpt.core.mixing import run_longer
from bayescpt.core.modelcache import cached
from bayescpt.core.sampling import (
    compile_nutpie,
    find_starts,
    one_blas_thread,
    resolve_settings,
    sample_compiled,
)
from bayescpt.curves.data.table import NOISE_SCALE
from bayescpt.curves.data.thinning import thin_for_fit
from bayescpt.curves.data.validate import read_curves
from bayescpt.curves.model.config import make_config, node_priors
from bayescpt.curves.model.hierarchy import Prepared, build_model, is_multi_size, prepare
from bayescpt.curves.model.laws import LAWS, get_law
from bayescpt.curves.model.laws.base import Law
from bayescpt.curves.model.laws.registry import law_class, resolve_law_options
from bayescpt.curves.model.recipe import CurvesRecipe, obs_labels
from bayescpt.curves.model.schedule_level import ScheduleLevel, schedule_level

__all__ = ["Fit", "CompiledFit"]


@dataclass
class Fit(SampledFit):
    """A sampled law: ``idata`` plus the law, config and index tables rebuilt from its attrs.

    ``groups`` (val_set, size, label, x): one row per validation set x model size;
    ``curves``: one row per (run, val_set); ``size_ref``: (mean, sd) of ln model size.
    :meth:`run` (``law``, ``law_options``, ``config``, ``prior_predictive``: see
    :class:`CurvesRecipe`) fits a validated table.
    """

    laws = tuple(LAWS)
    recipe = CurvesRecipe
    own_keys = ("law_options", "groups", "curves", "size_ref")
    tables = {"groups": "group", "curves": "curve"}

    idata: object
    law: Law
    config: dict
    groups: pd.DataFrame
    curves: pd.DataFrame
    size_ref: tuple
    meta: dict = field(default_factory=dict)

    # -- how a sweep fits a curves entry ---------------------------------------------------------
    read_table = staticmethod(read_curves)

    @classmethod
    def sweep_options(cls, law, options: dict, table) -> dict:
        """The given options checked, the rest resolved from the table as thinned by default."""
        df, _ = thin_for_fit(table)
        return resolve_law_options(law, df, options)

    @classmethod
    def check_sweep_config(cls, law, law_options: dict, config: dict) -> None:
        make_config(get_law(law, **law_options), config)

    @classmethod
    def sweep_fit(cls, path, law, options: dict, config: dict, settings: SamplerSettings) -> tuple:
        """As ``bayescpt fit`` fits it (long curves thinned by default, law options resolved
        from the data); with nutpie from the mode, and no 'other' sets, through a
        :class:`CompiledFit` this process keeps for tables of the same shape."""
        df, _ = thin_for_fit(read_curves(path))
        law_options = resolve_law_options(law, df, options)
        _, other = get_law(law, **law_options).split_data(df)
        if settings.sampler != "nutpie" or other is not None or (settings.init or "map") != "map":
            return cls.run(
                df, sampling=settings, law=law, law_options=law_options, config=config or None
            ), None
        given = {
            k: getattr(settings, k)
            for k in ("chains", "draws", "tune", "target_accept", "init")
            if getattr(settings, k) is not None
        }
        key = _shape_key(law, df, law_options, config, given)
        with cached(
            "sweep-shape:" + key,
            lambda: CompiledFit(df, law=law, config=config, law_options=law_options, **given),
        ) as entry:
            fit = entry.value.fit(df, seed=settings.seed, log_likelihood=True, cores=settings.cores)
            return fit, entry.fresh

    def _add_schedule_level(self, prep: Prepared) -> None:
        """Measure what the fit learned about its schedule level on its training curves
        (:func:`schedule_level`) and keep it in ``meta`` (saved with the fit)."""
        lvl = schedule_level(self, prep, seed=int(self.config["sampler"].get("seed") or 0))
        if lvl is not None:
            self.meta["schedule_level"] = lvl.to_json()

    @property
    def schedule_level(self) -> ScheduleLevel | None:
        """What the fit learned about how far a new schedule departs from its model size's curve
        (:mod:`bayescpt.curves.model.schedule_level`); None for a law without a schedule level or a
        fit stored before it was measured."""
        text = self.meta.get("schedule_level")
        return ScheduleLevel.from_json(text) if text else None

    # -------------------------------------------------------------------------------------------
    def param_vars(self) -> list[str]:
        """Names of the scalar and per-group parameters worth summarising."""
        post = self.idata.posterior
        keep = []
        for name in post.data_vars:
            dims = set(post[name].dims) - {"chain", "draw"}
            if name.endswith(("_u", "_w", "_z", "__")) or dims & {"curve", "schedule", "obs"}:
                continue
            keep.append(name)
        return keep

    def derived_names(self) -> tuple:
        return tuple(getattr(self.law, "derived_names", ()))

    @property
    def priors(self) -> dict:
        """The prior of every top-level model variable, ``{name: pymc_extras Prior}``, as the
        fit was sampled with (files written before the attr: rebuilt from the saved config)."""
        stored = super().priors
        if stored is not None:
            return stored
        post = self.idata.posterior
        G = post.sizes.get("group", len(self.groups))
        return node_priors(
            self.law, make_config(self.law, _known(self.config)), G, is_multi_size(self.groups)
        )

    # -------------------------------------------------------------------------------------------
    def _own_attrs(self) -> dict:
        return {
            "law_options": json.dumps(self.meta.get("law_options") or {}),
            "size_ref": json.dumps(list(self.size_ref)),
        }

    def _labels(self) -> dict:
        g, c = self.groups, self.curves
        return {
            "group": {
                "val_set": g["val_set"].astype(str).to_numpy(),
                "model_size": g["size"].astype(float).to_numpy(),
            },
            "curve": {"run": c["run"].astype(str).to_numpy()},
        }

    def label_observations(self, df: pd.DataFrame) -> None:
        """Label the ``obs`` dimension (run, val_set, step) of a fit read from a file written
        before the labelled layout, from the table it was fitted to (``df``, validated). Raises
        ValueError when ``df`` does not give the fit's observations (same losses, same order)."""
        df_law, _ = self.law.split_data(df)
        prep = prepare(
            df_law,
            self.law,
            json.loads(json.dumps(self.config["settings"])),
            size_ref=self.size_ref,
        )
        y = self.idata.observed_data["y"].values
        if len(prep.points) != len(y) or not np.allclose(prep.y, y, rtol=0, atol=1e-12):
            raise ValueError(
                f"the table's {len(prep.points)} losses are not the fit's {len(y)} observations"
            )
        self.label(obs_labels(prep.points))

    @classmethod
    def _from_attrs(cls, idata, attrs: dict) -> Fit:
        law_opts = (
            json.loads(attrs["law_options"])
            if isinstance(attrs["law_options"], str)
            else attrs["law_options"]
        )
        # a file written before one of the law's options existed: what it was fitted with
        law_opts = law_class(attrs["law"]).stored_options(law_opts or {}, idata.posterior)
        law_obj = get_law(attrs["law"], **law_opts)
        config = json.loads(attrs["config"])
        groups = as_table(attrs["groups"])
        curves = as_table(attrs["curves"])
        meta = cls._meta_of(attrs)
        meta["law_options"] = law_opts
        return cls(
            idata, law_obj, config, groups, curves, tuple(json.loads(attrs["size_ref"])), meta
        )


class CompiledFit:
    """Compile a law's model once (nutpie), then fit many loss tables of the same shape.

    For simulation studies, bootstraps, seed sweeps and warm timings: tables must have the same
    runs, steps and groups as ``template`` (only the losses differ). Each call of :meth:`fit`
    returns a Fit, with the same draws as :meth:`Fit.run` of that table with the same settings.
    """

    def __init__(
        self,
        template: pd.DataFrame,
        law: str = "annealing",
        config: dict | None = None,
        law_options: dict | None = None,
        **sampler,
    ):

        self.law = get_law(law, **(law_options or {}))
        self.law_options = law_options or {}
        self.config = make_config(self.law, config)
        self.settings = resolve_settings(self.config.get("sampler"), "nutpie", **sampler)
        self.config["sampler"] = self.settings
        self.prep = prepare(template, self.law, self.config["settings"])
        self.model = build_model(self.law, self.prep, self.config)
        t0 = time.perf_counter()
        self.compiled = compile_nutpie(self.model)  # fastmath off: same draws fresh or cached
        self.compile_seconds = time.perf_counter() - t0

    def fit(
        self,
        df: pd.DataFrame,
        seed: int | None = None,
        warn: bool = False,
        log_likelihood: bool = False,
        cores: int | None = None,
    ) -> Fit:
        """Fit the table ``df`` (the template's runs and steps, other losses) with the compiled
        model; the same draws as :meth:`Fit.run` with the same settings and seed.
        ``log_likelihood``: also store the pointwise log likelihood (for LOO; costs time);
        ``cores``: threads for the chains (default: one per chain, up to the machine's cores)."""
        import pymc as pm

        prep = prepare(df, self.law, self.config["settings"], size_ref=self.prep.size_ref)
        if len(prep.points) != len(self.prep.points) or not np.array_equal(
            prep.points["step"].to_numpy(), self.prep.points["step"].to_numpy()
        ):
            raise ValueError("the table does not have the template's runs and steps")
        scaled = NOISE_SCALE in self.prep.points.columns
        if scaled != (NOISE_SCALE in prep.points.columns):
            raise ValueError(
                "the table's losses are averaged (a noise scale per point) where "
                "the template's are not, or the other way round; thin both alike"
            )
        s = self.settings if seed is None else dict(self.settings, seed=seed)
        t0 = time.perf_counter()
        data = {"y_obs": prep.y}
        if scaled:
            data["y_scale"] = prep.points[NOISE_SCALE].to_numpy(float)
        pm.set_data(data, model=self.model)  # the starts see the new losses
        compiled = self.compiled.with_data(**data)
        with one_blas_thread():  # the starts as Fit.run finds them (core.sampling.sample_model):
            starts = find_starts(self.model, s)  # BLAS's thread count changes their last bits

        def sample(s2):
            return sample_compiled(
                compiled, self.model, s2, starts, cores=cores, log_likelihood=log_likelihood
            )

        config = dict(self.config, sampler=dict(s))  # the seed this fit used
        recipe = CurvesRecipe.of(Fit, df, self.law, self.law_options, config, prep)
        with one_blas_thread():  # a slowly mixing run is run longer, as in Fit.run
            trace = run_longer(sample(s), s, recipe.judge, sample)
        fit = recipe.fit(trace, time.perf_counter() - t0)
        return finish(fit, recipe.labels(), warn)


def _known(config: dict) -> dict:
    """A saved config without the keys a config check refuses (the sampler's resolved seed and
    settings are checked separately), for rebuilding a model from an older file."""
    return {k: v for k, v in config.items() if k != "sampler"}


def _shape_key(law: str, df, law_options: dict, config: dict, sampler: dict) -> str:
    """What a compiled model depends on: law, options, config, sampler settings (no seed) and
    every column of the table but the losses (plus where losses are present)."""
    table = df.drop(columns=["loss"]).copy()
    table["_has_loss"] = df["loss"].notna()
    digest = hashlib.sha256(table.to_csv(index=False).encode()).hexdigest()
    text = json.dumps([law, law_options, config, sampler, digest], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()
