"""The laws bayescpt models; each module fills the small interface of :mod:`.base` and registers
its class in :mod:`.registry` (importing this package registers the built-in laws)."""

# imported in registration order, which is the order of the command line's --law choices
# isort: off
from bayescpt.curves.model.laws.annealing import AnnealingLaw
from bayescpt.curves.model.laws.multipower import MultiPowerLaw
from bayescpt.curves.model.laws.cpt import CPTLaw

# isort: on
from bayescpt.curves.model.laws.base import Law, Param
from bayescpt.curves.model.laws.cpt_modes import CPTMode
from bayescpt.curves.model.laws.registry import (
    LAWS,
    LawOption,
    cli_options,
    get_law,
    law_names,
    option_groups,
    register_law,
    resolve_law_options,
    unregister_law,
)

__all__ = [
    "LAWS",
    "AnnealingLaw",
    "CPTLaw",
    "CPTMode",
    "Law",
    "LawOption",
    "MultiPowerLaw",
    "Param",
    "cli_options",
    "get_law",
    "law_names",
    "option_groups",
    "register_law",
    "resolve_law_options",
    "unregister_law",
]
