"""The seed study: every default fit family on its real data at several seeds, as a user runs it.

Each fit is one ``bayescpt`` command line (the CLI's defaults: thinning, law options from the
data, the law's sampler settings), run as its own process, one at a time, so its wall time is what
a user waits for (start-up, compile, initialisation, sampling, saving). From the saved fit file:
max R-hat, min bulk/tail ESS, divergences, per chain its mean log density, gradient evaluations
and tree depth, the three parameters with the highest R-hat (those that separate modes when
chains disagree), the stuck chains the mode report names, and the start report (sampler setting
``init``). Families (issue 21):

    annealing_mpl   LR-annealing law, multipowerlaw training split (9 curves, 3 sizes)
    multipower_mpl  multi-power law, same data
    annealing_olmo  LR-annealing law, OLMo-2 ladder (5 sizes x 0.5/1/2xC, c4_en)
    cpt_simulated   CPT law, data/cpt_simulated.csv
    cpt_mixinglaws  CPT law, the mixing-law checkpoint data (five Pile shares)
    cpt_lab         CPT law --anchored, the lab's curves (data/lab)
    hparams         the optimal-LR/batch law, Step Law grid (data/steplaw_grid.csv)
    mixture         the critical-mixture-ratio law, data/mixture_ct70m.csv (--ratio-form exp)

    python benchmarks/seed_study.py [--families a,b] [--seeds 0,1,2,3,4] [--init map|jitter]
        [--json benchmarks/seed_study.json] [--work DIR]

Results are appended to the JSON after every fit (a rerun skips fits already there with the same
family, seed, init and sampler), so an interrupted study resumes. Run it on an idle machine.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
sys.path.insert(0, str(ROOT))

# importing the fit classes registers them with load_fit
import bayescpt.curves.model.fit  # noqa: E402,F401
import bayescpt.hparams.fit  # noqa: E402,F401
import bayescpt.mixture.fit  # noqa: E402,F401
from bayescpt.core.fitfile import load_fit  # noqa: E402

FAMILIES = (
    "annealing_mpl",
    "multipower_mpl",
    "annealing_olmo",
    "cpt_simulated",
    "cpt_mixinglaws",
    "cpt_lab",
    "hparams",
    "mixture",
)


def data_files(work: Path) -> dict:
    """The tables the families fit, written once into ``work`` where they are not bundled as is."""
    from bayescpt.datasets.bundled import bundled_multipowerlaw, split
    from bayescpt.datasets.mixinglaws import load_mixinglaws_ct
    from bayescpt.datasets.public import load_olmo_ladder

    work.mkdir(parents=True, exist_ok=True)
    out = {
        "cpt_simulated": ROOT / "data" / "cpt_simulated.csv",
        "cpt_lab": ROOT / "data" / "lab" / "curves.csv.gz",
        "hparams": ROOT / "data" / "steplaw_grid.csv",
        "mixture": ROOT / "data" / "mixture_ct70m.csv",
    }
    makers = {
        "mpl": lambda: split(bundled_multipowerlaw())[0],
        "olmo": lambda: load_olmo_ladder(
            SHARED / "olmo-ladder" / "peteish-moreeval",
            runs=[
                f"{s}-{m}"
                for s in ("190M", "370M", "760M", "1B", "3B")
                for m in ("0.5xC", "1xC", "2xC")
            ],
        ),
        "mixinglaws": lambda: load_mixinglaws_ct(SHARED / "mixinglaws"),
    }
    for key, make in makers.items():
        path = work / f"{key}.csv"
        if not path.exists():
            make().to_csv(path, index=False)
        out[key] = path
    return out


def command(family: str, data: dict, seed: int, out: Path, extra: list) -> list:
    exe = [str(Path(sys.executable).with_name("bayescpt"))]
    common = ["--seed", str(seed), "--out", str(out), "--force", "--quiet", *extra]
    return {
        "annealing_mpl": exe + ["fit", str(data["mpl"]), "--law", "annealing"],
        "multipower_mpl": exe + ["fit", str(data["mpl"]), "--law", "multipower"],
        "annealing_olmo": exe + ["fit", str(data["olmo"]), "--law", "annealing"],
        "cpt_simulated": exe + ["fit", str(data["cpt_simulated"]), "--law", "cpt"],
        "cpt_mixinglaws": exe + ["fit", str(data["mixinglaws"]), "--law", "cpt"],
        "cpt_lab": exe + ["fit", str(data["cpt_lab"]), "--law", "cpt", "--anchored"],
        "hparams": exe + ["hparams", "fit", str(data["hparams"])],
        "mixture": exe + ["mixture", "fit", str(data["mixture"]), "--ratio-form", "exp"],
    }[family] + common


def record(path: Path) -> dict:
    """What the study keeps of one saved fit."""
    fit = load_fit(path)
    d = fit.diagnostics()
    worst = d.judged.sort_values("r_hat", ascending=False).head(3)
    per = d.per_chain
    init = fit.idata.sample_stats.attrs.get("init", "jitter")
    return {
        "max_rhat": round(d.max_rhat, 4),
        "min_ess_bulk": round(d.min_ess_bulk, 1),
        "min_ess_tail": round(d.min_ess_tail, 1),
        "divergences": int(d.divergences),
        "ok": bool(d.ok),
        "fit_seconds": round(float(fit.meta.get("fit_seconds", np.nan)), 1),
        "chains": {}
        if per is None
        else {
            str(c): {
                k: (None if not np.isfinite(v) else round(float(v), 3)) for k, v in row.items()
            }
            for c, row in per.iterrows()
        },
        "highest_rhat": {k: round(float(v), 4) for k, v in worst["r_hat"].items()},
        "stuck": [s.text() for s in d.stuck],
        "start": json.loads(init) if init.startswith("{") else init,
    }


def key_of(family, seed, init, sampler, tune=None) -> str:
    return f"{family}|{seed}|{init}|{sampler}" + ("" if tune is None else f"|tune{tune}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--families", default=",".join(FAMILIES))
    ap.add_argument("--seeds", default="0,1,2,3,4")
    ap.add_argument("--init", default="map", choices=["map", "jitter"])
    ap.add_argument("--sampler", default="auto")
    ap.add_argument(
        "--tune",
        type=int,
        default=None,
        help="tuning steps per chain (default: the law's); to measure what the "
        "start buys in warmup (compare --init map and jitter)",
    )
    ap.add_argument("--json", type=Path, default=Path(__file__).with_name("seed_study.json"))
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "seed_study")
    ap.add_argument(
        "--warm",
        action="store_true",
        help="before a family's seeds, one untimed short fit (seed 99, 20 + 20 "
        "draws) fills the compile caches, so no seed pays the first compile",
    )
    ap.add_argument(
        "--redo",
        default="",
        help="family:seed,... to fit again (the earlier wall time is kept as first_wall_seconds)",
    )
    a = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    families = [f for f in a.families.split(",") if f]
    unknown = set(families) - set(FAMILIES)
    if unknown:
        ap.error(f"unknown families {sorted(unknown)}; expected some of {FAMILIES}")
    seeds = [int(s) for s in a.seeds.split(",")]
    data = data_files(a.work / "data")
    results = json.loads(a.json.read_text()) if a.json.exists() else {}
    tag = f"{a.init}_{a.sampler}" + ("" if a.tune is None else f"_tune{a.tune}")
    config = a.work / f"sampler_{tag}.json"
    config.write_text(
        json.dumps({"sampler": {"init": a.init} | ({} if a.tune is None else {"tune": a.tune})})
    )
    extra = ["--config", str(config)] + ([] if a.sampler == "auto" else ["--sampler", a.sampler])
    redo = {tuple(x.split(":")) for x in a.redo.split(",") if x}
    for family in families:
        if a.warm and any(
            key_of(family, s, a.init, a.sampler, a.tune) not in results for s in seeds
        ):
            t0 = time.perf_counter()
            warm = subprocess.run(
                command(
                    family, data, 99, a.work / "warm.nc", extra + ["--draws", "20", "--tune", "20"]
                ),
                capture_output=True,
                text=True,
                env={**os.environ, "PYTHONWARNINGS": "ignore"},
            )
            print(
                f"{family:15s} warm-up fit (untimed): {time.perf_counter() - t0:.0f} s, exit "
                f"{warm.returncode}"
                + (
                    ""
                    if warm.returncode in (0, 1)
                    else f": {(warm.stderr.strip().splitlines() or [''])[-1]}"
                ),
                flush=True,
            )
        for seed in seeds:
            key = key_of(family, seed, a.init, a.sampler, a.tune)
            first = None
            if (family, str(seed)) in redo and key in results:
                first = results.pop(key).get("wall_seconds")
            if key in results:
                continue
            out = a.work / f"{family}_{seed}_{tag}.nc"
            cmd = command(family, data, seed, out, extra)
            t0 = time.perf_counter()
            proc = subprocess.run(
                cmd, capture_output=True, text=True, env={**os.environ, "PYTHONWARNINGS": "ignore"}
            )
            wall = time.perf_counter() - t0
            row = {
                "family": family,
                "seed": seed,
                "init": a.init,
                "sampler": a.sampler,
                **({} if a.tune is None else {"tune": a.tune}),
                "wall_seconds": round(wall, 1),
                "exit": proc.returncode,
                "command": " ".join(["bayescpt"] + cmd[1:]),
            }
            if first is not None:
                row["first_wall_seconds"] = first
            if out.exists():
                row.update(record(out))
            else:
                row["error"] = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
            results[key] = row
            a.json.write_text(json.dumps(results, indent=1))
            print(
                f"{family:15s} seed {seed} init {a.init}: wall {wall:6.0f} s  "
                f"R-hat {row.get('max_rhat', float('nan')):.4f}  "
                f"ESS {row.get('min_ess_bulk', float('nan')):6.0f}/"
                f"{row.get('min_ess_tail', float('nan')):.0f}  "
                f"div {row.get('divergences', '-')}  "
                f"{'ok' if row.get('ok') else 'FAIL ' + '; '.join(row.get('stuck', []))}",
                flush=True,
            )
    print(table(results, families, a.init, a.sampler, a.tune))


def table(results: dict, families, init: str, sampler: str, tune=None) -> str:
    """Markdown table per family: worst R-hat, ESS over seeds, divergences, wall times."""
    lines = [
        "| family | seeds passing | max R-hat (worst seed) | min bulk / tail ESS | "
        "divergences | wall s: median, slowest (ratio) |",
        "|---|---|---|---|---|---|",
    ]
    for fam in families:
        rows = [
            r
            for r in results.values()
            if r["family"] == fam
            and r["init"] == init
            and r["sampler"] == sampler
            and r.get("tune") == tune
            and "max_rhat" in r
        ]
        if not rows:
            continue
        walls = np.array([r["wall_seconds"] for r in rows])
        lines.append(
            f"| {fam} | {sum(r['ok'] for r in rows)}/{len(rows)} | "
            f"{max(r['max_rhat'] for r in rows):.4f} | "
            f"{min(r['min_ess_bulk'] for r in rows):.0f} / "
            f"{min(r['min_ess_tail'] for r in rows):.0f} | "
            f"{sum(r['divergences'] for r in rows)} | {np.median(walls):.0f}, {walls.max():.0f} "
            f"({walls.max() / np.median(walls):.2f}x) |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
