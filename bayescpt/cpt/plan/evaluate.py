"""Per-draw outcomes of every plan of a grid under a fitted CPT law.

For every plan and posterior draw the law gives the CPT curves on the general and domain
validation sets, at ``points`` CPT steps (0 = the transfer, the last = the end); from them, in
nats, arrays of shape (draws, plans):

* ``domain`` (final domain loss), ``general`` (final general loss);
* ``rise`` = final general loss - general loss at the transfer (the forgetting the plan leaves);
* ``peak_rise`` = highest general loss during the CPT - loss at the transfer, and ``turning``,
  the CPT step of that peak (on the evaluation grid).

All plans share the posterior draws and one new-run deviation per draw (common random numbers), so
differences between plans are not Monte Carlo noise. Evaluation is the law's own mean function over
(draw, plan, step) arrays, in chunks of plans, with numpy or, when installed, JAX (``backend``):
the same code the fit's model was built from.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

from bayescpt.core import schedules as S
from bayescpt.core.tables import DataError
from bayescpt.cpt.plan.grid import plan_schedule
from bayescpt.cpt.plan.memory import check_memory
from bayescpt.cpt.rows import loss_potential
from bayescpt.curves.model.hierarchy import parameter_draws

BACKENDS = ("auto", "numpy", "jax")


@dataclass(frozen=True)
class Evaluation:
    """How plans are evaluated: ``points`` CPT steps per plan (turning-point resolution),
    ``backend`` (auto, numpy or jax), ``seed`` (the draws' new-run deviations), the ``general``
    and ``domain`` validation sets (None: the fit's only one of that role), ``model_size`` (None:
    the fit's only one), ``dtype`` and ``chunk_elements`` (elements of one evaluation chunk).

    ``dtype``: the law is evaluated in single precision by default (about 4x faster powers; a
    loss of ~3 nats is then exact to ~1e-6, far below any tolerance a plan is judged at), or
    ``"float64"``."""

    points: int = 48
    backend: str = "auto"
    seed: int = 0
    general: str | None = None
    domain: str | None = None
    model_size: float | None = None
    dtype: str = "float32"
    chunk_elements: int = 1_000_000

    def __post_init__(self):
        if self.dtype not in ("float32", "float64"):
            raise ValueError(f"dtype {self.dtype!r}; expected float32 or float64")
        _check_backend(self.backend)


@dataclass
class PlanDraws:
    """Per-draw outcomes, arrays of shape (draws, plans); ``grid`` the plans (decision columns)."""

    plans: pd.DataFrame
    domain: np.ndarray
    general: np.ndarray
    rise: np.ndarray
    peak_rise: np.ndarray
    turning: np.ndarray
    seconds: float


def _groups(fit, general, domain):
    g = fit.groups
    roles = g.drop_duplicates("val_set").set_index("val_set")["val_role"]
    out = {}
    for role, name in (("general", general), ("domain", domain)):
        names = sorted(roles.index[roles == role]) if name is None else [name]
        if len(names) != 1 or names[0] not in roles.index:
            raise DataError(
                f"the fit has {role} validation sets {sorted(roles.index[roles == role])}"
                f"; name one (--{role} NAME)"
            )
        out[role] = names[0]
    return out


def designs(fit, pt: S.Schedule, plans: pd.DataFrame, points: int = 48) -> dict:
    """The law's design for every plan at ``points`` CPT steps (0 = transfer, last = the end):
    role -> {feature: (plans, points)}, plus ``cpt_steps`` (plans, points)."""
    law, settings = fit.law, fit.config["settings"]
    rows = {"general": [], "domain": []}
    cpt_steps = []
    for _, p in plans.iterrows():
        t = int(p["transfer"])
        full = plan_schedule(pt, p)
        k = np.unique(np.linspace(0, int(p["steps"]), points).round().astype(int))
        k = np.pad(k, (0, points - k.size), mode="edge")
        cpt_steps.append(k)
        for role in rows:
            info = {
                "val_role": role,
                "val_set": role,
                "pt_end": t,
                "replay_ratio": p["replay_ratio"],
                "model_size": p.get("model_size"),
            }
            rows[role].append(law.design(full, t + k, settings, info))
    out = {
        role: {key: np.stack([d[key] for d in ds]) for key in ds[0]} for role, ds in rows.items()
    }
    out["cpt_steps"] = np.stack(cpt_steps)
    return out


def _mean_fn(law, backend, dtype="float32"):
    """(mean function, array namespace, context to evaluate in). JAX runs in float64 inside
    ``jax.enable_x64`` only: switching it on globally breaks PyMC's blackjax sampler later on."""
    if backend == "jax":
        import jax
        import jax.numpy as jnp

        ctx = jax.enable_x64(True) if dtype == "float64" else contextlib.nullcontext()
        return jax.jit(lambda th, X: law.mean(jnp, th, X)), jnp, ctx
    return (lambda th, X: law.mean(np, th, X)), np, contextlib.nullcontext()


def _check_backend(backend: str) -> None:
    if backend not in BACKENDS:
        raise ValueError(f"backend {backend!r}; expected auto, numpy or jax")


def resolve_backend(backend: str = "auto") -> str:
    """The backend ``auto`` stands for here (numpy or jax); others as given."""
    _check_backend(backend)
    if backend == "auto":  # JAX on an accelerator; on CPU numpy is faster (benchmarks/plan_speed)
        try:
            import jax
        except ImportError:
            return "numpy"
        return "numpy" if jax.default_backend() == "cpu" else "jax"
    return backend


def _check_fit(fit, plans: pd.DataFrame) -> None:
    """Refuse (DataError) a fit that cannot evaluate ``plans``: not a cpt fit, or replay plans
    on a fit without the replay extension."""
    if fit.law.name != "cpt":
        raise DataError(f"planning needs a cpt fit; this one is a {fit.law.name} fit")
    if not getattr(fit.law, "replay", False) and (plans["replay_ratio"] > 0).any():
        raise DataError(
            "the plans vary the replay ratio, but the fit has no replay extension "
            "(refit with --replay on runs with several replay ratios)"
        )


def _draws_by_role(fit, names: dict, model_size, seed: int) -> dict:
    """role -> the law's parameter draws for that role's validation set (size ``model_size``, or
    the fit's only size), each role from its own stream of ``seed``."""
    rng = np.random.default_rng(seed)
    theta = {}
    size = model_size
    if size is None:
        sizes = fit.groups["size"].dropna().unique()
        size = float(sizes[0]) if sizes.size == 1 else None
    for role, name in names.items():
        th = parameter_draws(
            fit, name, size, np.random.default_rng(rng.integers(2**32)), antithetic=False
        )
        theta[role] = {k: v for k, v in th.items() if not k.startswith("_")}
    return theta


def _chunk_curves(X: dict, sl: slice, n: int, step: int, how) -> dict:
    """role -> (draws, n, points) curves of the plans in ``sl`` (the domain's at its last point
    only), the chunk padded to ``step`` plans so that JAX compiles one shape."""
    mean, xp, th, dtype = how
    curves = {}
    for role, last in (("general", False), ("domain", True)):
        Xc = {}
        for k, v in X[role].items():
            v = v[sl, -1:] if last else v[sl]
            if n < step:
                v = np.concatenate([v, np.repeat(v[-1:], step - n, axis=0)])
            Xc[k] = xp.asarray(np.asarray(v, dtype)[None])
        curves[role] = np.asarray(mean(th[role], Xc), np.float64)[:, :n]
    return curves


def _outcomes(law, theta: dict, X: dict, backend: str, settings: Evaluation) -> dict:
    """The per-draw outcomes (the module docstring's), arrays of shape (draws, plans)."""
    dtype = settings.dtype
    mean, xp, precision = _mean_fn(law, backend, dtype)
    n_draws = next(iter(theta["general"].values())).shape[0]
    n_plans, n_pts = X["cpt_steps"].shape
    out = {
        k: np.empty((n_draws, n_plans))
        for k in ("domain", "general", "rise", "peak_rise", "turning")
    }
    # Chunks of plans small enough for the temporaries to stay in cache: the law is a chain of
    # element-wise powers, memory-bound on big arrays. Only the general curve is needed at every
    # point (its peak); the domain loss only at the end. The last chunk is padded to the chunk
    # size so that JAX compiles one shape.
    step = max(1, min(n_plans, settings.chunk_elements // (n_draws * n_pts)))
    with precision:
        th = {
            role: {
                k: xp.asarray(np.asarray(v, dtype)[:, None, None]) for k, v in theta[role].items()
            }
            for role in theta
        }
    # Features constant along a plan's points (the frozen PT areas, the role's sign, the replay
    # ratio) enter as one column: broadcasting then skips their share of the work.
    X = {
        role: {k: (v[:, :1] if np.all(v == v[:, :1]) else v) for k, v in X[role].items()}
        for role in ("general", "domain")
    } | {"cpt_steps": X["cpt_steps"]}
    for a in range(0, n_plans, step):
        sl = slice(a, a + step)
        with precision:
            curves = _chunk_curves(X, sl, min(step, n_plans - a), step, (mean, xp, th, dtype))
        gen, dom = curves["general"], curves["domain"]
        out["domain"][:, sl] = dom[..., -1]
        out["general"][:, sl] = gen[..., -1]
        out["rise"][:, sl] = gen[..., -1] - gen[..., 0]
        peak = gen.argmax(axis=-1)
        out["peak_rise"][:, sl] = np.take_along_axis(gen, peak[..., None], -1)[..., 0] - gen[..., 0]
        out["turning"][:, sl] = np.take_along_axis(
            np.broadcast_to(X["cpt_steps"][sl], gen.shape), peak[..., None], -1
        )[..., 0]
    return out


def evaluate(
    fit, pt: S.Schedule, plans: pd.DataFrame, settings: Evaluation | None = None, X=None
) -> PlanDraws:
    """Per-draw outcomes of every plan (see the module docstring), evaluated as ``settings``
    says (default :class:`Evaluation`'s). Refuses (DataError) a grid whose evaluation would not
    fit in memory before any plan's schedule is built; ``X``: the plans' :func:`designs`, when
    already made (then not checked)."""
    settings = Evaluation() if settings is None else settings
    _check_fit(fit, plans)
    names = _groups(fit, settings.general, settings.domain)
    plans = plans.reset_index(drop=True).copy()

    plans["loss_potential"] = [loss_potential(pt, int(t)) for t in plans["transfer"]]
    if settings.model_size is not None:
        plans["model_size"] = float(settings.model_size)
    t0 = time.perf_counter()
    if X is None:
        check_memory(fit, pt, plans, settings.points, settings.chunk_elements)
        X = designs(fit, pt, plans, settings.points)
    backend = resolve_backend(settings.backend)
    theta = _draws_by_role(fit, names, settings.model_size, settings.seed)
    out = _outcomes(fit.law, theta, X, backend, settings)
    turning = out.pop("turning")
    if not all(np.isfinite(v).all() for v in out.values()):
        raise DataError(
            "the law gives non-finite losses for some plans (a learning rate of 0 "
            "over the whole CPT?); check the decision grid"
        )
    return PlanDraws(
        plans,
        out["domain"],
        out["general"],
        out["rise"],
        out["peak_rise"],
        turning,
        time.perf_counter() - t0,
    )
