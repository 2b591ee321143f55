"""Checks of the values in a lab config (TOML): each returns the value or raises ``ValueError``
with one line naming the file (``where``), the key and what was expected.
"""

from __future__ import annotations

import math


def whole(section, key, where, minimum=1):
    """``section[key]``, an integer >= ``minimum``."""
    v = section.get(key)
    if not isinstance(v, int) or isinstance(v, bool) or v < minimum:
        raise ValueError(f"{where}: '{key}' = {v!r}; expected an integer >= {minimum}")
    return v


def number(section, key, where):
    """``section[key]``, a finite number."""
    v = section.get(key)
    if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v):
        raise ValueError(f"{where}: '{key}' = {v!r}; expected a finite number")
    return v


def table(v, key, where, of_tables=False):
    """``v`` must be a TOML table (of tables, when ``of_tables``); ``{}`` when missing."""
    v = {} if v is None else v
    if not isinstance(v, dict) or (of_tables and any(not isinstance(x, dict) for x in v.values())):
        kind = "a table of tables [" + key + ".NAME]" if of_tables else "a table [" + key + "]"
        raise ValueError(f"{where}: '{key}' = {v!r}; expected {kind}")
    return v


def names(v, known, key, where):
    """``v``, a non-empty list of names in ``known``."""
    if not isinstance(v, list) or not v:
        raise ValueError(f"{where}: '{key}' must be a non-empty list")
    for x in v:
        if x not in known:
            raise ValueError(f"{where}: '{key}' has {x!r}; defined are {sorted(known)}")
    return v
