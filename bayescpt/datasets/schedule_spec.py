"""A learning-rate schedule from a one-line spec or a TOML file, for logs that lack the LR.

Spec: ``SHAPE:key=value,key=value,...``, e.g. ``wsd:peak=3e-4,warmup=2000,total=100000,decay=0.2``.
A TOML file gives the same keys with ``shape = "wsd"`` at the top level or in a ``[schedule]``
table (lists allowed there, e.g. ``milestones = [6000, 9000]`` for ``multistep``).

Keys (learning rates raw, e.g. ``3e-4``; steps are optimizer steps)::

    total        required  T, the number of optimizer steps of the schedule
    peak         required  the peak learning rate
    warmup       0         linear warmup from ``warmup_from`` (default 0) to ``peak`` over
                           steps 1..warmup
    final        0         the learning rate at the end of a decay (cosine, wsd, linear)
    decay        -         wsd: the decay's share of ``total`` (0 < decay <= 1) ...
    decay_steps  -         ... or its length in steps (one of the two is required for wsd)
    decay_shape  linear    wsd: linear, cosine, exponential or 1-sqrt

Shapes: ``constant``, ``cosine`` (to ``final`` at step T), ``wsd`` (stable, then the last decay
steps decay to ``final``), ``linear`` (the Hugging Face default: warmup, then linear decay to
``final`` over all remaining steps) and ``multistep`` (``milestones`` and ``factors``, TOML only).
Each is built with :mod:`bayescpt.core.schedules`, so ``lr[s]`` is the learning rate of step ``s``.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from bayescpt.core import schedules as sch
from bayescpt.core.schedules import Schedule

SHAPES = ("constant", "cosine", "wsd", "linear", "multistep")
KEYS = {
    "total",
    "peak",
    "warmup",
    "warmup_from",
    "final",
    "decay",
    "decay_steps",
    "decay_shape",
    "milestones",
    "factors",
}
_ALLOWED = {
    "constant": {"total", "peak", "warmup", "warmup_from"},
    "cosine": {"total", "peak", "warmup", "warmup_from", "final"},
    "wsd": {
        "total",
        "peak",
        "warmup",
        "warmup_from",
        "final",
        "decay",
        "decay_steps",
        "decay_shape",
    },
    "linear": {"total", "peak", "warmup", "warmup_from", "final"},
    "multistep": {"total", "peak", "warmup", "warmup_from", "milestones", "factors"},
}


def parse_schedule_spec(spec: str | Path) -> Schedule:
    """The :class:`Schedule` a spec string or a TOML file (a path ending in ``.toml``) describes.

    Raises ``ValueError`` with one line naming the spec and the offending key or value.
    """
    text = str(spec).strip()
    if text.lower().endswith(".toml"):
        path = Path(text)
        try:
            doc = tomllib.loads(path.read_text())
        except FileNotFoundError:
            raise ValueError(f"{path}: no such schedule file") from None
        except tomllib.TOMLDecodeError as err:
            raise ValueError(f"{path}: not valid TOML ({err})") from None
        doc = doc.get("schedule", doc)
        shape = str(doc.get("shape", "")).strip().lower()
        keys = {k: v for k, v in doc.items() if k != "shape"}
        return build_schedule(shape, keys, source=str(path))
    shape, _, rest = text.partition(":")
    keys = {}
    for item in filter(None, (p.strip() for p in rest.split(","))):
        k, eq, v = item.partition("=")
        if not eq or not v.strip():
            raise ValueError(f"schedule spec {text!r}: {item!r}; expected key=value")
        keys[k.strip().lower()] = v.strip()
    return build_schedule(shape.strip().lower(), keys, source=f"schedule spec {text!r}")


def build_schedule(shape: str, keys: dict, source: str = "schedule") -> Schedule:
    """Build ``shape`` from ``keys`` (values as numbers or numeric strings); see the module doc."""
    if shape not in SHAPES:
        raise ValueError(
            f"{source}: shape {shape!r}; expected one of {', '.join(SHAPES)} "
            "(e.g. wsd:peak=3e-4,warmup=2000,total=100000,decay=0.2)"
        )
    unknown = sorted(set(keys) - _ALLOWED[shape])
    if unknown:
        raise ValueError(
            f"{source}: unknown key(s) {', '.join(unknown)} for {shape}; expected "
            f"{', '.join(sorted(_ALLOWED[shape]))}"
        )
    for need in ("total", "peak"):
        if need not in keys:
            raise ValueError(
                f"{source}: missing {need}= (the schedule's "
                f"{'number of steps' if need == 'total' else 'peak learning rate'})"
            )

    def num(key, default=None, integer=False):
        if key not in keys:
            return default
        try:
            v = float(keys[key])
        except (TypeError, ValueError):
            raise ValueError(f"{source}: {key}={keys[key]!r} is not a number") from None
        if integer:
            if v != round(v):
                raise ValueError(f"{source}: {key}={keys[key]!r}; expected a whole number of steps")
            return int(round(v))
        return v

    total, peak = num("total", integer=True), num("peak")
    common = dict(warmup_steps=num("warmup", 0, True), warmup_from=num("warmup_from", 0.0))
    try:
        if shape == "constant":
            return sch.constant(total, peak, **common)
        if shape == "cosine":
            return sch.cosine(total, peak, num("final", 0.0), **common)
        if shape == "linear":
            return sch.wsd(
                total,
                peak,
                total - common["warmup_steps"],
                num("final", 0.0),
                "linear",
                name="linear",
                **common,
            )
        if shape == "multistep":
            if "milestones" not in keys or "factors" not in keys:
                raise ValueError("multistep needs milestones and factors (lists; use a TOML file)")
            return sch.multistep(total, peak, keys["milestones"], keys["factors"], **common)
        if ("decay" in keys) == ("decay_steps" in keys):
            raise ValueError("wsd needs exactly one of decay= (share of total) and decay_steps=")
        if "decay" in keys:
            share = num("decay")
            if not 0 < share <= 1:
                raise ValueError(
                    f"decay={keys['decay']!r}; expected a share of total in (0, 1]"
                    " (or decay_steps=)"
                )
            decay_steps = int(round(share * total))
        else:
            decay_steps = num("decay_steps", integer=True)
        return sch.wsd(
            total,
            peak,
            decay_steps,
            num("final", 0.0),
            str(keys.get("decay_shape", "linear")).lower(),
            **common,
        )
    except ValueError as err:
        if str(err).startswith(source):
            raise
        raise ValueError(f"{source}: {err}") from None
