"""Tables and helpers shared by several test modules (imported as ``tests.helpers``).

* ``GOOD``: the smallest well-formed curve table (one run, a warmup row, three losses), the base
  of the malformed-table cases that change one cell of it.
* :func:`write`: write a table's text into a test's temporary folder.
* :func:`quiet`: call a function with its warnings silenced (the reference fits predate some
  stored ranges, so their predictions warn where a test checks something else).
"""

import warnings

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
