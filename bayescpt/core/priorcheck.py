"""Prior-data conflict: a top-level parameter whose posterior sits in its prior's far tail.

For each top-level node with a prior ``P`` (a ``pymc_extras`` ``Prior`` whose parameters are
numbers, or lists of numbers for a vector node whose elements' priors differ) and a scalar or
vector posterior, the prior's CDF at the posterior median, element by element (``name[coord]``),

    q = F_P(median of the posterior draws),

is read with scipy for the common families (:data:`_SCIPY`) and with PyMC's ``logcdf`` for
the others. ``q < p_tail`` or ``q > 1 - p_tail`` (default ``p_tail`` 0.001,
i.e. more than 3.1 sd from a Normal prior's centre) is a conflict: the data pull the parameter
where its prior puts almost no mass. This is a check of the prior against the data, not of the
sampler, but the two meet: in a hierarchy a population location held back by its prior can be
reconciled with the groups the data want only through a large group spread, and the sampler
then wanders between "location near the prior, spread large" and "location near the data,
spread small" (R-hat and ESS fail, and more draws help slowly). The report says which prior
disagrees with the data, by how much, and which setting changes it.

``z`` = Phi^-1(q), the same tail in standard-normal units: the distance from the prior's
centre in prior sds for a Normal prior (on the log scale for a LogNormal one, the defaults'
families), and the equivalent normal tail for any other family, which the note's "sd" means.

Reference: Evans & Moshonov (2006), "Checking for prior-data conflict", Bayesian Analysis 1(4);
the check here is the simplest version (the posterior median's prior tail probability), meant
as a flag with a plain-words reason, not as a test.

Where the priors come from: the loss-curve fits build their models from ``Prior`` objects and
store them; models written with plain PyMC distributions (hyperparameters, mixtures) give theirs
through :func:`model_priors`, which reads every free variable with constant parameters off the
model. Either way a fit stores them in its ``priors`` attr (:attr:`FitBase.priors`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

P_TAIL = 0.001


@dataclass(frozen=True)
class Conflict:
    """One top-level node whose posterior median is in its prior's far tail."""

    name: str
    prior: str  # e.g. "Normal(mu=0.916, sigma=0.5)"
    median: float  # posterior median
    q: float  # prior CDF at the median
    z: float  # Phi^-1(q)

    def text(self) -> str:
        side = "below" if self.z < 0 else "above"
        return (
            f"prior-data conflict on {self.name}: its posterior median {self.median:.4g} lies "
            f"{abs(self.z):.1f} sd {side} the centre of its prior {self.prior} (prior "
            f"tail probability {min(self.q, 1 - self.q):.1g}): the data pull it where the "
            "prior puts almost no mass"
        )


def _describe(prior) -> str:
    args = ", ".join(
        f"{k}={v:.4g}" if isinstance(v, (int, float, np.floating)) else f"{k}={v}"
        for k, v in prior.parameters.items()
    )
    return f"{prior.distribution}({args})"


#: scipy.stats equivalents of common PyMC families (same parameter names as PyMC's), used
#: instead of compiling PyMC's logcdf (about 0.1 s per node) where the parameters match exactly
_SCIPY = {
    ("Normal", ("mu", "sigma")): lambda st, a: st.norm(a["mu"], a["sigma"]),
    ("LogNormal", ("mu", "sigma")): lambda st, a: st.lognorm(a["sigma"], scale=np.exp(a["mu"])),
    ("HalfNormal", ("sigma",)): lambda st, a: st.halfnorm(scale=a["sigma"]),
    ("StudentT", ("mu", "nu", "sigma")): lambda st, a: st.t(a["nu"], a["mu"], a["sigma"]),
    ("Gamma", ("alpha", "beta")): lambda st, a: st.gamma(a["alpha"], scale=1 / a["beta"]),
    ("Exponential", ("lam",)): lambda st, a: st.expon(scale=1 / a["lam"]),
    ("HalfCauchy", ("beta",)): lambda st, a: st.halfcauchy(scale=a["beta"]),
    ("Cauchy", ("alpha", "beta")): lambda st, a: st.cauchy(a["alpha"], a["beta"]),
    ("Uniform", ("lower", "upper")): lambda st, a: st.uniform(a["lower"], a["upper"] - a["lower"]),
}


def prior_cdf(prior, values) -> np.ndarray | None:
    """The CDF of ``prior`` (a ``pymc_extras`` ``Prior``) at ``values``; None when the prior has
    hyper-priors (its parameters are not numbers), a transform, or a family with no CDF in
    PyMC. Common families are evaluated with scipy (:data:`_SCIPY`), the others with PyMC's
    ``logcdf``."""
    import pymc as pm
    import scipy.stats as st

    if getattr(prior, "transform", None) or any(
        not isinstance(v, (int, float, np.floating, np.integer, list, tuple, np.ndarray))
        or (not np.isscalar(v) and np.asarray(v).dtype.kind not in "if")
        for v in prior.parameters.values()
    ):
        return None  # a transformed prior's node is not the distribution's variable
    make = _SCIPY.get((prior.distribution, tuple(sorted(prior.parameters))))
    args = {
        k: (float(v) if np.isscalar(v) else np.asarray(v, dtype=float))
        for k, v in prior.parameters.items()
    }
    if make is not None:
        return make(st, args).cdf(np.asarray(values, dtype=float))
    try:
        dist = prior.pymc_distribution.dist(**args)
        return np.exp(pm.logcdf(dist, np.asarray(values, dtype=float)).eval())
    except NotImplementedError:
        return None


