"""Model configs: plain JSON-able dicts of priors and structure, one validated scheme for all.

Every fitted family (loss-curve laws, hparams, mixture) has a dict of defaults; a user's override
(``--config file.json`` or ``config=``) is checked against it and merged into it by
:func:`check_config`, and the merged config is saved with the fit as JSON. Rules for a key of the
override, by the default's value:

* dict: a dict whose keys are the default's (checked recursively), unless the key is *open*
  (its dict may hold other keys too, unchecked);
* list: a list or tuple of the same length, element by element;
* bool: a bool; number (int or float): an int or float, not a bool; str: a str;
* None: anything.

``alternatives`` name the other types a key may take (e.g. a scalar where the default is a dict
per role); ``choices`` the values a key may take (checked on the merged config); ``ranges`` the
numbers a key may take (``"> 0"`` or ``">= 0"``, keyed by dotted paths where ``*`` stands for any
one key or list index). Every number given must be finite and at most :data:`MAX_MAGNITUDE` in
size (a prior of scale 1e308 cannot be drawn from in float64). The top-level key ``sampler`` is
always allowed and is checked against the NUTS settings of :mod:`bayescpt.core.sampling`, each
in its range (:data:`bayescpt.core.sampling.SAMPLER_RULES`). Any violation is one
:class:`ConfigError` line naming the key path, the value and what was expected, raised when the
config is read, before any model is built or compiled.
"""

from __future__ import annotations

import copy
import math
import numbers

from bayescpt.core.sampler_settings import (
    DEFAULT_SAMPLER_SETTINGS,
    sampler_setting_problem,
)
from bayescpt.core.tables import shown

#: what a config's "sampler" entry may hold (the package defaults, plus the sampler's name)
SAMPLER_SCHEMA = dict(DEFAULT_SAMPLER_SETTINGS, sampler="auto")


#: the largest magnitude of a number in a config: PyTensor tries a constant as float32 first,
#: which overflows beyond 3.4e38 (and a prior of scale 1e308 cannot be drawn from in float64)
MAX_MAGNITUDE = 1e38
#: the largest log-scale value whose exp is a float64 (exp(709.8) overflows)
MAX_LOG = 700.0
#: the range rules ``check_config`` takes, and what each says
RANGE_RULES = {"> 0": (lambda v: v > 0, "> 0"), ">= 0": (lambda v: v >= 0, ">= 0")}


class ConfigError(ValueError):
    """A config override that does not fit the defaults (unknown key, wrong type or value)."""


