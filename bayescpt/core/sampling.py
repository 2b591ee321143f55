"""NUTS for any PyMC model: sampler choice, settings, and an InferenceData with log likelihood.

Every fitted model in bayescpt (loss-curve laws, the hyperparameter law, the mixture laws) samples
through :func:`sample_model`, so all share the same samplers, defaults and warning handling.

Every chain starts from its own jittered point around the posterior mode found by multi-start
L-BFGS (setting ``init="map"``, the default; :mod:`bayescpt.core.init`), for every sampler; the
optimisations' record is kept in ``sample_stats.attrs['init']``. From there the JAX samplers
(numpyro, blackjax) sample on coordinates whitened by the Laplace approximation at the mode
(:mod:`bayescpt.core.jax_nuts`): their diagonal mass matrices cannot follow the laws' posterior
correlations alone. ``init="jitter"`` keeps each sampler's own start (support point + U(-1, 1)
jitter) and each sampler's own NUTS as PyMC runs it.

**Same seed, same numbers, on any machine.** The BLAS library that PyTensor's compiled code and
scipy call sums in an order that depends on its thread count; a 2-core machine and a worker
process with one BLAS thread (as Dask starts them) would part ways in the last bit and then, NUTS
being chaotic, in every draw. Fits therefore run with BLAS on one thread
(:func:`one_blas_thread`; the chains run in parallel, each calls BLAS on small arrays).

**Slow mixing is run longer** (:mod:`bayescpt.core.mixing`), stuck chains are not.
The pointwise log likelihood is stored with the draws unless too large
(:mod:`bayescpt.core.loglik`).

Two settings bound what a bad run can do: ``max_tree_depth`` (None: each sampler's default, 10
doublings, i.e. at most 1023 leapfrog steps per draw) caps the cost of one draw, and
``drop_stuck_chains`` (off by default) removes chains stuck in a minor mode of the log density
(:mod:`bayescpt.core.chains`), recording which and why in the fit's attrs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import warnings

from bayescpt.core.chains import DEFAULT_MAX_DEPTH, drop_stuck_chains
from bayescpt.core.init import model_starts
from bayescpt.core.jax_nuts import jax_precision, sample_jax
from bayescpt.core.loglik import loglik_too_large, store_log_likelihood
from bayescpt.core.mixing import run_longer
from bayescpt.core.sampler_settings import (  # noqa: F401 - importable from here as before
    DEFAULT_SAMPLER_SETTINGS,
    MAX_SEED,
    MAX_TREE_DEPTH,
    SAMPLER_RULES,
    SAMPLERS,
    check_sampler_settings,
    sampler_setting_problem,
)


@contextlib.contextmanager
def one_blas_thread():
    """BLAS (OpenBLAS, MKL: every one loaded) on one thread inside the block (module doc)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        yield


def default_sampler() -> str:
    """nutpie when installed (fastest on CPU), else PyMC's own NUTS."""
    try:
        import nutpie  # noqa: F401

        return "nutpie"
    except ImportError:
        return "pymc"


def check_sampler(name: str) -> str:
    """The sampler to use for ``name`` ('auto' or one of SAMPLERS); a clear error if missing."""
    if name == "auto":
        return default_sampler()
    if name not in SAMPLERS:
        raise ValueError(f"sampler {name!r}; expected one of {SAMPLERS} or 'auto'")
    need = {"nutpie": "nutpie", "numpyro": "numpyro", "blackjax": "blackjax"}.get(name)
    if need:
        try:
            __import__(need)
        except ImportError:
            extra = "nutpie" if name == "nutpie" else "jax"
            raise ValueError(
                f"sampler {name!r} needs the package {need!r}: pip install 'bayescpt[{extra}]'"
            ) from None
    return name


