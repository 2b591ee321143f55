"""Risk-aware CPT planning over a fitted CPT law: which plan, and how sure it won't break the model.

A *plan* is a set of CPT decisions from a PT checkpoint: the transfer step on the PT schedule (which
fixes the checkpoint's loss potential), the CPT schedule's shape, peak learning rate, re-warmup,
decay fraction and length, and the replay ratio where the fit has the replay extension. For every
plan and posterior draw the law gives the CPT curves on the general and domain validation sets, at
``points`` CPT steps (including the last); from them:

* ``domain`` (final domain loss), ``general`` (final general loss);
* ``rise`` = final general loss - general loss at the transfer (the forgetting the plan leaves);
* ``peak_rise`` = highest general loss during the CPT - loss at the transfer, and the turning step
  (CPT step of that peak, on the evaluation grid).

All plans share the posterior draws and one new-run deviation per draw (common random numbers), so
differences between plans are not Monte Carlo noise. A plan is *feasible* at tolerance ``eps`` and
risk ``delta`` when P(rise <= eps) >= 1 - delta; the chosen plan minimises the expected final
domain loss among feasible plans (``objective="chance"``), or its ``quantile`` of the domain loss,
or the expected ``w_general * rise + w_domain * (domain loss)`` (``"weighted"``, the paper's
objective, unconstrained).

Evaluation is the law's own mean function over (draw, plan, step) arrays, in chunks of plans,
with numpy or, when installed, JAX (``backend``): the same code the fit's model was built from.
"""

from __future__ import annotations

import contextlib
import itertools
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

from bayescpt.core import schedules as S
from bayescpt.core.tables import DataError
from bayescpt.cpt.plan_memory import (  # noqa: F401 - importable from here as before
    available_memory,
    check_memory,
    memory_estimate,
)
from bayescpt.cpt.rows import loss_potential
from bayescpt.curves.data.table import schedules_of
from bayescpt.curves.model.hierarchy import parameter_draws
from bayescpt.hparams.predict import predict_optimum
from bayescpt.mixture.decide import feasibility

SHAPES = ("cosine", "linear", "constant", "1-sqrt", "exponential")
DECISIONS = ["transfer", "loss_potential", "shape", "peak_lr", "warmup", "decay_frac", "steps",
             "final_frac", "replay_ratio"]


def plan_grid(transfers, shapes=("cosine",), peak_lrs=(2e-4,), steps=(4000,),
              decay_fracs=(0.2,), replay_ratios=(0.0,), warmup: int = 100,
              final_frac: float = 0.0) -> pd.DataFrame:
    """Every combination of the decisions, one row per plan (``decay_frac`` only matters for WSD
    shapes; ``cosine`` and ``constant`` plans are not repeated over it)."""
    rows = []
    for t, shape, peak, n, frac, r in itertools.product(transfers, shapes, peak_lrs, steps,
                                                        decay_fracs, replay_ratios):
        if shape not in SHAPES:
            raise ValueError(f"CPT schedule shape {shape!r}; expected one of {list(SHAPES)}")
        if not peak > 0:
            raise ValueError(f"peak learning rate {peak!r}; expected a positive number (raw LR, "
                             "e.g. 2e-4)")
        if peak > 1:
            raise ValueError(f"peak learning rate {peak!r} is above 1: give the raw learning rate "
                             "(e.g. 2e-4), not a percentage or a multiple")
        if int(n) <= warmup:
            raise ValueError(f"{n} CPT steps do not cover the {warmup}-step re-warmup")
        if not 0 <= r <= 1:
            raise ValueError(f"replay ratio {r!r}; expected a share of PT data in [0, 1]")
        if shape in ("cosine", "constant"):
            frac = np.nan
        elif not 0 < frac <= 1:
            raise ValueError(f"decay fraction {frac!r}; expected a share of the CPT steps in (0, 1]")
        rows.append({"transfer": int(t), "shape": shape, "peak_lr": float(peak),
                     "warmup": int(warmup), "decay_frac": frac, "steps": int(n),
                     "final_frac": float(final_frac), "replay_ratio": float(r)})
    return pd.DataFrame(rows).drop_duplicates(ignore_index=True)


def cpt_segment(plan, start_lr: float) -> S.Schedule:
    """The CPT schedule of one plan row, re-warming from ``start_lr``."""
    decay = None if plan["shape"] in ("cosine", "constant") else \
        max(1, int(round(plan["decay_frac"] * plan["steps"])))
    return S.rewarmup(int(plan["steps"]), plan["peak_lr"], int(plan["warmup"]),
                      final=plan["final_frac"] * plan["peak_lr"], shape=plan["shape"],
                      decay_steps=decay, start_lr=start_lr)


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
            raise DataError(f"the fit has {role} validation sets {sorted(roles.index[roles == role])}"
                            f"; name one (--{role} NAME)")
        out[role] = names[0]
    return out


