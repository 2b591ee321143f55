"""The sampler settings (chains, draws, tune, target_accept, seed, ...): their defaults and the
range each may take, checked where a config, a sweep or a library call gives them, before
anything is compiled (:func:`check_sampler_settings`)."""

from __future__ import annotations

import numbers

from bayescpt.core.init import INITS
from bayescpt.core.tables import shown

SAMPLERS = ("nutpie", "pymc", "numpyro", "blackjax")

DEFAULT_SAMPLER_SETTINGS = {
    "chains": 4,
    "draws": 1000,
    "tune": 1000,
    "target_accept": 0.95,
    "seed": 0,
    "low_rank": True,
    "max_tree_depth": None,
    "drop_stuck_chains": False,
    "init": "map",
    "extend": None,
    "tune_jitter": None,
}

#: the largest seed: every sampler takes it (nutpie's and NumPy's seeds are unsigned 64-bit,
#: JAX's PRNGKey signed 64-bit), and it is the conventional 32-bit seed range
MAX_SEED = 2**32 - 1
#: the deepest tree cap accepted (2^30 leapfrog steps per draw: far beyond any useful fit)
MAX_TREE_DEPTH = 30


def _whole(lo, hi=None, none: str | None = None):
    """A rule: a whole number in [lo, hi] (None allowed when ``none`` says what it means)."""
    what = f"a whole number from {lo} to {hi}" if hi is not None else f"a whole number >= {lo}"
    if none:
        what = f"None ({none}) or {what}"

    def ok(v):
        if v is None:
            return none is not None
        if isinstance(v, bool) or not isinstance(v, numbers.Number):
            return False
        try:
            if float(v) != int(v):
                return False
        except (OverflowError, ValueError):
            return False
        return int(v) >= lo and (hi is None or int(v) <= hi)

    return ok, what


#: what each sampler setting may be: (test, what is expected); checked where a config or a sweep
#: is read (:func:`sampler_setting_problem`), before anything is compiled
SAMPLER_RULES = {
    "chains": _whole(1),
    "draws": _whole(1),
    "tune": _whole(0),
    "target_accept": (
        lambda v: isinstance(v, numbers.Real) and not isinstance(v, bool) and 0 < v < 1,
        "a number strictly between 0 and 1",
    ),
    "seed": _whole(0, MAX_SEED),
    "low_rank": (lambda v: isinstance(v, bool), "true or false"),
    "max_tree_depth": _whole(1, MAX_TREE_DEPTH, none="each sampler's default, 10"),
    "drop_stuck_chains": (lambda v: isinstance(v, bool), "true or false"),
    "init": (lambda v: v in INITS, f"one of {', '.join(INITS)}"),
    "extend": _whole(1, none="auto"),
    "tune_jitter": _whole(0, none="the same as tune"),
    "sampler": (lambda v: v == "auto" or v in SAMPLERS, f"one of {', '.join(SAMPLERS)} or auto"),
}


def sampler_setting_problem(key: str, value) -> str | None:
    """None when ``value`` is a valid value of the sampler setting ``key``; else what is
    expected (for a message naming the key and value). Unknown keys: None (checked elsewhere)."""
    rule = SAMPLER_RULES.get(key)
    if rule is None or rule[0](value):
        return None
    return rule[1]


def check_sampler_settings(s: dict, where: str = "sampler setting") -> dict:
    """``s`` checked setting by setting (:data:`SAMPLER_RULES`): a ValueError naming the first
    bad one (``{where} KEY = VALUE; expected ...``); whole numbers given as floats become ints."""
    for key, value in list(s.items()):
        problem = sampler_setting_problem(key, value)
        if problem:
            raise ValueError(f"{where} {key} = {shown(value)}; expected {problem}")
        if (
            key in ("chains", "draws", "tune", "seed", "max_tree_depth", "extend", "tune_jitter")
            and value is not None
        ):
            s[key] = int(value)
    return s
