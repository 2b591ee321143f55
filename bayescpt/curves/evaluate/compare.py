"""Fits side by side: the same law on different datasets, or law variants on the same data.

* :func:`parameter_table`: every law parameter of every group (validation set x size label) of
  every fit, with mean and central interval (ArviZ ``summary``).
* :func:`differences`: for each later fit against the first (the reference), per parameter and
  group the fits share: the posterior difference (later - reference) with its interval and
  P(difference > 0). The fits' posteriors are independent, so the difference is drawn from
  independent pairs of draws.
* :func:`loo_table`: PSIS-LOO comparison (``arviz.compare``) of fits of the *same* data (equal data
  hashes), e.g. the annealing vs the multi-power law, or the CPT law with and without replay.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from bayescpt.core.tables import DataError


def labels_for(fits, names=None) -> list[str]:
    if names:
        if len(names) != len(fits):
            raise ValueError(f"{len(names)} names for {len(fits)} fits")
        return list(names)
    return [f"fit{i + 1}:{f.law.name}" for i, f in enumerate(fits)]


def _law_params(fit) -> list[str]:
    post = fit.idata.posterior
    names = [p.name for p in fit.law.params] + list(getattr(fit.law, "derived_names", ()))
    return [n for n in names if n in post and "group" in post[n].dims]


def shared_parameters(fits) -> list[str]:
    """Parameters every fit has. Fits of different laws share only sampled parameters of the same
    name (L0, A, alpha of the LR-schedule laws): a derived quantity or a name reused with another
    meaning (the multi-power law's C) is not compared."""
    common = set(_law_params(fits[0]))
    for f in fits[1:]:
        common &= set(_law_params(f))
    if len({f.law.name for f in fits}) > 1:
        for f in fits:
            common &= {p.name for p in f.law.params}
    return [p for p in _law_params(fits[0]) if p in common]


def parameter_table(fits, names=None, prob: float = 0.9) -> pd.DataFrame:
    import arviz as az

    rows = []
    lo_q, hi_q = (1 - prob) / 2, (1 + prob) / 2
    for label, f in zip(labels_for(fits, names), fits):
        post = f.idata.posterior
        for p in _law_params(f):
            for g in post[p]["group"].values:
                x = post[p].sel(group=g).values
                rows.append(
                    {
                        "fit": label,
                        "param": p,
                        "group": str(g),
                        "mean": float(x.mean()),
                        "lower": float(np.quantile(x, lo_q)),
                        "upper": float(np.quantile(x, hi_q)),
                        "r_hat": float(az.rhat(post[p].sel(group=g))[p]),
                    }
                )
    return pd.DataFrame(rows)


DIFF_COLUMNS = [
    "param",
    "group",
    "reference",
    "fit",
    "reference_mean",
    "fit_mean",
    "diff_mean",
    "diff_lower",
    "diff_upper",
    "p_greater",
]


def differences(fits, names=None, params=None, prob: float = 0.9, seed: int = 0) -> pd.DataFrame:
    """Later fits minus the first, per shared parameter and shared group (validation set x size
    label); empty when the fits share no group (other datasets: compare them by forest plot)."""
    if len(fits) < 2:
        raise ValueError("compare needs at least two fits")
    labels = labels_for(fits, names)
    params = params or shared_parameters(fits)
    rng = np.random.default_rng(seed)
    lo_q, hi_q = (1 - prob) / 2, (1 + prob) / 2
    ref = fits[0].idata.posterior
    rows = []
    for label, f in zip(labels[1:], fits[1:]):
        post = f.idata.posterior
        for p in params:
            if p not in post or p not in ref:
                raise DataError(f"parameter {p!r} is not in both {labels[0]} and {label}")
            groups = [g for g in ref[p]["group"].values if g in set(post[p]["group"].values)]
            for g in groups:
                a = ref[p].sel(group=g).values.ravel()
                b = post[p].sel(group=g).values.ravel()
                n = min(a.size, b.size)
                d = rng.permutation(b)[:n] - rng.permutation(a)[:n]
                rows.append(
                    {
                        "param": p,
                        "group": str(g),
                        "reference": labels[0],
                        "fit": label,
                        "reference_mean": float(a.mean()),
                        "fit_mean": float(b.mean()),
                        "diff_mean": float(d.mean()),
                        "diff_lower": float(np.quantile(d, lo_q)),
                        "diff_upper": float(np.quantile(d, hi_q)),
                        "p_greater": float((d > 0).mean()),
                    }
                )
    return pd.DataFrame(rows, columns=DIFF_COLUMNS)


def loo_unavailable(fits, names=None) -> str | None:
    """Why :func:`loo_table` cannot compare ``fits`` (one line), or None when it can."""
    if len({f.meta.get("data_hash") for f in fits}) != 1:
        return "the fits are of different data"
    for label, f in zip(labels_for(fits, names), fits):
        if "log_likelihood" not in f.idata:
            why = (
                f.idata.sample_stats.attrs.get("log_likelihood")
                if "sample_stats" in f.idata
                else None
            )
            return f"{label} has no pointwise log likelihood" + (f" ({why})" if why else "")
    return None


def loo_table(fits, names=None) -> pd.DataFrame | None:
    """``arviz.compare`` of fits of the same data; None when :func:`loo_unavailable` says why
    not (different data, or a fit without its pointwise log likelihood)."""
    import warnings

    import arviz as az

    if loo_unavailable(fits, names) is not None:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return az.compare(dict(zip(labels_for(fits, names), [f.idata for f in fits])), ic="loo")
