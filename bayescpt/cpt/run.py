"""One call from a cpt fit to a decided CPT plan, with the optional checks of other fits.

:func:`run_plan` is what ``bayescpt plan``, the demo and the notebooks call: it builds the plan
grid (:func:`~bayescpt.cpt.plan.plan_grid`), evaluates every plan per posterior draw
(:func:`~bayescpt.cpt.plan.evaluate`), applies the optional checks and decides
(:func:`~bayescpt.cpt.plan.decide`):

* an hparams fit (``bayescpt hparams``) predicts the optimal peak LR of the checkpoint
  (:func:`bayescpt.hparams.predict.predict_optimum`, evaluated once); without given peak LRs the
  grid takes that prediction's lower end, median and upper end of its ``prob`` interval, and each
  plan's peak LR is placed against it (:func:`~bayescpt.cpt.plan.hparams_check`);
* a mixture fit (``bayescpt mixture``) makes a plan feasible only if its mixture (domain share
  1 - replay ratio) is, with probability >= 1 - ``risk``
  (:func:`~bayescpt.cpt.plan.mixture_check`).

When no plan is chosen, :attr:`PlanResult.infeasible` says why and what to relax.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from bayescpt.core import schedules as S
from bayescpt.cpt.plan import (
    PlanDraws,
    check_memory,
    decide,
    evaluate,
    hparams_check,
    mixture_check,
    plan_grid,
)
from bayescpt.cpt.plan_range import plan_extrapolation
from bayescpt.hparams.predict import predict_optimum

#: the plan table's columns shown on the Pareto front (the optional ones where present)
FRONT = ["shape", "peak_lr", "steps", "transfer", "decay_frac", "replay_ratio", "domain_mean",
         "domain_lower", "domain_upper", "general_rise_mean", "p_within_tolerance",
         "p_mixture_feasible", "lr_over_opt", "chosen"]


@dataclass
class PlanResult:
    """What :func:`run_plan` decided.

    ``table``: one row per plan (:func:`~bayescpt.cpt.plan.decide`'s columns, plus
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


def run_plan(fit, pt: S.Schedule, *, tolerance: float, steps, risk: float = 0.1,
             transfers=None, shapes=("cosine", "linear", "constant"), peak_lrs=None,
             decay_fracs=(0.2,), replay_ratios=(0.0,), warmup: int = 100,
             final_frac: float = 0.0, objective: str = "chance", quantile: float = 0.9,
             w_general: float = 1.0, w_domain: float = 1.0, general=None, domain=None,
             model_size=None, points: int = 48, prob: float = 0.9, backend: str = "auto",
             seed: int = 0, hparams_fit=None, n_params=None, init_loss=None, cpt_tokens=None,
             mixture_fit=None, mixture_tokens=None, mixture_model_size=None,
             mixture_label: str = "the mixture fit") -> PlanResult:
    """Plan CPT from checkpoints of the PT schedule ``pt`` with the cpt fit ``fit``.

    The grid is every combination of ``transfers`` (PT steps; default the end of ``pt``),
    ``shapes``, ``peak_lrs``, ``steps``, ``decay_fracs`` and ``replay_ratios``; ``tolerance``
    (nats) and ``risk`` define feasibility, P(general rise <= tolerance) >= 1 - risk;
    ``objective``, ``quantile``, ``w_general``, ``w_domain`` and ``prob`` are
    :func:`~bayescpt.cpt.plan.decide`'s, ``points``, ``general``, ``domain``, ``model_size``,
    ``seed`` and ``backend`` :func:`~bayescpt.cpt.plan.evaluate`'s.

    ``hparams_fit`` needs ``n_params`` (parameters), ``init_loss`` (the checkpoint's validation
    loss on the CPT data, nats) and ``cpt_tokens``; ``mixture_fit`` needs ``mixture_tokens``
    (the CPT budget in that fit's token unit) and, when it has several, ``mixture_model_size``;
    ``mixture_label`` names it in :attr:`PlanResult.infeasible`. Raises ValueError for missing
    inputs (worded for the command line's options)."""
    if hparams_fit is not None:
        missing = [o for o, v in (("--n-params", n_params), ("--init-loss", init_loss),
                                  ("--cpt-tokens", cpt_tokens)) if v is None]
        if missing:
            raise ValueError(f"--hparams needs {', '.join(missing)}")
    optimum, source = None, "given"
    if hparams_fit is not None:
        optimum = predict_optimum(hparams_fit, n_params, init_loss=init_loss,
                                  cpt_tokens=cpt_tokens, prob=prob)
        if peak_lrs is None:
            lr = optimum["lr_opt"]
            peak_lrs = sorted({v for v in (lr["lower"], lr["median"], lr["upper"])
                               if v is not None})
            source = "hparams"
    if peak_lrs is None:
        raise ValueError("give the peak learning rates (--peak-lrs), or an hparams fit "
                         "(--hparams) to take them from")
    if mixture_fit is not None and mixture_tokens is None:
        raise ValueError("--mixture needs the CPT budget in the mixture fit's unit "
                         "(--mixture-tokens)")
    plans = plan_grid(transfers or [pt.total_steps], shapes, peak_lrs, steps, decay_fracs,
                      replay_ratios, warmup, final_frac)
    check_memory(fit, pt, plans, points)      # before any plan's schedule is built
    column, extrapolation, range_note = plan_extrapolation(fit, pt, plans, model_size)
    draws = evaluate(fit, pt, plans, points, general, domain, model_size, seed, backend)
    also = None
    if mixture_fit is not None:
        draws.plans = mixture_check(draws.plans, mixture_fit, mixture_tokens, tolerance, risk,
                                    mixture_model_size)
        also = draws.plans["mixture_ok"].to_numpy()
    if hparams_fit is not None:
        draws.plans, _ = hparams_check(draws.plans, hparams_fit, n_params, cpt_tokens, init_loss,
                                       prob, optimum=optimum)
    table = decide(draws, tolerance, risk, prob, objective, quantile, w_general, w_domain,
                   also_feasible=also)
    table["extrapolation"] = column
    failing = None
    if mixture_fit is not None:
        failing = sorted(float(r) for r in
                         table.loc[~table["mixture_ok"], "replay_ratio"].unique())
    return PlanResult(table, draws, tolerance, risk, objective, list(peak_lrs), source, optimum,
                      failing, infeasibility(table, tolerance, risk, mixture_label),
                      list(optimum["warnings"]) if optimum is not None else [], extrapolation,
                      range_note)


def infeasibility(table: pd.DataFrame, tolerance: float, risk: float,
                  mixture_label: str = "the mixture fit") -> str | None:
    """Why no plan of ``table`` (:func:`~bayescpt.cpt.plan.decide`'s) was chosen, and what to
    relax; None when one was. Either the mixture check fails every plan, or the best plan's
    P(general rise <= tolerance) (among those passing the mixture check) is below 1 - risk."""
    if table["chosen"].any():
        return None
    if "mixture_ok" in table.columns and not table["mixture_ok"].any():
        return (f"no plan is feasible: by {mixture_label} no planned mixture keeps the general "
                f"loss within {tolerance:g} with probability >= {1 - risk:.3f}; add plans with "
                "more replay (--replay-ratios) or allow a larger --tolerance or --risk")
    pool = table[table["mixture_ok"]] if "mixture_ok" in table.columns else table
    best = pool["p_within_tolerance"].max()
    return (f"no plan is feasible: the best keeps the general rise within {tolerance:g} with "
            f"probability {best:.3f} < {1 - risk:.3f}; allow a larger --tolerance or --risk, "
            "or add plans with lower peak LRs, fewer steps or more replay")
