"""NUTS on JAX (numpyro, blackjax) from the posterior mode, in coordinates whitened at the mode.

Notation as in :mod:`bayescpt.core.init`: ``u`` the model's unconstrained parameters (flat,
``n`` of them), ``log p(u)`` the model log density there, ``u*`` the mode the chains start around.

**Why whitened.** The loss laws' posteriors hold near-exact linear redundancies: the schedule
deviations ``w_s``, shared by every model size, against the sizes' own values ``u_g`` (only
``u_g + w_s`` meets the data). On the LR-annealing law's nine training curves the posterior
correlations reach 0.9999 and the correlation matrix's condition number is about 2e5
(``benchmarks/RESULTS.md``). nutpie's low-rank mass matrix adapts to such directions. numpyro's
and blackjax's diagonal ones cannot: 97-100 % of their trees hit the max depth (1e6 gradient
evaluations per chain, R-hat 1.02); their dense ones are estimated from Stan's first adaptation
windows (25 draws for 40 parameters) and do no better. So the JAX samplers sample ``z`` with::

    u = u* + L z,    L = V diag(lambda)^(-1/2),    V diag(lambda) V^T = P = -d^2 log p / du^2 at u*

(``P`` by forward differences of the gradient, step ``FD_STEP``, symmetrised; eigenvalues below
``EIG_FLOOR`` raised to it, non-positive ones set to 1, so no direction is wider than sd
``EIG_FLOOR**-0.5`` and none is lost), i.e. the Laplace approximation's covariance
``L L^T = P^-1`` as the mass matrix. ``log p_z(z) = log p(u* + L z)`` (the Jacobian ``|L|`` is a
constant), and each sampler's own diagonal adaptation runs on ``z`` as a correction. Above
``MAX_DENSE`` parameters ``L = diag(s)``, the mode's conditional sds (:meth:`Starts.scale`).

Draws are mapped back to ``u`` and through the model's own graph to its variables
(transformed back, deterministics), as PyMC's JAX samplers do; ``sample_stats.lp`` is
``log p(u)`` (the density, not the potential energy), ``tree_depth`` and ``n_steps`` per draw.
Same seed, same draws. Reference: Betancourt (2017), "A conceptual introduction to HMC", sec. 4.2
(the mass matrix as the inverse posterior covariance).
"""

from __future__ import annotations

import time

import numpy as np

EIG_FLOOR = 1e-2  # smallest curvature kept: no whitened direction wider than sd 10
MAX_DENSE = 2000  # above this many parameters the Laplace factor is diagonal


def laplace_factor(starts) -> tuple[np.ndarray, str]:
    """``L`` with ``L L^T`` = the Laplace covariance at ``starts.mode`` (module doc), and a word
    saying which form ("dense" or "diagonal")."""
    n = len(starts.mode)
    if n > MAX_DENSE:
        return np.diag(np.asarray(starts.scale, dtype=float)), "diagonal"
    prec = starts.precision()
    lam, vec = np.linalg.eigh(prec)
    lam = np.where(lam > 0, np.maximum(lam, EIG_FLOOR), 1.0)
    return vec / np.sqrt(lam), "dense"


def jax_precision() -> None:
    """JAX in PyTensor's ``floatX`` (float64 here) for the samplers: PyTensor switches JAX to
    float64 only when its JAX backend is first imported, and other code (the plan's evaluation)
    may have switched it back since; the setting stays, as PyMC leaves it."""
    import jax
    import pytensor

    jax.config.update("jax_enable_x64", pytensor.config.floatX == "float64")


def sample_jax(model, s: dict, starts, progress: bool = False):
    """Sample ``model`` with numpyro or blackjax (``s['sampler']``) on the whitened coordinates
    (module doc), chains vectorised on one device, from ``starts`` (one start per chain, as for
    every sampler), in float64 (:func:`jax_precision`). Returns InferenceData (posterior,
    sample_stats, observed and constant data); the log likelihood is added by the caller."""
    jax_precision()
    return _sample_jax(model, s, starts, progress)


