"""The mixture fit: the laws of :mod:`bayescpt.mixture.model` sampled with NUTS, saved and
reloaded as a :class:`~bayescpt.core.fitfile.FitBase` fit file (law ``"mixture"``), and its
posterior draws of the expected and observed loss at any (ratio R, CPT tokens T).

Per posterior draw s: the run's expected loss is ``L_g(R, t) * exp(delta_s)`` with t = T / T_ref(g)
and delta the run's deviation (log scale; a fitted run's own, a fresh ``run_sd * z`` for a new
one); an observed loss multiplies that by ``exp(sigma_g * e)``, e ~ StudentT(nu).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from bayescpt import __version__
from bayescpt.core.fit_template import Recipe, SampledFit
from bayescpt.core.fitfile import FORMAT, as_table
from bayescpt.core.modelcache import fingerprint
from bayescpt.core.priorcheck import model_priors
from bayescpt.core.priorspec import priors_json
from bayescpt.mixture.data import mixture_hash, read_mixture
from bayescpt.mixture.model import (
    LAW,
    build_model,
    law_mean,
    make_config,
    prepare,
)

__all__ = ["MixtureFit", "predict_rows"]


class MixtureRecipe(Recipe):
    """The mixture family's part of a fit (:class:`~bayescpt.core.fit_template.Recipe`): its
    config, the table prepared (groups, reference ratios), the model, the fit's meta and rows."""

    def __init__(self, cls, df: pd.DataFrame, config: dict | None = None):
        self.cls, self.df = cls, df
        self.config = make_config(config)

    def prepare(self) -> None:
        self.prep = prepare(self.df, self.config)
        self.key = fingerprint(
            "mixture", {k: v for k, v in self.config.items() if k != "sampler"}, self.df
        )

    def build(self):
        return build_model(self.prep, self.config)

    def judge(self, idata):
        p = self.prep
        return self.cls(idata, self.config, p.groups, p.r_lo, p.r_hi).diagnostics()

    def sampled(self, idata, model, s: dict) -> None:
        self.priors = priors_json(model_priors(model))

    def fit(self, idata, seconds: float):
        p = self.prep
        meta = {
            "format": FORMAT,
            "law": LAW,
            "bayescpt_version": __version__,
            "data_hash": mixture_hash(self.df),
            "n_points": int(len(p.points)),
            "fit_seconds": round(seconds, 3),
            "priors": self.priors,
        }
        return self.cls(
            idata,
            self.config,
            p.groups,
            p.r_lo,
            p.r_hi,
            meta,
            p.points[["run", "model_size", "ratio", "tokens", "val_set", "loss", "curve"]],
        )


