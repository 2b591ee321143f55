"""Chains compared: per-chain log density, cost and tree depth; chains stuck in a minor mode.

Notation (``c`` a chain, ``t`` a draw, ``lp`` the model log density the sampler works with:
unnormalised, on the unconstrained space, Jacobian included, in nats; stored as
``sample_stats.lp`` by PyMC, numpyro and blackjax and as ``sample_stats.logp`` by nutpie)::

    m_c = mean_t lp_ct                      mean log density of chain c
    s   = sqrt(mean_c var_t lp_ct)          pooled within-chain sd of lp
    gap_c = mean_{k kept} m_k - m_c         how far chain c sits below the kept chains

Chains that sample the same distribution differ in ``m_c`` by about ``s * sqrt(2 / ESS)``: a few
tenths of a nat. A chain is **stuck** (in a local mode of the log density) when
``max_k m_k - m_c > max(GAP_MIN_NATS, GAP_SDS * s)``. A gap of g nats in the typical log density
means the mode's draws are about exp(-g) times less probable; unless that mode is exp(g) times
wider, it holds negligible posterior mass, and more draws cannot move the chain out of it (it
would have to cross a region of even lower density). The chain that sits there makes R-hat fail
without saying anything about posterior uncertainty.

Which parameters tell the modes apart: for every scalar element ``theta`` of the named variables,
``z = (mean_t theta_ct - mean_{k kept, t} theta_kt) / s_theta`` with ``s_theta`` the pooled
within-chain sd of ``theta`` (over all chains); the largest ``|z|`` are named.

Cost and tree depth per chain: NUTS doubles a trajectory up to ``max depth`` times (default 10 in
every sampler here), each doubling doubling the gradient evaluations (``n_steps``, leapfrog steps
per draw). A chain whose trees hit the cap is cut short: it explores by random walk, slowly. A
chain that costs many times the median chain's gradient evaluations is what makes one seed take
10x another's wall time.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pandas as pd

GAP_MIN_NATS = 10.0  # a gap below this is never called a separate mode
GAP_SDS = 3.0  # ... nor one below this many pooled within-chain sds of lp
DEFAULT_MAX_DEPTH = 10  # the default max tree depth of nutpie, PyMC, numpyro and blackjax
SATURATION_MAX = 0.01  # fraction of draws at the max depth above which a chain is reported
COST_RATIO_MAX = 3.0  # a chain costing more than this x the median chain's steps is reported


@dataclass(frozen=True)
class StuckChain:
    """A chain in a minor mode: its label, mean lp, gap (nats) and the separating parameters.

    ``params`` holds ``(label, chain mean, kept chains' mean, z)`` sorted by ``|z|``, largest first.
    """

    chain: int
    lp: float
    gap: float
    params: tuple

    def text(self) -> str:
        diffs = ", ".join(f"{name} {own:.3g} vs {ref:.3g}" for name, own, ref, _ in self.params)
        return (
            f"chain {self.chain} sits in a minor mode {self.gap:.0f} nats lower in log "
            f"density{f' ({diffs})' if diffs else ''}: rerun with another seed or drop it "
            "(--drop-stuck-chains, sampler setting drop_stuck_chains); running longer will "
            "not help"
        )


def log_density(idata):
    """Per-draw model log density (chain, draw) from ``sample_stats``, or None if not stored."""
    stats = idata.sample_stats if "sample_stats" in idata.groups() else None
    for name in ("lp", "logp"):
        if stats is not None and name in stats:
            return stats[name]
    return None


def _elements(post, var_names) -> dict:
    """Scalar elements of ``var_names`` as label -> array (chain, draw)."""
    out = {}
    for name in var_names if var_names is not None else list(post.data_vars):
        if name not in post:
            continue
        da = post[name]
        extra = [d for d in da.dims if d not in ("chain", "draw")]
        if not extra:
            out[name] = np.asarray(da.transpose("chain", "draw").values, dtype=float)
            continue
        stacked = da.stack(_elt=extra).transpose("chain", "draw", "_elt")
        values = np.asarray(stacked.values, dtype=float)
        for j, idx in enumerate(stacked["_elt"].values):
            idx = idx if isinstance(idx, tuple) else (idx,)
            out[f"{name}[{', '.join(str(v) for v in idx)}]"] = values[:, :, j]
    return out


def find_stuck_chains(idata, var_names=None, top: int = 3) -> list[StuckChain]:
    """Chains whose mean log density sits far below the best chain's (see the module doc).

    ``var_names``: variables searched for the parameters that differ (default: all in the
    posterior); ``top``: how many to name. Empty when lp is not stored or there is one chain.
    """
    lp = log_density(idata)
    if lp is None or lp.sizes["chain"] < 2:
        return []
    lp = np.asarray(lp.transpose("chain", "draw").values, dtype=float)
    labels = [int(c) for c in idata.posterior["chain"].values]
    means = lp.mean(axis=1)
    pooled = float(np.sqrt(np.mean(lp.var(axis=1, ddof=1))))
    threshold = max(GAP_MIN_NATS, GAP_SDS * pooled)
    stuck = means.max() - means > threshold
    if not stuck.any():
        return []
    kept = ~stuck
    elements = _elements(idata.posterior, var_names)
    out = []
    for i in np.flatnonzero(stuck):
        diffs = []
        for label, x in elements.items():
            sd = float(np.sqrt(np.mean(x.var(axis=1, ddof=1))))
            own, ref = float(x[i].mean()), float(x[kept].mean())
            if sd > 0 and np.isfinite(sd):
                diffs.append((label, own, ref, (own - ref) / sd))
        diffs.sort(key=lambda d: -abs(d[3]))
        out.append(
            StuckChain(
                labels[i], float(means[i]), float(means[kept].mean() - means[i]), tuple(diffs[:top])
            )
        )
    return out


def dropped_record(idata) -> list[dict]:
    """The chains dropped from ``idata`` so far (posterior attr ``dropped_chains``, JSON)."""
    raw = idata.posterior.attrs.get("dropped_chains") if "posterior" in idata.groups() else None
    return json.loads(raw) if raw else []


def drop_chains(
    idata, chains, reason: str = "dropped by request", lp_gaps=None, inplace: bool = False
):
    """``idata`` without the chains labelled ``chains``, the drop recorded in its attrs.

    The kept chains keep their labels (chain 3 stays chain 3). The posterior attr
    ``dropped_chains`` (JSON list, appended to) records per chain ``chain``, ``reason`` and
    ``lp_gap`` (nats below the kept chains; from ``lp_gaps``, a mapping chain -> gap, else
    measured). Returns the new InferenceData (``idata`` itself when ``inplace``).
    """
    labels = [int(c) for c in idata.posterior["chain"].values]
    chains = [int(c) for c in chains]
    unknown = sorted(set(chains) - set(labels))
    if unknown:
        raise ValueError(f"no chain {unknown} in this fit (chains {labels})")
    keep = [c for c in labels if c not in chains]
    if not keep:
        raise ValueError("cannot drop every chain")
    if lp_gaps is None:
        lp = log_density(idata)
        means = lp.mean("draw") if lp is not None else None
        lp_gaps = (
            {c: float(means.sel(chain=keep).mean() - means.sel(chain=c)) for c in chains}
            if means is not None
            else {}
        )
    record = dropped_record(idata) + [
        {
            "chain": c,
            "reason": reason,
            "lp_gap": round(float(lp_gaps[c]), 3) if c in lp_gaps else None,
        }
        for c in chains
    ]
    out = idata.sel(chain=keep, inplace=inplace)
    target = idata if inplace else out
    # a fresh dict: xarray's selection shares the attrs dict with the original
    target.posterior.attrs = {**target.posterior.attrs, "dropped_chains": json.dumps(record)}
    return target


def drop_stuck_chains(idata, var_names=None, inplace: bool = False):
    """Drop the chains :func:`find_stuck_chains` finds; returns ``(idata, stuck)``.

    Each dropped chain is recorded (see :func:`drop_chains`) with the reason naming its mode.
    """
    stuck = find_stuck_chains(idata, var_names)
    if not stuck:
        return idata, []
    reason = "; ".join(
        f"chain {s.chain}: minor mode, mean log density {s.gap:.1f} nats below the kept chains"
        for s in stuck
    )
    out = drop_chains(
        idata,
        [s.chain for s in stuck],
        reason=reason,
        lp_gaps={s.chain: s.gap for s in stuck},
        inplace=inplace,
    )
    return out, stuck


def chain_stats(idata) -> pd.DataFrame | None:
    """One row per chain: mean lp, seconds, gradient evaluations, tree depth (mean, max, at max).

    ``seconds`` is the summed per-draw wall time where the sampler stores it (PyMC's
    ``perf_counter_diff``; NaN otherwise), over the kept draws (not tuning). ``grad_evals`` sums
    the leapfrog steps; ``at_max`` is the fraction of draws whose tree hit the max depth
    (``sample_stats.attrs['max_tree_depth']``, else the samplers' default 10). None without
    sample stats.
    """
    if "sample_stats" not in idata.groups():
        return None
    st = idata.sample_stats
    chains = [int(c) for c in st["chain"].values]
    per = {}

    def by_chain(da, how):
        return getattr(da, how)("draw").transpose("chain").values.astype(float)

    lp = log_density(idata)
    if lp is not None:
        per["lp_mean"] = by_chain(lp, "mean")
    per["seconds"] = (
        by_chain(st["perf_counter_diff"], "sum")
        if "perf_counter_diff" in st
        else np.full(len(chains), np.nan)
    )
    if "n_steps" in st:
        per["grad_evals"] = by_chain(st["n_steps"], "sum")
    depth_name = next((n for n in ("tree_depth", "depth") if n in st), None)
    if depth_name is not None:
        depth = st[depth_name]
        max_depth = int(st.attrs.get("max_tree_depth", DEFAULT_MAX_DEPTH))
        flag = next(
            (st[n] for n in ("reached_max_treedepth", "maxdepth_reached") if n in st),
            depth >= max_depth,
        )
        per["depth_mean"] = by_chain(depth, "mean")
        per["depth_max"] = by_chain(depth, "max")
        per["at_max"] = by_chain(flag.astype(float), "mean")
    return pd.DataFrame(per, index=pd.Index(chains, name="chain"))


def cost_notes(stats: pd.DataFrame | None, max_depth: int = DEFAULT_MAX_DEPTH) -> list[str]:
    """Warnings from :func:`chain_stats`: trees saturating the max depth; one chain costing
    more than ``COST_RATIO_MAX`` x the median chain's gradient evaluations."""
    if stats is None:
        return []
    out = []
    if "at_max" in stats:
        hit = stats[stats["at_max"] > SATURATION_MAX]
        if len(hit):
            which = ", ".join(f"chain {c} {r * 100:.0f} %" for c, r in hit["at_max"].items())
            out.append(
                f"trees hit the max depth {max_depth} ({which} of draws): trajectories are "
                "cut short and the chain explores slowly; a reparametrisation helps, a "
                "higher sampler setting max_tree_depth costs time"
            )
    if "grad_evals" in stats and len(stats) > 1:
        med = float(stats["grad_evals"].median())
        slow = stats[stats["grad_evals"] > COST_RATIO_MAX * med] if med > 0 else stats.iloc[:0]
        for c, n in slow["grad_evals"].items():
            out.append(
                f"chain {c} took {n / med:.1f}x the median chain's gradient evaluations "
                "(deep trees: a hard region of the posterior or a stuck chain)"
            )
    return out
