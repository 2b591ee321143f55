"""Forecasts of runs in progress: condition on the first part of a held-out run, predict the rest.

Issue 19's check of :func:`bayescpt.curves.forecast.prefix.forecast_with_prefix` (importance weights
over the fit's posterior draws x fresh schedule deviations, default settings: the discrepancy model
stored with each fit, learned from its training residuals; ``--discrepancy iid`` for the fit's iid
noise model instead) on runs the fits have not seen, with the reference fits shipped in ``models/``
(no sampling here):

* ``multipowerlaw``: the LR-annealing and multi-power fits of the authors' training split
  (``models/annealing_multipowerlaw.nc``, ``models/multipower_multipowerlaw.nc``), the six
  held-out schedules x 25M/100M/400M of ``data/multipowerlaw.csv``;
* ``olmo``: the LR-annealing fit of the OLMo-2 ladder's 0.5/1/2 x Chinchilla runs
  (``models/annealing_olmo_c4.nc``), its 5x and 10x runs (read from ``../shared/data``; skipped
  when absent).
* ``lab_pt``: the lab's PT-only set (``data/lab_pt/``, built after the prefix method was frozen:
  an independent check), general validation set: no reference fit ships for it, so each law is
  fitted here on the three training schedules x 3 sizes (``Fit.run``, default settings, ``--seed``)
  and its discrepancy model learned from those runs (``learn_discrepancy``, as
  ``models/build.py --discrepancy`` does); the fit is saved under ``--fits`` (reused when there)
  and its diagnostics printed. Held out: the seven schedules flagged in ``runs.csv``.

For every held-out run of ``T`` logged steps and prefix fraction f in 10 / 25 / 50 %: the losses
at steps <= f T are the run's prefix (its evidence), the remainder (steps > f T) is scored: mean
relative error of the posterior mean, 90 % coverage, mean interval width (% of the loss) and the
interval score (% of the loss, lower is better), beside the plain forecast (no prefix) on the same
remainder. Per set, law, size and fraction; the smallest effective sample size of the weights is
printed too.

And what ``bayescpt watch`` would have said of these runs, which all went as trained models go
(no fault): each run's evaluations arrive in ten batches (by step), each checked against the 99 %
band of the forecast made before it (:class:`bayescpt.curves.forecast.watch.Watch`); the share
outside is the share of points a calibrated band leaves outside (1 %), and the alerts (two in a
row outside on one side, the watch's default) are false alerts.

    python benchmarks/prefix_forecast.py [--sets multipowerlaw,olmo,lab_pt]
        [--watch-laws annealing] [--lab-laws annealing,multipower] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bayescpt.curves.evaluate.scores import percent_text, score  # noqa: E402
from bayescpt.curves.forecast.predict import predict_frame  # noqa: E402
from bayescpt.curves.forecast.prefix import forecast_with_prefix  # noqa: E402
from bayescpt.curves.forecast.watch import Watch  # noqa: E402
from bayescpt.curves.model.fit import Fit  # noqa: E402
from bayescpt.datasets.bundled import bundled_multipowerlaw, split  # noqa: E402

OLMO = ROOT.parent / "shared" / "data" / "olmo-ladder" / "peteish-moreeval"
FRACTIONS = (0.10, 0.25, 0.50)
COLS = ["points", "mean_rel_err", "coverage", "rel_width", "interval_score"]


def lab_pt_fit(law: str, fits: Path, seed: int) -> str:
    """The fit file of ``law`` on the lab PT set's training runs, with its discrepancy model:
    fitted (default settings) and saved under ``fits`` unless already there."""
    from calibration_sets import lab_pt_split

    from bayescpt.curves.forecast.discrepancy_fit import learn_discrepancy

    path = fits / f"{law}_lab_pt_seed{seed}.nc"
    if not path.exists():
        train, _ = lab_pt_split()
        t0 = time.perf_counter()
        fit = Fit.run(train, law=law, seed=seed, warn=False)
        fit.meta["discrepancy"] = learn_discrepancy(fit, train).to_json()
        d = fit.diagnostics()
        print(
            f"lab_pt {law}: fitted in {time.perf_counter() - t0:.0f} s; R-hat "
            f"{d.max_rhat:.4f}, bulk ESS {d.min_ess_bulk:.0f}, divergences {d.divergences}",
            flush=True,
        )
        fits.mkdir(parents=True, exist_ok=True)
        fit.save(path)
    return str(path)


def held_out_sets(
    names, lab_laws=("annealing", "multipower"), fits: Path | None = None, seed: int = 0
) -> list[tuple[str, str, pd.DataFrame]]:
    """(set, fit file, held-out table) for each named set that is available."""
    out = []
    if "multipowerlaw" in names:
        test = split(bundled_multipowerlaw())[1]
        for law in ("annealing", "multipower"):
            out.append(("multipowerlaw", str(ROOT / "models" / f"{law}_multipowerlaw.nc"), test))
    if "olmo" in names:
        if OLMO.exists():
            from bayescpt.datasets.public import load_olmo_ladder

            sizes = ("190M", "370M", "760M", "1B", "3B")
            test = load_olmo_ladder(
                OLMO, val_sets=("c4_en",), runs=[f"{s}-{m}" for s in sizes for m in ("5xC", "10xC")]
            )
            out.append(("olmo", str(ROOT / "models" / "annealing_olmo_c4.nc"), test))
        else:
            print(f"olmo: {OLMO} not found, skipped")
    if "lab_pt" in names:
        from calibration_sets import lab_pt_split

        test = lab_pt_split()[1]
        for law in lab_laws:
            out.append(
                ("lab_pt", lab_pt_fit(law, fits or ROOT / "benchmarks" / "fits", seed), test)
            )
    return out


def with_prefix(test: pd.DataFrame, frac: float) -> tuple[pd.DataFrame, pd.Series]:
    """The table with the losses after each run's first ``frac`` of logged steps removed, and
    the mask of the rows to score (a loss after the prefix)."""
    last = test[test["loss"].notna()].groupby("run")["step"].max()
    cut = test["run"].map(last) * frac
    observed = test.copy()
    later = observed["step"] > cut
    observed.loc[later, "loss"] = np.nan
    return observed, later & test["loss"].notna()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default="multipowerlaw,olmo")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--watch-laws",
        default="annealing",
        help="laws whose fits replay the held-out runs through the watch (the "
        "multi-power law's forecasts cost about 10x more)",
    )
    ap.add_argument(
        "--discrepancy",
        default="auto",
        help="auto (the fit's stored discrepancy model) or iid (the iid weights)",
    )
    ap.add_argument(
        "--lab-laws",
        default="annealing,multipower",
        help="laws fitted on the lab PT set's training runs (set lab_pt)",
    )
    ap.add_argument(
        "--fits",
        type=Path,
        default=ROOT / "benchmarks" / "fits",
        help="where the lab_pt fits are saved and looked for",
    )
    ap.add_argument("--json", type=Path)
    a = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    rows, alarms, models = [], [], {}
    for name, path, test in held_out_sets(a.sets.split(","), a.lab_laws.split(","), a.fits, a.seed):
        fit = Fit.load(path)
        models[f"{name}/{fit.law.name}"] = (
            fit.meta.get("discrepancy") if a.discrepancy == "auto" else a.discrepancy
        )
        print(f"{name} {fit.law.name}: discrepancy {models[f'{name}/{fit.law.name}']}")
        plain = predict_frame(fit, test, prob=0.9, seed=a.seed)
        for frac in FRACTIONS:
            observed, scored = with_prefix(test, frac)
            t0 = time.perf_counter()
            pred = forecast_with_prefix(
                fit, observed, prob=0.9, seed=a.seed, discrepancy=a.discrepancy
            )
            seconds = time.perf_counter() - t0
            # both keep the table's index (rows with step >= 1): score the same rows
            keep = test.index[scored]
            mine = pred.loc[pred.index.intersection(keep)].copy()
            mine["loss"] = test.loc[mine.index, "loss"]
            base = plain.loc[mine.index]
            for label, p in (("prefix", mine), ("no prefix", base)):
                for r in score(p).to_dict("records"):
                    rows.append(
                        {
                            "set": name,
                            "law": fit.law.name,
                            "fraction": frac,
                            "forecast": label,
                            **r,
                            **(
                                {"min_ess": float(mine["ess"].min()), "seconds": seconds}
                                if label == "prefix"
                                else {}
                            ),
                        }
                    )
            print(
                f"{name} {fit.law.name} prefix {frac:.0%}: {seconds:.1f} s, min ESS "
                f"{mine['ess'].min():.0f}",
                flush=True,
            )
        if fit.law.name in a.watch_laws.split(","):
            t0 = time.perf_counter()
            alarms.append(false_alerts(name, fit, test, a.seed, a.discrepancy))
            print(
                f"{name} {fit.law.name} watch replay: {time.perf_counter() - t0:.0f} s", flush=True
            )
    table = pd.DataFrame(rows)
    alarm = pd.concat(alarms, ignore_index=True)
    for (name, law), g in table.groupby(["set", "law"], sort=False):
        print(f"\n== {name}, {law} law: the remainder of each held-out run after its prefix")
        show = g[["fraction", "forecast", "model_size"] + COLS].copy()
        show["fraction"] = (show["fraction"] * 100).round().astype(int).astype(str) + " %"
        print(percent_text(show))
    print(
        "\n== the watch on the held-out runs: evaluations outside the 99 % band of the "
        "forecast before them (ten batches per run)"
    )
    summary = alarm.groupby(["set", "law", "model_size"]).agg(
        runs=("run", "nunique"),
        checked=("outside", "size"),
        outside=("outside", "sum"),
        alerts=("alert", "sum"),
    )
    summary["outside %"] = (100 * summary["outside"] / summary["checked"]).round(2)
    print(summary.to_string())
    runs = alarm.groupby(["set", "law", "run"])["alert"].sum()
    print(
        f"runs with at least one alert (2 in a row outside, the default): "
        f"{int((runs > 0).sum())} of {len(runs)}"
    )
    if a.json:
        per_run = (
            alarm.groupby(["set", "law", "model_size", "run"], sort=False)
            .agg(checked=("outside", "size"), outside=("outside", "sum"), alerts=("alert", "sum"))
            .reset_index()
        )
        a.json.write_text(
            json.dumps(
                {
                    "discrepancy": models,
                    "scores": table.to_dict("records"),
                    "watch_per_run": per_run.to_dict("records"),
                },
                indent=1,
                default=float,
            )
        )


def false_alerts(
    name: str, fit, test: pd.DataFrame, seed: int, discrepancy="auto", batches: int = 10
) -> pd.DataFrame:
    """Every held-out run fed to a :class:`Watch` in ``batches`` batches of its evaluations."""
    out = []
    for _, g in test.groupby("run", sort=False):
        watch = Watch(fit, g, band_prob=0.99, seed=seed, discrepancy=discrepancy)
        ev = g[g["loss"].notna()].sort_values("step")
        edges = np.linspace(0, ev["step"].max(), batches + 1)
        for hi in edges[1:]:
            update = watch.update(ev[ev["step"] <= hi])
            if update is not None and len(update.checks):
                c = update.checks.assign(
                    set=name, law=fit.law.name, model_size=f"{g['model_size'].iloc[0] / 1e6:g}M"
                )
                out.append(c)
    return pd.concat(out, ignore_index=True)


if __name__ == "__main__":
    main()
