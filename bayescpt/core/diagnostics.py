"""Sampling diagnostics (ArviZ): R-hat, bulk/tail ESS, divergences, and what to do when they fail.

Beyond the per-parameter table, chains are compared (:mod:`bayescpt.core.chains`): a chain stuck in
a minor mode is named with its log-density gap and the parameters that separate it (R-hat then
fails for a reason more draws cannot fix); per-chain cost and tree depth are tabulated; chains
dropped from the fit are listed from its attrs.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from bayescpt.core.chains import (
    DEFAULT_MAX_DEPTH,
    StuckChain,
    chain_stats,
    cost_notes,
    dropped_record,
    find_stuck_chains,
)
from bayescpt.core.init import StartReport
from bayescpt.core.priorcheck import Conflict, prior_conflicts

RHAT_MAX = 1.01
ESS_MIN = 400


class SamplingWarning(UserWarning):
    """The sampler's output fails a diagnostic threshold."""


#: name suffixes of a hierarchy's population nodes (a parameter's location and spreads)
_LEVELS = ("_mu", "_sd", "_tau")


@dataclass
class Diagnostics:
    """Summary table (one row per scalar parameter) and the overall verdict.

    Rows of ``derived`` variables (deterministic functions of the sampled ones, e.g. the CPT
    law's B) are shown but not judged: the sampler's health is read off what it sampled, and a
    derived quantity on a ridge can mix slowly while every sampled parameter is fine.

    ``stuck``: chains in a minor mode (:class:`~bayescpt.core.chains.StuckChain`); ``per_chain``:
    one row per chain (mean lp, seconds, gradient evaluations, tree depth); ``dropped``: the
    chains removed from the fit, as recorded in its attrs; ``max_tree_depth``: the cap used;
    ``extended``: the record of a run sampled again with more draws because its chains mixed
    slowly (:func:`bayescpt.core.sampling.run_longer`), else None; ``conflicts``: the
    top-level parameters in prior-data conflict (:class:`~bayescpt.core.priorcheck.Conflict`,
    most extreme first; empty when the fit does not give its priors).
    """

    table: pd.DataFrame
    divergences: int
    draws: int
    chains: int
    derived: tuple = ()
    stuck: tuple[StuckChain, ...] = ()
    per_chain: pd.DataFrame | None = None
    dropped: tuple = ()
    max_tree_depth: int = DEFAULT_MAX_DEPTH
    start: StartReport | None = None
    extended: dict | None = None
    conflicts: tuple[Conflict, ...] = ()

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
        if self.judged["r_hat"].isna().all():
            # R-hat compares chains: one chain (or draws too few for the split) cannot show a
            # chain that did not converge, so the fit is not judged converged
            out.append(
                f"R-hat cannot be computed from {self.chains} chain(s) x {self.draws} "
                "draws: nothing shows whether the sampler converged; run at least 2 "
                "chains (--chains 4, the default)"
            )
        elif not np.isfinite(self.max_rhat) or self.max_rhat > rhat_max:
            worst = self.judged["r_hat"].idxmax()
            base = str(worst).split("[")[0]
            related = self._related(worst)
            if self.stuck:
                why = "; ".join(s.text() for s in self.stuck)
            elif related:
                why = self._conflict_why(related)
            elif base.endswith(("_sd", "_tau")):
                # a spread of a hierarchy mixing slowly: the funnel of a level the data barely
                # inform (the cpt law's alpha on the lab's curves, C2's schedule spread)
                why = (
                    "chains mix slowly on a spread of the hierarchy; sample its level "
                    "non-centred (config priors.P.group_centered / run_centered false, or "
                    "centered) or draw more (--draws)"
                )
            else:
                why = "chains disagree; run longer (--tune, --draws) or check the priors"
            out.append(
                f"R-hat {self.max_rhat:.3f} > {rhat_max} (worst: {worst}): {why}" + self._already()
            )
        elif self.stuck:
            out.extend(s.text() for s in self.stuck)
        if self.judged["ess_bulk"].isna().all():
            out.append(
                f"bulk ESS cannot be computed from {self.chains} chain(s) x {self.draws} "
                "draws: draw more (--draws, --chains)"
            )
        elif not np.isfinite(self.min_ess_bulk) or self.min_ess_bulk < ess_min:
            worst = self.judged["ess_bulk"].idxmin()
            related = self._related(worst)
            why = (
                self._conflict_why(related)
                if related and not self.stuck
                else "draw more (--draws, --chains)"
            )
            out.append(
                f"bulk ESS {self.min_ess_bulk:.0f} < {ess_min} (worst: {worst}): "
                + why
                + self._already()
            )
        if self.divergences:
            out.append(
                f"{self.divergences} divergent transitions: the posterior has regions the "
                "sampler cannot follow; raise target_accept (config sampler.target_accept) or"
                " switch the group level between centred and non-centred (config centered)"
            )
        if out and self.conflicts and not any("(the prior-data conflict note)" in ln for ln in out):
            out.insert(0, self._conflict_lead())
        return out

    def _conflict_lead(self) -> str:
        """The first problem line of a failing fit whose priors conflict with its data: the
        conflict is the likely cause of the failures, which more draws or a higher target_accept
        fix slowly at best, so it is said first, with the prior to set (as a ``--config``)."""
        c = self.conflicts[0]
        side = "below" if c.z < 0 else "above"
        p = self._param_of(c.name)
        if c.name.endswith("_mu"):
            fix = json.dumps({"priors": {p: {"loc": float(f"{c.median:.3g}")}}})
            fix = (
                f"centre {p}'s prior where the data put it: pass --config FILE with {fix} "
                f"(the loc is on the scale of {c.name}; `bayescpt config` prints the others)"
            )
        else:
            fix = (
                f"give {p} a prior that suits these data in the fit's config (priors.{p}; "
                "`bayescpt config` prints the defaults)"
            )
        more = len(self.conflicts) - 1
        also = (
            (
                f" (and {more} more: "
                + ", ".join(x.name for x in self.conflicts[1:4])
                + (", ..." if more > 3 else "")
                + ")"
            )
            if more
            else ""
        )
        return (
            f"the priors conflict with these data: {c.name}'s posterior median "
            f"{c.median:.3g} lies {abs(c.z):.1f} sd {side} its prior {c.prior}{also}. This "
            "is the likely cause of the problems below, which more draws or a higher "
            f"target_accept fix slowly at best; {fix}"
        )

    @staticmethod
    def _stem(name) -> str:
        """A node's model parameter: the name without its index and last ``_suffix``
        (``L0_mu``, ``L0_sd``, ``L0_u[group]`` and ``L0[group]`` are all ``L0``)."""
        return str(name).split("[")[0].rsplit("_", 1)[0]

    @classmethod
    def _param_of(cls, name) -> str:
        """The model parameter a conflicting node belongs to, as a config names it (``alpha``
        for ``alpha_mu``, ``alpha_sd`` and ``alpha[g]``)."""
        return cls._stem(name) if str(name).endswith(_LEVELS) else str(name).split("[")[0]

    def _related(self, worst) -> list:
        """The conflicts on the same model parameter as the table row ``worst``: the node itself,
        or a hierarchy's location / spread node of its parameter (``L0_mu`` for ``L0_u[g]``)."""
        base = str(worst).split("[")[0]
        return [
            c
            for c in self.conflicts
            if c.name in (str(worst), base)
            or (c.name.endswith(_LEVELS) and self._stem(c.name) == self._stem(worst))
        ]

    def _conflict_why(self, conflicts) -> str:
        """Why chains mix slowly when priors and data disagree (see the module doc)."""
        c = conflicts[0]
        p = self._param_of(c.name)
        where = (
            f"priors.{p}.loc and priors.{p}.scale" if c.name.endswith(_LEVELS) else f"priors.{p}"
        )
        return (
            f"the data disagree with the prior of {c.name} (the prior-data conflict note); "
            "the chains wander between the prior's pull and the data's, and more draws fix "
            f"that slowly at best: give {p} a prior that suits these data, centred near "
            f"{c.median:.3g} (where the data put {c.name}) and, where the data barely inform "
            f"it, narrower than the default (in the fit's config, e.g. {where})"
        )

    def _already(self) -> str:
        """What a failing line adds when the run was already run longer (the cap reached)."""
        if not self.extended:
            return ""
        e = self.extended
        return (
            f" (already run {e['to'] / e['draws']:g}x longer automatically, {e['draws']} -> "
            f"{e['to']} draws per chain)"
        )

    @property
    def ok(self) -> bool:
        return not self.problems()

    def notes(self) -> list[str]:
        """What does not fail the fit but must be seen: dropped chains, saturated trees, a chain
        far costlier than the others."""
        out = [
            f"chain {d['chain']} was dropped ({d['reason']}); the fit uses the other chains"
            for d in self.dropped
        ]
        out += [c.text() for c in self.conflicts]
        if self.extended:
            e = self.extended
            via = [st["to"] for st in e.get("steps", [])][:-1]
            out.append(
                f"run longer: {e['draws']} draws per chain gave {e['why']} with no "
                f"divergence and no stuck chain (slow mixing), so the chains were run "
                f"to {e['to']} draws"
                + (f" (via {', '.join(map(str, via))})" if via else "")
                + " (sampler setting extend; 1 turns this off)"
            )
        return out + cost_notes(self.per_chain, self.max_tree_depth)

    def to_text(self) -> str:
        head = (
            f"{self.chains} chains x {self.draws} draws; max R-hat {self.max_rhat:.4f}, "
            f"min bulk ESS {self.min_ess_bulk:.0f}, min tail ESS {self.min_ess_tail:.0f}, "
            f"divergences {self.divergences}"
        )
        verdict = "OK" if self.ok else "PROBLEMS:\n  - " + "\n  - ".join(self.problems())
        cols = ["mean", "sd", "hdi_5%", "hdi_95%", "r_hat", "ess_bulk", "ess_tail"]
        note = (
            f"\n(derived, not judged: {', '.join(self.derived)})"
            if set(self.derived) & set(self.table.index.str.split("[").str[0])
            else ""
        )
        fmt = lambda v: f"{v:.4g}"  # noqa: E731
        shown = (
            None
            if self.per_chain is None  # a column the sampler did not record is left out
            else self.per_chain.dropna(axis=1, how="all")
        )
        per_chain = (
            "\nper chain:\n" + shown.to_string(float_format=fmt)
            if shown is not None and len(shown.columns)
            else ""
        )
        notes = "".join(f"\nnote: {n}" for n in self.notes())
        start = f"\nstart: {self.start.text()}" if self.start is not None else ""
        return (
            head
            + "\n"
            + self.table[cols].to_string(float_format=fmt)
            + note
            + per_chain
            + start
            + notes
            + "\n"
            + verdict
        )


