"""Does a fit depend on how a table writes the same runs? (issue 50, items 4 and 16)

The multipowerlaw training split (25M/100M/400M x cosine_24000, constant_24000, wsdcon_9) is
written twice from the authors' source CSVs (``shared/data/multipowerlaw``):

* ``compact``: the bundled table's rows (step 0 lr 0, the warmup's end at step 2160, then every
  logged step), as :func:`bayescpt.datasets.bundled.split` gives it;
* ``dense``: built here independently, as a training log writes it: a row per optimizer step from
  step 1 (no step-0 row), the 2160-step linear warmup written out, the logged learning rate
  interpolated to every step, every logged loss at its step.

Each is fitted with the default ``bayescpt fit`` command line (one process per fit, one at a
time: the wall time is what a user waits for) at every seed of the seed study, and compared:
diagnostics (max R-hat, min bulk ESS, divergences, the verdict), wall time and the sampler's
work (leapfrog steps of the kept draws: what the time is where the machine is shared), and the
posterior of
every law parameter (``az.summary``): the difference of posterior means in units of its Monte
Carlo standard error, sqrt(mcse_dense^2 + mcse_compact^2), and the ratio of posterior sds.

    python benchmarks/dense_tables/dense_tables.py [--laws multipower,annealing]
        [--seeds 0,1,2,3,4] [--json benchmarks/dense_tables/dense_tables.json] [--work DIR]

Results are appended to the JSON after each fit pair (a rerun skips pairs already there).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT.parent / "shared" / "data" / "multipowerlaw"
sys.path.insert(0, str(ROOT))

import bayescpt.curves.model.fit  # noqa: E402,F401  (registers the curve fits with load_fit)
from bayescpt.core.fitfile import load_fit  # noqa: E402
from bayescpt.datasets.bundled import TRAIN_SCHEDULES, bundled_multipowerlaw, split  # noqa: E402
from bayescpt.datasets.public import MULTIPOWER_WARMUP_STEPS  # noqa: E402

PEAK = 3e-4


def dense_table(source: Path = SOURCE) -> pd.DataFrame:
    """The training split as a log writes it: a row per step from step 1, the warmup written out."""
    frames = []
    for size in ("25", "100", "400"):
        for name in TRAIN_SCHEDULES:
            f = pd.read_csv(source / f"csv_{size}" / f"{name}.csv")
            steps = np.arange(1, int(f["step"].iloc[-1]) + 1)
            knots = np.concatenate([[0, MULTIPOWER_WARMUP_STEPS], f["step"].to_numpy()])
            lrs = np.concatenate([[0.0, PEAK], f["lr"].to_numpy()])
            loss = pd.Series(f["loss"].to_numpy(), index=f["step"].to_numpy()).reindex(steps)
            frames.append(
                pd.DataFrame(
                    {
                        "run": f"{size}M/{name}",
                        "step": steps,
                        "lr": np.interp(steps, knots, lrs),
                        "loss": loss.to_numpy(),
                        "model_size": float(size) * 1e6,
                        "val_set": "default",
                    }
                )
            )
    return pd.concat(frames, ignore_index=True)


def fit(data: Path, law: str, seed: int, out: Path) -> float:
    exe = str(Path(sys.executable).with_name("bayescpt"))
    t0 = time.perf_counter()
    subprocess.run(
        [
            exe,
            "fit",
            str(data),
            "--law",
            law,
            "--seed",
            str(seed),
            "--out",
            str(out),
            "--force",
            "--quiet",
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return time.perf_counter() - t0


def record(path: Path, wall: float) -> tuple[dict, pd.DataFrame]:
    import arviz as az

    f = load_fit(path)
    d = f.diagnostics()
    summ = az.summary(f.idata, round_to="none")
    return (
        {
            "max_rhat": round(d.max_rhat, 4),
            "min_ess_bulk": round(d.min_ess_bulk, 1),
            "divergences": int(d.divergences),
            "ok": bool(d.ok),
            # the sampler's work, whatever else the machine runs: leapfrog steps of the draws
            "leapfrog_steps": int(f.idata.sample_stats["n_steps"].sum()),
            "wall_seconds": round(wall, 1),
            "fit_seconds": round(float(f.meta.get("fit_seconds", np.nan)), 1),
        },
        summ,
    )


def compare(a: pd.DataFrame, b: pd.DataFrame) -> dict:
    """Posterior means apart in MCSE units, and sd ratios, over the parameters both have."""
    common = a.index.intersection(b.index)
    z = (a.loc[common, "mean"] - b.loc[common, "mean"]).abs() / np.hypot(
        a.loc[common, "mcse_mean"], b.loc[common, "mcse_mean"]
    )
    ratio = a.loc[common, "sd"] / b.loc[common, "sd"]
    return {
        "parameters": int(len(common)),
        "max_z": round(float(z.max()), 2),
        "share_z_over_2": round(float((z > 2).mean()), 3),
        "share_z_over_3": round(float((z > 3).mean()), 3),
        "worst": str(z.idxmax()),
        "sd_ratio_range": [round(float(ratio.min()), 3), round(float(ratio.max()), 3)],
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--laws", default="multipower")
    ap.add_argument("--seeds", default="0,1,2,3,4")
    ap.add_argument("--json", type=Path, default=Path(__file__).with_name("dense_tables.json"))
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "dense_tables")
    a = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    a.work.mkdir(parents=True, exist_ok=True)
    tables = {"compact": a.work / "compact.csv", "dense": a.work / "dense.csv"}
    split(bundled_multipowerlaw())[0].to_csv(tables["compact"], index=False)
    dense_table().to_csv(tables["dense"], index=False, float_format="%.12g")
    results = json.loads(a.json.read_text()) if a.json.exists() else {}
    for law in a.laws.split(","):
        for seed in (int(s) for s in a.seeds.split(",")):
            key = f"{law}|{seed}"
            if key in results:
                continue
            row, summ = {}, {}
            for name, data in tables.items():
                out = a.work / f"{law}_{name}_{seed}.nc"
                wall = fit(data, law, seed, out)
                row[name], summ[name] = record(out, wall)
            row["posterior"] = compare(summ["dense"], summ["compact"])
            row["time_ratio"] = round(
                row["dense"]["wall_seconds"] / row["compact"]["wall_seconds"], 2
            )
            row["leapfrog_ratio"] = round(
                row["dense"]["leapfrog_steps"] / row["compact"]["leapfrog_steps"], 3
            )
            results[key] = row
            a.json.write_text(json.dumps(results, indent=1) + "\n")
            print(key, json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
