"""Rebuild the reference fits in models/ from the bundled data (the command that made each file).

    python models/build.py            # every reference fit
    python models/build.py cpt_simulated annealing_multipowerlaw   # some of them
    python models/build.py --list

Each fit is sampled with the law's default settings but twice the draws (4 chains x 2000 after
the default tuning, seed 0: a reference should pass the diagnostics with margin), then thinned to
``KEEP_DRAWS`` draws per chain (every 4th; 250, every 8th, for the fits of thousands of points)
and its pointwise log-likelihood stored as float32, so the file stays small; the diagnostics
that ``bayescpt diagnose`` prints are those of the stored (thinned) draws. The fit's attrs
record the command (``made_by``) beside the law, package version and data hash. Existing files
are replaced only with ``--force``; ``--relabel`` only rewrites existing files in the labelled
layout (tables in ``constant_data``, labelled dimensions; draws untouched); ``--discrepancy``
only learns the prefix forecasts' discrepancy model of existing curve fits from their training
tables and writes it into their attrs
(:func:`bayescpt.curves.forecast.discrepancy_fit.learn_discrepancy`). The OLMo-2 ladder logs
are not bundled: ``annealing_olmo_c4`` reads them from the folder named by the environment
variable ``BAYESCPT_OLMO_LADDER`` (the ladder's ``peteish-moreeval`` export).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

import h5netcdf

from bayescpt.core.fitfile import load_fit
from bayescpt.cpt.simulate import simulate_cpt
from bayescpt.curves.data.validate import read_curves
from bayescpt.curves.forecast.discrepancy_fit import learn_discrepancy
from bayescpt.curves.model.fit import Fit
from bayescpt.datasets.bundled import bundled_multipowerlaw, split
from bayescpt.datasets.public import load_olmo_ladder
from bayescpt.hparams.data import read_grid
from bayescpt.hparams.fit import HparamsFit
from bayescpt.mixture.data import read_mixture
from bayescpt.mixture.fit import MixtureFit

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]  # the repository (this file is bayescpt/resources/models/build.py)
sys.path.insert(0, str(ROOT))

DRAWS = 2000  # per chain
KEEP_DRAWS = 500  # per chain, after thinning (fewer make R-hat itself noisy)
#: fits with thousands of points keep fewer draws: their pointwise log-likelihood (for LOO) is
#: most of the file
KEEP_FEWER = {
    "annealing_multipowerlaw": 250,
    "multipower_multipowerlaw": 250,
    "annealing_olmo_c4": 250,
}
#: ... and the grid fit (1,911 runs) keeps none: nothing shipped compares it by LOO
NO_LOGLIK = {"hparams_steplaw"}


def _thin(idata, keep=KEEP_DRAWS, loglik=True):
    n = idata.posterior.sizes["draw"]
    step = max(1, n // keep)
    idata = idata.isel(draw=slice(None, None, step))
    if "log_likelihood" in idata and not loglik:
        del idata.log_likelihood
    elif "log_likelihood" in idata:
        idata = idata.map(lambda ds: ds.astype("float32"), groups="log_likelihood")
    return idata, step


def cpt_simulated_table():
    """data/cpt_simulated.csv: simulated PT (WSD) -> CPT runs from the paper's Fig. 3 values."""

    curves, _ = simulate_cpt(seed=1)
    return curves


def _curve_fit(table, law, **opts):

    return Fit.run(table, law=law, seed=0, draws=DRAWS, warn=False, **opts)


def annealing_multipowerlaw():

    return _curve_fit(split(bundled_multipowerlaw())[0], "annealing")


def multipower_multipowerlaw():

    return _curve_fit(split(bundled_multipowerlaw())[0], "multipower")


def cpt_simulated():

    return _curve_fit(read_curves(ROOT / "data" / "cpt_simulated.csv"), "cpt")


def olmo_c4_table():
    """The OLMo-2 ladder, all five sizes, the 0.5x-2x Chinchilla runs, c4_en (not bundled)."""

    if not os.environ.get("BAYESCPT_OLMO_LADDER"):
        raise SystemExit(
            "annealing_olmo_c4: set BAYESCPT_OLMO_LADDER to the OLMo-2 ladder's "
            "peteish-moreeval folder"
        )
    root = Path(os.environ["BAYESCPT_OLMO_LADDER"])
    runs = [
        f"{s}-{m}" for s in ("190M", "370M", "760M", "1B", "3B") for m in ("0.5xC", "1xC", "2xC")
    ]
    return load_olmo_ladder(root, runs=runs)


def annealing_olmo_c4():
    """The OLMo-2 ladder, all five sizes, the 0.5x-2x Chinchilla runs, c4_en (not bundled)."""

    return _curve_fit(olmo_c4_table(), "annealing")


#: the training tables of the loss-curve fits whose prefix forecasts use a discrepancy model
#: learned from their training residuals
#: (bayescpt.curves.forecast.discrepancy_fit.learn_discrepancy)
TRAINING_TABLES = {
    "annealing_multipowerlaw": lambda: split(bundled_multipowerlaw())[0],
    "multipower_multipowerlaw": lambda: split(bundled_multipowerlaw())[0],
    "annealing_olmo_c4": olmo_c4_table,
}


def add_discrepancy(name: str) -> str:
    """Learn the discrepancy model of the reference fit ``name`` from its training table and
    write it into the file's attrs in place (the draws untouched); returns its JSON."""
    path = HERE / f"{name}.nc"
    text = learn_discrepancy(Fit.load(path), TRAINING_TABLES[name]()).to_json()
    with h5netcdf.File(path, "a") as f:
        f["posterior"].attrs["discrepancy"] = text
    return text