def resolve_settings(base: dict | None = None, sampler: str | None = "auto", **overrides) -> dict:
    """Sampler settings: package defaults < ``base`` (a config's 'sampler' entry) < overrides.

    ``overrides`` with value None are ignored, so CLI options can be passed straight through.
    ``tune_jitter``: the tuning steps when the chains start from the samplers' own points
    (``init="jitter"``) instead of the posterior mode; None: ``tune`` either way. A law whose short
    warmup is safe only from the mode sets both (the LR-annealing law: 400 and 1000). An explicit
    ``tune`` override holds for either start (so does a user config's: ``check_config``).
    """
    s = dict(DEFAULT_SAMPLER_SETTINGS, **(base or {}))
    s.update({k: v for k, v in overrides.items() if v is not None})
    if overrides.get("tune") is not None:
        s["tune_jitter"] = None
    check_sampler_settings(s)  # every setting in range, before anything is compiled
    tj = s.get("tune_jitter")
    if s.get("init", "map") == "jitter" and tj is not None:
        s["tune"] = tj
    s["sampler"] = check_sampler(sampler or s.get("sampler") or "auto")
    return s


def find_starts(model, s: dict):
    """The chains' starting points for settings ``s`` (:class:`bayescpt.core.init.Starts`), or
    None with ``init="jitter"`` (each sampler's own start)."""
    if s.get("init", "map") != "map":
        return None
    return model_starts(model).starts(int(s["chains"]), int(s["seed"]))


def numba_exact():
    """PyTensor's numba backend with fastmath off, for every nutpie compile (:func:`compile_nutpie`
    and PyMC's own nutpie path).

    With PyTensor's default (``numba__fastmath`` on) LLVM may reorder floating-point operations,
    and does so differently when the graph's functions are compiled together (a cache miss) and
    when they are loaded one by one from PyTensor's cache: the same model, seed and data then
    give other draws in a fresh compile folder (a Dask worker's, a first run after an upgrade)
    than in a warm one (measured: annealing law, 4 x 1000 draws, max draw difference 3.6;
    with fastmath off, fresh and cached compiles give identical draws). Same seed, same draws
    needs it off.
    """
    import pytensor

    return pytensor.config.change_flags(numba__fastmath=False)


def compile_nutpie(model):
    """nutpie's compiled ``model`` (its numba backend), with numba's fastmath off
    (:func:`numba_exact`)."""
    import nutpie

    with numba_exact():
        return nutpie.compile_pymc_model(model)


def nutpie_with_starts(compiled, starts):
    """A compiled nutpie model whose chain with seed k starts at ``starts.flat(k)``."""
    if starts is None:
        return compiled
    import numpy as np

    names, slices = compiled.shape_info[0], compiled.shape_info[1]
    n = compiled.n_dim

    def initial_point(seed):
        point = starts.point(seed)
        flat = np.zeros(n)
        for name, sl in zip(names, slices):
            if name in point and sl.stop <= n:
                flat[sl] = np.ravel(point[name])
        return flat

    return dataclasses.replace(compiled, initial_point_func=initial_point)


def sample_model(
    model,
    s: dict,
    progress: bool = False,
    cores: int | None = None,
    initvals=None,
    judge=None,
    compiled: dict | None = None,
):
    """Sample ``model`` with the settings ``s`` (:func:`_sample_model`), BLAS on one thread;
    with ``judge`` (InferenceData -> Diagnostics) a slowly mixing run is run longer
    (:func:`bayescpt.core.mixing.run_longer`) from the same starts and compiled model.
    ``compiled``: a dict that keeps nutpie's compiled model of ``model`` (filled on the first
    run; :mod:`bayescpt.core.modelcache` keeps it for the next fit of the same model)."""
    with one_blas_thread():
        starts = find_starts(model, s) if initvals is None else None
        compiled = {} if compiled is None else compiled  # nutpie's, made on the first run

        def run(settings):
            return _sample_model(model, settings, progress, cores, initvals, starts, compiled)

        return run_longer(run(s), s, judge, run)


