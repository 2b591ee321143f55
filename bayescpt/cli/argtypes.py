"""The command line's argument types: numbers in range (each refusal one line saying what was
expected), comma-separated lists, and negative numbers in exponent notation as option values."""

from __future__ import annotations

import argparse
import math

from bayescpt.core.sampler_settings import MAX_SEED
from bayescpt.core.tables import PLAIN_NUMBER


def _number(text: str, cast, what: str, ok=lambda v: True):
    """An argparse ``type``: ``text`` in plain decimal notation, finite, passing ``ok``; otherwise
    ArgumentTypeError, which argparse prints naming the option (exit 2)."""
    t = str(text).strip()
    try:
        if not PLAIN_NUMBER.fullmatch(t):
            raise ValueError
        v = float(t)
        if cast is int:
            if v != round(v) or abs(v) >= 2**53:
                raise ValueError
            v = int(v)
    except (ValueError, OverflowError):
        raise argparse.ArgumentTypeError(f"{text!r}: expected {what}") from None
    if not math.isfinite(v) or not ok(v):
        raise argparse.ArgumentTypeError(f"{text!r}: expected {what}")
    return v


def finite_float(text) -> float:
    return _number(text, float, "a finite number")


def positive_float(text) -> float:
    return _number(text, float, "a finite number > 0", lambda v: v > 0)


def nonneg_float(text) -> float:
    return _number(text, float, "a finite number >= 0", lambda v: v >= 0)


def share(text) -> float:
    """A fraction in [0, 1]."""
    return _number(text, float, "a share in [0, 1]", lambda v: 0 <= v <= 1)


def probability(text) -> float:
    """A probability strictly between 0 and 1 (interval probabilities, risks, quantiles)."""
    return _number(text, float, "a probability strictly between 0 and 1", lambda v: 0 < v < 1)


def positive_int(text) -> int:
    return _number(text, int, "a whole number >= 1", lambda v: v >= 1)


def nonneg_int(text) -> int:
    return _number(text, int, "a whole number >= 0", lambda v: v >= 0)


def seed_int(text) -> int:
    """A random seed: a whole number every sampler takes (0 to MAX_SEED)."""
    return _number(text, int, f"a whole number from 0 to {MAX_SEED}", lambda v: 0 <= v <= MAX_SEED)


def _list(cast, what):
    def parse(text):
        items = [x for x in text.split(",") if x.strip()]
        if not items:
            raise argparse.ArgumentTypeError(
                f"{text!r}: expected comma-separated {what}, at least one"
            )
        try:
            return [cast(x) for x in items]
        except (ValueError, argparse.ArgumentTypeError):
            raise argparse.ArgumentTypeError(f"{text!r}: expected comma-separated {what}") from None

    return parse


int_list = _list(lambda x: _number(x, int, "a whole number"), "whole numbers")
float_list = _list(finite_float, "finite numbers")
str_list = _list(str.strip, "names")


def allow_negative_numbers(parser: argparse.ArgumentParser) -> None:
    """Let an option take a negative number in exponent notation (``--n-params -1e8``), which
    argparse otherwise reads as an unknown option; the option's type then judges the value.
    Applied to ``parser`` and every subcommand parser below it."""
    import re

    parser._negative_number_matcher = re.compile(
        r"^-(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$|^-(?:inf|infinity|nan)$",
        re.IGNORECASE,
    )
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in set(action.choices.values()):
                allow_negative_numbers(sub)
