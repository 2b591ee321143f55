"""One call from a cpt fit to a decided CPT plan, with the optional checks of other fits.

:func:`run_plan` is what ``bayescpt plan``, the demo and the notebooks call with a
:class:`~bayescpt.cpt.plan.request.PlanRequest` (:func:`~bayescpt.cpt.plan.request.plan_request`
builds one from the command line's options): it builds the plan grid
(:mod:`bayescpt.cpt.plan.grid`), evaluates every plan per posterior draw
(:func:`~bayescpt.cpt.plan.evaluate.evaluate`, which first refuses a grid too big for memory),
finds where the plans leave the fit's training range (:mod:`bayescpt.cpt.plan_range`), applies
the optional checks (:mod:`bayescpt.cpt.plan.checks`) and decides
(:func:`~bayescpt.cpt.plan.decide.decide`):

* an hparams fit (``bayescpt hparams``) predicts the optimal peak LR of the checkpoint
  (:meth:`~bayescpt.cpt.plan.checks.HparamsCheck.optimum`, evaluated once); without given peak
  LRs the grid takes that prediction's lower end, median and upper end of its ``prob`` interval,
  and each plan's peak LR is placed against it (:func:`~bayescpt.cpt.plan.checks.hparams_check`);
* a mixture fit (``bayescpt mixture``) makes a plan feasible only if its mixture (domain share
  1 - replay ratio) is, with probability >= 1 - ``risk``
  (:func:`~bayescpt.cpt.plan.checks.mixture_check`).

When no plan is chosen, :attr:`PlanResult.infeasible` says why and what to relax.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import pandas as pd

from bayescpt.core import schedules as S
from bayescpt.cpt.plan.checks import hparams_check, mixture_check, optimum_peak_lrs
from bayescpt.cpt.plan.decide import decide, infeasibility
from bayescpt.cpt.plan.evaluate import PlanDraws, evaluate
from bayescpt.cpt.plan.request import PlanRequest
from bayescpt.cpt.plan_range import plan_extrapolation

#: the plan table's columns shown on the Pareto front (the optional ones where present)
FRONT = [
    "shape",
    "peak_lr",
    "steps",
    "transfer",
    "decay_frac",
    "replay_ratio",
    "domain_mean",
    "domain_lower",
    "domain_upper",
    "general_rise_mean",
    "p_within_tolerance",
    "p_mixture_feasible",
    "lr_over_opt",
    "chosen",
]


@dataclass
class PlanResult:
    """What :func:`run_plan` decided.

    ``table``: one row per plan (:func:`~bayescpt.cpt.plan.decide.decide`'s columns, plus
    ``p_mixture_feasible, mixture_ok`` with a mixture fit and ``lr_over_opt,
    lr_in_opt_interval`` with an hparams fit); ``draws``: the per-draw outcomes, arrays of shape
    (draws, plans); ``peak_lrs``: the peak LRs of the grid (raw LR) and ``peak_lrs_from``
    (``"given"`` or ``"hparams"``); ``optimum``: the hparams fit's prediction (its ``lr_opt`` has
    ``median, lower, upper``; None bounds are open) or None; ``mixture_failing``: the replay
    ratios whose mixture fails the mixture check, ascending (None without a mixture fit);
    ``infeasible``: why no plan was chosen and what to relax (None when one was);
    ``warnings``: the hparams prediction's warnings; ``extrapolation``: where the plans leave
    the cpt fit's training range, one ExtrapolationWarning per plan setting that does
    (:func:`~bayescpt.cpt.plan_range.plan_extrapolation`; the table's ``extrapolation`` column names
    them per plan), and ``range_note`` the part of that range the fit file does not record
    (None when it records all)."""

    table: pd.DataFrame
    draws: PlanDraws
    tolerance: float
    risk: float
    objective: str
    peak_lrs: list[float]
    peak_lrs_from: str
    optimum: dict | None = None
    mixture_failing: list[float] | None = None
    infeasible: str | None = None
    warnings: list[str] = field(default_factory=list)
    extrapolation: list = field(default_factory=list)
    range_note: str | None = None

    @property
    def chosen(self) -> pd.Series | None:
        """The chosen plan's row, or None."""
        rows = self.table[self.table["chosen"]]
        return rows.iloc[0] if len(rows) else None

    @property
    def lr_opt(self) -> dict | None:
        """The predicted optimal peak LR (``median, lower, upper``), or None without hparams."""
        return None if self.optimum is None else self.optimum["lr_opt"]

    def front(self) -> pd.DataFrame:
        """The Pareto front (no plan has both lower expected domain loss and higher
        P(within tolerance)), by P(within tolerance) ascending, in the :data:`FRONT` columns."""
        cols = [c for c in FRONT if c in self.table.columns]
        return self.table[self.table["pareto"]].sort_values("p_within_tolerance")[cols]


def run_plan(fit, pt: S.Schedule, request: PlanRequest) -> PlanResult:
    """Plan CPT from checkpoints of the PT schedule ``pt`` with the cpt fit ``fit``, as
    ``request`` asks (see the module docstring).

    The grid is every combination of the request's decisions (transfers default to the end of
    ``pt``); its criterion's ``tolerance`` (nats) and ``risk`` define feasibility, P(general rise
    <= tolerance) >= 1 - risk. Raises DataError where the fits or the data cannot answer it."""
    crit, how = request.criterion, request.evaluation
    optimum = None if request.hparams is None else request.hparams.optimum(crit.prob)
    grid, source = request.grid, "given"
    if grid.peak_lrs is None:  # the request then has an hparams check
        grid, source = replace(grid, peak_lrs=optimum_peak_lrs(optimum)), "hparams"
    plans = grid.table(pt.total_steps)
    draws = evaluate(fit, pt, plans, how)  # refuses a grid too big for memory first
    column, extrapolation, range_note = plan_extrapolation(fit, pt, plans, how.model_size)
    also = None
    if request.mixture is not None:
        draws.plans = mixture_check(draws.plans, request.mixture, crit.tolerance, crit.risk)
        also = draws.plans["mixture_ok"].to_numpy()
    if request.hparams is not None:
        draws.plans, _ = hparams_check(draws.plans, request.hparams, crit.prob, optimum=optimum)
    table = decide(draws, crit, also_feasible=also)
    table["extrapolation"] = column
    failing = None
    if request.mixture is not None:
        failing = sorted(float(r) for r in table.loc[~table["mixture_ok"], "replay_ratio"].unique())
    label = "the mixture fit" if request.mixture is None else request.mixture.label
    return PlanResult(
        table,
        draws,
        crit.tolerance,
        crit.risk,
        crit.objective,
        list(grid.peak_lrs),
        source,
        optimum,
        failing,
        infeasibility(table, crit.tolerance, crit.risk, label),
        list(optimum["warnings"]) if optimum is not None else [],
        extrapolation,
        range_note,
    )
