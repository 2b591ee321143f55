"""The drop-progress term shared by the annealing and multi-power laws (not in the papers).

Their loss drop is scaled by (S1 / s1_ref)^-kappa, kappa ~ Normal(0, :data:`KAPPA_SD`), with S1
the forward area (raw LR x steps); kappa = 0 is the paper's law. Normal(0, 0.2): at two sd the
drop's amplitude changes by a factor ~1.5 over a run three times longer. s1_ref (setting,
:data:`S1_REF` = 3.0) is about the forward area in the middle of the training decays. The term's
option (:func:`option`, ``--drop-progress``), parameter (:func:`param`), design column ``log_s1``
(:func:`design`, per point) and factor (:func:`factor`).
"""

from __future__ import annotations

import numpy as np

from bayescpt.curves.model.laws.base import Param
from bayescpt.curves.model.laws.registry import LawOption

KAPPA_SD = 0.2
S1_REF = 3.0


def option(default: bool) -> LawOption:
    """The ``progress`` option shared by the annealing and multi-power laws."""
    return LawOption(
        "progress",
        default,
        flag="--drop-progress",
        group="multipower and annealing law option (multipower: default on; annealing: "
        "default off)",
        help="scale the loss drop (multipower) or annealing term C*S2 (annealing) by "
        "(S1/s1_ref)^-kappa, kappa sampled (not in the papers; see "
        "benchmarks/RESULTS.md); --no-drop-progress: the paper's law",
    )


def param(doc: str) -> Param:
    """The progress exponent kappa (one value for all groups)."""
    return Param("kappa", False, 0.0, KAPPA_SD, 0.0, 0.0, 0.0, doc)


def design(s1: np.ndarray, settings: dict) -> np.ndarray:
    """log(S1 / s1_ref) per point, the progress term's design column ``log_s1``."""
    return np.log(np.maximum(s1, 1e-12) / settings.get("s1_ref", S1_REF))


def factor(xp, theta: dict, X: dict):
    """(S1 / s1_ref)^-kappa, the factor on the loss drop."""
    return xp.exp(-theta["kappa"] * X["log_s1"])
