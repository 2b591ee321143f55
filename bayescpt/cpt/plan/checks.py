"""The planner's optional checks against other fits of the same model family.

* hparams (``bayescpt hparams``): the optimal peak LR of the checkpoint, predicted from the model's
  parameters ``n_params``, its validation loss on the CPT data ``init_loss`` (nats) and the CPT
  tokens ``cpt_tokens``; each plan's ``lr_over_opt`` = peak LR / posterior-median LR_opt, and
  whether the peak LR lies in LR_opt's central interval;
* mixture (``bayescpt mixture``): a plan's domain share is 1 - ``replay_ratio``; the mixture law
  gives P(the general loss stays within the tolerance of its baseline and the domain loss below
  its own) at the CPT budget ``tokens`` (in the mixture fit's token unit).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from bayescpt.core.tables import DataError
from bayescpt.hparams.predict import predict_optimum
from bayescpt.mixture.decide import feasibility


@dataclass(frozen=True)
class HparamsCheck:
    """An hparams fit (``fit``) and the checkpoint it is asked about: ``n_params`` (parameters),
    ``init_loss`` (nats) and ``cpt_tokens``, all needed (ValueError worded for the command
    line's options)."""

    fit: Any
    n_params: float | None = None
    init_loss: float | None = None
    cpt_tokens: float | None = None

    def __post_init__(self):
        missing = [
            o
            for o, v in (
                ("--n-params", self.n_params),
                ("--init-loss", self.init_loss),
                ("--cpt-tokens", self.cpt_tokens),
            )
            if v is None
        ]
        if missing:
            raise ValueError(f"--hparams needs {', '.join(missing)}")

    def optimum(self, prob: float = 0.9) -> dict:
        """The fit's prediction of the checkpoint's optimal LR (``predict_optimum``; its
        ``lr_opt`` has ``median, lower, upper`` of the ``prob`` interval, None bounds open)."""
        return predict_optimum(
            self.fit, self.n_params, init_loss=self.init_loss, cpt_tokens=self.cpt_tokens, prob=prob
        )


@dataclass(frozen=True)
class MixtureCheck:
    """A mixture fit (``fit``), the CPT budget ``tokens`` in its token unit (needed), the model
    size (None: the fit's only one) and the ``label`` naming the fit in messages."""

    fit: Any
    tokens: float | None = None
    model_size: float | None = None
    label: str = "the mixture fit"

    def __post_init__(self):
        if self.tokens is None:
            raise ValueError(
                "--mixture needs the CPT budget in the mixture fit's unit (--mixture-tokens)"
            )


def optimum_peak_lrs(optimum: dict) -> list[float]:
    """The peak LRs an hparams prediction suggests: the lower end, median and upper end of its
    optimal LR's interval (those that are not open), ascending."""
    lr = optimum["lr_opt"]
    return sorted({v for v in (lr["lower"], lr["median"], lr["upper"]) if v is not None})


def hparams_check(
    plans: pd.DataFrame, check: HparamsCheck, prob: float = 0.9, optimum: dict | None = None
) -> tuple[pd.DataFrame, dict]:
    """Place each plan's peak LR against the optimal LR of ``check``'s hparams fit for this
    checkpoint: ``lr_over_opt`` = peak LR / posterior-median LR_opt, and
    ``lr_in_opt_interval`` (inside its ``prob`` interval). Returns (plans + columns, the
    prediction dict). The hparams fit must describe the same model family and optimiser.
    ``optimum``: that prediction when already made (:meth:`HparamsCheck.optimum`)."""

    res = optimum if optimum is not None else check.optimum(prob)
    lr = res["lr_opt"]
    out = plans.copy()
    out["lr_over_opt"] = out["peak_lr"] / lr["median"]
    lo = lr["lower"] if lr["lower"] is not None else 0.0
    hi = lr["upper"] if lr["upper"] is not None else np.inf
    out["lr_in_opt_interval"] = (out["peak_lr"] >= lo) & (out["peak_lr"] <= hi)
    return out, res


def mixture_check(
    plans: pd.DataFrame, check: MixtureCheck, tolerance: float, risk: float = 0.1
) -> pd.DataFrame:
    """P(the CPT mixture is feasible) per plan from ``check``'s mixture fit: the plan's domain
    share is 1 - ``replay_ratio``; ``p_mixture_feasible`` is the mixture law's P(general loss
    within ``tolerance`` of its baseline and domain loss below its own) at ``check.tokens``, and
    ``mixture_ok`` whether it is >= 1 - ``risk``."""

    mix_fit, model_size = check.fit, check.model_size
    if model_size is None:
        sizes = mix_fit.groups["model_size"].unique()
        if len(sizes) != 1:
            raise DataError(
                f"the mixture fit has model sizes {sorted(sizes)}; name one (--mixture-model-size)"
            )
        model_size = float(sizes[0])
    shares = np.unique(1.0 - plans["replay_ratio"].to_numpy(float))
    f = feasibility(mix_fit, model_size, check.tokens, tolerance, ratios=shares)
    p = dict(zip(np.round(shares, 12), f.p_feasible))
    out = plans.copy()
    out["p_mixture_feasible"] = [p[round(1.0 - r, 12)] for r in out["replay_ratio"]]
    out["mixture_ok"] = out["p_mixture_feasible"] >= 1 - risk
    return out
