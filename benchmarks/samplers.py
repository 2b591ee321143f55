"""The NUTS samplers side by side on one fit: nutpie, PyMC, numpyro and blackjax.

The default fit of the held-out protocol's training curves (``multipower_protocol.py``: the
multi-power-law runs ``cosine_24000, constant_24000, wsdcon_9`` x 25M/100M/400M, 1339 points,
hierarchical across sizes), default settings (4 chains x 1000 draws after 1000 tuning), one seed,
run once per sampler in this process. Prints per sampler: wall time (model build, compile or JIT
and sampling), max R-hat, min bulk ESS, divergences, min bulk ESS per second, and the wall-time
ratio to the first sampler listed (nutpie by default). The JAX samplers run on whatever device
JAX picks (``JAX_PLATFORMS=cpu`` or ``cuda`` to choose); the device is printed and saved.

    python benchmarks/samplers.py [--law annealing] [--samplers nutpie,pymc,numpyro,blackjax]
                                  [--json out.json] [--against cpu.json]

``--against`` reads an earlier run's JSON (say, the CPU run) and prints this run's times as
ratios to it, sampler by sampler: the GPU-to-CPU speed ratio of issue 2 when this run is on a GPU.

On the GPU machine (Python 3.12 with CUDA JAX and numpyro, no PyMC, nothing to fetch): run
``benchmarks/gpu_wheels.sh`` here first, then, there, carrying ``.whl``::

    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site \
        .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 &&
    python3 benchmarks/samplers.py --samplers numpyro,blackjax --json $OUT/samplers_gpu.json \
        --against benchmarks/samplers_cpu.json

(Not yet run on a GPU: the task that wrote it was not lent one. The machine's jax 0.11
and numpyro 0.21 differ from this project's pins, jax 0.10 and numpyro 0.22.)
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bayescpt.curves.model.fit import Fit
from bayescpt.datasets.bundled import bundled_multipowerlaw, split


def jax_device() -> str | None:
    try:
        import jax
    except ImportError:
        return None
    d = jax.devices()[0]
    return f"{d.platform}: {getattr(d, 'device_kind', d)}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--law", default="annealing", choices=["annealing", "multipower"])
    ap.add_argument("--samplers", default="nutpie,pymc,numpyro,blackjax")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--against", type=Path, help="an earlier run's JSON to compare times with")
    ap.add_argument(
        "--append",
        action="store_true",
        help="keep the other samplers' rows already in --json (one sampler at a time "
        "on a slow machine)",
    )
    a = ap.parse_args(argv)
    warnings.simplefilter("ignore")

    train, _ = split(bundled_multipowerlaw())
    device = jax_device()
    print(
        f"== {a.law} law, {train['run'].nunique()} training curves; machine {platform.node()}, "
        f"JAX device {device}",
        flush=True,
    )
    rows = []
    for name in a.samplers.split(","):
        t0 = time.perf_counter()
        try:
            fit = Fit.run(train, law=a.law, sampler=name, seed=a.seed, warn=False)
        except Exception as e:  # a missing extra or a broken back end: say so, go on
            print(f"{name}: failed: {type(e).__name__}: {e}".splitlines()[0], flush=True)
            rows.append({"sampler": name, "error": f"{type(e).__name__}: {e}"})
            continue
        wall = time.perf_counter() - t0
        d = fit.diagnostics()
        row = {
            "sampler": name,
            "wall_s": wall,
            "max_rhat": d.max_rhat,
            "min_ess_bulk": d.min_ess_bulk,
            "divergences": d.divergences,
            "ess_per_s": d.min_ess_bulk / wall,
        }
        rows.append(row)
        print(
            f"{name}: {wall:.1f} s, max R-hat {d.max_rhat:.4f}, min bulk ESS "
            f"{d.min_ess_bulk:.0f}, {d.divergences} divergences, {row['ess_per_s']:.1f} ESS/s",
            flush=True,
        )
    ok = [r for r in rows if "wall_s" in r]
    if ok:
        ref = ok[0]
        print(f"\nwall time relative to {ref['sampler']}:")
        for r in ok:
            print(f"  {r['sampler']:9s} {r['wall_s'] / ref['wall_s']:.2f}x")
    if a.against:
        before = {
            r["sampler"]: r for r in json.loads(a.against.read_text())["runs"] if "wall_s" in r
        }
        print(f"\nthis run ({device}) relative to {a.against}:")
        for r in ok:
            if r["sampler"] in before:
                b = before[r["sampler"]]
                print(
                    f"  {r['sampler']:9s} {r['wall_s']:.1f} s vs {b['wall_s']:.1f} s: "
                    f"{b['wall_s'] / r['wall_s']:.2f}x faster"
                )
    if a.json:
        if a.append and a.json.exists():
            done = {r["sampler"] for r in rows}
            rows = [
                r for r in json.loads(a.json.read_text())["runs"] if r["sampler"] not in done
            ] + rows
        a.json.write_text(
            json.dumps(
                {
                    "law": a.law,
                    "seed": a.seed,
                    "jax_device": device,
                    "machine": platform.node(),
                    "runs": rows,
                },
                indent=2,
            )
        )


if __name__ == "__main__":
    main()
