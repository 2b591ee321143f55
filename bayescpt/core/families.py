"""The table of fit families: the one list that :func:`~bayescpt.core.fitfile.load_fit`, the
sweep (:mod:`bayescpt.parallel`) and the command line read.

A family is a name (a sweep entry's ``family``) and the fit class that samples, saves and reads
it (a :class:`~bayescpt.core.fit_template.SampledFit`; its ``laws`` are the law names its files
carry). The table names each class by its module path and is resolved lazily, with importlib,
the first time a family is asked for. Why a table of paths: the classes live in the domain
layers above ``core``, which ``core`` may not import (the import contract in pyproject.toml), yet
reading any fit file is ``core``'s job; a registry the classes fill when imported worked only
once someone had imported them (the CLI did so with ``# noqa: F401`` imports). Here
``load_fit`` works in a fresh interpreter, no import stands anywhere for registration's sake,
and adding a family is one row.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Family:
    """One row of the table: ``name``, and the fit class as ``module`` and ``attr``."""

    name: str
    module: str
    attr: str

    def fit_class(self) -> type:
        return getattr(importlib.import_module(self.module), self.attr)


#: every fit family, by name (a sweep's ``family`` key; ``curves`` is its default)
FAMILIES = {
    f.name: f
    for f in (
        Family("curves", "bayescpt.curves.model.fit", "Fit"),
        Family("hparams", "bayescpt.hparams.fit", "HparamsFit"),
        Family("mixture", "bayescpt.mixture.fit", "MixtureFit"),
    )
}


def family_names() -> tuple:
    return tuple(FAMILIES)


def family_class(name: str) -> type:
    """The fit class of family ``name``; a ValueError naming the families for another name."""
    if name not in FAMILIES:
        raise ValueError(f"unknown fit family {name!r}; expected one of {family_names()}")
    return FAMILIES[name].fit_class()


class LawTable(Mapping):
    """Law name -> the fit class whose files carry it, over every family (read-only; resolves
    the families on first use)."""

    def _table(self) -> dict:
        out = {}
        for family in FAMILIES.values():
            cls = family.fit_class()
            for law in cls.laws:
                out.setdefault(law, cls)
        return out

    def __getitem__(self, law):
        return self._table()[law]

    def __iter__(self):
        return iter(self._table())

    def __len__(self):
        return len(self._table())


#: law name -> fit class (see :class:`LawTable`)
LAW_CLASSES = LawTable()
