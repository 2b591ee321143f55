"""The public API: ``import bayescpt as bc`` gives the names a notebook needs.

* Every name in ``bayescpt.__all__`` resolves, and is the very object at its deep path (the
  module and attribute ``bayescpt._EXPORTS`` names), so the two import paths never disagree.
* ``import bayescpt`` stays light: no PyMC, ArviZ or PyTensor until a name that needs them is
  used (the CLI imports the package for ``__version__``).
* The notebooks import only from the top-level ``bayescpt``, never from a deep module.
"""

from __future__ import annotations

import ast
import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

import bayescpt

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9]*.py"))
HEAVY = ("pymc", "arviz", "pytensor")


def test_all_lists_every_export_once():
    assert len(bayescpt.__all__) == len(set(bayescpt.__all__))
    assert set(bayescpt.__all__) == set(bayescpt._EXPORTS) | {"__version__"}


@pytest.mark.parametrize("name", sorted(bayescpt._EXPORTS))
def test_every_public_name_is_the_object_at_its_deep_path(name):
    module, attribute = bayescpt._EXPORTS[name]
    deep = importlib.import_module(module)
    if attribute is not None:
        deep = getattr(deep, attribute)
    assert getattr(bayescpt, name) is deep
    assert name in dir(bayescpt)


def test_from_import_and_unknown_names():
    from bayescpt import Fit, forecast

    assert Fit is importlib.import_module("bayescpt.curves.model.fit").Fit
    assert forecast is importlib.import_module("bayescpt.curves.forecast.forecast").forecast
    with pytest.raises(AttributeError, match="no_such_name"):
        bayescpt.no_such_name  # noqa: B018
    with pytest.raises(ImportError):
        from bayescpt import no_such_name  # noqa: F401


def test_import_bayescpt_loads_no_modelling_library():
    code = (
        "import sys, bayescpt\n"
        "assert bayescpt.__version__\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip().splitlines()[-1] == "[]"


def _deep_imports(path: Path) -> list[str]:
    """The imports of ``path`` that reach into a module below the top-level ``bayescpt``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        found += [f"{path.name}:{node.lineno} {n}" for n in names if n.startswith("bayescpt.")]
    return found


def test_the_notebooks_import_only_from_the_top_level_package():
    assert NOTEBOOKS, "no notebooks found"
    found = [hit for path in NOTEBOOKS for hit in _deep_imports(path)]
    assert found == [], "\n".join(found)
    uses = [path.name for path in NOTEBOOKS if "bayescpt" in path.read_text()]
    assert uses == [path.name for path in NOTEBOOKS]


def test_the_deep_path_check_sees_both_import_forms(tmp_path):
    path = tmp_path / "nb.py"
    path.write_text(
        "import bayescpt as bc\nfrom bayescpt.core import tables\nimport bayescpt.cpt\n"
    )
    assert _deep_imports(path) == ["nb.py:2 bayescpt.core", "nb.py:3 bayescpt.cpt"]
