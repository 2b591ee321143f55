"""What the planner is asked: the decision grid, the criterion, how to evaluate, and the optional
checks, as one frozen :class:`PlanRequest`, each part checked on construction (ValueError, worded
for the command line's options).

:func:`plan_request` builds one from flat options named as ``bayescpt plan``'s (``-`` as ``_``):
the command line, the demo and the notebooks use it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from bayescpt.cpt.plan.checks import HparamsCheck, MixtureCheck
from bayescpt.cpt.plan.decide import Criterion
from bayescpt.cpt.plan.evaluate import Evaluation
from bayescpt.cpt.plan.grid import PlanGrid


def _need_peak_lrs(peak_lrs, hparams) -> None:
    if peak_lrs is None and hparams is None:
        raise ValueError(
            "give the peak learning rates (--peak-lrs), or an hparams fit "
            "(--hparams) to take them from"
        )


@dataclass(frozen=True)
class PlanRequest:
    """The plans to evaluate (``grid``), how to choose among them (``criterion``), how to
    evaluate them (``evaluation``) and the optional ``hparams`` and ``mixture`` checks. Without
    peak LRs in the grid the hparams check is needed (it gives them)."""

    grid: PlanGrid
    criterion: Criterion
    evaluation: Evaluation = field(default_factory=Evaluation)
    hparams: HparamsCheck | None = None
    mixture: MixtureCheck | None = None

    def __post_init__(self):
        _need_peak_lrs(self.grid.peak_lrs, self.hparams)


def _names(cls, prefix: str = "") -> dict:
    """option name -> field name of ``cls`` (the checks' fits are passed apart)."""
    return {prefix + f.name: f.name for f in fields(cls) if f.name != "fit"}


#: the options :func:`plan_request` takes by the part of the request they fill
OPTIONS = {
    "grid": _names(PlanGrid),
    "criterion": _names(Criterion),
    "evaluation": _names(Evaluation),
    "hparams": _names(HparamsCheck),
    "mixture": _names(MixtureCheck, "mixture_"),
}
#: all of them
OPTION_NAMES = frozenset(name for names in OPTIONS.values() for name in names)


def plan_request(*, hparams_fit=None, mixture_fit=None, **options) -> PlanRequest:
    """The request from flat options: :class:`PlanGrid`'s (``steps`` needed), :class:`Criterion`'s
    (``tolerance`` needed), :class:`Evaluation`'s, :class:`HparamsCheck`'s with ``hparams_fit``
    and :class:`MixtureCheck`'s prefixed ``mixture_`` (``mixture_tokens, mixture_model_size,
    mixture_label``) with ``mixture_fit``. The checks' options are ignored without their fit.
    The missing-option errors come in the command line's order: the hparams check's inputs,
    the peak LRs, the mixture budget, then the grid's and the criterion's values."""
    unknown = sorted(set(options) - OPTION_NAMES)
    if unknown:
        raise TypeError(f"plan_request() got unexpected options {unknown}")
    part = {
        key: {f: options[o] for o, f in names.items() if o in options}
        for key, names in OPTIONS.items()
    }
    hparams = None if hparams_fit is None else HparamsCheck(hparams_fit, **part["hparams"])
    _need_peak_lrs(options.get("peak_lrs"), hparams)
    mixture = None if mixture_fit is None else MixtureCheck(mixture_fit, **part["mixture"])
    return PlanRequest(
        PlanGrid(**part["grid"]),
        Criterion(**part["criterion"]),
        Evaluation(**part["evaluation"]),
        hparams,
        mixture,
    )