def _sample_jax(model, s: dict, starts, progress: bool = False):
    import arviz as az
    import jax
    import jax.numpy as jnp
    from pymc.backends.arviz import (
        coords_and_dims_for_inferencedata,
        find_constants,
        find_observations,
    )
    from pymc.sampling.jax import get_jaxified_graph, get_jaxified_logp
    from pymc.util import get_default_varnames

    logp_list = get_jaxified_logp(model)  # also puts JAX in float64 with floatX float64
    chains, draws, tune, seed = int(s["chains"]), int(s["draws"]), int(s["tune"]), int(s["seed"])
    L, form = laplace_factor(starts)
    mode = np.asarray(starts.mode, dtype=float)
    x0 = np.stack([starts.flat(c) for c in starts.chain_seeds(chains, seed)])
    z0 = np.linalg.solve(L, (x0 - mode).T).T if form == "dense" else (x0 - mode) / np.diag(L)

    # the flat vector's pieces in the order of model.value_vars (what the JAX graphs take)
    offsets, i = {}, 0
    for name, shape, size, _ in starts.owner._info:
        offsets[name] = (i, size, shape)
        i += size
    pieces = [offsets[v.name] for v in model.value_vars]

    def unflat(u):
        return [u[a : a + k].reshape(shape) for a, k, shape in pieces]

    mode_j, L_j = jnp.asarray(mode), jnp.asarray(L)

    def logp_z(z):
        return logp_list(unflat(mode_j + L_j @ z))

    depth = s.get("max_tree_depth")
    key = jax.random.PRNGKey(seed)
    t0 = time.perf_counter()
    if s["sampler"] == "numpyro":
        z, stats, step = _numpyro(
            logp_z, z0, key, chains, draws, tune, s["target_accept"], depth, progress
        )
    elif s["sampler"] == "blackjax":
        z, stats, step = _blackjax(logp_z, z0, key, chains, draws, tune, s["target_accept"], depth)
    else:
        raise ValueError(f"sample_jax: sampler {s['sampler']!r}; expected numpyro or blackjax")
    seconds = time.perf_counter() - t0

    u = mode[None, None, :] + np.einsum("cdj,ij->cdi", z, L)
    names = get_default_varnames(model.unobserved_value_vars, include_transformed=False)
    names = list(names)
    fn = get_jaxified_graph(inputs=model.value_vars, outputs=names)
    values = jax.jit(jax.vmap(jax.vmap(lambda x: fn(*unflat(x)))))(jnp.asarray(u))
    posterior = {v.name: np.asarray(val) for v, val in zip(names, values)}
    coords, dims = coords_and_dims_for_inferencedata(model)
    attrs = {
        "sampling_time": seconds,
        "tuning_steps": tune,
        "inference_library": s["sampler"],
        "mass_matrix": f"Laplace at the mode ({form}) x adapted diagonal",
    }
    idata = az.from_dict(
        posterior=posterior,
        sample_stats=stats,
        coords=coords,
        dims=dims,
        observed_data=find_observations(model),
        constant_data=find_constants(model),
        attrs=attrs,
        posterior_attrs=attrs,
    )
    idata.sample_stats["step_size"] = (
        ("chain", "draw"),
        np.repeat(np.asarray(step)[:, None], draws, axis=1),
    )
    return idata


def _numpyro(logp_z, z0, key, chains, draws, tune, target_accept, depth, progress):
    import jax.numpy as jnp
    from numpyro.infer import MCMC, NUTS

    kernel = NUTS(
        potential_fn=lambda z: -logp_z(z),
        target_accept_prob=float(target_accept),
        max_tree_depth=int(depth or 10),
        dense_mass=False,
    )
    mcmc = MCMC(
        kernel,
        num_warmup=tune,
        num_samples=draws,
        num_chains=chains,
        chain_method="vectorized",
        progress_bar=progress,
    )
    mcmc.run(
        key,
        init_params=jnp.asarray(z0 if chains > 1 else z0[0]),
        extra_fields=(
            "num_steps",
            "potential_energy",
            "energy",
            "accept_prob",
            "diverging",
            "adapt_state.step_size",
        ),
    )
    z = np.asarray(mcmc.get_samples(group_by_chain=True)).reshape(chains, draws, -1)
    ex = {
        k: np.asarray(v).reshape(chains, draws)
        for k, v in mcmc.get_extra_fields(group_by_chain=True).items()
    }
    n_steps = ex["num_steps"].astype(int)
    stats = {
        "lp": -ex["potential_energy"],
        "energy": ex["energy"],
        "acceptance_rate": ex["accept_prob"],
        "diverging": ex["diverging"].astype(bool),
        "n_steps": n_steps,
        "tree_depth": np.floor(np.log2(np.maximum(n_steps, 1))).astype(int) + 1,
    }
    return z, stats, ex["adapt_state.step_size"][:, -1]


def _blackjax(logp_z, z0, key, chains, draws, tune, target_accept, depth):
    import blackjax
    import jax
    import jax.numpy as jnp
    from blackjax.adaptation.base import get_filter_adapt_info_fn

    extra = {} if depth is None else {"max_num_doublings": int(depth)}

    def one_chain(k, start):
        k_tune, k_draw = jax.random.split(k)
        adapt = blackjax.window_adaptation(
            blackjax.nuts,
            logp_z,
            target_acceptance_rate=float(target_accept),
            adaptation_info_fn=get_filter_adapt_info_fn(),
            **extra,
        )
        (state, params), _ = adapt.run(k_tune, start, num_steps=tune)
        step = blackjax.nuts(logp_z, **params, **extra).step

        def one(st, kk):
            st, info = step(kk, st)
            return st, (
                st.position,
                st.logdensity,
                info.energy,
                info.acceptance_rate,
                info.is_divergent,
                info.num_integration_steps,
                info.num_trajectory_expansions,
            )

        _, out = jax.lax.scan(one, state, jax.random.split(k_draw, draws))
        return out, params["step_size"]

    (pos, lp, energy, acc, div, n_steps, depth_), step = jax.jit(jax.vmap(one_chain))(
        jax.random.split(key, chains), jnp.asarray(z0)
    )
    stats = {
        "lp": np.asarray(lp),
        "energy": np.asarray(energy),
        "acceptance_rate": np.asarray(acc),
        "diverging": np.asarray(div).astype(bool),
        "n_steps": np.asarray(n_steps).astype(int),
        "tree_depth": np.asarray(depth_).astype(int),
    }
    return np.asarray(pos), stats, np.asarray(step)
