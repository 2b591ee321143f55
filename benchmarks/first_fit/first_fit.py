"""A user's first fit of their own short runs (issue 50, item 16): does the default converge?

Three runs of a small model (cosine to 10 %, WSD with a 20 % linear cooldown, constant; 2,000
steps after a 100-step linear warmup from zero, peak LR 1e-3) are simulated from the LR-annealing
law with plausible parameters (L0 3.0, A 0.5, alpha 0.5, C 0.4 with raw-LR areas; log-normal noise
sd 0.008; during the warmup, which the law does not describe, the loss falls from 10.8 nats, ln
of a GPT-2 vocabulary, to the law's curve) and written as a trainer writes them: torch's
``SummaryWriter``, the learning rate at every step from step 1, the evaluation loss every 10
steps. Then, as a user would:

    bayescpt import 'LOGS/*' --from tensorboard --out data.csv
    bayescpt fit data.csv --law annealing --seed S --out fit.nc
    bayescpt diagnose fit.nc --strict

per seed S (the data's noise and the sampler's seed). Recorded: the exit code of ``diagnose
--strict``, its first problem line, max R-hat, min bulk ESS, divergences, the prior-data conflicts,
and the wall time of the fit.

    python benchmarks/first_fit/first_fit.py [--seeds 0,1,2,3,4] [--law annealing]
        [--json benchmarks/first_fit/first_fit.json] [--work DIR] [--label NAME]
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

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bayescpt.core import schedules as S  # noqa: E402
from bayescpt.curves.model.laws import get_law  # noqa: E402

TRUTH = {"L0": 3.0, "A": 0.5, "alpha": 0.5, "C": 0.4}
NOISE, TOTAL, WARMUP, PEAK, EVERY = 0.008, 2000, 100, 1e-3, 10
#: the second scenario ("train"): the training loss at every step (noisier), a 10 % warmup, a
#: lower peak LR and a slower power law
SCENARIOS = {
    "eval": dict(truth=TRUTH, noise=NOISE, warmup=WARMUP, peak=PEAK, every=EVERY),
    "train": dict(
        truth={"L0": 2.6, "A": 0.9, "alpha": 0.3, "C": 0.6},
        noise=0.015,
        warmup=200,
        peak=6e-4,
        every=1,
    ),
}


def schedules(peak=PEAK, warmup=WARMUP) -> list[S.Schedule]:
    return [
        S.cosine(TOTAL, peak, 0.1 * peak, warmup_steps=warmup, name="cosine"),
        S.wsd(TOTAL, peak, decay_steps=TOTAL // 5, warmup_steps=warmup, name="wsd"),
        S.constant(TOTAL, peak, warmup_steps=warmup, name="constant"),
    ]


def write_logs(root: Path, seed: int, scenario: str = "eval") -> None:
    """One TensorBoard run folder per schedule, as torch's SummaryWriter writes it."""
    from torch.utils.tensorboard import SummaryWriter

    sc = SCENARIOS[scenario]
    law, rng = get_law("annealing"), np.random.default_rng(seed)
    for sch in schedules(sc["peak"], sc["warmup"]):
        steps = np.arange(sc["every"], TOTAL + 1, sc["every"])
        mean = law.mean(
            np,
            {k: np.asarray(v) for k, v in sc["truth"].items()},
            law.design(sch, steps, law.default_settings),
        )
        # the law does not describe the warmup (the fit leaves those losses out); there a model
        # falls from about ln(vocabulary) = 10.8 nats at step 0 to the law's curve at the
        # warmup's end, here along (1 - s/W)^2
        w = sch.warmup_steps
        end = law.mean(
            np,
            {k: np.asarray(v) for k, v in sc["truth"].items()},
            law.design(sch, np.array([w + 1]), law.default_settings),
        )[0]
        warm = steps <= w
        mean[warm] = end + (10.8 - end) * (1 - steps[warm] / w) ** 2
        loss = mean * np.exp(sc["noise"] * rng.standard_normal(mean.shape))
        w = SummaryWriter(str(root / sch.name))
        for s in range(1, TOTAL + 1):
            w.add_scalar("train/learning_rate", float(sch.lr[s]), s)
            if s % sc["every"] == 0:
                w.add_scalar("eval/loss", float(loss[s // sc["every"] - 1]), s)
        w.close()


def run(cmd: list) -> subprocess.CompletedProcess:
    exe = str(Path(sys.executable).with_name("bayescpt"))
    return subprocess.run([exe, *cmd], capture_output=True, text=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="0,1,2,3,4")
    ap.add_argument("--law", default="annealing")
    ap.add_argument("--json", type=Path, default=Path(__file__).with_name("first_fit.json"))
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "first_fit")
    ap.add_argument("--label", default="main", help="a name for the code measured (e.g. a commit)")
    ap.add_argument("--scenario", default="eval", choices=sorted(SCENARIOS))
    a = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    results = json.loads(a.json.read_text()) if a.json.exists() else {}
    for seed in (int(s) for s in a.seeds.split(",")):
        key = f"{a.label}|{a.law}|{seed}" + ("" if a.scenario == "eval" else f"|{a.scenario}")
        if key in results:
            continue
        work = a.work / f"{a.label}_{a.scenario}_{seed}"
        logs = work / "logs"
        if not logs.exists():
            write_logs(logs, seed, a.scenario)
        data, fit = work / "data.csv", work / f"{a.law}.nc"
        imp = run(
            ["import", str(logs / "*"), "--from", "tensorboard", "--out", str(data), "--force"]
        )
        assert imp.returncode == 0, imp.stderr
        t0 = time.perf_counter()
        f = run(
            ["fit", str(data), "--law", a.law, "--seed", str(seed), "--out", str(fit), "--force"]
        )
        wall = time.perf_counter() - t0
        if f.returncode not in (0, 1) or not fit.exists():
            print(key, "fit failed", f.returncode, f.stderr[-2000:], flush=True)
            continue
        d = run(["diagnose", str(fit), "--strict"])
        lines = d.stdout.splitlines()
        head = next((ln for ln in lines if "R-hat" in ln and "draws" in ln), "")
        problems = [ln.strip() for ln in lines if ln.strip().startswith("- ")]
        conflicts = [ln for ln in lines if "prior-data conflict" in ln]
        row = {
            "strict_rc": d.returncode,
            "summary": head,
            "first_problem": problems[:1],
            "conflicts": conflicts,
            "fit_wall_seconds": round(wall, 1),
        }
        results[key] = row
        a.json.write_text(json.dumps(results, indent=1) + "\n")
        print(key, json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
