"""The config of a loss-curve fit: the priors and structure of the hierarchical model
(:mod:`bayescpt.curves.model.hierarchy`) for a law, as plain JSON-able data saved with every fit.

:func:`default_config` gives a law's defaults (``priors`` per law parameter: loc, scale on the
parameter's sampled scale, group_sd, size_slope_sd, run_sd, run_sd_spread and optional prior
objects; ``noise``: the Student-t noise on log loss; ``centered``; ``settings``; ``sampler``);
:func:`make_config` merges a user's override into them and checks it, once, where a fit is set
up; :func:`node_priors` turns a config into the ``pymc_extras`` ``Prior`` of every top-level
random variable of the model.
"""

from __future__ import annotations

import numpy as np

from bayescpt.core.config import MAX_LOG, ConfigError, check_config
from bayescpt.core.priorspec import check_prior
from bayescpt.core.tables import shown
from bayescpt.curves.model.laws.base import Law

DEFAULT_NOISE = {
    "family": "studentt",
    "nu": 3.0,
    "sigma_loc": float(np.log(0.003)),
    "sigma_scale": 1.0,
    "sigma_group_sd": 0.5,
    "sigma_mu_prior": None,
    "sigma_sd_prior": None,
}

#: the config keys of a parameter's prior objects (variables p_mu, p_slope, p_sd, p_tau) ->
#: whether the prior's support must be positive (a spread)
NODE_PRIORS = {"mu_prior": False, "slope_prior": False, "sd_prior": True, "tau_prior": True}
#: the numeric knobs' ranges (a spread > 0, or >= 0 where 0 turns its level off), checked when
#: the config is read (:func:`bayescpt.core.config.check_config`)
KNOB_RANGES = {
    "priors.*.scale": "> 0",
    "priors.*.group_sd": ">= 0",
    "priors.*.size_slope_sd": ">= 0",
    "priors.*.run_sd": ">= 0",
    "priors.*.run_sd_spread": "> 0",
    "noise.nu": "> 0",
    "noise.sigma_scale": "> 0",
    "noise.sigma_group_sd": ">= 0",
}


class Config(dict):
    """A config :func:`make_config` made for a law (``defaults``: that law's
    :func:`default_config`): merged and checked once, so a fit or prior check given it (the CLI
    makes it first, to refuse a bad config in one line before any work) takes it as it is
    instead of making it again."""

    def __init__(self, cfg: dict, defaults: dict):
        super().__init__(cfg)
        self.defaults = defaults


def default_config(law: Law) -> dict:
    """Priors and model structure for ``law``: plain data, saved with every fit. A law (mode)
    that needs longer sampling than the package default says so in ``default_sampler``."""
    extra = {"sampler": dict(law.default_sampler)} if law.default_sampler else {}
    return extra | {
        "priors": {
            p.name: {
                "positive": p.positive,
                "loc": float(p.loc),
                "scale": float(p.scale),
                "group_sd": float(p.group_sd),
                "size_slope_sd": float(p.size_slope_sd),
                "run_sd": float(p.run_sd),
                "run_sd_spread": 0.5,
                "group_centered": bool(p.group_centered),
                "run_centered": bool(p.run_centered),
                **dict.fromkeys(NODE_PRIORS),
            }
            for p in law.params
        },
        "noise": dict(DEFAULT_NOISE),
        "centered": {"group": True, "schedule": True},
        "settings": dict(law.default_settings, skip_warmup=True),
    }


