"""Out-of-domain validation sets of a CPT fit, as linear combinations of the general and domain
curves.

Wang et al. 2025 (arXiv 2505.07796) fit the loss on a validation set that is neither the PT nor the
CPT distribution as ``L_other = a * L_general + b * L_domain`` (absolute error ~0.003). Here each
``other`` set gets a Bayesian linear regression of its observed losses on the observed general and
domain losses at the same (run, step), after the run's initial warmup, with an intercept::

    y_other = a * y_general + b * y_domain + c + eps,    eps ~ Normal(0, sigma)

The intercept is ours (the paper's form has none): it absorbs a constant offset between sets
whose losses sit at different levels, e.g. C headers vs prose and Python in the lab. With
the reference prior p(a, b, c, sigma) ~ 1/sigma the posterior is exact: sigma^2 is scaled
inverse-chi^2 with n - 3 degrees of freedom and (a, b, c) | sigma is Normal around the
least-squares solution. Independent posterior draws, as many as the CPT fit has, are stored in its
posterior as ``other_coef`` (dims ``other_set``, ``coef`` = a, b, c) and ``other_sigma`` (nats), so
that a saved fit predicts the set for any plan: per draw, a * (general curve) + b * (domain curve)
+ c, plus noise.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import xarray as xr

from bayescpt.core.tables import DataError
from bayescpt.curves.data.table import schedules_of

COEFS = ("a", "b", "c")


def split_other(df: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """The table with the ``other`` sets' losses blanked (its rows keep giving the schedule), and
    the ``other`` rows with losses (None when there are none)."""
    if "val_role" not in df.columns:
        return df, None
    is_other = (df["val_role"] == "other") & df["loss"].notna()
    if not is_other.any():
        return df, None
    main = df.copy()
    main.loc[is_other, "loss"] = np.nan
    return main, df[is_other]


def fit_other(
    df: pd.DataFrame, other: pd.DataFrame, chains: int, draws: int, seed: int = 0
) -> tuple[dict, dict]:
    """Posterior draws (chains, draws, set, coef) of every ``other`` set's combination.

    ``df`` is the full table (for the general and domain losses), ``other`` its ``other`` rows.
    Returns (arrays for the posterior, a summary per set for the fit's metadata).
    """
    roles = df.dropna(subset=["loss"]).groupby("val_set")["val_role"].first()
    need = {}
    for role in ("general", "domain"):
        sets = sorted(roles.index[roles == role])
        if len(sets) != 1:
            raise DataError(
                f"an 'other' validation set is a combination of one general and one "
                f"domain set; the data have {role} sets {sets}"
            )
        need[role] = sets[0]
    keys = [c for c in ("run", "step", "model_size") if c in df.columns]
    ref = {
        role: df[(df["val_set"] == vs) & df["loss"].notna()].set_index(keys)["loss"]
        for role, vs in need.items()
    }

    warm = {r: s.warmup_steps for r, s in schedules_of(df).items()}
    other = other[other["step"] >= other["run"].map(warm)]
    rng = np.random.default_rng(seed)
    sets = sorted(other["val_set"].unique())
    coef = np.empty((chains * draws, len(sets), len(COEFS)))
    sigma = np.empty((chains * draws, len(sets)))
    summary = {}
    for j, vs in enumerate(sets):
        o = other[other["val_set"] == vs].set_index(keys)["loss"]
        both = pd.concat(
            {"y": o, "g": ref["general"], "d": ref["domain"]}, axis=1, join="inner"
        ).dropna()
        if len(both) < 6:
            raise DataError(
                f"validation set {vs!r} (role 'other'): only {len(both)} of its losses "
                f"are logged at the same run and step as the {need['general']!r} and "
                f"{need['domain']!r} losses; need at least 6 to fit its combination"
            )
        X = np.column_stack([both["g"], both["d"], np.ones(len(both))])
        y = both["y"].to_numpy()
        n, p = X.shape
        beta, *_ = np.linalg.lstsq(X, y, rcond=None)
        resid = y - X @ beta
        s2 = float(resid @ resid) / (n - p)
        cov = np.linalg.inv(X.T @ X)
        sig2 = (n - p) * s2 / rng.chisquare(n - p, size=chains * draws)
        z = rng.standard_normal((chains * draws, p)) @ np.linalg.cholesky(cov).T
        coef[:, j] = beta + z * np.sqrt(sig2)[:, None]
        sigma[:, j] = np.sqrt(sig2)
        summary[vs] = {
            "general_set": need["general"],
            "domain_set": need["domain"],
            "n": int(n),
            "a": float(beta[0]),
            "b": float(beta[1]),
            "c": float(beta[2]),
            "mean_abs_error": float(np.abs(resid).mean()),
        }
    arrays = {
        "other_coef": coef.reshape(chains, draws, len(sets), p),
        "other_sigma": sigma.reshape(chains, draws, len(sets)),
    }
    return arrays, summary


def add_to_posterior(idata, arrays: dict, summary: dict) -> None:
    """Store the draws of :func:`fit_other` in ``idata.posterior`` (coords other_set, coef)."""
    post = idata.posterior
    sets = list(summary)
    coords = {"chain": post["chain"].values, "draw": post["draw"].values, "other_set": sets}
    post["other_coef"] = xr.DataArray(
        arrays["other_coef"],
        dims=("chain", "draw", "other_set", "coef"),
        coords=dict(coords, coef=list(COEFS)),
    )
    post["other_sigma"] = xr.DataArray(
        arrays["other_sigma"], dims=("chain", "draw", "other_set"), coords=coords
    )


def other_sets(meta: dict) -> dict:
    """The ``other`` sets of a fit's metadata: name -> summary (empty without any)."""
    raw = meta.get("other_sets")
    if not raw:
        return {}
    return json.loads(raw) if isinstance(raw, str) else raw
