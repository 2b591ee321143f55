"""Built and compiled models kept in this process, so that fitting the same model again (another
seed, a sweep's next task on a worker, a notebook cell run twice) skips building and compiling it.

For a loss-curve law on a small table, about four fifths of a fit's time is spent before the first
draw: PyTensor rewriting the log density's graph (for nutpie and again for the mode search of the
chains' starts) and LLVM compiling nutpie's logp function (measured in ``benchmarks/RESULTS.md``,
"Fitting the same model again"). None of it depends on the seed or the sampler's run settings, only
on what the model is built from.

A cache entry is keyed by a fingerprint of everything the caller builds the model from
(:func:`fingerprint`: law, options, configuration without the sampler's run settings, the data
table's values, column names and types), holds what the caller's ``build()`` returned (the PyMC
model, with its chains' start finder kept on it: :func:`bayescpt.core.init.model_starts`) and
nutpie's compiled model for it (the ``compiled`` dict :func:`bayescpt.core.sampling.sample_model`
fills). A fit from a cache entry gives the same draws as one from a fresh build with the same
seed: the model, its mode search and its compile are deterministic (tested).

A sweep's curve fits go further (:mod:`bayescpt.parallel.tasks`): its workers keep here a
:class:`bayescpt.curves.model.fit.CompiledFit` per table *shape*, so other losses on the same runs
reuse it too.

One fit uses an entry at a time: a second thread that asks for an entry in use gets a fresh
build, uncached. The cache keeps the :data:`SIZE` most recently used entries;
:func:`clear` empties it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import threading
from collections import OrderedDict

#: entries kept (a compiled loss-curve model of a table of thousands of rows takes a few MB)
SIZE = 8
#: tables with more rows are not keyed, so their models are not kept: an entry holds the model's
#: arrays twice (PyMC's and nutpie's copies, 8 bytes per value, several arrays per row), and for
#: such tables the sampling, not the compile, is most of a fit's time
MAX_ROWS = 250_000


@dataclasses.dataclass
class Entry:
    """What ``build()`` returned (``value``) and the sampler's compiled model(s) for it;
    ``fresh``: built for the fit now using it (not taken from the cache)."""

    value: object
    compiled: dict = dataclasses.field(default_factory=dict)
    fresh: bool = True
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock, repr=False)


_entries: OrderedDict[str, Entry] = OrderedDict()
_guard = threading.Lock()
stats = {"hits": 0, "misses": 0}
_classes: set = set()


class _Unkeyable(TypeError):
    """A part has no canonical form: the model is not cached."""


def fingerprint(*parts) -> str | None:
    """A SHA-256 hex digest of ``parts``: pandas tables by their values (row by row, with the
    index), column names and dtypes; numpy arrays by dtype, shape and bytes; everything else
    by its canonical JSON (sorted keys; numpy scalars and arrays inside it by value; classes by
    module, name and identity). None when a part holds anything else (an object whose ``repr``
    might not tell two values apart) or a table of more than :data:`MAX_ROWS` rows: then
    :func:`cached` builds afresh rather than risk a wrong model."""
    import numpy as np
    import pandas as pd

    def canonical(o):
        if isinstance(o, np.ndarray):
            return {"__array__": [o.dtype.str, list(o.shape), _digest(o)]}
        if isinstance(o, np.generic):
            return o.item()
        if isinstance(o, (pd.DataFrame, pd.Series)):
            inner = fingerprint(o if isinstance(o, pd.DataFrame) else o.to_frame())
            if inner is None:
                raise _Unkeyable("table")
            return {"__frame__": inner}
        if isinstance(o, type):  # a class redefined (a notebook cell run again) is another
            _classes.add(o)  # class; kept alive so that its id is never reused
            return {"__class__": [o.__module__, o.__qualname__, id(o)]}
        raise _Unkeyable(type(o).__name__)

    h = hashlib.sha256()
    try:
        for part in parts:
            if isinstance(part, pd.DataFrame):
                if len(part) > MAX_ROWS:
                    return None
                h.update(b"frame")
                h.update(json.dumps([[str(c), str(t)] for c, t in part.dtypes.items()]).encode())
                h.update(pd.util.hash_pandas_object(part, index=True).to_numpy().tobytes())
            elif isinstance(part, np.ndarray):
                h.update(f"array{part.dtype.str}{part.shape}".encode())
                h.update(_digest(part).encode())
            else:
                h.update(b"json")
                h.update(json.dumps(part, sort_keys=True, default=canonical).encode())
            h.update(b"\0")
    except (TypeError, ValueError):  # unkeyable, unhashable cells, a circular reference
        return None
    return h.hexdigest()


def _digest(a) -> str:
    import numpy as np

    if a.dtype.hasobject:  # its bytes are addresses, not values
        raise _Unkeyable("object array")
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


@contextlib.contextmanager
def cached(key: str | None, build):
    """Yield the :class:`Entry` for ``key``, building it with ``build()`` on a miss; ``key`` None:
    a fresh entry, not kept. The entry is the caller's until the block is left."""
    if key is None:
        yield Entry(build())
        return
    with _guard:
        entry = _entries.get(key)
        if entry is not None:
            _entries.move_to_end(key)
    if entry is not None and entry.lock.acquire(blocking=False):
        stats["hits"] += 1
        entry.fresh = False
        try:
            yield entry
        finally:
            entry.lock.release()
        return
    if entry is not None:  # in use by another thread: build one of our own
        yield Entry(build())
        return
    stats["misses"] += 1
    entry = Entry(build())
    entry.lock.acquire()
    try:
        yield entry
        with _guard:  # kept only once a fit went through: a failed build or compile is not
            _entries[key] = entry
            while len(_entries) > SIZE:
                _entries.popitem(last=False)
    finally:
        entry.lock.release()


def clear() -> None:
    """Forget every kept model."""
    with _guard:
        _entries.clear()
