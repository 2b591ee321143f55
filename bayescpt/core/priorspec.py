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
        raise ConfigError(
            f"{where}: {path}: unknown key {unknown[0]!r}; a prior holds {', '.join(PRIOR_KEYS)}"
        )
    dist = value.get("dist")
    if not isinstance(dist, str):
        raise ConfigError(
            f"{where}: {path}.dist = {dist!r}; expected a PyMC distribution name, e.g. {EXAMPLE}"
        )
    families = _families()
    if dist not in families:
        near = difflib.get_close_matches(dist, families, n=3)
        hint = (
            f"did you mean {' or '.join(repr(n) for n in near)}?"
            if near
            else "e.g. Normal, HalfNormal, LogNormal, Gamma, StudentT"
        )
        raise ConfigError(f"{where}: {path}.dist = {dist!r} is not a PyMC distribution; {hint}")
    kwargs = value.get("kwargs", {})
    if not isinstance(kwargs, dict):
        raise ConfigError(
            f"{where}: {path}.kwargs = {kwargs!r}; expected a dict of the "
            f"{dist} distribution's parameters"
        )
    import pymc as pm

    allowed = _parameters(getattr(pm, dist))
    for k, v in kwargs.items():
        if allowed and k not in allowed:
            raise ConfigError(
                f"{where}: {path}.kwargs.{k}: not a parameter of {dist}; expected "
                f"some of {', '.join(sorted(allowed))}"
            )
        if isinstance(v, dict):
            _check_dict(v, where, f"{path}.kwargs.{k}")
        elif isinstance(v, bool) or not isinstance(v, (int, float, list)):
            raise ConfigError(
                f"{where}: {path}.kwargs.{k} = {v!r}; expected a number, a list "
                f"of numbers or a prior such as {EXAMPLE}"
            )


def _parameters(cls) -> set:
    """The parameter names a PyMC distribution's ``dist`` takes (empty if it cannot be told)."""
    import inspect

    try:
        sig = inspect.signature(cls.dist)
    except (TypeError, ValueError):
        return set()
    names = {
        n
        for n, p in sig.parameters.items()
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and n not in ("cls", "args")
    }
    return names - {"kwargs", "size", "shape", "dims", "rng", "dtype"}


def check_prior(value, where: str, path: str, positive: bool = False):
    """``value`` (a prior dict or a ``Prior``) as a ``Prior``, checked; ``positive``: its
    support must lie in (0, inf) (a scale: a group spread or a schedule spread)."""
    from pymc_extras.prior import Prior

    if isinstance(value, Prior):
        value = value.to_dict()
    _check_dict(value, where, path)
    prior = _checked(value, where, path)
    if positive and not _positive_support(prior):
        raise ConfigError(
            f"{where}: {path} = {value['dist']}: a scale needs a prior on positive "
            "values only, e.g. HalfNormal, LogNormal, Gamma, Exponential"
        )
    return prior


def _quiet():
    """NumPy's and PyTensor's warnings off while a prior is tried (its problems are reported
    as one line instead)."""
    import contextlib
    import warnings

    import numpy as np

    stack = contextlib.ExitStack()
    stack.enter_context(warnings.catch_warnings())
    warnings.simplefilter("ignore")
    stack.enter_context(np.errstate(all="ignore"))
    return stack


def _checked(value: dict, where: str, path: str):
    """The ``Prior`` of the (shape-checked) dict ``value``, its hyper-priors first: one number
    (a univariate distribution, no list parameters), parameters PyMC accepts (``sigma > 0``,
    ``lower <= upper``, ...) and a finite density at its own centre; else one ConfigError line
    naming the key path, the value and what is expected."""
    import numpy as np
    import pymc as pm
    from pymc.distributions.distribution import support_point
    from pymc.logprob.utils import ParameterValueError
    from pymc_extras.prior import Prior

    kwargs = value.get("kwargs", {})
    for k, v in kwargs.items():
        if isinstance(v, dict):
            _checked(v, where, f"{path}.kwargs.{k}")
    dist = value["dist"]
    with _quiet():
        try:
            prior = Prior.from_dict(json.loads(json.dumps(value)))
        except Exception as err:  # noqa: BLE001 - pymc_extras's own checks: one line, named
            raise ConfigError(f"{where}: {path}: {str(err).splitlines()[0]}") from None
        try:
            with pm.Model():
                rv = prior.create_variable("check")
                if rv.type.ndim:
                    raise ConfigError(
                        f"{where}: {path} = {dist} of shape {tuple(rv.type.shape)}: expected a "
                        f"prior of one number (a univariate distribution with number "
                        f"parameters), e.g. {EXAMPLE}"
                    )
                logp = pm.logp(rv, support_point(rv)).eval()
        except ConfigError:
            raise
        except ParameterValueError as err:
            raise ConfigError(
                _broken(str(err).splitlines()[0], kwargs, where, path, dist)
            ) from None
        except Exception as err:  # noqa: BLE001 - PyMC's own refusal: one line, named
            raise ConfigError(
                f"{where}: {path} = {dist}: {str(err).splitlines()[0]}; expected "
                f"the parameters of {dist}"
            ) from None
    if not np.isfinite(np.asarray(logp)).all():
        raise ConfigError(
            f"{where}: {path} = {dist} with {_numbers(kwargs)}: no finite density "
            f"at its own centre; expected parameters in the {dist} "
            "distribution's range (a spread > 0)"
        )
    return prior


def _numbers(kwargs: dict) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in kwargs.items() if not isinstance(v, dict))


def _broken(conditions: str, kwargs: dict, where: str, path: str, dist: str) -> str:
    """The message for PyMC's failed parameter check ``conditions`` (``"alpha > 0, beta > 0"``):
    the first number parameter that breaks one, by its key path."""
    import operator
    import re

    ops = {">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le}
    numbers = {
        k: v for k, v in kwargs.items() if isinstance(v, (int, float)) and not isinstance(v, bool)
    }

    def resolve(token):
        if token in numbers:
            return float(numbers[token])
        try:
            return float(token)
        except ValueError:
            return None

    for cond in conditions.split(","):
        m = re.fullmatch(r"\s*([\w.]+)\s*(>=|<=|>|<)\s*([\w.-]+)\s*", cond)
        if not m:
            continue
        left, op, right = m.groups()
        a, b = resolve(left), resolve(right)
        if a is None or b is None or ops[op](a, b):
            continue
        name = left if left in numbers else right
        bound = right if name == left else left
        if bound in numbers:
            bound = f"{bound} ({numbers[bound]!r})"
        want = (
            f"{op} {bound}"
            if name == left
            else f"{ {'>': '<', '>=': '<=', '<': '>', '<=': '>='}[op] } {bound}"
        )
        return f"{where}: {path}.kwargs.{name} = {numbers[name]!r}; expected {want}"
    return (
        f"{where}: {path} = {dist} with {_numbers(kwargs)}: expected parameters with {conditions}"
    )


def _positive_support(prior) -> bool:
    import numpy as np
    import pymc as pm

    with _quiet(), pm.Model():
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
