"""Tables and helpers shared by several test modules (imported as ``tests.helpers``).

* ``GOOD``: the smallest well-formed curve table (one run, a warmup row, three losses), the base
  of the malformed-table cases that change one cell of it.
* :func:`write`: write a table's text into a test's temporary folder.
* :func:`quiet`: call a function with its warnings silenced (the reference fits predate some
  stored ranges, so their predictions warn where a test checks something else).
* :func:`sigint_default`: start a child with SIGINT at its default action (the Ctrl-C tests).
"""

import signal
import warnings
from contextlib import contextmanager

GOOD = """run,step,lr,loss
a,0,0,
a,100,3e-4,4.0
a,200,3e-4,3.5
a,300,1e-4,3.2
"""


def write(tmp_path, text, name="curves.csv"):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def quiet(f, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return f(*args, **kw)


@contextmanager
def sigint_default():
    """Children started in the block get SIGINT at its default action, as a terminal's foreground
    command has it. A test run started as a background job of a non-interactive shell (``pytest
    ... &`` in a script) has SIGINT ignored, and an ignored signal stays ignored through fork and
    exec, so a sweep or fit would ignore the test's Ctrl-C (as a background job should) and
    run to the end: the Ctrl-C tests fail so, every time, and so they failed in a full run
    beside benchmarks (which this project starts that way). A handled signal is reset to its
    default by exec, so here it is handled while the child starts."""
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        yield
        return
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