def merge_config(base: dict, override: dict | None) -> dict:
    """``base`` updated by ``override`` (nested dicts merged key by key)."""
    out = copy.deepcopy(base)
    for k, v in (override or {}).items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = merge_config(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def check_config(
    override: dict | None,
    defaults: dict,
    where: str,
    *,
    choices: dict | None = None,
    alternatives: dict | None = None,
    open_keys=(),
    ranges: dict | None = None,
) -> dict:
    """``defaults`` updated by ``override`` after checking it (see the module docstring).

    ``where`` names the config in messages (e.g. ``"mixture config"``); ``choices``,
    ``alternatives``, ``open_keys`` and ``ranges`` are keyed by dotted paths
    (``"noise.per_group"``; ``ranges`` may use ``*`` for one key or list index).
    Returns a new dict; raises :class:`ConfigError`.
    """
    override = override or {}
    if not isinstance(override, dict):
        raise ConfigError(f"{where}: expected a dict of settings, got {type(override).__name__}")
    schema = dict(defaults)
    if isinstance(override.get("sampler"), dict):
        schema["sampler"] = dict(SAMPLER_SCHEMA, **defaults.get("sampler", {}))
    _check(override, schema, "", where, alternatives or {}, set(open_keys))
    given = override.get("sampler") if isinstance(override.get("sampler"), dict) else {}
    for key, value in given.items():
        problem = sampler_setting_problem(key, value)
        if problem:
            raise ConfigError(f"{where}: sampler.{key} = {shown(value)}; expected {problem}")
    _check_numbers(override, "", where, ranges or {}, set(open_keys))
    out = merge_config(defaults, override)
    if "tune" in given and "tune_jitter" not in given and isinstance(out.get("sampler"), dict):
        out["sampler"]["tune_jitter"] = None  # the user's tune holds for either start
    for path, allowed in (choices or {}).items():
        value = _get(out, path)
        if value not in allowed:
            raise ConfigError(
                f"{where}: {path} = {shown(value)}; expected one of "
                f"{', '.join(repr(a) for a in allowed)}"
            )
    return out


def _matches(pattern: str, parts: list[str]) -> bool:
    pat = pattern.split(".")
    return len(pat) == len(parts) and all(p in ("*", q) for p, q in zip(pat, parts))


def _check_numbers(value, path, where, ranges, open_keys, parts=()):
    """Every number given in ``value`` finite and at most MAX_MAGNITUDE in size, and within
    its ``ranges`` rule (open keys' dicts: finite only)."""
    if isinstance(value, dict):
        for k, v in value.items():
            _check_numbers(
                v,
                f"{path}.{k}" if path else str(k),
                where,
                {} if path in open_keys else ranges,
                open_keys,
                (*parts, str(k)),
            )
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _check_numbers(v, f"{path}[{i}]", where, ranges, open_keys, (*parts, str(i)))
    elif isinstance(value, numbers.Number) and not isinstance(value, bool):
        try:
            x = float(value)
        except (TypeError, ValueError, OverflowError):
            x = math.inf
        if not math.isfinite(x) or abs(x) > MAX_MAGNITUDE:
            raise ConfigError(
                f"{where}: {path} = {shown(value)}; expected a finite number of "
                f"magnitude at most {MAX_MAGNITUDE:g}"
            )
        for pattern, rule in ranges.items():
            if _matches(pattern, list(parts)):
                ok, what = RANGE_RULES[rule]
                if not ok(x):
                    raise ConfigError(f"{where}: {path} = {shown(value)}; expected {what}")


def _get(cfg: dict, path: str):
    for part in path.split("."):
        cfg = cfg[part]
    return cfg


def _kind(default) -> str:
    if default is None:
        return "anything"
    if isinstance(default, bool):
        return "a bool"
    if isinstance(default, numbers.Number):
        return "a number"
    if isinstance(default, str):
        return "a string"
    if isinstance(default, (list, tuple)):
        return f"a list of {len(default)}"
    if isinstance(default, dict):
        return f"a dict with keys from {sorted(default)}"
    return type(default).__name__


def _fits(value, default) -> bool:
    if default is None:
        return True
    if isinstance(default, bool):
        return isinstance(value, bool)
    if isinstance(default, numbers.Number):
        return isinstance(value, numbers.Number) and not isinstance(value, bool)
    if isinstance(default, (list, tuple)):
        return isinstance(value, (list, tuple)) and len(value) == len(default)
    return isinstance(value, type(default))


def _check(value, default, path, where, alternatives, open_keys):
    if path and isinstance(value, alternatives.get(path, ())):
        if not isinstance(default, dict) or not isinstance(value, dict):
            return
    if not _fits(value, default):
        raise ConfigError(
            f"{where}: {path or 'config'} = {shown(value)}; expected {_kind(default)}"
        )
    if isinstance(default, dict):
        for k, v in value.items():
            sub = f"{path}.{k}" if path else str(k)
            if k not in default:
                if path in open_keys:
                    continue
                raise ConfigError(
                    f"{where}: unknown key {sub!r} (= {shown(v)}); expected one of "
                    f"{sorted(default)}"
                )
            _check(v, default[k], sub, where, alternatives, open_keys)
    elif isinstance(default, (list, tuple)):
        for i, (v, d) in enumerate(zip(value, default)):
            _check(v, d, f"{path}[{i}]", where, alternatives, open_keys)
