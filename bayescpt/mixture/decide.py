"""Decisions per posterior draw: which mixture ratios are feasible, the CMR and its risk.

A ratio R is *feasible* at a CPT budget T (the data's token unit) for one model size when

* the general loss stays within the tolerance of its pre-CPT value:
  ``L_gen(R, T) <= L_gen0 + eps`` (absolute, nats, as Gu et al. 2024 with eps = 0.05) or
  ``L_gen(R, T) <= L_gen0 * (1 + eps)`` (``relative``), and
* the domain loss has still improved: ``L_dom(R, T) < L_dom0`` (checked when the fit has a domain
  validation set with a baseline). This stands in for the paper's Lagrangian condition (the domain
  loss keeps falling during CPT), which needs the whole training curve.

Per draw, the CMR is the largest feasible R on the grid (0 when none is). Across draws:
``P(feasible | R)``, the CMR's posterior (mean, median, central interval), and the CMR at risk
delta: the largest R with P(feasible) >= 1 - delta.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from bayescpt.mixture.cmr_law import fit_cmr_law, fit_cmr_law_draws
from bayescpt.mixture.fit import MixtureFit

DEFAULT_GRID = 201


def ratio_grid(fit: MixtureFit, n: int = DEFAULT_GRID) -> np.ndarray:
    """0..1 in ``n`` steps (from 0.005 for the power form, where R = 0 is outside its domain)."""
    lo = 0.005 if fit.config["ratio_form"] == "power" else 0.0
    return np.linspace(lo, 1.0, n)


def pick_group(fit: MixtureFit, model_size, role: str, val_set: str | None = None) -> int | None:
    """The fitted group of ``role`` at ``model_size`` (``val_set`` chooses among several)."""
    g = fit.groups
    hit = g[(g["model_size"] == float(model_size)) & (g["val_role"] == role)]
    if val_set is not None:
        hit = hit[hit["val_set"] == val_set]
    if hit.empty:
        return None
    if len(hit) > 1:
        raise ValueError(
            f"several {role} validation sets at model size {float(model_size):g}: "
            f"{list(hit['val_set'])}; choose one (--{role} VAL_SET)"
        )
    return int(hit.index[0])


@dataclass(frozen=True)
class CmrCriterion:
    """When a ratio is feasible (see the module docstring): the general loss within
    ``tolerance`` of its pre-CPT value (nats; a fraction of it with ``relative``), on the
    ``general`` validation set, and the ``domain`` set's loss improved (None: the fit's only set
    of that role at the model size)."""

    tolerance: float
    relative: bool = False
    general: str | None = None
    domain: str | None = None


@dataclass
class Feasibility:
    """Per-draw feasibility ``ok`` (S, n_ratios) on ``ratios`` at ``tokens`` for one size."""

    model_size: float
    tokens: float
    ratios: np.ndarray
    ok: np.ndarray
    general_loss: np.ndarray  # (S, n) expected general loss
    domain_loss: np.ndarray | None
    limit: float  # general-loss threshold (nats)
    baseline: dict
    domain_condition: bool

    @property
    def p_feasible(self) -> np.ndarray:
        return self.ok.mean(axis=0)

    def cmr_draws(self) -> np.ndarray:
        """Largest feasible ratio per draw (0 where no ratio is feasible)."""
        any_ok = self.ok.any(axis=1)
        last = self.ok.shape[1] - 1 - np.argmax(self.ok[:, ::-1], axis=1)
        return np.where(any_ok, self.ratios[last], 0.0)

    def cmr_at_risk(self, delta: float) -> float:
        """Largest ratio with P(feasible) >= 1 - delta (0 when none)."""
        good = np.flatnonzero(self.p_feasible >= 1 - delta)
        return float(self.ratios[good[-1]]) if good.size else 0.0


def feasibility(
    fit: MixtureFit,
    model_size,
    tokens: float,
    tolerance: float,
    relative: bool = False,
    ratios=None,
    general: str | None = None,
    domain: str | None = None,
    seed: int = 0,
) -> Feasibility:
    """Feasibility of each ratio for each draw (see the module docstring). Where the fit has a
    run deviation, each draw's loss is that of one new run (one fresh deviation per draw, the
    same for every ratio): the risk of the run you will do, not of the average run."""
    if tolerance < 0:
        raise ValueError(
            f"tolerance {tolerance:g}; expected >= 0 (nats, or a fraction with --relative)"
        )
    if not tokens > 0:
        raise ValueError(f"tokens {tokens:g}; expected the CPT budget > 0 in the data's unit")
    gi = pick_group(fit, model_size, "general", general)
    if gi is None:
        raise ValueError(
            f"the fit has no general validation set at model size "
            f"{float(model_size):g}; the CMR protects a general loss"
        )
    L0 = fit.groups.loc[gi, "loss0"]
    if not np.isfinite(L0):
        raise ValueError(
            f"no pre-CPT baseline for val_set {fit.groups.loc[gi, 'val_set']!r} at "
            f"model size {float(model_size):g} (rows with tokens = 0); the CMR needs "
            "the general loss before CPT"
        )
    R = ratio_grid(fit) if ratios is None else np.asarray(ratios, float)
    gen = fit.run_draws(gi, R, tokens, seed=seed)
    limit = L0 * (1 + tolerance) if relative else L0 + tolerance
    ok = gen <= limit
    base = {"general": float(L0)}
    di = pick_group(fit, model_size, "domain", domain)
    dom, cond = None, False
    if di is not None:
        dom = fit.run_draws(di, R, tokens, seed=seed + 1)
        D0 = fit.groups.loc[di, "loss0"]
        if np.isfinite(D0):
            ok &= dom < D0
            base["domain"] = float(D0)
            cond = True
    ok &= np.isfinite(gen)
    return Feasibility(float(model_size), float(tokens), R, ok, gen, dom, float(limit), base, cond)


def interval(x: np.ndarray, prob: float = 0.9) -> dict:
    """mean, median and central ``prob`` interval of draws ``x``."""
    lo, hi = np.quantile(x, [(1 - prob) / 2, (1 + prob) / 2])
    return {
        "mean": float(np.mean(x)),
        "median": float(np.median(x)),
        "lower": float(lo),
        "upper": float(hi),
    }


def cmr_report(
    fit: MixtureFit,
    model_size,
    tokens: float,
    criterion: CmrCriterion,
    risk: float = 0.1,
    prob: float = 0.9,
    ratios=None,
    keep_draws: bool = False,
) -> dict:
    """The ``bayescpt mixture cmr`` numbers for one model size (JSON-able) under ``criterion``.
    ``keep_draws``: also the draws under ``"_draws"`` (arrays, not JSON: ``cmr`` (S,),
    ``general_loss`` and ``domain_loss`` (S, n_ratios), ``feasible``, ``ratio``; see
    :func:`cmr_idata`)."""
    k = criterion
    f = feasibility(fit, model_size, tokens, k.tolerance, k.relative, ratios, k.general, k.domain)
    cmr = f.cmr_draws()
    gi = pick_group(fit, model_size, "general", k.general)
    t_ref = float(fit.groups.loc[gi, "t_ref"])
    notes = []
    c = interval(cmr, prob)
    if c["upper"] > fit.r_hi or c["lower"] < fit.r_lo:
        notes.append(
            f"the CMR interval reaches outside the fitted ratios [{fit.r_lo:g}, "
            f"{fit.r_hi:g}]: extrapolation"
        )
    if tokens > t_ref * 1.0001:
        notes.append(f"tokens {tokens:g} beyond the largest fitted budget {t_ref:g}: extrapolation")
    if fit.config["token_terms"].get("general", 1) == 0 and abs(tokens - t_ref) > 1e-9 * t_ref:
        notes.append(
            f"the general loss was fitted at the final budget {t_ref:g} only; other "
            "budgets are not modelled (refit with token_terms.general >= 1)"
        )
    if not f.domain_condition:
        notes.append("no domain baseline: feasibility checks the general loss only")
    return {
        "model_size": f.model_size,
        "tokens": f.tokens,
        "general_val_set": str(fit.groups.loc[gi, "val_set"]),
        "baseline": f.baseline,
        "general_limit": f.limit,
        "domain_condition": f.domain_condition,
        "cmr": c,
        "cmr_at_risk": f.cmr_at_risk(risk),
        "p_no_feasible_ratio": float(np.mean(~f.ok.any(axis=1))),
        "p_feasible": {
            "ratio": [round(float(r), 6) for r in f.ratios],
            "p": [round(float(p), 4) for p in f.p_feasible],
        },
        "notes": notes,
    } | (
        {
            "_draws": {
                "cmr": cmr,
                "general_loss": f.general_loss,
                "domain_loss": f.domain_loss,
                "feasible": f.ok,
                "ratio": f.ratios,
            }
        }
        if keep_draws
        else {}
    )


def cmr_idata(fit: MixtureFit, results: list[dict]):
    """ArviZ InferenceData of :func:`cmr_results` made with ``keep_draws``: group
    ``predictions`` with ``cmr`` (chain, draw, model_size), ``general_loss`` and, where the fit
    has a domain set, ``domain_loss`` (chain, draw, model_size, ratio: one new run's expected
    loss) and ``feasible`` (the same dims, 0/1); dims (chain, draw) as the fit's posterior."""
    import arviz as az
    import xarray as xr

    if not results or any("_draws" not in r for r in results):
        raise ValueError("the results hold no draws: cmr_results(..., keep_draws=True)")
    post = fit.idata.posterior
    C, D = post.sizes["chain"], post.sizes["draw"]
    ratio = results[0]["_draws"]["ratio"]
    dims = ("chain", "draw", "model_size", "ratio")

    def stacked(key, per_ratio=True):
        got = [r["_draws"][key] for r in results]
        if any(g is None for g in got):
            return None
        a = np.stack([np.asarray(g, float) for g in got], axis=1)  # (S, sizes[, ratios])
        return (dims if per_ratio else dims[:3]), a.reshape(C, D, *a.shape[1:])

    data = {
        "cmr": stacked("cmr", per_ratio=False),
        "general_loss": stacked("general_loss"),
        "domain_loss": stacked("domain_loss"),
        "feasible": stacked("feasible"),
    }
    ds = xr.Dataset(
        {k: v for k, v in data.items() if v is not None},
        coords={
            "chain": post["chain"].values,
            "draw": post["draw"].values,
            "model_size": [r["model_size"] for r in results],
            "ratio": ratio,
        },
    )
    ds.attrs.update(tokens=float(results[0]["tokens"]))
    return az.InferenceData(predictions=ds)