#: PyTensor random-variable ops -> (PyMC family, its parameters from the op's own); the op's
#: parameters are (loc, scale) for normal and halfnormal, (shape, scale) for gamma, (scale,)
#: for exponential, (nu, loc, scale) for t
_OPS = {
    "normal": lambda p: ("Normal", {"mu": p[0], "sigma": p[1]}),
    "lognormal": lambda p: ("LogNormal", {"mu": p[0], "sigma": p[1]}),
    "halfnormal": lambda p: ("HalfNormal", {"sigma": p[1]}) if p[0] == 0 else None,
    "gamma": lambda p: ("Gamma", {"alpha": p[0], "beta": 1.0 / p[1]}),
    "exponential": lambda p: ("Exponential", {"lam": 1.0 / p[0]}),
    "t": lambda p: ("StudentT", {"nu": p[0], "mu": p[1], "sigma": p[2]}),
    "halfcauchy": lambda p: ("HalfCauchy", {"beta": p[1]}) if p[0] == 0 else None,
}


def model_priors(model) -> dict:
    """{name: ``pymc_extras`` Prior} of the free variables of the PyMC ``model`` whose prior
    has constant parameters (no other random variable above it) and a family in :data:`_OPS`:
    the top-level nodes a conflict check can read, taken from the model itself (for models
    written with plain PyMC distributions rather than Prior objects). A vector variable's
    parameters are numbers or, where its elements' priors differ, lists (with the variable's
    dims). Variables with hyper-priors, other families and standardised helpers (``*_z``: their
    prior is in units of a start and step, not of the parameter) are left out."""
    import pytensor
    from pymc_extras.prior import Prior
    from pytensor.graph.traversal import ancestors

    rvs = set(model.basic_RVs)
    found = []  # (variable, its family maker, its parameters)
    for rv in model.free_RVs:
        make = _OPS.get(getattr(rv.owner.op, "name", None))
        if make is None or rv.name.endswith("_z"):
            continue
        params = rv.owner.op.dist_params(rv.owner)
        if not any(v in rvs for v in ancestors(params)):
            found.append((rv, make, params))
    if not found:
        return {}
    # one compiled function for every parameter (a compile per parameter costs ~50 ms each)
    flat = [p for _, _, params in found for p in params]
    evaluated = iter(pytensor.function([], flat, mode="FAST_COMPILE")())
    out = {}
    for rv, make, params in found:
        # 7 significant digits: float32 constants (1 / 3.0 -> 0.33333334) read back cleanly;
        # a parameter that differs between a vector's elements is kept as a list
        values = [_tidy(np.asarray(next(evaluated), dtype=float)) for _ in params]
        if any(np.ndim(v) > 1 for v in values):
            continue
        spec = make(values)
        if spec is not None:
            dims = model.named_vars_to_dims.get(rv.name)
            out[rv.name] = Prior(spec[0], **spec[1], **({"dims": tuple(dims)} if dims else {}))
    return out


def _tidy(a: np.ndarray):
    """A parameter as a number, or a list when its elements differ (7 significant digits)."""
    a = np.vectorize(lambda v: float(f"{v:.7g}"))(a) if a.size else a
    if a.ndim == 0 or np.all(a == a.flat[0]):
        return float(a.flat[0])
    return a.tolist()


def prior_conflicts(posterior, priors: dict, p_tail: float = P_TAIL) -> list[Conflict]:
    """The conflicts of ``priors`` ({node name: Prior}) with ``posterior`` (an xarray Dataset of
    draws with dims chain, draw), most extreme first; a vector node (one dim besides chain and
    draw) element by element, named ``name[coord]``. Nodes missing from the posterior, of more
    dims, or whose prior has no closed CDF are skipped."""
    from scipy.stats import norm

    out = []
    for name, prior in priors.items():
        if name not in posterior or posterior[name].ndim not in (2, 3):
            continue
        da = posterior[name]
        med = np.atleast_1d(da.median(("chain", "draw")).values).astype(float)
        q = prior_cdf(prior, med)
        if q is None:
            continue
        labels = [name] if da.ndim == 2 else [f"{name}[{c}]" for c in da[da.dims[2]].values]
        one = da.ndim == 2
        for i, (lab, m, qi) in enumerate(zip(labels, med, np.broadcast_to(q, med.shape))):
            if not np.isfinite(qi):
                continue
            qi = float(np.clip(qi, 1e-300, 1.0))
            if qi < p_tail or qi > 1.0 - p_tail:
                z = (
                    float(norm.ppf(qi))
                    if qi < 0.5
                    else float(-norm.ppf(1.0 - qi))
                    if qi < 1.0
                    else math.inf
                )
                out.append(
                    Conflict(lab, _describe(prior if one else _element(prior, i)), float(m), qi, z)
                )
    return sorted(out, key=lambda c: -abs(c.z))


def _element(prior, i: int):
    """The prior of element ``i`` of a vector node (its list parameters indexed)."""
    from pymc_extras.prior import Prior

    args = {
        k: (v if np.isscalar(v) else float(np.asarray(v, dtype=float).ravel()[i]))
        for k, v in prior.parameters.items()
    }
    return Prior(prior.distribution, **args)
