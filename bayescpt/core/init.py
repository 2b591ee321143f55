"""Chains that start where the posterior is: multi-start optimisation, then one jittered start each.

Notation: ``u`` the model's parameters on the unconstrained space the samplers work on (log of a
positive parameter, ...), ``log p(u)`` the model log density there (unnormalised, Jacobian
included, in nats: what NUTS samples and what ``sample_stats.lp`` records).

The samplers' own default start is PyMC's initial point (each prior's support point) plus
``U(-1, 1)`` jitter per coordinate: for a hierarchical law with tight posteriors, a start that far
out can fall into the basin of a minor mode, and a chain that starts there stays (seed 1 of the
multi-power law: one chain 490 nats below the others, R-hat 1.54). Instead (``init="map"``)::

    1. K = max(8, 2 x chains) starts u_k = initial point + U(-1, 1) jitter (the samplers' own)
    2. each runs L-BFGS on -log p(u) for ``maxiter / 10`` iterations, then the ``FINISH`` best
       run on to convergence (at most ``maxiter``)                                    (scipy)
    3. u* = the end point with the highest log p (the mode)
    4. h_i = d^2 (-log p) / du_i^2 at u*   (forward differences of the gradient, step 1e-5);
       s_i = min(1, 1 / sqrt(h_i))          (the mode's conditional sd; 0.1 where h_i <= 0)
    5. chain c starts at u* + s * z_c, z_c ~ N(0, I) from the chain's own seed

so each chain starts at its own draw from a diagonal normal approximation at the mode: far enough
apart for R-hat to detect chains that do not mix, close enough to share the mode's basin. What
the optimisations found is kept as a record (:class:`StartReport`, in the fit file): the mode's
log p and where the optimisations run to convergence ended; one ending more than
``GAP_MIN_NATS`` below the best is a minor mode, which a chain from the samplers' own start
could have fallen into. The short runs of step 2 are not optima and are not reported as modes.
On the multi-power law's nine training curves (about 40 parameters) all of this costs about 8000
gradient evaluations, 20-25 s, against about 60000 for the sampling.

``init="jitter"`` keeps each sampler's own start (step 1 alone, one per chain).
"""

from __future__ import annotations

import json
import threading
import time
import warnings
from dataclasses import asdict, dataclass

import numpy as np

from bayescpt.core.chains import GAP_MIN_NATS

INITS = ("map", "jitter")
FD_STEP = 1e-5
FINISH = 2  # optimisations run to convergence after the short runs
MAX_HESSIAN_DIM = 4000  # above this many parameters the diagonal is not probed (s_i = 0.1)


@dataclass
class StartReport:
    """What the optimisations found: ``best`` log p at the mode; ``finished``, the log p each of
    the optimisations run to convergence ended at (best first); ``starts``, how many short runs
    they were chosen from (``failed`` of them had no finite log density); gradient evaluations
    and seconds spent."""

    best: float
    finished: list
    starts: int
    failed: int
    grad_evals: int
    seconds: float

    @property
    def minor_gaps(self) -> list:
        """How far below the best each converged optimum that is not the mode ended (nats)."""
        return [self.best - e for e in self.finished if self.best - e > GAP_MIN_NATS]

    def text(self) -> str:
        n = len(self.finished)
        out = (
            f"chains started around the posterior mode (log density {self.best:.1f}; the best "
            f"{n} of {self.starts} optimisations, run to convergence"
        )
        gaps = self.minor_gaps
        if gaps:
            out += (
                f", {len(gaps)} ended {min(gaps):.0f} nats lower: the posterior has a minor "
                "mode, the chains start in the major one"
            )
        else:
            out += ", agree"
        if self.failed:
            out += f"; {self.failed} starts had no finite log density"
        return out + f"; {self.seconds:.1f} s)"

    def to_json(self) -> str:
        d = asdict(self)
        d["finished"] = [round(float(e), 3) for e in self.finished]
        d["best"] = round(float(self.best), 3)
        d["seconds"] = round(float(self.seconds), 3)
        return json.dumps(d)

    @classmethod
    def from_json(cls, text: str) -> StartReport:
        return cls(**json.loads(text))


