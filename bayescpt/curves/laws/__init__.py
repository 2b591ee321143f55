"""The laws bayescpt models; each module fills the small interface of :mod:`.base`."""

from bayescpt.curves.laws.annealing import AnnealingLaw
from bayescpt.curves.laws.base import Law, Param
from bayescpt.curves.laws.cpt import CPTLaw
from bayescpt.curves.laws.multipower import MultiPowerLaw

LAWS = {"annealing": AnnealingLaw, "multipower": MultiPowerLaw, "cpt": CPTLaw}


def get_law(name: str, **options) -> Law:
    """The law called ``name`` (``annealing``, ``multipower``, ``cpt``) with its options."""
    if name not in LAWS:
        raise ValueError(f"unknown law {name!r}; expected one of {sorted(LAWS)}")
    return LAWS[name](**options)


__all__ = ["LAWS", "AnnealingLaw", "CPTLaw", "Law", "MultiPowerLaw", "Param", "get_law"]
