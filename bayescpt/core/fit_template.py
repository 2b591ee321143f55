"""One way to sample a fit, whatever its family: the sampler settings as one object, one ``run``.

Every fit family (loss-curve laws, the hyperparameter law, the mixture laws) samples the same
way: its config's sampler entry and the caller's settings resolved into the sampler settings
(:func:`~bayescpt.core.sampling.resolve_settings`), its model built once per table and config
(:mod:`bayescpt.core.modelcache`), NUTS run with slow mixing run longer
(:func:`~bayescpt.core.sampling.sample_model`), the fit's attrs, tables and labels written and
its diagnostics warned about. :meth:`SampledFit.run` is that flow, written once; a family
supplies only what is its own, as a :class:`Recipe`: its config, the data it prepares, its model,
what it keeps of the draws (meta, other sets, the labels of its observations).

:class:`SamplerSettings` holds the caller's ten sampler arguments (sampler, chains, draws, tune,
seed, target_accept, init, progress, cores, warn). ``run`` takes one, or (as every caller
written before it does) the same names as keyword arguments.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

from bayescpt.core.diagnostics import Diagnostics, warn_if_bad
from bayescpt.core.fitfile import FitBase
from bayescpt.core.modelcache import cached
from bayescpt.core.sampling import resolve_settings, sample_model
from bayescpt.core.tables import data_hash


@dataclass(frozen=True)
class SamplerSettings:
    """What a caller asks of the sampler. None: the config's value, else the package default
    (:data:`~bayescpt.core.sampler_settings.DEFAULT_SAMPLER_SETTINGS`). ``progress``: a progress
    bar; ``cores``: threads for the chains (default one per chain, up to the machine's);
    ``warn``: warn when the diagnostics fail."""

    sampler: str = "auto"
    chains: int | None = None
    draws: int | None = None
    tune: int | None = None
    seed: int | None = None
    target_accept: float | None = None
    init: str | None = None
    progress: bool = False
    cores: int | None = None
    warn: bool = True

    def resolve(self, base: dict | None) -> dict:
        """The settings the sampler runs with: package defaults < ``base`` (a config's sampler
        entry) < these (checked, see :func:`~bayescpt.core.sampling.resolve_settings`)."""
        return resolve_settings(
            base,
            self.sampler,
            chains=self.chains,
            draws=self.draws,
            tune=self.tune,
            seed=self.seed,
            target_accept=self.target_accept,
            init=self.init,
        )

    @classmethod
    def split(cls, kw: dict, given: SamplerSettings | None = None) -> tuple:
        """(settings, the rest of ``kw``): the keyword arguments named as settings taken out of
        ``kw``, or ``given``; a TypeError when both give settings."""
        names = {f.name for f in dataclasses.fields(cls)}
        mine = {k: v for k, v in kw.items() if k in names}
        rest = {k: v for k, v in kw.items() if k not in names}
        if given is not None and mine:
            raise TypeError(f"sampler settings given twice: a SamplerSettings and {sorted(mine)}")
        return (given if given is not None else cls(**mine)), rest


class Recipe:
    """One family's part of one fit (a subclass per family; see :class:`SampledFit`).

    Made from the table and the family's options (``__init__``: reads them and sets
    ``config``, the model's config, whose ``sampler`` entry is the config's sampler settings),
    then, once the sampler settings are resolved into ``config["sampler"]``:

    * :meth:`prepare`: the data the model is built of; sets ``key`` (the model's
      :func:`~bayescpt.core.modelcache.fingerprint`, None: not kept);
    * :meth:`build` (cache miss) -> the cache entry's value; :meth:`model` of it -> the PyMC model;
    * :meth:`judge`: the diagnostics that decide whether a slowly mixing run runs longer;
    * :meth:`sampled` (trace, model, settings): what must be done with the model at hand
      (prior predictive draws, the priors of its nodes);
    * :meth:`fit` (trace, sampling seconds) -> the family's fit, with its meta;
    * :meth:`labels`: the observations' labels (dim -> {coordinate: values}).
    """

    config: dict
    key: str | None = None

    def prepare(self) -> None:
        pass

    def build(self):
        raise NotImplementedError

    def model(self, value):
        return value

    def judge(self, idata) -> Diagnostics:
        raise NotImplementedError

    def sampled(self, idata, model, s: dict) -> None:
        pass

    def fit(self, idata, seconds: float) -> FitBase:
        raise NotImplementedError

    def labels(self) -> dict:
        return {}


def finish(fit: FitBase, labels: dict, warn: bool) -> FitBase:
    """A fit's last steps: attrs, tables and labels written (:meth:`FitBase._write_attrs`), the
    observations labelled, the diagnostics warned about when ``warn`` and they fail."""
    fit._write_attrs()
    fit.label(labels)
    if warn:
        warn_if_bad(fit.diagnostics())
    return fit


def sample_recipe(recipe: Recipe, settings: SamplerSettings) -> FitBase:
    """The one sampling flow (module doc) for ``recipe`` with ``settings``."""
    s = settings.resolve(recipe.config.get("sampler"))
    recipe.config["sampler"] = s
    recipe.prepare()
    t0 = time.perf_counter()
    with cached(recipe.key, recipe.build) as entry:
        model = recipe.model(entry.value)
        idata = sample_model(
            model,
            s,
            progress=settings.progress,
            cores=settings.cores,
            judge=recipe.judge,
            compiled=entry.compiled,
        )
        seconds = time.perf_counter() - t0
        recipe.sampled(idata, model, s)
    fit = recipe.fit(idata, seconds)
    return finish(fit, recipe.labels(), settings.warn)


class SampledFit(FitBase):
    """A fit family sampled by the one flow: a :class:`FitBase` whose ``recipe`` (a
    :class:`Recipe` subclass) says what is its own.

    A family also says how a sweep fits it (:mod:`bayescpt.parallel`): ``read_table`` (its
    ``fit`` command's reader), ``sweep_options`` (the options a sweep entry's law and options
    give ``run``), ``check_sweep_config`` (a config checked as ``run`` will read it) and
    ``sweep_fit`` (read, fit; the default: ``run`` on the table read).
    """

    recipe: type = Recipe

    @classmethod
    def run(cls, df, *, sampling: SamplerSettings | None = None, **kw):
        """Fit the validated table ``df`` with NUTS. ``kw``: the family's options (its recipe's
        keyword arguments) and, when ``sampling`` is not given, the sampler settings by name
        (:class:`SamplerSettings`). Diagnostics are computed, stored and warned about."""
        settings, options = SamplerSettings.split(kw, sampling)
        return sample_recipe(cls.recipe(cls, df, **options), settings)

    # -- how a sweep fits this family ------------------------------------------------------------
    @staticmethod
    def read_table(path):
        raise NotImplementedError

    @staticmethod
    def table_hash(table) -> str:
        """A short, order-independent hash of a table :meth:`read_table` read (a sweep's key
        of its data); the default hashes a loss-curve table's columns."""
        return data_hash(table)

    @classmethod
    def sweep_options(cls, law, options: dict, table) -> dict:
        """The law options a fit of ``table`` takes (none, for a family without laws)."""
        return {}

    @classmethod
    def check_sweep_config(cls, law, law_options: dict, config: dict) -> None:
        """Check ``config`` as ``run`` will read it (a one-line ConfigError)."""

    @classmethod
    def sweep_fit(cls, path, law, options: dict, config: dict, settings: SamplerSettings) -> tuple:
        """(fit, compiled) of the data file ``path`` (a sweep entry's ``law`` and ``options``,
        ``config``, sampler ``settings``) as the family's ``fit`` command fits it;
        ``compiled``: True when a model was compiled, False when one was reused, None when
        this family does not keep them."""
        return cls.run(cls.read_table(path), sampling=settings, config=config or None), None
