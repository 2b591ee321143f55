"""A byte-for-byte snapshot of the CLI on the bundled reference fits and data (issue 45).

Question: does a refactoring leave what the CLI prints, returns and writes unchanged? Run this
before the change and after it, into two folders, and ``diff -r`` them: an empty diff says
every command below gave the same stdout, stderr, exit code and output files.

Protocol: a fixed list of commands (:func:`commands`), each run as its own process
(``python -m bayescpt.cli.main ...`` with this checkout first on ``PYTHONPATH``, ``MPLBACKEND=Agg``)
in a fresh temporary folder, one after the other:

* ``diagnose`` on every reference fit in ``models/`` and on the fit files of the layout before
  issue 18 (``tests/data/old_layout/``: fit files written before still load);
* ``predict`` on every loss-curve reference fit with an unseen schedule (the multi-power-law
  runs' held-out schedules; for the OLMo fit, a cosine of the 760M model), a prefix forecast
  (``--observed``), the CPT fit's ``predict`` with ``--outlook``;
* two ``plan`` runs: the README's, and one with the ``--hparams`` and ``--mixture`` checks;
* ``compare`` of the two laws on the same runs and of one law on two data sets;
* ``hparams predict`` (with a planned grid) and ``mixture cmr`` (with budgets);
* three tiny fits through the fit commands (``fit``, ``hparams fit``, ``mixture fit``: 2 chains x
  60 draws, seed 0; inputs thinned from the bundled data), each then ``diagnose``d;
* a tiny ``sweep`` (``--workers 1``: two curves fits on nutpie, kept compiled, and one on PyMC,
  fixed seeds), its ``summary.csv`` without the columns that name the machine, the time or the
  path, and each output ``diagnose``d; the sweep again (every fit found done); a sweep of an
  hparams and of a mixture entry (each family's table hashed by the family itself: the bug this
  snapshot found, fixed in issue 45 item 1).

Each command writes ``NN_name.txt`` into the output folder: the command line, the exit code, stdout,
stderr and, per file it writes, its bytes (CSV, JSON under 64 kB) or its SHA-256; for the fit files
(NetCDF, whose bytes carry a creation time) the SHA-256 of every posterior variable's draws.
Temporary paths read ``<TMP>``, the checkout ``<ROOT>``; the seconds a command reports for itself
(``done in 12.3 s``, PyMC's ``took 13 seconds``) read ``<S> s``, and so do the values of a printed
table's ``seconds`` column (a sweep's summary, a PyMC fit's per-chain table). Nothing else is
normalised: the fits are the same draws for the same seed on one machine
(``bayescpt.core.sampling``), so their diagnostics and draw hashes are compared as they are.

Rerun::

    PYTHONPATH=. python benchmarks/cli_snapshot/snapshot.py /tmp/snap_a
    PYTHONPATH=. python benchmarks/cli_snapshot/snapshot.py /tmp/snap_b
    diff -r /tmp/snap_a /tmp/snap_b        # empty: the CLI behaves the same

``--only SUBSTRING`` runs the commands whose name contains it (for a quick look). About 10
minutes on 2 cores, most of it the tiny fits and the sweep.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "models"
DATA = ROOT / "data"
OLD = ROOT / "tests" / "data" / "old_layout"
#: summary.csv columns that name the machine, the time or the path: left out of the snapshot
VOLATILE = ("seconds", "worker", "output")
TINY = ["--chains", "2", "--draws", "60", "--tune", "60", "--seed", "0"]


def inputs(tmp: Path) -> dict:
    """The input tables the commands read, written from the bundled data into ``tmp``."""
    import pandas as pd

    from bayescpt.curves.data.thinning import thin_long_curves
    from bayescpt.curves.data.validate import read_curves

    mpl = pd.read_csv(DATA / "multipowerlaw.csv")
    paths = {}
    held = mpl[mpl["run"].isin(["100M/wsd_20000_24000", "400M/cosine_72000", "25M/wsdcon_18"])]
    paths["sched"] = tmp / "sched.csv"
    held.drop(columns="loss").to_csv(paths["sched"], index=False)
    prefix = held[(held["run"] == "100M/wsd_20000_24000") & (held["step"] <= 12000)]
    paths["prefix"] = tmp / "prefix.csv"
    prefix.dropna(subset=["loss"])[["run", "step", "loss"]].to_csv(paths["prefix"], index=False)
    olmo = (
        mpl[mpl["run"] == "100M/cosine_24000"]
        .drop(columns="loss")
        .assign(run="760M/cosine", model_size=760_000_000, val_set="c4_en")
    )
    paths["olmo_sched"] = tmp / "olmo_sched.csv"
    olmo.to_csv(paths["olmo_sched"], index=False)
    cpt = pd.read_csv(DATA / "cpt_simulated.csv")
    paths["cpt_plan"] = tmp / "cpt_plan.csv"
    cpt[cpt["run"] == "pt@8000/wsd"].drop(columns="loss").to_csv(paths["cpt_plan"], index=False)
    train = mpl[mpl["run"].isin(["100M/cosine_24000", "100M/constant_24000", "100M/wsdcon_9"])]
    paths["curves"] = tmp / "tiny_curves.csv"
    small, _ = thin_long_curves(read_curves_of(train, tmp, read_curves), above=25, points=25)
    small.to_csv(paths["curves"], index=False)
    grid = pd.read_csv(DATA / "steplaw_grid.csv")
    paths["grid"] = tmp / "tiny_grid.csv"
    grid.iloc[::8].to_csv(paths["grid"], index=False)
    paths["mixture"] = DATA / "mixture_ct70m.csv"
    return paths


def read_curves_of(df, tmp: Path, read_curves):
    """``df`` validated as the fit command reads a curve CSV."""
    path = tmp / "_raw.csv"
    df.to_csv(path, index=False)
    table = read_curves(path)
    path.unlink()
    return table


def commands(tmp: Path, p: dict) -> list[tuple[str, list[str], list[Path]]]:
    """(name, CLI arguments, files it writes) of every command, in order."""
    m = {f.stem: str(f) for f in sorted(MODELS.glob("*.nc"))}
    out = []
    for name, path in m.items():
        out.append((f"diagnose_{name}", ["diagnose", path], []))
    for f in sorted(OLD.glob("*.nc")):
        out.append((f"diagnose_old_{f.stem}", ["diagnose", str(f)], []))
    for name in ("annealing_multipowerlaw", "multipower_multipowerlaw"):
        csv = tmp / f"pred_{name}.csv"
        out.append(
            (
                f"predict_{name}",
                [
                    "predict",
                    m[name],
                    "--schedule",
                    str(p["sched"]),
                    "--prob",
                    "0.8",
                    "--seed",
                    "1",
                    "--out",
                    str(csv),
                ],
                [csv],
            )
        )
    csv = tmp / "pred_olmo.csv"
    out.append(
        (
            "predict_annealing_olmo_c4",
            [
                "predict",
                m["annealing_olmo_c4"],
                "--schedule",
                str(p["olmo_sched"]),
                "--out",
                str(csv),
            ],
            [csv],
        )
    )
    csv = tmp / "pred_prefix.csv"
    out.append(
        (
            "predict_observed_prefix",
            [
                "predict",
                m["annealing_multipowerlaw"],
                "--schedule",
                str(p["sched"]),
                "--observed",
                str(p["prefix"]),
                "--out",
                str(csv),
            ],
            [csv],
        )
    )
    csv, look = tmp / "pred_cpt.csv", tmp / "outlook.csv"
    out.append(
        (
            "predict_cpt_outlook",
            [
                "predict",
                m["cpt_simulated"],
                "--schedule",
                str(p["cpt_plan"]),
                "--out",
                str(csv),
                "--outlook",
                str(look),
            ],
            [csv, look],
        )
    )
    plans = tmp / "plans.csv"
    out.append(
        (
            "plan_readme",
            [
                "plan",
                m["cpt_simulated"],
                "--pt",
                str(DATA / "cpt_simulated.csv"),
                "--pt-run",
                "pt@10000/cosine",
                "--tolerance",
                "0.05",
                "--risk",
                "0.1",
                "--transfers",
                "8000,10000",
                "--peak-lrs",
                "2.5e-5,5e-5,1e-4,2e-4",
                "--steps",
                "1000,2000,4000,8000",
                "--out",
                str(plans),
            ],
            [plans],
        )
    )
    plans2 = tmp / "plans_checks.csv"
    out.append(
        (
            "plan_hparams_mixture",
            [
                "plan",
                m["cpt_simulated"],
                "--pt",
                str(DATA / "cpt_simulated.csv"),
                "--pt-run",
                "pt@10000/cosine",
                "--tolerance",
                "0.05",
                "--transfers",
                "8000",
                "--steps",
                "2000,8000",
                "--hparams",
                m["hparams_steplaw"],
                "--n-params",
                "1.07e9",
                "--init-loss",
                "2.25",
                "--cpt-tokens",
                "2e10",
                "--mixture",
                m["mixture_ct70m"],
                "--mixture-tokens",
                "10000",
                "--out",
                str(plans2),
            ],
            [plans2],
        )
    )
    diff = tmp / "diff.csv"
    out.append(
        (
            "compare_laws",
            [
                "compare",
                m["annealing_multipowerlaw"],
                m["multipower_multipowerlaw"],
                "--names",
                "annealing,multipower",
                "--out",
                str(diff),
            ],
            [diff],
        )
    )
    out.append(
        (
            "compare_datasets",
            [
                "compare",
                m["annealing_multipowerlaw"],
                m["annealing_olmo_c4"],
                "--names",
                "mpl,olmo",
            ],
            [],
        )
    )
    opt = tmp / "opt.json"
    out.append(
        (
            "hparams_predict",
            [
                "hparams",
                "predict",
                m["hparams_steplaw"],
                "--n-params",
                "1.07e9",
                "--init-loss",
                "2.25",
                "--cpt-tokens",
                "2e10",
                "--grid-lrs",
                "9.8e-4,1.38e-3,1.95e-3",
                "--grid-batches",
                "2.6e5,5.2e5,1.05e6",
                "--out",
                str(opt),
            ],
            [opt],
        )
    )
    cmr = tmp / "cmr.json"
    out.append(
        (
            "mixture_cmr",
            [
                "mixture",
                "cmr",
                m["mixture_ct70m"],
                "--tolerance",
                "0",
                "--tokens",
                "10000",
                "--budgets",
                "2000",
                "6000",
                "10000",
                "--out",
                str(cmr),
            ],
            [cmr],
        )
    )
    fits = {
        "curves": tmp / "tiny_curves.nc",
        "hparams": tmp / "tiny_hparams.nc",
        "mixture": tmp / "tiny_mixture.nc",
    }
    out.append(
        (
            "fit_curves",
            [
                "fit",
                str(p["curves"]),
                "--law",
                "annealing",
                "--out",
                str(fits["curves"]),
                "--quiet",
                *TINY,
            ],
            [fits["curves"]],
        )
    )
    out.append(
        (
            "fit_hparams",
            ["hparams", "fit", str(p["grid"]), "--out", str(fits["hparams"]), "--quiet", *TINY],
            [fits["hparams"]],
        )
    )
    out.append(
        (
            "fit_mixture",
            ["mixture", "fit", str(p["mixture"]), "--out", str(fits["mixture"]), "--quiet", *TINY],
            [fits["mixture"]],
        )
    )
    for family, path in fits.items():
        out.append((f"diagnose_fit_{family}", ["diagnose", str(path)], []))
    sweep, sdir = tmp / "sweep.toml", tmp / "sweep_out"
    sampler = "sampler = { chains = 2, draws = 60, tune = 60 }"
    pymc = 'sampler = { sampler = "pymc", chains = 2, draws = 60, tune = 60 }'
    sweep.write_text(
        f'[[fit]]\nname = "c"\ndata = "{p["curves"]}"\nlaw = "annealing"\nseeds = [0, 1]\n'
        f'{sampler}\n\n[[fit]]\nname = "p"\ndata = "{p["curves"]}"\nseed = 3\n{pymc}\n'
    )
    outs = [sdir / f"{n}.nc" for n in ("c__seed0", "c__seed1", "p__seed3")]
    out.append(
        (
            "sweep",
            ["sweep", str(sweep), "--out", str(sdir), "--workers", "1", "--quiet"],
            [sdir / "summary.csv", *outs],
        )
    )
    for f in outs:
        out.append((f"diagnose_sweep_{f.stem}", ["diagnose", str(f)], []))
    out.append(
        (
            "sweep_again",
            ["sweep", str(sweep), "--out", str(sdir), "--workers", "1", "--quiet"],
            [sdir / "summary.csv"],
        )
    )
    # an hparams and a mixture entry (their tables were once hashed as curve tables: an internal
    # error before any fit, found with this snapshot and fixed)
    for family, data in (("hparams", p["grid"]), ("mixture", p["mixture"])):
        path = tmp / f"sweep_{family}.toml"
        path.write_text(
            f'[[fit]]\nname = "x"\nfamily = "{family}"\ndata = "{data}"\nseed = 2\n{sampler}\n'
        )
        out.append(
            (
                f"sweep_{family}",
                ["sweep", str(path), "--out", str(tmp / family), "--workers", "1", "--quiet"],
                [],
            )
        )
    return out


def normalise(text: str, tmp: Path) -> str:
    text = text.replace(str(tmp), "<TMP>").replace(str(ROOT), "<ROOT>")
    text = re.sub(r"took \d+ seconds", "took <S> seconds", text)  # PyMC's own line
    return _seconds_columns(re.sub(r"\b\d+(\.\d+)? ?s\b", "<S> s", text))


def _seconds_columns(text: str) -> str:
    """The values of a printed table's ``seconds`` column (a sweep's summary, a fit's per-chain
    table) as `` <S>`` (their padding too): a row has the header's columns, or one more (the
    index) in front."""
    out, col = [], None
    for line in text.split("\n"):
        tokens = line.split()
        if "seconds" in tokens:
            col, width = tokens.index("seconds"), len(tokens)
        elif col is not None and len(tokens) in (width, width + 1):
            value = tokens[col + len(tokens) - width]
            line = (
                re.sub(rf"\s*(?<!\S){re.escape(value)}(?!\S)", " <S>", line, count=1)
                if len(tokens) == width or tokens[0] != value
                else line
            )
        elif col is not None and len(tokens) != 1:
            col = None
        out.append(line)
    return "\n".join(out)


def posterior_hash(path: Path) -> list[str]:
    """SHA-256 of each posterior variable's draws (a NetCDF file's bytes carry its creation
    time; its draws do not)."""
    import xarray as xr

    with xr.open_dataset(str(path), group="posterior") as ds:
        return [
            f"  {v} {hashlib.sha256(ds[v].values.tobytes()).hexdigest()}"
            for v in sorted(ds.data_vars)
        ]


def summary_csv(path: Path) -> str:
    import pandas as pd

    table = pd.read_csv(path)
    return table.drop(columns=[c for c in VOLATILE if c in table.columns]).to_csv(index=False)


def describe(path: Path, tmp: Path) -> list[str]:
    """What the snapshot records of an output file."""
    head = f"--- file {normalise(str(path), tmp)}"
    if not path.exists():
        return [head, "  (missing)"]
    if path.name == "summary.csv":
        return [head, normalise(summary_csv(path), tmp)]
    if path.suffix == ".nc":
        return [head, *posterior_hash(path)]
    data = path.read_bytes()
    if path.suffix in (".csv", ".json") and len(data) < 64_000:
        return [head, normalise(data.decode(), tmp)]
    return [head, f"  sha256 {hashlib.sha256(data).hexdigest()} ({len(data)} bytes)"]


def run_one(args: list[str], tmp: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT), MPLBACKEND="Agg", PYTHONHASHSEED="0")
    return subprocess.run(
        [sys.executable, "-m", "bayescpt.cli.main", *args],
        cwd=tmp,
        env=env,
        check=False,
        capture_output=True,
        text=True,
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path, help="folder for the snapshot (one text file a command)")
    ap.add_argument("--only", default=None, help="run the commands whose name contains this")
    a = ap.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="bayescpt_snap_") as name:
        tmp = Path(name)
        cmds = commands(tmp, inputs(tmp))
        for i, (cname, args, files) in enumerate(cmds):
            if a.only and a.only not in cname:
                continue
            res = run_one(args, tmp)
            lines = [
                f"$ bayescpt {normalise(' '.join(args), tmp)}",
                f"exit {res.returncode}",
                "--- stdout",
                normalise(res.stdout, tmp),
                "--- stderr",
                normalise(res.stderr, tmp),
            ]
            for f in files:
                lines += describe(f, tmp)
            (a.out / f"{i:02d}_{cname}.txt").write_text("\n".join(lines) + "\n")
            print(f"{i:02d} {cname}: exit {res.returncode}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
