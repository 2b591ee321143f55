"""Sampling diagnostics (ArviZ): R-hat, bulk/tail ESS, divergences, and what to do when they fail."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

RHAT_MAX = 1.01
ESS_MIN = 400


class SamplingWarning(UserWarning):
    """The sampler's output fails a diagnostic threshold."""


@dataclass
class Diagnostics:
    """Summary table (one row per scalar parameter) and the overall verdict.

    Rows of ``derived`` variables (deterministic functions of the sampled ones, e.g. the CPT
    law's B) are shown but not judged: the sampler's health is read off what it sampled, and a
    derived quantity on a ridge can mix slowly while every sampled parameter is fine.
    """

    table: pd.DataFrame
    divergences: int
    draws: int
    chains: int
    derived: tuple = ()

    @property
    def judged(self) -> pd.DataFrame:
        base = self.table.index.str.split("[").str[0]
        return self.table[~base.isin(list(self.derived))]

    @property
    def max_rhat(self) -> float:
        return float(self.judged["r_hat"].max())

    @property
    def min_ess_bulk(self) -> float:
        return float(self.judged["ess_bulk"].min())

    @property
    def min_ess_tail(self) -> float:
        return float(self.judged["ess_tail"].min())

    def problems(self, rhat_max=RHAT_MAX, ess_min=ESS_MIN) -> list[str]:
        out = []
        if not np.isfinite(self.max_rhat) or self.max_rhat > rhat_max:
            worst = self.judged["r_hat"].idxmax()
            out.append(f"R-hat {self.max_rhat:.3f} > {rhat_max} (worst: {worst}): chains disagree; "
                       "run longer (--tune, --draws) or check the priors")
        if not np.isfinite(self.min_ess_bulk) or self.min_ess_bulk < ess_min:
            worst = self.judged["ess_bulk"].idxmin()
            out.append(f"bulk ESS {self.min_ess_bulk:.0f} < {ess_min} (worst: {worst}): "
                       "draw more (--draws, --chains)")
        if self.divergences:
            out.append(f"{self.divergences} divergent transitions: the posterior has regions the "
                       "sampler cannot follow; raise target_accept (config sampler.target_accept) or"
                       " switch the group level between centred and non-centred (config centered)")
        return out

    @property
    def ok(self) -> bool:
        return not self.problems()

    def to_text(self) -> str:
        head = (f"{self.chains} chains x {self.draws} draws; max R-hat {self.max_rhat:.4f}, "
                f"min bulk ESS {self.min_ess_bulk:.0f}, min tail ESS {self.min_ess_tail:.0f}, "
                f"divergences {self.divergences}")
        verdict = "OK" if self.ok else "PROBLEMS:\n  - " + "\n  - ".join(self.problems())
        cols = ["mean", "sd", "hdi_5%", "hdi_95%", "r_hat", "ess_bulk", "ess_tail"]
        note = (f"\n(derived, not judged: {', '.join(self.derived)})"
                if set(self.derived) & set(self.table.index.str.split("[").str[0]) else "")
        return head + "\n" + self.table[cols].to_string(float_format=lambda v: f"{v:.4g}") + \
            note + "\n" + verdict


def summarize(idata, var_names: list[str], derived=()) -> Diagnostics:
    """Diagnostics of ``var_names`` in ``idata.posterior`` (90 % HDI); ``derived`` not judged."""
    import arviz as az

    table = az.summary(idata, var_names=var_names, hdi_prob=0.9, round_to="none")
    table = table.rename(columns={"hdi_5%": "hdi_5%", "hdi_95%": "hdi_95%"})
    div = int(idata.sample_stats["diverging"].sum()) if "sample_stats" in idata else 0
    post = idata.posterior
    return Diagnostics(table, div, int(post.sizes["draw"]), int(post.sizes["chain"]),
                       tuple(derived))


def warn_if_bad(diag: Diagnostics) -> None:
    for msg in diag.problems():
        warnings.warn(msg, SamplingWarning, stacklevel=3)