def _sample_model(
    model,
    s: dict,
    progress: bool = False,
    cores: int | None = None,
    initvals=None,
    starts=None,
    compiled: dict | None = None,
):
    """Sample ``model`` with the settings ``s``; returns InferenceData with log likelihood.

    No sampler stores its tuning draws (nutpie's ``save_warmup=False``), so the result holds only
    the posterior. Chains start as ``s['init']`` says (module doc); ``initvals``: start points as
    PyMC takes them instead (one dict, or a list with one dict per chain; nutpie ignores them);
    ``starts``: the chains' starts (:func:`find_starts`, made by the caller); ``compiled``: a dict
    that keeps nutpie's compiled model between calls. ``sample_stats.attrs['max_tree_depth']``
    records the depth cap used; with ``s['drop_stuck_chains']`` chains in a minor mode are
    dropped and recorded in the posterior attrs (``dropped_chains``).
    """
    loglik = loglik_too_large(model, s) is None  # small enough to store
    ncores = cores or min(s["chains"], os.cpu_count() or 1)
    kw = dict(
        draws=s["draws"],
        tune=s["tune"],
        chains=s["chains"],
        random_seed=s["seed"],
        progressbar=progress,
        model=model,
        target_accept=s["target_accept"],
    )
    if starts is not None and s["sampler"] == "pymc":
        initvals = starts.initvals(s["chains"], s["seed"])
    if initvals is not None:
        kw["initvals"] = initvals
    cap = _depth_cap(s)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=FutureWarning)
        warnings.filterwarnings("ignore", message=".*[Dd]ivergen.*")
        warnings.filterwarnings("ignore", message=".*R-hat.*|.*effective sample size.*")
        if s["sampler"] == "pymc":
            idata = _sample_pymc(kw, cap, ncores, loglik, initvals)
        elif s["sampler"] == "nutpie" and starts is not None:
            compiled = {} if compiled is None else compiled
            if "nutpie" not in compiled:
                compiled["nutpie"] = compile_nutpie(model)
            idata = sample_compiled(
                compiled["nutpie"],
                model,
                s,
                starts,
                cores=ncores,
                progress=progress,
                log_likelihood=False,
                finish=False,
            )
        elif s["sampler"] == "nutpie":
            idata = _sample_nutpie_pymc(kw, cap, ncores, s)
        elif starts is not None:
            # JAX samplers from the mode: on coordinates whitened by the Laplace approximation
            # there, which their diagonal mass matrices cannot find themselves (core.jax_nuts)
            idata = sample_jax(model, s, starts, progress=progress)
        else:
            idata = _sample_jax_pymc(kw, cap, loglik, initvals, s["sampler"])
        finish_trace(idata, s, starts)
        store_log_likelihood(idata, model, s)
    return idata


def _depth_cap(s: dict) -> dict:
    """The sampler's keyword for the cap on tree doublings, ``s['max_tree_depth']`` (none when
    None: every sampler defaults to 10)."""
    depth = s.get("max_tree_depth")
    if depth is None:
        return {}
    return {
        "pymc": {"max_treedepth": int(depth)},
        "nutpie": {"maxdepth": int(depth)},
        "numpyro": {"max_tree_depth": int(depth)},
        "blackjax": {"max_num_doublings": int(depth)},
    }[s["sampler"]]


def _sample_pymc(kw: dict, cap: dict, ncores: int, loglik: bool, initvals):
    """PyMC's own NUTS with ``pm.sample`` keywords ``kw``."""
    import pymc as pm

    # given starts are used as they are (PyMC's default init would jitter them again)
    init = {"init": "adapt_diag"} if initvals is not None else {}
    return pm.sample(cores=ncores, idata_kwargs={"log_likelihood": loglik}, **init, **cap, **kw)


def _sample_nutpie_pymc(kw: dict, cap: dict, ncores: int, s: dict):
    """nutpie through ``pm.sample`` from its own starts (``init="jitter"``)."""
    import pymc as pm

    # The low-rank mass-matrix adaptation follows strong posterior correlations (L0-A-alpha
    # in the loss laws) that a diagonal one cannot: 10x faster and no divergences there.
    # numba's fastmath off: the same draws from a fresh and a cached compile
    with numba_exact():
        return pm.sample(
            nuts_sampler="nutpie",
            nuts_sampler_kwargs={
                "low_rank_modified_mass_matrix": s.get("low_rank", True),
                "cores": ncores,
                "save_warmup": False,
                **cap,
            },
            **kw,
        )