class ModelStarts:
    """Starting points for the chains of one PyMC ``model`` (compiled once, reusable).

    ``starts(n_chains, seed)`` returns :class:`Starts` (the mode, its scales, the report), from
    which each chain's start is drawn. ``constrained(point)`` maps such a point to the free
    random variables' own values (keyed by their names), as PyMC and the JAX samplers take
    ``initvals``. The log density is read when
    ``starts`` is called, so data changed with ``pm.set_data`` are used.
    """

    def __init__(self, model, n_starts: int | None = None, maxiter: int = 5000):
        from pymc.blocking import DictToArrayBijection

        self.model = model
        self.n_starts = n_starts
        self.maxiter = int(maxiter)
        self._fn = model.logp_dlogp_function(ravel_inputs=True)
        self._fn.set_extra_values({})
        ip = model.initial_point(0)
        self._info = DictToArrayBijection.map(ip).point_map_info
        self._back = None
        self._jitter_fn = None

    # -------------------------------------------------------------------------------------------
    def _value_grad(self, x):
        with np.errstate(all="ignore"):
            lp, g = self._fn(np.asarray(x, dtype=float))
        return float(lp), np.asarray(g, dtype=float)

    def to_point(self, x) -> dict:
        out, i = {}, 0
        for name, shape, size, _ in self._info:
            out[name] = np.asarray(x[i : i + size], dtype=float).reshape(shape)
            i += size
        return out

    def from_point(self, point: dict) -> np.ndarray:
        return np.concatenate(
            [np.ravel(np.asarray(point[name], dtype=float)) for name, _, _, _ in self._info]
        )

    def jittered(self, seed: int) -> np.ndarray:
        """PyMC's initial point with U(-1, 1) jitter: the samplers' own default start."""
        from pymc.initial_point import make_initial_point_fn

        if self._jitter_fn is None:
            self._jitter_fn = make_initial_point_fn(
                model=self.model, jitter_rvs=set(self.model.free_RVs), return_transformed=True
            )
        return self.from_point(self._jitter_fn(int(seed)))

    def optimise(self, x0, maxiter: int):
        """L-BFGS from ``x0`` on -log p; returns (end point, log p, gradient evaluations).

        A long memory (50 pairs) and tight tolerances: the laws' parameters differ in scale by
        orders of magnitude, and scipy's defaults stop hundreds of nats short of the mode."""
        from scipy.optimize import minimize

        def f(x):
            lp, g = self._value_grad(x)
            if not np.isfinite(lp) or not np.all(np.isfinite(g)):
                return np.inf, np.zeros_like(x)
            return -lp, -g

        res = minimize(
            f,
            x0,
            jac=True,
            method="L-BFGS-B",
            options={
                "maxiter": int(maxiter),
                "maxfun": 2 * int(maxiter),
                "maxcor": 50,
                "ftol": 1e-14,
                "gtol": 1e-9,
            },
        )
        return np.asarray(res.x, dtype=float), -float(res.fun), int(res.nfev)

    def hessian(self, x) -> np.ndarray:
        """The Hessian of -log p at ``x``, (n, n), by forward differences of the gradient: row i
        from ``x + FD_STEP e_i`` (not symmetrised; non-finite entries kept). n + 1 gradient
        evaluations."""
        _, g0 = self._value_grad(x)
        rows = []
        for i in range(len(x)):
            xi = x.copy()
            xi[i] += FD_STEP
            rows.append(-(self._value_grad(xi)[1] - g0) / FD_STEP)
        return np.array(rows).reshape(len(x), len(x))

    @staticmethod
    def scales(hessian: np.ndarray | None, n: int) -> np.ndarray:
        """Conditional sds (step 4 of the module doc) from the Hessian's diagonal; 0.1 where it is
        not positive and finite, or everywhere when the Hessian was not probed (None)."""
        if hessian is None:
            return np.full(n, 0.1)
        h = np.diag(hessian)
        with np.errstate(all="ignore"):
            s = np.where(np.isfinite(h) & (h > 0), 1.0 / np.sqrt(np.abs(h)), 0.1)
        return np.minimum(s, 1.0)

    def starts(self, n_chains: int, seed: int = 0) -> Starts:
        """Steps 1-4 of the module doc: the mode, its scales and the report."""
        t0 = time.perf_counter()
        k = self.n_starts or max(8, 2 * int(n_chains))
        rng = np.random.default_rng([int(seed), 20250])
        ends, evals = [], 0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for _ in range(k):  # stage 1: every start, a short run
                x0 = self.jittered(int(rng.integers(2**31)))
                if not np.isfinite(self._value_grad(x0)[0]):
                    ends.append((np.nan, None))
                    continue
                x, lp, nfev = self.optimise(x0, self.maxiter // 10)
                evals += nfev
                ends.append((lp if np.isfinite(lp) else np.nan, x))
            order = sorted(
                range(k), key=lambda j: -ends[j][0] if np.isfinite(ends[j][0]) else np.inf
            )
            for j in order[:FINISH]:  # stage 2: the best few, to convergence
                if ends[j][1] is not None:
                    x, lp, nfev = self.optimise(ends[j][1], self.maxiter)
                    evals += nfev
                    ends[j] = (lp if np.isfinite(lp) else np.nan, x)
            best = max((e for e in ends if np.isfinite(e[0])), key=lambda e: e[0], default=None)
            if best is None:
                raise RuntimeError(
                    f"no start with a finite log density in {k} tries: check the "
                    "priors and the data"
                )
            best_lp, best_x = best
            n = len(best_x)
            hess = self.hessian(best_x) if n <= MAX_HESSIAN_DIM else None
            s, n_fd = self.scales(hess, n), (0 if hess is None else n + 1)
        finished = sorted(
            (ends[j][0] for j in order[:FINISH] if np.isfinite(ends[j][0])), reverse=True
        )
        failed = sum(1 for e in ends if e[1] is None)
        report = StartReport(best_lp, finished, k, failed, evals + n_fd, time.perf_counter() - t0)
        return Starts(self, best_x, s, report, hess)

    def constrained(self, point: dict) -> dict:
        """The free random variables' values (their own space) at an unconstrained ``point``."""
        if self._back is None:
            names = [rv.name for rv in self.model.free_RVs]
            outs = [v for v in self.model.unobserved_value_vars if v.name in names]
            self._back = (
                names,
                self.model.compile_fn(
                    outs, inputs=self.model.value_vars, on_unused_input="ignore", point_fn=False
                ),
            )
        names, fn = self._back
        values = fn(*[point[v.name] for v in self.model.value_vars])
        return {
            v.name: np.asarray(val)
            for v, val in zip(
                [v for v in self.model.unobserved_value_vars if v.name in names], values
            )
        }


class Starts:
    """The mode ``mode`` (flat, unconstrained), its conditional sds ``scale`` and the
    :class:`StartReport`; one start per chain seed (step 5 of the module doc)."""

    def __init__(
        self,
        owner: ModelStarts,
        mode,
        scale,
        report: StartReport,
        hessian: np.ndarray | None = None,
    ):
        self.owner, self.mode, self.scale, self.report = owner, mode, scale, report
        self._hessian = hessian  # at the mode, from the scales' probe (ModelStarts.hessian)
        self._precision = None
        self._lock = threading.Lock()

    def flat(self, seed) -> np.ndarray:
        """The start drawn with ``seed`` (the mode itself where that draw is not finite)."""
        z = np.random.default_rng(int(seed)).standard_normal(len(self.mode))
        x = self.mode + self.scale * z
        with self._lock:
            ok = np.isfinite(self.owner._value_grad(x)[0])
        return x if ok else self.mode.copy()

    def precision(self) -> np.ndarray:
        """The Hessian of -log p at the mode, (n, n), symmetrised, non-finite entries 0: the one
        the scales were probed from (:meth:`ModelStarts.hessian`), computed here (n + 1 gradient
        evaluations) only when it was not. Its inverse is the Laplace approximation's covariance
        (:mod:`bayescpt.core.jax_nuts`)."""
        if self._precision is None:
            h = self._hessian
            if h is None:
                with self._lock:
                    h = self.owner.hessian(self.mode)
            h = 0.5 * (h + h.T)
            self._precision = np.where(np.isfinite(h), h, 0.0)
        return self._precision

    def point(self, seed) -> dict:
        """:meth:`flat` as a dict of value variables (unconstrained)."""
        return self.owner.to_point(self.flat(seed))

    def chain_seeds(self, n_chains: int, seed: int) -> list[int]:
        return [
            int(v)
            for v in np.random.default_rng([int(seed), 20251]).integers(2**62, size=int(n_chains))
        ]

    def initvals(self, n_chains: int, seed: int) -> list[dict]:
        """One dict per chain of the free variables' own values (PyMC's ``initvals``)."""
        return [self.owner.constrained(self.point(s)) for s in self.chain_seeds(n_chains, seed)]


def model_starts(model, **kw) -> ModelStarts:
    """The :class:`ModelStarts` of ``model``, compiled once and kept on the model object."""
    cached = getattr(model, "_bayescpt_starts", None)
    if cached is None:
        cached = ModelStarts(model, **kw)
        model._bayescpt_starts = cached
    return cached