def plan_schedule(pt: S.Schedule, plan) -> S.Schedule:
    """The whole run of one plan row: ``pt`` up to the transfer step, then its CPT schedule."""
    t = int(plan["transfer"])
    if not 0 < t <= pt.total_steps:
        raise DataError(f"transfer step {t} is outside the PT schedule (1..{pt.total_steps})")
    head = S.Schedule(pt.lr[:t + 1], min(pt.warmup_steps, t), f"pt@{t}")
    return head.then(cpt_segment(plan, float(head.lr[-1])))


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
            info = {"val_role": role, "val_set": role, "pt_end": t,
                    "replay_ratio": p["replay_ratio"], "model_size": p.get("model_size")}
            rows[role].append(law.design(full, t + k, settings, info))
    out = {role: {key: np.stack([d[key] for d in ds]) for key in ds[0]}
           for role, ds in rows.items()}
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


def resolve_backend(backend: str = "auto") -> str:
    if backend not in ("auto", "numpy", "jax"):
        raise ValueError(f"backend {backend!r}; expected auto, numpy or jax")
    if backend == "auto":   # JAX on an accelerator; on CPU numpy is faster (benchmarks/plan_speed)
        try:
            import jax
        except ImportError:
            return "numpy"
        return "numpy" if jax.default_backend() == "cpu" else "jax"
    return backend