def cmr_paths(
    fit: MixtureFit,
    model_size,
    budgets,
    tolerance: float,
    relative: bool = False,
    general: str | None = None,
    domain: str | None = None,
) -> np.ndarray:
    """CMR draws (S, n_budgets) at each budget. Each draw keeps one and the same new run (the
    same run deviation) across budgets, so a row is one draw's R_CMR(T) path."""
    return np.stack(
        [
            feasibility(
                fit, model_size, float(T), tolerance, relative, None, general, domain
            ).cmr_draws()
            for T in budgets
        ],
        axis=1,
    )


def cmr_vs_tokens(
    fit: MixtureFit,
    model_size,
    budgets,
    tolerance: float,
    relative: bool = False,
    risk: float = 0.1,
    prob: float = 0.9,
    general: str | None = None,
    domain: str | None = None,
) -> pd.DataFrame:
    """R_CMR(T) on the budgets ``budgets``: one row per budget with the CMR's mean, median,
    interval and the CMR at risk."""
    rows = []
    for T in budgets:
        f = feasibility(fit, model_size, float(T), tolerance, relative, None, general, domain)
        rows.append(
            {
                "tokens": float(T),
                **interval(f.cmr_draws(), prob),
                "cmr_at_risk": f.cmr_at_risk(risk),
            }
        )
    return pd.DataFrame(rows)