def _sample_jax_pymc(kw: dict, cap: dict, loglik: bool, initvals, sampler: str):
    """A JAX sampler (numpyro, blackjax) through ``pm.sample`` from its own starts."""
    import pymc as pm

    jax_precision()
    # JAX samplers from their own starts: chains vectorised on one device. Their default
    # ('parallel', pmap over chains) fails when there are fewer devices than chains, as on a
    # 1-device CPU.
    idata = pm.sample(
        nuts_sampler=sampler,
        idata_kwargs={"log_likelihood": loglik},
        nuts_sampler_kwargs={
            "chain_method": "vectorized",
            "jitter": initvals is None,
            **({"nuts_kwargs": cap} if cap else {}),
        },
        **kw,
    )
    if sampler == "numpyro" and "lp" in idata.sample_stats:
        # PyMC stores numpyro's potential energy, -log p, as 'lp'; the mode report reads
        # 'lp' as the log density (blackjax's and every other sampler's)
        idata.sample_stats["lp"] = -idata.sample_stats["lp"]
    return idata


def sample_compiled(
    compiled,
    model,
    s: dict,
    starts=None,
    cores: int | None = None,
    progress: bool = False,
    log_likelihood: bool = True,
    finish: bool = True,
):
    """nutpie on a compiled ``model`` (``nutpie.compile_pymc_model``, its data as ``model``'s)
    from ``starts``: the trace with observed and constant data as PyMC adds them, finished
    (:func:`finish_trace`, unless ``finish`` is False) and with the log likelihood when asked.
    What :func:`sample_model` does for nutpie, for callers that compile once and sample many
    times."""
    import nutpie
    import pymc as pm
    from pymc.backends.arviz import (
        coords_and_dims_for_inferencedata,
        dict_to_dataset,
        find_constants,
        find_observations,
    )

    depth = s.get("max_tree_depth")
    with warnings.catch_warnings(), one_blas_thread():
        warnings.simplefilter("ignore")
        idata = nutpie.sample(
            nutpie_with_starts(compiled, starts),
            draws=s["draws"],
            tune=s["tune"],
            chains=s["chains"],
            target_accept=s["target_accept"],
            seed=int(s["seed"]),
            progress_bar=progress,
            save_warmup=False,
            cores=cores or min(s["chains"], os.cpu_count() or 1),
            low_rank_modified_mass_matrix=s.get("low_rank", True),
            **({"maxdepth": int(depth)} if depth else {}),
        )
        coords, dims = coords_and_dims_for_inferencedata(model)
        groups = {
            name: dict_to_dataset(fn(model), library=pm, coords=coords, dims=dims, default_dims=[])
            for name, fn in (
                ("constant_data", find_constants),
                ("observed_data", find_observations),
            )
        }
        idata.add_groups(groups, coords=coords, dims=dims)
        if finish:
            finish_trace(idata, s, starts)
        if log_likelihood:
            store_log_likelihood(idata, model, s)
    return idata


def finish_trace(idata, s: dict, starts=None) -> None:
    """After sampling with settings ``s``, in place: the depth cap used recorded
    (``sample_stats.attrs['max_tree_depth']``), the start report of ``starts``
    (``sample_stats.attrs['init']``, JSON; "jitter" without), stuck chains dropped and recorded
    when ``s['drop_stuck_chains']``. For callers that run a sampler themselves (compiled nutpie,
    which must be called with ``save_warmup=False``: fit files hold only the posterior)."""
    for group in ("warmup_posterior", "warmup_sample_stats"):
        if group in idata.groups():
            raise ValueError(f"the trace holds {group}: sample with save_warmup=False")
    idata.sample_stats.attrs["max_tree_depth"] = int(s.get("max_tree_depth") or DEFAULT_MAX_DEPTH)
    idata.sample_stats.attrs["init"] = starts.report.to_json() if starts is not None else "jitter"
    if s.get("drop_stuck_chains"):
        drop_stuck_chains(idata, inplace=True)
