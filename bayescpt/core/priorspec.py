"""Priors as data: ``pymc_extras`` :class:`~pymc_extras.prior.Prior` objects, checked and JSON-able.

A prior in a config is the dict ``Prior.to_dict()`` writes: ``{"dist": FAMILY, "kwargs":
{PARAM: VALUE, ...}}`` where FAMILY is any PyMC distribution (``Normal``, ``HalfNormal``,
``LogNormal``, ``Gamma``, ``StudentT``, ...) and a VALUE is a number or, for a hyper-prior, a
prior dict of its own (nested to any depth); ``dims``, ``centered`` and ``transform`` are
``Prior``'s own options. :func:`check_prior` turns such a value into a ``Prior`` or raises one
:class:`~bayescpt.core.config.ConfigError` line naming the config, the key and what was
expected (a misspelt family with the closest names, an unknown parameter with the family's
parameters, a scale prior whose support is not positive). :func:`priors_json` and
:func:`priors_from_json` store a model's priors, one per model variable, in a fit file.

Example (a config file): ``{"priors": {"A": {"sd_prior": {"dist": "HalfNormal", "kwargs":
{"sigma": 0.2}}}}}``.
"""

from __future__ import annotations

import difflib
import json

from bayescpt.core.config import ConfigError

#: keys a prior dict may hold (``Prior.to_dict``'s)
PRIOR_KEYS = ("dist", "kwargs", "dims", "centered", "transform")
EXAMPLE = '{"dist": "HalfNormal", "kwargs": {"sigma": 0.1}}'


def _families() -> list[str]:
    import pymc.distributions as d

    return sorted(d.__all__)


def _check_dict(value, where: str, path: str) -> None:
    """Shape checks before ``Prior`` sees the value (its own errors name no key)."""
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: {path} = {value!r}; expected a prior such as {EXAMPLE}")
    unknown = sorted(set(value) - set(PRIOR_KEYS))
    if unknown:
        raise ConfigError(f"{where}: {path}: unknown key {unknown[0]!r}; a prior holds "
                          f"{', '.join(PRIOR_KEYS)}")
    dist = value.get("dist")
    if not isinstance(dist, str):
        raise ConfigError(f"{where}: {path}.dist = {dist!r}; expected a PyMC distribution name, "
                          f"e.g. {EXAMPLE}")
    families = _families()
    if dist not in families:
        near = difflib.get_close_matches(dist, families, n=3)
        hint = f"did you mean {' or '.join(repr(n) for n in near)}?" if near else \
            "e.g. Normal, HalfNormal, LogNormal, Gamma, StudentT"
        raise ConfigError(f"{where}: {path}.dist = {dist!r} is not a PyMC distribution; {hint}")
    kwargs = value.get("kwargs", {})
    if not isinstance(kwargs, dict):
        raise ConfigError(f"{where}: {path}.kwargs = {kwargs!r}; expected a dict of the "
                          f"{dist} distribution's parameters")
    import pymc as pm

    allowed = _parameters(getattr(pm, dist))
    for k, v in kwargs.items():
        if allowed and k not in allowed:
            raise ConfigError(f"{where}: {path}.kwargs.{k}: not a parameter of {dist}; expected "
                              f"some of {', '.join(sorted(allowed))}")
        if isinstance(v, dict):
            _check_dict(v, where, f"{path}.kwargs.{k}")
        elif isinstance(v, bool) or not isinstance(v, (int, float, list)):
            raise ConfigError(f"{where}: {path}.kwargs.{k} = {v!r}; expected a number, a list "
                              f"of numbers or a prior such as {EXAMPLE}")


def _parameters(cls) -> set:
    """The parameter names a PyMC distribution's ``dist`` takes (empty if it cannot be told)."""
    import inspect

    try:
        sig = inspect.signature(cls.dist)
    except (TypeError, ValueError):
        return set()
    names = {n for n, p in sig.parameters.items()
             if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and n not in ("cls", "args")}
    return names - {"kwargs", "size", "shape", "dims", "rng", "dtype"}


def check_prior(value, where: str, path: str, positive: bool = False):
    """``value`` (a prior dict or a ``Prior``) as a ``Prior``, checked; ``positive``: its
    support must lie in (0, inf) (a scale: a group spread or a schedule spread)."""
    from pymc_extras.prior import Prior

    if isinstance(value, Prior):
        value = value.to_dict()
    _check_dict(value, where, path)
    try:
        prior = Prior.from_dict(json.loads(json.dumps(value)))
    except Exception as err:  # noqa: BLE001 - pymc_extras's own checks: one line, named
        raise ConfigError(f"{where}: {path}: {str(err).splitlines()[0]}") from None
    if positive and not _positive_support(prior):
        raise ConfigError(f"{where}: {path} = {value['dist']}: a scale needs a prior on positive "
                          "values only, e.g. HalfNormal, LogNormal, Gamma, Exponential")
    return prior


def _positive_support(prior) -> bool:
    import numpy as np
    import pymc as pm

    with pm.Model():
        rv = prior.create_variable("check")
        logp = pm.logp(rv, np.full(rv.type.shape if rv.type.shape else (), -0.5)).eval()
    return not np.isfinite(np.asarray(logp)).any()


def priors_json(priors: dict) -> str:
    """``{variable: Prior}`` as JSON (``Prior.to_dict`` per variable), for a fit file's attrs."""
    return json.dumps({k: p.to_dict() for k, p in priors.items()})


def priors_from_json(text: str) -> dict:
    """The inverse of :func:`priors_json`: ``{variable: Prior}``."""
    from pymc_extras.prior import Prior

    return {k: Prior.from_dict(v) for k, v in json.loads(text).items()}