@dataclass
class MixtureFit(SampledFit):
    """A sampled mixture law: InferenceData + config + group table + reference ratios.

    ``groups``: one row per (model_size, val_set) with its role and reference budget ``t_ref``;
    ``r_lo``, ``r_hi``: the smallest and largest fitted ratio; ``points``: the fitted rows.
    A group index for a (model size, validation set) the fit has not seen is an error.
    :meth:`run` (``config``) fits a validated table
    (:func:`bayescpt.mixture.data.validate_mixture`).
    """

    idata: object
    config: dict
    groups: pd.DataFrame
    r_lo: float
    r_hi: float
    meta: dict = field(default_factory=dict)
    points: pd.DataFrame | None = None  # the fitted rows (for plots)

    laws = (LAW,)
    recipe = MixtureRecipe
    own_keys = ("groups", "ratio_ref", "points")
    tables = {"groups": "group", "points": "obs"}
    new_groups = False
    read_table = staticmethod(read_mixture)
    table_hash = staticmethod(mixture_hash)

    @classmethod
    def check_sweep_config(cls, law, law_options: dict, config: dict) -> None:
        make_config(config or None)

    # -- bookkeeping ------------------------------------------------------------------------------
    def _own_attrs(self) -> dict:
        return {"ratio_ref": json.dumps([self.r_lo, self.r_hi])}

    def _labels(self) -> dict:
        g = self.groups
        out = {
            "group": {
                "val_set": g["val_set"].astype(str).to_numpy(),
                "model_size": g["model_size"].astype(float).to_numpy(),
                "val_role": g["val_role"].astype(str).to_numpy(),
            }
        }
        p = self.points
        if p is not None:
            out["obs"] = {
                "run": p["run"].astype(str).to_numpy(),
                "val_set": p["val_set"].astype(str).to_numpy(),
                "ratio": p["ratio"].to_numpy(),
                "tokens": p["tokens"].to_numpy(),
            }
            per_curve = p.drop_duplicates("curve").sort_values("curve")
            out["curve"] = {
                "run": per_curve["run"].astype(str).to_numpy(),
                "val_set": per_curve["val_set"].astype(str).to_numpy(),
            }
        return out

    @classmethod
    def _from_attrs(cls, idata, attrs: dict) -> MixtureFit:
        groups = as_table(attrs["groups"])
        r_lo, r_hi = json.loads(attrs["ratio_ref"])
        pts = as_table(attrs.get("points"))
        return cls(idata, json.loads(attrs["config"]), groups, r_lo, r_hi, cls._meta_of(attrs), pts)

    def run_sd(self, gi: int) -> np.ndarray | None:
        """Draws (S,) of the run-deviation scale of group ``gi``'s role, None without one."""
        post = self.idata.posterior
        role = self.groups.loc[gi, "val_role"]
        if "run_sd" not in post or self.config["token_terms"].get(role, 1) == 0:
            return None
        x = post["run_sd"].sel(role=self.groups.loc[gi, "val_role"]).values
        return x.reshape(-1)

    # -- posterior draws --------------------------------------------------------------------------
    def theta(self, gi: int) -> dict:
        """Posterior draws (shape (S, 1)) of group ``gi``'s law parameters for :func:`law_mean`."""
        post = self.idata.posterior
        col = lambda name: self.flat(name)[:, gi][:, None]  # noqa: E731
        terms = self.config["token_terms"].get(self.groups.loc[gi, "val_role"], 1)
        th = {"m": col("m"), "d": col("d"), "c": col("c")}
        if "q" in post and terms > 0:
            th["q"] = col("q")
        th["A"], th["p"] = [], []
        if terms >= 1:
            th["A"].append(col("A1"))
            th["p"].append(np.exp(col("logp1")))
        if terms >= 2:
            th["A"].append(col("A2"))
            th["p"].append(np.exp(col("logp1")) + col("p_gap"))
        return th

    def mean_draws(self, gi: int, ratio, tokens) -> np.ndarray:
        """Expected loss draws, shape (S, n), at arrays ``ratio`` and ``tokens`` (> 0, the data's
        token unit) broadcast together."""
        ratio, tokens = np.broadcast_arrays(np.asarray(ratio, float), np.asarray(tokens, float))
        if np.any(tokens <= 0):
            raise ValueError("tokens must be > 0 (tokens = 0 is the pre-CPT baseline, observed)")
        t = tokens.ravel()[None, :] / float(self.groups.loc[gi, "t_ref"])
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            return law_mean(
                np,
                ratio.ravel()[None, :],
                t,
                self.theta(gi),
                self.config["ratio_form"],
                self.r_lo,
                self.r_hi,
            )

    def run_deviation(self, gi: int, run: str | None = None, seed: int = 0) -> np.ndarray:
        """Draws (S,) of a run's deviation (log scale): the fitted one for a fitted ``run``, a
        fresh one (tau * z) for a new run, zeros where the model has none."""
        tau = self.run_sd(gi)
        S = self.flat("m").shape[0]
        if tau is None:
            return np.zeros(S)
        if run is not None and self.points is not None:
            g = self.groups.loc[gi]
            hit = self.points[
                (self.points["run"] == run)
                & (self.points["val_set"] == g["val_set"])
                & (self.points["model_size"] == g["model_size"])
            ]
            if len(hit):
                k = int(hit["curve"].iloc[0])
                if "run_dev" in self.idata.posterior:
                    return self.flat("run_dev")[:, k]
                return tau * self.flat("run_dev_z")[:, k]
        return tau * np.random.default_rng(seed).standard_normal(S)

    def run_draws(
        self, gi: int, ratio, tokens, seed: int = 0, run: str | None = None
    ) -> np.ndarray:
        """Expected loss (S, n) of one run: the law times the run's deviation (a fitted run's own,
        else a fresh one per draw shared by all (ratio, tokens) -- one and the same new run)."""
        mu = self.mean_draws(gi, ratio, tokens)
        return mu * np.exp(self.run_deviation(gi, run, seed))[:, None]

    def predictive_draws(
        self, gi: int, ratio, tokens, seed: int = 0, run: str | None = None
    ) -> np.ndarray:
        """Posterior predictive losses: :meth:`run_draws` times StudentT noise on the log scale,
        independent per point."""
        mu = self.run_draws(gi, ratio, tokens, seed=seed, run=run)
        rng = np.random.default_rng(seed + 1)
        sigma = self.flat("sigma")[:, gi][:, None]
        return mu * np.exp(sigma * rng.standard_t(self.config["noise"]["nu"], size=mu.shape))

    def coefficients(self, gi: int) -> dict:
        """The papers' final-budget coefficients per draw: alpha, s (or t), beta of
        L(R) = alpha R^s + beta ("power") or beta + alpha exp(s R) ("exp")."""
        th = self.theta(gi)
        c = th["c"][:, 0]
        h = (lambda r: r**c) if self.config["ratio_form"] == "power" else (lambda r: np.exp(c * r))
        alpha = th["d"][:, 0] / (h(self.r_lo) - h(self.r_hi))
        return {"alpha": alpha, "s": c, "beta": th["m"][:, 0] - alpha * h(self.r_hi)}


def predict_rows(
    fit: MixtureFit, df: pd.DataFrame, prob: float = 0.9, seed: int = 0
) -> pd.DataFrame:
    """Posterior mean, credible band and predictive interval for each row of ``df`` (columns run,
    model_size, val_set, ratio, tokens > 0; loss kept when present). A fitted run (same run name,
    val_set and size) keeps its fitted deviation -- held-out checkpoints of a fitted run; any
    other run gets a fresh one -- a new mixture."""
    out = df.copy()
    lo_q, hi_q = (1 - prob) / 2, 1 - (1 - prob) / 2
    cols = {
        k: np.full(len(df), np.nan)
        for k in ("mean", "median", "lower", "upper", "curve_lower", "curve_upper")
    }
    for (size, vs, run), idx in df.groupby(["model_size", "val_set", "run"]).groups.items():
        gi = fit.group_index(size, vs)
        pos = df.index.get_indexer(idx)
        rows = df.loc[idx]
        mu = fit.run_draws(
            gi, rows["ratio"].to_numpy(), rows["tokens"].to_numpy(), seed=seed, run=run
        )
        yp = fit.predictive_draws(
            gi, rows["ratio"].to_numpy(), rows["tokens"].to_numpy(), seed=seed, run=run
        )
        cols["mean"][pos] = mu.mean(0)
        cols["median"][pos] = np.median(mu, 0)
        cols["curve_lower"][pos], cols["curve_upper"][pos] = np.quantile(mu, [lo_q, hi_q], 0)
        cols["lower"][pos], cols["upper"][pos] = np.quantile(yp, [lo_q, hi_q], 0)
    for k, v in cols.items():
        out[k] = v
    return out
