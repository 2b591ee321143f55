"""One gradient of a law's log density, as the sampler calls it, vs one numpy evaluation of its
mean.

Builds the hierarchical model on the multi-power-law protocol's training split (3 schedules x 3
sizes of data/multipowerlaw.csv) exactly as a default fit does (``CompiledFit``: the law's default
config, ``prepare``, ``build_model``, ``nutpie.compile_pymc_model``, numba backend), then times,
interleaved (blocks of ``--calls`` calls, ``--repeats`` blocks each, median and best block):

* **gradient**: nutpie's compiled C callback (the numba ``cfunc`` the sampler calls once per
  leapfrog step: log density and its gradient at a point, unconstrained), called through ctypes;
* **numpy**: ``law.mean(np, theta, X)`` over all training points on the law's (dense) design, with
  one parameter value per point, as :mod:`benchmarks.multipower_protocol` times it;
* optionally (``--c-backend``) PyTensor's C-backend ``model.compile_dlogp()``, what
  ``multipower_protocol.py`` reports as "one gradient (PyMC dlogp)".

``--profile`` compiles the same log density + gradient with PyTensor's C backend and
``profile=True`` (the numba backend runs the whole graph as one function, so it has no per-op
profile) and prints the most expensive nodes.

    python benchmarks/gradient_cost.py [--law multipower annealing] [--profile] [--json out.json]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bayescpt.curves.model.fit import CompiledFit
from bayescpt.datasets.bundled import bundled_multipowerlaw, split


def nutpie_gradient(compiled):
    """A no-argument callable: one call of nutpie's compiled logp + gradient callback."""
    n = compiled.n_dim
    x = np.ascontiguousarray(compiled.initial_point_func(0), dtype=float)
    out = np.zeros(n)
    logp = np.zeros(())
    fn = compiled.compiled_logp_func.ctypes
    args = (
        ctypes.c_uint64(n),
        x.ctypes.data_as(ctypes.POINTER(ctypes.c_double)),
        out.ctypes.data_as(ctypes.POINTER(ctypes.c_double)),
        logp.ctypes.data_as(ctypes.POINTER(ctypes.c_double)),
        ctypes.c_void_p(compiled.user_data.ctypes.data),
    )

    def call(keep=(compiled, x, out, logp)):  # the callback reads these: keep them alive
        rc = fn(*args)
        if rc != 0:
            raise RuntimeError(f"logp callback returned {rc}")

    call()
    return call


def numpy_mean(cf):
    """A no-argument callable: the law's numpy mean at every training point (prior centres)."""
    law, X = cf.law, cf.prep.X
    n = len(cf.prep.points)
    th = {p.name: np.full(n, np.exp(p.loc) if p.positive else p.loc) for p in law.params}
    return lambda: law.mean(np, th, X)


def interleaved(fns: dict, calls: int, repeats: int) -> dict:
    """Seconds per call of each callable: {name: (median over blocks, best block)}."""
    t = {k: [] for k in fns}
    for _ in range(repeats):
        for k, f in fns.items():
            t0 = time.perf_counter()
            for _ in range(calls):
                f()
            t[k].append((time.perf_counter() - t0) / calls)
    return {k: (float(np.median(v)), float(np.min(v))) for k, v in t.items()}


def profile(model, n_apply: int = 15, calls: int = 300) -> None:
    """PyTensor's C-backend profile of the log density + gradient, nutpie's rewrites."""
    import pytensor

    values = [model.rvs_to_values[v] for v in model.free_RVs]
    logp = pytensor.graph.rewrite_graph(model.logp(), include=["canonicalize", "stabilize"])
    grads = pytensor.grad(logp, values)
    f = pytensor.function(values, [logp, *grads], profile=True, on_unused_input="ignore")
    ip = model.initial_point()
    args = [ip[v.name] for v in values]
    for _ in range(calls):
        f(*args)
    f.profile.summary(file=sys.stdout, n_ops_to_print=8, n_apply_to_print=n_apply)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--law", nargs="+", default=["multipower", "annealing"], choices=["multipower", "annealing"]
    )
    ap.add_argument("--calls", type=int, default=50, help="calls per timed block")
    ap.add_argument("--repeats", type=int, default=30, help="blocks per callable, interleaved")
    ap.add_argument(
        "--c-backend",
        action="store_true",
        help="also time PyTensor's C-backend compile_dlogp (the protocol's number)",
    )
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--json", type=Path)
    a = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    train, _ = split(bundled_multipowerlaw())
    out = {}
    for name in a.law:
        t0 = time.perf_counter()
        cf = CompiledFit(train, name)
        print(
            f"== {name}: {len(cf.prep.points)} points, {cf.compiled.n_dim} parameters; "
            f"built and compiled in {time.perf_counter() - t0:.1f} s "
            f"(nutpie compile {cf.compile_seconds:.1f} s)",
            flush=True,
        )
        fns = {"gradient": nutpie_gradient(cf.compiled), "numpy": numpy_mean(cf)}
        if a.c_backend:
            dlogp, ip = cf.model.compile_dlogp(), cf.model.initial_point()
            # bound now: called in this iteration, the binding only makes that explicit
            fns["c_dlogp"] = lambda dlogp=dlogp, ip=ip: dlogp(ip)
            fns["c_dlogp"]()
        t = interleaved(fns, a.calls, a.repeats)
        ratio = t["gradient"][0] / t["numpy"][0]
        for k, (med, best) in t.items():
            print(f"  {k:9s} median {med * 1e3:7.3f} ms, best block {best * 1e3:7.3f} ms")
        print(
            f"  gradient / numpy mean: {ratio:.2f}x (median), "
            f"{t['gradient'][1] / t['numpy'][1]:.2f}x (best blocks)",
            flush=True,
        )
        out[name] = {
            "points": len(cf.prep.points),
            "n_dim": int(cf.compiled.n_dim),
            "seconds": {k: {"median": v[0], "best": v[1]} for k, v in t.items()},
            "gradient_over_numpy": ratio,
            "design_shapes": {k: [int(s) for s in v.shape] for k, v in cf.prep.X.items()},
        }
        if a.profile:
            profile(cf.model)
    if a.json:
        a.json.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