def make_config(law: Law, override: dict | None = None) -> Config:
    """:func:`default_config` of ``law`` updated by ``override`` (nested dicts merged key by key),
    checked by :func:`bayescpt.core.config.check_config`: known keys and types (``settings`` may
    hold further law settings), ``noise.family`` 'studentt' or 'normal', and every prior object
    (``priors.P.mu_prior`` ... ``noise.sigma_sd_prior``, :mod:`bayescpt.core.priorspec`).

    Returns a :class:`Config`; a :class:`Config` made for the same law is returned as it is (a
    shallow copy: a fit sets its own ``sampler`` key), not merged or checked again."""
    defaults = default_config(law)
    if isinstance(override, Config) and override.defaults == defaults:
        return Config(override, defaults)
    where = f"{law.name} law config"
    cfg = check_config(
        override,
        default_config(law),
        where,
        choices={"noise.family": ("studentt", "normal")},
        open_keys=("settings",),
        ranges=KNOB_RANGES,
    )
    # a positive parameter's prior (and the noise scale's) is on the log scale: its draws must
    # stay where exp does not overflow
    spans = [
        (f"priors.{name}.scale", c["scale"], f"priors.{name}.loc", c["loc"], name)
        for name, c in cfg["priors"].items()
        if c["positive"]
    ]
    noise = cfg["noise"]
    spans.append(
        (
            "noise.sigma_scale",
            noise["sigma_scale"],
            "noise.sigma_loc",
            noise["sigma_loc"],
            "the noise scale",
        )
    )
    for key, scale, loc_key, loc, what in spans:
        if abs(loc) + 5 * scale > MAX_LOG:
            raise ConfigError(
                f"{where}: {key} = {shown(scale)} (with {loc_key} = {shown(loc)}); "
                f"expected |loc| + 5 scale <= {MAX_LOG:g}: {what} is positive, its "
                "prior is on the log scale and exp overflows beyond that"
            )
    for name, c in cfg["priors"].items():
        for key, positive in NODE_PRIORS.items():
            if c.get(key) is not None:
                check_prior(c[key], where, f"priors.{name}.{key}", positive=positive)
        for key, knob in (
            ("sd_prior", "group_sd"),
            ("tau_prior", "run_sd"),
            ("slope_prior", "size_slope_sd"),
        ):
            if c.get(key) is not None and c[knob] <= 0:
                raise ConfigError(
                    f"{where}: priors.{name}.{key} is given but {knob} is "
                    f"{c[knob]:g}, which turns that level off; set {knob} > 0"
                )
    for key, positive in (("sigma_mu_prior", False), ("sigma_sd_prior", True)):
        if cfg["noise"].get(key) is not None:
            check_prior(cfg["noise"][key], where, f"noise.{key}", positive=positive)
    return Config(cfg, defaults)


def node_priors(law: Law, config: dict, n_groups: int, multi_size: bool) -> dict:
    """The prior of every top-level random variable of :func:`build_model`, as ``pymc_extras``
    ``Prior`` objects: ``{variable name: Prior}`` in the order the model creates them.

    Per law parameter p (config ``priors.p``): ``p_mu`` ~ ``mu_prior`` or Normal(loc, scale);
    ``p_slope`` ~ ``slope_prior`` or Normal(0, size_slope_sd) (three or more model sizes);
    ``p_sd`` ~ ``sd_prior`` or LogNormal(ln group_sd, 0.5) (several groups); ``p_tau`` ~
    ``tau_prior`` or LogNormal(ln run_sd, run_sd_spread). Noise: ``log_sigma_mu`` ~
    ``sigma_mu_prior`` or Normal(sigma_loc, sigma_scale); ``log_sigma_sd`` ~ ``sigma_sd_prior``
    or LogNormal(ln sigma_group_sd, 0.5) (several groups). A level turned off (its knob 0, one
    group, fewer than three sizes) has no variable and no prior."""
    from pymc_extras.prior import Prior

    out = {}
    for p in law.params:
        c = config["priors"][p.name]
        out[f"{p.name}_mu"] = _given(c, "mu_prior") or Prior(
            "Normal", mu=float(c["loc"]), sigma=float(c["scale"])
        )
        if c["size_slope_sd"] > 0 and multi_size:
            out[f"{p.name}_slope"] = _given(c, "slope_prior") or Prior(
                "Normal", mu=0.0, sigma=float(c["size_slope_sd"])
            )
        if c["group_sd"] > 0 and n_groups > 1:
            out[f"{p.name}_sd"] = _given(c, "sd_prior") or Prior(
                "LogNormal", mu=float(np.log(c["group_sd"])), sigma=0.5
            )
        if c["run_sd"] > 0:
            out[f"{p.name}_tau"] = _given(c, "tau_prior") or Prior(
                "LogNormal", mu=float(np.log(c["run_sd"])), sigma=float(c.get("run_sd_spread", 0.5))
            )
    noise = config["noise"]
    out["log_sigma_mu"] = (
        Prior.from_dict(noise["sigma_mu_prior"])
        if noise.get("sigma_mu_prior")
        else Prior("Normal", mu=float(noise["sigma_loc"]), sigma=float(noise["sigma_scale"]))
    )
    if n_groups > 1 and noise.get("sigma_group_sd", 0) > 0:
        out["log_sigma_sd"] = (
            Prior.from_dict(noise["sigma_sd_prior"])
            if noise.get("sigma_sd_prior")
            else Prior("LogNormal", mu=float(np.log(noise["sigma_group_sd"])), sigma=0.5)
        )
    return out


def _given(c: dict, key: str):
    """The prior a parameter's config ``c`` gives as ``key`` (a ``Prior`` dict), else falsy."""
    from pymc_extras.prior import Prior

    return c.get(key) and Prior.from_dict(c[key])