def cmr_results(
    fit: MixtureFit,
    tokens: float,
    criterion: CmrCriterion,
    risk: float = 0.1,
    prob: float = 0.9,
    model_size=None,
    budgets=None,
    keep_draws: bool = False,
) -> list[dict]:
    """:func:`cmr_report` per model size (every size of the fit when ``model_size`` is None),
    ascending. With ``budgets`` (CPT budgets T, the data's token unit) each report also holds
    ``cmr_vs_tokens`` (:func:`cmr_vs_tokens` as records), ``cmr_law_median`` (R_CMR(T) = a4 T^s4
    + b3 fitted to the median CMRs, :func:`fit_cmr_law`) and ``cmr_law`` (fitted per draw,
    :func:`fit_cmr_law_draws`), with a note when that law cannot be fitted or is not
    identified. ``keep_draws``: each report also holds its draws (:func:`cmr_report`)."""
    sizes = sorted(fit.groups["model_size"].unique()) if model_size is None else [model_size]
    tolerance, relative = criterion.tolerance, criterion.relative
    general, domain = criterion.general, criterion.domain
    results = []
    for size in sizes:
        r = cmr_report(fit, size, tokens, criterion, risk, prob, keep_draws=keep_draws)
        if budgets:
            table = cmr_vs_tokens(
                fit, size, budgets, tolerance, relative, risk, prob, general, domain
            )
            r["cmr_vs_tokens"] = table.to_dict(orient="records")
            r["cmr_law_median"] = fit_cmr_law(table)
            paths = cmr_paths(fit, size, budgets, tolerance, relative, general, domain)
            r["cmr_law"] = law = fit_cmr_law_draws(budgets, paths, prob)
            if law is None:
                r["notes"].append(
                    "R_CMR(T) = a4 T^s4 + b3 could not be fitted per draw (needs "
                    "four or more budgets with 0 < CMR < 1)"
                )
            elif not law["identified"]:
                r["notes"].append(
                    "a4 and b3 of R_CMR(T) are not identified by these budgets "
                    "(their intervals are over ten times their size); rely on the "
                    "per-budget intervals in cmr_vs_tokens"
                )
        results.append(r)
    return results
