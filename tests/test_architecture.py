"""The house rules, checked: the import contract (import-linter, configured in pyproject.toml),
module size, where imports may stand, and docstrings.

* The contract passes on this checkout, and a forbidden import (core importing the CLI, a domain
  importing torch, core importing numpyro, the CLI importing PyMC) breaks it with a message naming
  the broken contract.
* No module of the package is longer than ``MAX_LINES`` lines.
* Imports inside the package are absolute and at module top: no relative imports, no
  package-internal import inside a function. Only the optional heavy dependencies ``HEAVY`` may
  be imported inside functions, and they must be (never at module top), so that every module
  imports without the optional extras (the lab receives torch from
  ``bayescpt.lab.require_torch``).
* Every module has a docstring of its own (not a placeholder), and nothing in the package points
  to files outside the repository.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "bayescpt"
MAX_LINES = 400
HEAVY = {
    "torch",
    "jax",
    "jaxlib",
    "numpyro",
    "blackjax",
    "nutpie",
    "dask",
    "tensorboard",
    "distributed",
    "transformers",
    "lightning",
    "lightning_fabric",
    "mlflow",
}
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def _lint_imports(root: Path) -> subprocess.CompletedProcess:
    """Run the venv's ``lint-imports`` on the package under ``root`` with its pyproject.toml."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--config", str(root / "pyproject.toml")],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _modules():
    return sorted(PACKAGE.rglob("*.py"))


def _imports(path: Path):
    """Yield ``(node, module names, inside_function)`` for every import statement in ``path``."""
    tree = ast.parse(path.read_text(), filename=str(path))

    def walk(node, in_function):
        for child in ast.iter_child_nodes(node):
            inner = in_function or isinstance(
                child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
            )
            if isinstance(child, ast.Import):
                yield child, [a.name for a in child.names], in_function
            elif isinstance(child, ast.ImportFrom):
                yield child, [child.module or ""], in_function
            yield from walk(child, inner)

    yield from walk(tree, False)


def _where(path: Path, node) -> str:
    return f"{path.relative_to(ROOT)}:{node.lineno}"


def test_lint_imports_executable_is_installed():
    assert LINT_IMPORTS.exists(), f"{LINT_IMPORTS} missing: install the dev extra (import-linter)"


def test_import_contract_holds():
    run = _lint_imports(ROOT)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 broken" in run.stdout


@pytest.mark.parametrize(
    "module, line, contract, edge",
    [
        (
            "core/tables.py",
            "import bayescpt.cli.main",
            "Layers: cli > report > datasets | lab | parallel > cpt > curves | hparams | mixture "
            "> core",
            "bayescpt.core.tables -> bayescpt.cli.main",
        ),
        (
            "curves/evaluate/scores.py",
            "import torch",
            "torch is imported only by bayescpt.lab",
            "bayescpt.curves.evaluate.scores -> torch",
        ),
        (
            "core/sampling.py",
            "import numpyro",
            "The JAX stack stays out of core and the domains (two lazy JAX paths)",
            "bayescpt.core.sampling -> numpyro",
        ),
        (
            "cli/demo.py",
            "import pymc",
            "The CLI holds no statistics (no modelling or sampling library)",
            "bayescpt.cli.demo -> pymc",
        ),
    ],
)
def test_a_forbidden_import_breaks_its_contract(tmp_path, module, line, contract, edge):
    """On a copy of the package with one forbidden import added, lint-imports fails and names
    the contract and the import."""
    shutil.copytree(
        PACKAGE,
        tmp_path / "bayescpt",
        ignore=shutil.ignore_patterns("__pycache__", "*.nc", "*.csv"),
    )
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    path = tmp_path / "bayescpt" / module
    path.write_text(path.read_text() + f"\n{line}  # noqa: E402,F401\n")
    run = _lint_imports(tmp_path)
    assert run.returncode != 0
    assert f"{contract} BROKEN" in " ".join(run.stdout.split())
    assert edge in run.stdout


def test_no_module_longer_than_the_limit():
    long = {
        str(p.relative_to(ROOT)): n
        for p in _modules()
        if (n := len(p.read_text().splitlines())) > MAX_LINES
    }
    assert long == {}, f"modules over {MAX_LINES} lines: {long}"


def test_no_relative_imports():
    found = [
        _where(p, node)
        for p in _modules()
        for node, _, _ in _imports(p)
        if isinstance(node, ast.ImportFrom) and node.level
    ]
    assert found == [], "\n".join(found)


def test_package_imports_stand_at_module_top():
    found = [
        _where(p, node)
        for p in _modules()
        for node, names, in_function in _imports(p)
        if in_function and any(n == "bayescpt" or n.startswith("bayescpt.") for n in names)
    ]
    assert found == [], "\n".join(found)


def test_optional_heavy_dependencies_are_imported_only_inside_functions():
    found = [
        f"{_where(p, node)} {names}"
        for p in _modules()
        for node, names, in_function in _imports(p)
        if not in_function and {n.split(".")[0] for n in names} & HEAVY
    ]
    assert found == [], "\n".join(found)


def test_every_module_imports_without_the_optional_extras():
    """Importing every module of the package loads none of the optional heavy dependencies."""
    code = (
        "import importlib, pkgutil, sys, bayescpt\n"
        "for m in pkgutil.walk_packages(bayescpt.__path__, 'bayescpt.'):\n"
        "    importlib.import_module(m.name)\n"
        f"print(sorted(h for h in {sorted(HEAVY)!r} if h in sys.modules))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg"}
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip().splitlines()[-1] == "[]"


@pytest.mark.parametrize(
    "line, expected",
    [
        ("from bayescpt.core import tables\n", []),
        ("def f():\n    from bayescpt.core import tables\n", ["m.py:2"]),
        ("class C:\n    def f(self):\n        import bayescpt.core\n", ["m.py:3"]),
    ],
)
def test_the_import_walk_tells_function_local_from_module_top(tmp_path, line, expected):
    path = tmp_path / "m.py"
    path.write_text(line)
    tree_hits = [
        f"m.py:{node.lineno}"
        for node, names, in_function in _imports(path)
        if in_function and names[0].startswith("bayescpt")
    ]
    assert tree_hits == expected


OUTSIDE = ("LAWS.md", "STACK.md", "../shared", "shared/design", "shared/data")


def test_every_module_and_package_has_a_real_docstring():
    missing = [
        str(p.relative_to(ROOT))
        for p in _modules()
        if len((ast.get_docstring(ast.parse(p.read_text())) or "").strip(" .\n")) < 20
    ]
    assert missing == [], "\n".join(missing)


def test_the_package_names_no_file_outside_the_repository():
    files = [p for p in PACKAGE.rglob("*") if p.suffix in (".py", ".md", ".toml")]
    found = [
        f"{p.relative_to(ROOT)}:{i} {word}"
        for p in files
        for i, line in enumerate(p.read_text().splitlines(), 1)
        for word in OUTSIDE
        if word in line
    ]
    assert found == [], "\n".join(found)