def summarize(idata, var_names: list[str], derived=(), priors: dict | None = None) -> Diagnostics:
    """Diagnostics of ``var_names`` in ``idata.posterior`` (90 % HDI); ``derived`` not judged;
    ``priors`` ({top-level node: pymc_extras Prior}): checked for prior-data conflict."""
    import arviz as az

    table = az.summary(idata, var_names=var_names, hdi_prob=0.9, round_to="none")
    table = table.rename(columns={"hdi_5%": "hdi_5%", "hdi_95%": "hdi_95%"})
    div = int(idata.sample_stats["diverging"].sum()) if "sample_stats" in idata else 0
    post = idata.posterior
    stats = idata.sample_stats if "sample_stats" in idata else None
    depth = (
        int(stats.attrs.get("max_tree_depth", DEFAULT_MAX_DEPTH))
        if stats is not None
        else DEFAULT_MAX_DEPTH
    )
    init = stats.attrs.get("init") if stats is not None else None
    start = StartReport.from_json(init) if isinstance(init, str) and init.startswith("{") else None
    ext = stats.attrs.get("extended") if stats is not None else None
    return Diagnostics(
        table,
        div,
        int(post.sizes["draw"]),
        int(post.sizes["chain"]),
        tuple(derived),
        tuple(find_stuck_chains(idata, var_names)),
        chain_stats(idata),
        tuple(dropped_record(idata)),
        depth,
        start,
        json.loads(ext) if isinstance(ext, str) else None,
        tuple(prior_conflicts(post, priors)) if priors else (),
    )


def warn_if_bad(diag: Diagnostics) -> None:
    """A :class:`SamplingWarning` per problem and per note (dropped chains, saturated trees)."""
    for msg in diag.problems() + diag.notes():
        warnings.warn(msg, SamplingWarning, stacklevel=3)