def relabel(name: str) -> None:
    """Rewrite the reference fit ``name`` in the labelled layout (index tables in
    ``constant_data``, dimensions labelled; :mod:`bayescpt.core.fitfile`), its observations
    labelled from the bundled table it was fitted to; the draws and attrs untouched."""
    path = HERE / f"{name}.nc"
    fit = load_fit(path)
    if name in DATA_TABLES:
        fit.label_observations(DATA_TABLES[name]())
    fit.save(path, overwrite=True)
    manifest = json.loads((HERE / "MANIFEST.json").read_text())
    _record(
        name,
        dict(
            manifest.get(name, {}),
            bytes=path.stat().st_size,
            layout="labelled: python models/build.py --relabel (draws untouched)",
        ),
    )


def hparams_steplaw():

    return HparamsFit.run(
        read_grid(ROOT / "data" / "steplaw_grid.csv"), seed=0, draws=DRAWS, warn=False
    )


def mixture_ct70m():
    """The Data Mixing Laws CPT experiment (Pythia-70M, five Pile shares), exponential form."""

    return MixtureFit.run(
        read_mixture(ROOT / "data" / "mixture_ct70m.csv"),
        config={"ratio_form": "exp"},
        seed=0,
        draws=DRAWS,
        warn=False,
    )


#: the tables the fits were made of, for --relabel (the mixture fit stores its own points)
DATA_TABLES = dict(
    TRAINING_TABLES,
    cpt_simulated=lambda: read_curves(ROOT / "data" / "cpt_simulated.csv"),
    hparams_steplaw=lambda: read_grid(ROOT / "data" / "steplaw_grid.csv"),
)

BUILDERS = {
    f.__name__: f
    for f in (
        annealing_multipowerlaw,
        multipower_multipowerlaw,
        cpt_simulated,
        annealing_olmo_c4,
        hparams_steplaw,
        mixture_ct70m,
    )
}


def _diag(d) -> dict:
    return {
        "max_rhat": round(d.max_rhat, 4),
        "min_ess_bulk": round(d.min_ess_bulk),
        "min_ess_tail": round(d.min_ess_tail),
        "divergences": d.divergences,
    }


def _record(name: str, entry: dict) -> None:
    """models/MANIFEST.json: one entry per reference fit (replaced when it is rebuilt)."""
    path = HERE / "MANIFEST.json"
    manifest = json.loads(path.read_text()) if path.exists() else {}
    manifest[name] = entry
    path.write_text(json.dumps(dict(sorted(manifest.items())), indent=1) + "\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help=f"which fits (default all): {', '.join(BUILDERS)}")
    ap.add_argument("--force", action="store_true", help="replace existing files")
    ap.add_argument("--list", action="store_true")
    ap.add_argument(
        "--discrepancy",
        action="store_true",
        help="only learn the discrepancy model of existing curve fits (prefix "
        "forecasts) from their training tables and store it in their attrs",
    )
    ap.add_argument(
        "--relabel",
        action="store_true",
        help="only rewrite existing files in the labelled layout (tables in "
        "constant_data, labelled dimensions), draws untouched",
    )
    a = ap.parse_args(argv)
    if a.list:
        print("\n".join(BUILDERS))
        return 0
    unknown = [n for n in a.names if n not in BUILDERS]
    if unknown:
        ap.error(f"unknown fit {unknown}; choose from {list(BUILDERS)}")
    if a.discrepancy:
        for name in a.names or list(TRAINING_TABLES):
            print(f"{name}: discrepancy {add_discrepancy(name)}", flush=True)
        return 0
    if a.relabel:
        for name in a.names or list(BUILDERS):
            relabel(name)
            print(f"{name}: relabelled", flush=True)
        return 0
    data = ROOT / "data" / "cpt_simulated.csv"
    if not data.exists():
        cpt_simulated_table().to_csv(data, index=False, float_format="%.7g")
        print(f"wrote {data}")
    for name in a.names or list(BUILDERS):
        out = HERE / f"{name}.nc"
        if out.exists() and not a.force:
            print(f"{out} exists; skipped (--force to rebuild)")
            continue
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit = BUILDERS[name]()
        full = fit.diagnostics()
        fit.idata, step = _thin(
            fit.idata, KEEP_FEWER.get(name, KEEP_DRAWS), loglik=name not in NO_LOGLIK
        )
        fit.meta["made_by"] = f"python models/build.py {name}"
        fit.meta["thinned_every"] = step
        if name in TRAINING_TABLES:
            fit.meta["discrepancy"] = learn_discrepancy(fit, TRAINING_TABLES[name]()).to_json()
        fit.save(out, overwrite=a.force)
        d = fit.diagnostics()
        _record(
            name,
            {
                "made_by": fit.meta["made_by"],
                "law": fit.meta["law"],
                "data_hash": fit.meta["data_hash"],
                "bayescpt_version": fit.meta["bayescpt_version"],
                "sampled": f"4 chains x {DRAWS} draws, default tuning, seed 0",
                "stored_draws_per_chain": int(fit.idata.posterior.sizes["draw"]),
                "seconds": round(time.perf_counter() - t0, 1),
                "sampled_diagnostics": _diag(full),
                "stored_diagnostics": _diag(d),
                "bytes": out.stat().st_size,
            },
        )
        print(
            f"{name}: {time.perf_counter() - t0:.0f} s; before thinning R-hat {full.max_rhat:.4f}"
            f", ESS {full.min_ess_bulk:.0f}, {full.divergences} div.; stored R-hat "
            f"{d.max_rhat:.4f}, ESS {d.min_ess_bulk:.0f}; {out.stat().st_size / 1e6:.1f} MB"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
