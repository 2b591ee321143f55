"""Simulation-based calibration (SBC) of a loss-curve law's default model, fitted as a sweep.

Talts, Betancourt, Simpson, Vehtari & Gelman 2018 (arXiv 1804.06788): if the model's fit is
right, then for theta ~ prior, y ~ p(y | theta) and L draws from p(theta | y), the rank of theta
among the draws is uniform on {0, ..., L}. Here:

1. **Simulate.** The design (a curve table: runs, steps, learning rates, sizes; its losses are
   ignored) is prepared as the fit prepares it and the law's default hierarchical model
   (:func:`bayescpt.curves.model.hierarchy.build_model`, the user's ``config`` applied) is drawn
   from its prior (``pymc.sample_prior_predictive``, seed ``seed``): every parameter and a log loss
   at every fitted point. Simulation i is the design with those losses (``DIR/sims/sim_IIII.csv``);
   its true values are kept in ``DIR/truth.csv``.
2. **Fit** every simulation through :func:`bayescpt.parallel.engine.run_sweep` (Dask; the same
   shape, so a worker compiles the model once and reuses it; resumable), with seed ``seed + i``.
3. **Rank.** For each checked quantity (every scalar of the population level: ``*_mu``,
   ``*_slope``, ``*_sd``, ``*_tau``, ``log_sigma_*``; and the group values of each law
   parameter) the rank of the truth among ``L = ranks`` posterior draws, taken evenly over all
   chains' draws (thinned, so nearly independent). ``DIR/ranks.csv``: one row per simulation.
4. **Test.** Per quantity, ranks are binned into ``bins`` equal bins and compared with the
   uniform by a chi-square test (``bins - 1`` degrees of freedom; ``scipy.stats.chisquare``),
   p-value in ``DIR/sbc.csv``; the smallest p-value is also given Bonferroni-adjusted over the
   quantities (one test of "all uniform"). A fit that fails its diagnostics still counts (its
   ranks are what the default fit gives), and is marked.

``simuk`` (the ArviZ project's SBC package) was considered: its 0.2 release needs ``arviz_base``
(the ArviZ 1.x line, not this stack's ArviZ 0.23) and runs its fits itself in one process, so
they could not go through the sweep's workers.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from bayescpt.core.outputs import write_outputs
from bayescpt.core.tables import DataError
from bayescpt.curves.data.validate import validate_curves
from bayescpt.curves.model.config import make_config
from bayescpt.curves.model.fit import Fit
from bayescpt.curves.model.hierarchy import build_model, prepare
from bayescpt.curves.model.laws import get_law
from bayescpt.parallel.engine import LOCAL_CLUSTER, Cluster
from bayescpt.parallel.spec import DEFAULT_STUDY, StudyFit

POPULATION_SUFFIXES = ("_mu", "_slope", "_sd", "_tau")


@dataclass
class SBCResult:
    """``tests``: one row per quantity (n, chi2, p_value); ``ranks``: one row per simulation;
    ``truth``: the simulated true values; ``fits``: the sweep's summary; ``p_min_bonferroni``:
    the smallest p-value times the number of quantities (capped at 1); ``ranks_max``: L."""

    tests: pd.DataFrame
    ranks: pd.DataFrame
    truth: pd.DataFrame
    fits: pd.DataFrame
    p_min_bonferroni: float
    ranks_max: int


def checked_quantities(model, law) -> list[tuple[str, int | None, str]]:
    """(variable, index along its group axis or None, label) of every quantity SBC ranks."""
    out = []
    names = {v.name for v in model.free_RVs} | {v.name for v in model.deterministics}
    for name in sorted(names):
        if name.startswith("log_sigma") or name.endswith(POPULATION_SUFFIXES):
            if model.named_vars_to_dims.get(name):  # group-level values (log_sigma) below
                continue
            out.append((name, None, name))
    groups = list(model.coords.get("group", ()))
    for p in law.params:
        if p.name in names:
            out.extend((p.name, i, f"{p.name}[{g}]") for i, g in enumerate(groups))
    return out


def simulate_prior(
    design: pd.DataFrame, law: str, options: dict | None, config: dict | None, sims: int, seed: int
):
    """(tables, truth, quantities): ``sims`` copies of ``design`` (a validated curve table,
    :func:`bayescpt.curves.data.validate.read_curves`) with losses drawn from the prior predictive
    of the law's model, one row of true values per simulation, and :func:`checked_quantities`.

    A simulation that is not a valid loss curve
    (:func:`~bayescpt.curves.data.validate.validate_curves`: e.g. a loss above 20 nats where a wide
    prior meets a long schedule) is rejected and drawn again. Rejecting on the simulated data alone
    keeps the ranks uniform: the posterior given y is the same whether or not y was conditioned to
    be valid (Modrak et al. 2023, the SBC package's rejection-sampling note). The count is in
    ``truth.attrs['rejected']``."""
    import pymc as pm

    law_obj = get_law(law, **(options or {}))
    cfg = make_config(law_obj, config)
    df = design.copy()
    prep = prepare(df, law_obj, cfg["settings"])
    model = build_model(law_obj, prep, cfg)
    quantities = checked_quantities(model, law_obj)
    key = pd.MultiIndex.from_frame(prep.points[["run", "val_set", "step"]])
    where = pd.MultiIndex.from_frame(df[["run", "val_set", "step"]]).get_indexer(key)
    if (where < 0).any():
        raise DataError("sbc: the design's fitted points could not be matched to its rows")
    tables, rows, rejected, why, batch = [], [], 0, None, 0
    while len(tables) < sims:
        if batch >= 20:
            raise DataError(
                f"sbc: {rejected} of {rejected + len(tables)} prior simulations "
                f"are not valid loss curves (first: {why}); the prior is too wide "
                "for this design"
            )
        n = max(sims - len(tables), 8) * 2
        with model:
            prior = pm.sample_prior_predictive(
                draws=n, random_seed=np.random.default_rng([seed, batch])
            )
        batch += 1
        y = prior.prior_predictive["y"].stack(s=("chain", "draw")).transpose("s", ...).to_numpy()
        values = {}
        for name, i, label in quantities:
            v = prior.prior[name].stack(s=("chain", "draw")).transpose("s", ...).to_numpy()
            values[label] = v if i is None else v[:, i]
        for j in range(n):
            if len(tables) == sims:
                break
            t = df.copy()
            t["loss"] = np.nan
            t.iloc[where, t.columns.get_loc("loss")] = np.exp(y[j])
            try:  # a simulation that is no loss curve (e.g. above 20 nats) is drawn again
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    validate_curves(t)
            except DataError as err:
                rejected += 1
                why = why or str(err).split(": ", 1)[-1]
                continue
            tables.append(t)
            rows.append({label: float(values[label][j]) for label in values})
    truth = pd.DataFrame(rows)
    truth.insert(0, "sim", np.arange(sims))
    truth.attrs.update(rejected=rejected, rejected_first=why)
    return tables, truth, quantities


def rank_of(fit: Fit, quantities, truth_row: pd.Series, ranks: int) -> dict:
    """The rank of each true value among ``ranks`` draws spread evenly over the chains' draws."""
    post = fit.idata.posterior
    out = {}
    for name, i, label in quantities:
        v = post[name].stack(s=("chain", "draw")).transpose("s", ...).to_numpy()
        v = v if i is None else v[:, i]
        take = np.linspace(0, v.shape[0] - 1, ranks).round().astype(int)
        out[label] = int(np.sum(v[take] < truth_row[label]))
    return out


def uniformity(ranks: pd.DataFrame, labels: list[str], ranks_max: int, bins: int) -> pd.DataFrame:
    """Chi-square test of uniform ranks per quantity (ranks in 0..ranks_max, ``bins`` bins)."""
    from scipy import stats

    edges = np.linspace(0, ranks_max + 1, bins + 1)
    rows = []
    for label in labels:
        r = ranks[label].to_numpy()
        counts, _ = np.histogram(r, bins=edges)
        expected = len(r) * np.diff(edges) / (ranks_max + 1)
        chi2, p = stats.chisquare(counts, expected)
        rows.append(
            {
                "quantity": label,
                "n": len(r),
                "chi2": float(chi2),
                "p_value": float(p),
                "mean_rank": float(r.mean() / ranks_max),
            }
        )
    return pd.DataFrame(rows)


def run_sbc(
    design: pd.DataFrame,
    out_dir,
    study: StudyFit = DEFAULT_STUDY,
    sims: int = 100,
    ranks: int = 99,
    bins: int = 10,
    cluster: Cluster = LOCAL_CLUSTER,
    force: bool = False,
    say=lambda msg: None,
) -> SBCResult:
    """SBC of ``study.law``'s default model (its options and config; sampler settings and seed
    ``study.seed`` for the simulations, ``seed + i`` for fit i) on ``design`` (see the module
    doc)."""
    law, options, config, seed = study.law, study.options, study.config, study.seed
    if sims < 2:
        raise ValueError(f"sims={sims}; SBC needs at least 2 simulations (100 or more to test)")
    if ranks < bins:
        raise ValueError(f"ranks={ranks} < bins={bins}")
    out_dir = Path(out_dir)
    # the config as the simulations and fits take it: a bad one is refused here, before anything
    # is written or Dask starts
    make_config(get_law(law, **(options or {})), config)
    (out_dir / "sims").mkdir(parents=True, exist_ok=True)
    say(f"sbc: {sims} simulations from the prior of the {law} law's model")
    tables, truth, quantities = simulate_prior(design, law, options, config, sims, seed)
    specs = []
    for i, table in enumerate(tables):
        specs.append(
            study.spec(f"sbc__sim{i:04d}", out_dir / "sims" / f"sim_{i:04d}.csv", table, offset=i)
        )
    fits = cluster.sweep(specs, out_dir / "fits", force, say)
    labels = [q[2] for q in quantities]
    rank_table = _rank_fits(fits, quantities, truth, ranks, say)
    if len(rank_table) < 2:
        raise RuntimeError(
            f"sbc: fewer than 2 simulations were fitted; see {out_dir / 'fits' / 'summary.csv'}"
        )
    tests = uniformity(rank_table, labels, ranks, bins)
    p_bonf = float(min(1.0, tests["p_value"].min() * len(tests)))
    meta = {
        "law": law,
        "options": options or {},
        "sims": sims,
        "fitted": len(rank_table),
        "rejected_simulations": truth.attrs.get("rejected", 0),
        "rejected_first": truth.attrs.get("rejected_first"),
        "ranks": ranks,
        "bins": bins,
        "seed": seed,
        "p_min_bonferroni": p_bonf,
    }
    _write(out_dir, truth, rank_table, tests, meta)
    return SBCResult(tests, rank_table, truth, fits, p_bonf, ranks)


def _rank_fits(
    fits: pd.DataFrame, quantities, truth: pd.DataFrame, ranks: int, say
) -> pd.DataFrame:
    """One row per fitted simulation (the sweep's summary ``fits``): the rank of each true value
    (:func:`rank_of`) and the fit's diagnostics; a failed fit is left out (and said)."""
    rows = []
    for i, (_, row) in enumerate(fits.iterrows()):
        if row["status"] not in ("ok", "diagnostics", "done"):
            say(f"sbc: simulation {i} failed ({row['error']}); left out of the ranks")
            continue
        fit = Fit.load(row["output"])
        r = rank_of(fit, quantities, truth.iloc[i], ranks)
        d = fit.diagnostics()
        rows.append(
            {
                "sim": i,
                **r,
                "max_rhat": d.max_rhat,
                "min_ess_bulk": d.min_ess_bulk,
                "divergences": int(d.divergences),
                "diagnostics_ok": bool(d.ok),
            }
        )
    return pd.DataFrame(rows)


def _write(out_dir: Path, truth, rank_table, tests, meta: dict) -> None:
    """``truth.csv``, ``ranks.csv``, ``sbc.csv`` and ``sbc.json`` into ``out_dir``, together."""
    write_outputs(
        {
            out_dir / "truth.csv": lambda tmp: truth.to_csv(tmp, index=False),
            out_dir / "ranks.csv": lambda tmp: rank_table.to_csv(tmp, index=False),
            out_dir / "sbc.csv": lambda tmp: tests.to_csv(tmp, index=False),
            out_dir / "sbc.json": lambda tmp: Path(tmp).write_text(
                json.dumps(meta, indent=2), encoding="utf-8"
            ),
        }
    )