def evaluate(fit, pt: S.Schedule, plans: pd.DataFrame, points: int = 48, general=None,
             domain=None, model_size=None, seed: int = 0, backend: str = "auto",
             chunk_elements: int = 1_000_000, X=None, dtype: str = "float32") -> PlanDraws:
    """Per-draw outcomes of every plan (see the module docstring).

    ``dtype``: the law is evaluated in single precision by default (about 4x faster powers; a
    loss of ~3 nats is then exact to ~1e-6, far below any tolerance a plan is judged at), or
    ``"float64"``."""
    if dtype not in ("float32", "float64"):
        raise ValueError(f"dtype {dtype!r}; expected float32 or float64")

    if fit.law.name != "cpt":
        raise DataError(f"planning needs a cpt fit; this one is a {fit.law.name} fit")
    if not getattr(fit.law, "replay", False) and (plans["replay_ratio"] > 0).any():
        raise DataError("the plans vary the replay ratio, but the fit has no replay extension "
                        "(refit with --replay on runs with several replay ratios)")
    names = _groups(fit, general, domain)
    plans = plans.reset_index(drop=True).copy()

    plans["loss_potential"] = [loss_potential(pt, int(t)) for t in plans["transfer"]]
    if model_size is not None:
        plans["model_size"] = float(model_size)
    t0 = time.perf_counter()
    if X is None:
        check_memory(fit, pt, plans, points, chunk_elements)
        X = designs(fit, pt, plans, points)
    backend = resolve_backend(backend)
    mean, xp, precision = _mean_fn(fit.law, backend, dtype)
    rng = np.random.default_rng(seed)
    theta = {}
    size = model_size
    if size is None:
        sizes = fit.groups["size"].dropna().unique()
        size = float(sizes[0]) if sizes.size == 1 else None
    for role, name in names.items():
        th = parameter_draws(fit, name, size, np.random.default_rng(rng.integers(2**32)),
                             antithetic=False)
        theta[role] = {k: v for k, v in th.items() if not k.startswith("_")}
    n_draws = next(iter(theta["general"].values())).shape[0]
    n_plans, n_pts = X["cpt_steps"].shape
    out = {k: np.empty((n_draws, n_plans)) for k in ("domain", "general", "rise", "peak_rise")}
    turning = np.empty((n_draws, n_plans))
    # Chunks of plans small enough for the temporaries to stay in cache: the law is a chain of
    # element-wise powers, memory-bound on big arrays. Only the general curve is needed at every
    # point (its peak); the domain loss only at the end. The last chunk is padded to the chunk
    # size so that JAX compiles one shape.
    step = max(1, min(n_plans, chunk_elements // (n_draws * n_pts)))
    with precision:
        th = {role: {k: xp.asarray(np.asarray(v, dtype)[:, None, None])
                     for k, v in theta[role].items()} for role in theta}
    # Features constant along a plan's points (the frozen PT areas, the role's sign, the replay
    # ratio) enter as one column: broadcasting then skips their share of the work.
    X = {role: {k: (v[:, :1] if np.all(v == v[:, :1]) else v) for k, v in X[role].items()}
         for role in ("general", "domain")} | {"cpt_steps": X["cpt_steps"]}
    for a in range(0, n_plans, step):
        sl = slice(a, a + step)
        n = min(step, n_plans - a)
        with precision:
            curves = {}
            for role, last in (("general", False), ("domain", True)):
                Xc = {}
                for k, v in X[role].items():
                    v = v[sl, -1:] if last else v[sl]
                    if n < step:
                        v = np.concatenate([v, np.repeat(v[-1:], step - n, axis=0)])
                    Xc[k] = xp.asarray(np.asarray(v, dtype)[None])
                curves[role] = np.asarray(mean(th[role], Xc), np.float64)[:, :n]
        gen, dom = curves["general"], curves["domain"]
        out["domain"][:, sl] = dom[..., -1]
        out["general"][:, sl] = gen[..., -1]
        out["rise"][:, sl] = gen[..., -1] - gen[..., 0]
        peak = gen.argmax(axis=-1)
        out["peak_rise"][:, sl] = np.take_along_axis(gen, peak[..., None], -1)[..., 0] - gen[..., 0]
        turning[:, sl] = np.take_along_axis(np.broadcast_to(X["cpt_steps"][sl], gen.shape),
                                            peak[..., None], -1)[..., 0]
    if not all(np.isfinite(v).all() for v in out.values()):
        raise DataError("the law gives non-finite losses for some plans (a learning rate of 0 "
                        "over the whole CPT?); check the decision grid")
    return PlanDraws(plans, out["domain"], out["general"], out["rise"], out["peak_rise"], turning,
                     time.perf_counter() - t0)


def decide(pd_: PlanDraws, tolerance: float, risk: float = 0.1, prob: float = 0.9,
           objective: str = "chance", quantile: float = 0.9, w_general: float = 1.0,
           w_domain: float = 1.0, also_feasible=None) -> pd.DataFrame:
    """One row per plan: decisions, outcome summaries, feasibility and the chosen plan.

    Columns: the decisions, ``loss_potential``, ``domain_mean, domain_lower, domain_upper``
    (central interval at ``prob``), ``domain_q`` (the ``quantile`` of the domain loss),
    ``general_rise_mean, general_rise_upper``, ``peak_rise_mean``, ``p_turn`` (share of draws whose
    general loss peaks before the end), ``turning_median``, ``p_within_tolerance`` = P(rise <=
    tolerance), ``feasible`` (>= 1 - risk), ``pareto`` (no feasible... see below) and ``chosen``.
    ``pareto`` marks the plans no other plan beats on both expected domain loss and
    P(within tolerance). ``also_feasible`` (one bool per plan, optional) is a further condition
    a feasible plan must meet, e.g. :func:`mixture_check`'s.
    """
    if not tolerance > 0:
        raise ValueError(f"tolerance {tolerance!r}; expected a positive loss difference (nats)")
    if not 0 < risk < 1:
        raise ValueError(f"risk {risk!r}; expected a probability in (0, 1)")
    if objective not in ("chance", "quantile", "weighted"):
        raise ValueError(f"objective {objective!r}; expected chance, quantile or weighted")
    lo, hi = (1 - prob) / 2, (1 + prob) / 2
    t = pd_.plans.copy()
    t["domain_mean"] = pd_.domain.mean(0)
    t["domain_lower"], t["domain_upper"] = np.quantile(pd_.domain, [lo, hi], axis=0)
    t["domain_q"] = np.quantile(pd_.domain, quantile, axis=0)
    t["general_mean"] = pd_.general.mean(0)
    t["general_rise_mean"] = pd_.rise.mean(0)
    t["general_rise_upper"] = np.quantile(pd_.rise, hi, axis=0)
    t["peak_rise_mean"] = pd_.peak_rise.mean(0)
    ends = pd_.turning < t["steps"].to_numpy()[None, :]
    t["p_turn"] = ((pd_.peak_rise > 0) & ends).mean(0)
    t["turning_median"] = np.median(pd_.turning, axis=0)
    t["p_within_tolerance"] = (pd_.rise <= tolerance).mean(0)
    t["feasible"] = t["p_within_tolerance"] >= 1 - risk
    if also_feasible is not None:
        t["feasible"] &= np.asarray(also_feasible, bool)
    score = {"chance": t["domain_mean"], "quantile": t["domain_q"],
             "weighted": w_general * t["general_rise_mean"] + w_domain * t["domain_mean"]}[objective]
    t["score"] = score
    pool = t if objective == "weighted" else t[t["feasible"]]
    t["chosen"] = False
    if len(pool):
        t.loc[pool["score"].idxmin(), "chosen"] = True
    t["pareto"] = pareto_mask(t["domain_mean"].to_numpy(), t["p_within_tolerance"].to_numpy())
    return t


#: what a plans CSV holds after the decision columns (the optional ones where present)
OUTCOMES = ["domain_mean", "domain_lower", "domain_upper", "general_rise_mean",
            "general_rise_upper", "peak_rise_mean", "p_turn", "turning_median",
            "p_within_tolerance", "p_mixture_feasible", "mixture_ok", "lr_over_opt",
            "lr_in_opt_interval", "extrapolation", "feasible", "pareto", "chosen"]


def write_plans(table: pd.DataFrame, path) -> None:
    """One row per plan: its decisions and outcomes (:data:`OUTCOMES`), as CSV."""
    cols = [c for c in DECISIONS + OUTCOMES if c in table.columns]
    table[cols].to_csv(path, index=False, float_format="%.6g")


def pareto_mask(domain_mean: np.ndarray, p_ok: np.ndarray) -> np.ndarray:
    """Plans not dominated (lower-or-equal expected domain loss and higher-or-equal P(within
    tolerance), one strictly) by another plan."""
    order = np.lexsort((-p_ok, domain_mean))       # by domain loss, then by P(ok) descending
    keep = np.zeros(domain_mean.size, bool)
    best = -np.inf
    for i in order:
        if p_ok[i] > best:
            keep[i] = True
            best = p_ok[i]
    return keep


def pt_schedule_from_table(df: pd.DataFrame, run: str | None = None) -> S.Schedule:
    """The PT schedule of a run of a CPT table (its ``pt`` rows; the only run when ``run`` is
    None), to plan CPT from its checkpoints."""

    if "phase" in df.columns:
        df = df[df["phase"] == "pt"]
    runs = sorted(df["run"].unique())
    if run is None:
        if len(runs) != 1:
            raise DataError(f"the PT table has runs {runs[:5]}{'...' if len(runs) > 5 else ''}; "
                            "name the one to plan from (--pt-run)")
        run = runs[0]
    if run not in runs:
        raise DataError(f"run {run!r} has no PT rows in the table (runs with PT rows: {runs[:5]})")
    return schedules_of(df[df["run"] == run])[run]


def hparams_check(plans: pd.DataFrame, hp_fit, n_params: float, cpt_tokens: float,
                  init_loss: float, prob: float = 0.9,
                  optimum: dict | None = None) -> tuple[pd.DataFrame, dict]:
    """Place each plan's peak LR against the optimal LR of an hparams fit (``bayescpt hparams``)
    for this checkpoint: ``lr_over_opt`` = peak LR / posterior-median LR_opt, and
    ``lr_in_opt_interval`` (inside its ``prob`` interval). Returns (plans + columns, the
    prediction dict). The hparams fit must describe the same model family and optimiser.
    ``optimum``: that prediction when already made (``predict_optimum`` with these arguments)."""

    res = optimum if optimum is not None else predict_optimum(
        hp_fit, n_params, init_loss=init_loss, cpt_tokens=cpt_tokens, prob=prob)
    lr = res["lr_opt"]
    out = plans.copy()
    out["lr_over_opt"] = out["peak_lr"] / lr["median"]
    lo = lr["lower"] if lr["lower"] is not None else 0.0
    hi = lr["upper"] if lr["upper"] is not None else np.inf
    out["lr_in_opt_interval"] = (out["peak_lr"] >= lo) & (out["peak_lr"] <= hi)
    return out, res


def mixture_check(plans: pd.DataFrame, mix_fit, tokens: float, tolerance: float,
                  risk: float = 0.1, model_size=None) -> pd.DataFrame:
    """P(the CPT mixture is feasible) per plan from a mixture fit (``bayescpt mixture``): the
    plan's domain share is 1 - ``replay_ratio``; ``p_mixture_feasible`` is the mixture law's
    P(general loss within ``tolerance`` of its baseline and domain loss below its own) at
    ``tokens`` (the mixture fit's unit), and ``mixture_ok`` whether it is >= 1 - ``risk``."""

    if model_size is None:
        sizes = mix_fit.groups["model_size"].unique()
        if len(sizes) != 1:
            raise DataError(f"the mixture fit has model sizes {sorted(sizes)}; name one "
                            "(--mixture-model-size)")
        model_size = float(sizes[0])
    shares = np.unique(1.0 - plans["replay_ratio"].to_numpy(float))
    f = feasibility(mix_fit, model_size, tokens, tolerance, ratios=shares)
    p = dict(zip(np.round(shares, 12), f.p_feasible))
    out = plans.copy()
    out["p_mixture_feasible"] = [p[round(1.0 - r, 12)] for r in out["replay_ratio"]]
    out["mixture_ok"] = out["p_mixture_feasible"] >= 1 - risk
    return out
