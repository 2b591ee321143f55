"""One sweep fit, as a worker runs it: read, fit, save atomically, report one summary row.

:func:`run_fit` never raises for a fit that fails (bad data, a sampler error): it returns a row
with ``status`` "failed" and the error's one line, so one bad fit never stops a sweep. Its
output is written as every bayescpt fit file is (a temporary in the same folder, synced, then
renamed), with the spec and its key in the attrs (``sweep_key``, ``sweep_spec``); a killed fit
therefore leaves no file under the output's name, and :func:`finished_row` accepts an existing
file only when it loads and records the same key.

A spec's family is read from the family table (:mod:`bayescpt.core.families`): its fit class
reads the data and fits it (``sweep_fit``, :class:`bayescpt.core.fit_template.SampledFit`).

**Compiled once per worker.** A worker process keeps the compiled models of the curve fits it ran
(:class:`bayescpt.curves.model.fit.CompiledFit`, kept in :mod:`bayescpt.core.modelcache`), keyed by
law, options, config, sampler settings but the seed, and the table's shape (every column but the
losses): a second fit of the same shape (another seed; other losses of the same runs, as in
simulation studies) samples at once instead of compiling again, with the same draws as a fresh fit.
Hparams and mixture fits, and curve fits this cache does not take (another sampler, another init, a
law with other validation sets), reuse a model only for the same table
(:mod:`bayescpt.core.modelcache`, inside their ``run``).
"""

from __future__ import annotations

import os
import socket
import time
import warnings
from pathlib import Path

from bayescpt.core.families import family_class
from bayescpt.core.fit_template import SamplerSettings
from bayescpt.core.fitfile import FitError, load_fit
from bayescpt.core.sampling import check_sampler
from bayescpt.parallel.spec import FitSpec

ROW_KEYS = (
    "name",
    "family",
    "law",
    "data",
    "seed",
    "key",
    "data_hash",
    "status",
    "max_rhat",
    "min_ess_bulk",
    "min_ess_tail",
    "divergences",
    "seconds",
    "compiled",
    "worker",
    "output",
    "error",
    "note",
)


def fit_spec(spec: FitSpec, cores: int | None = None):
    """Fit ``spec`` as its family's ``fit`` command would (its ``sweep_fit``; curves: thinned
    by :func:`~bayescpt.curves.data.thinning.thin_for_fit`, law options resolved from the data).
    Returns (fit, compiled) where ``compiled`` is
    True when this call compiled the model, False when it reused one, None when not cached."""
    sampler = dict(spec.sampler)
    name = check_sampler(sampler.pop("sampler", "auto"))
    settings = SamplerSettings(sampler=name, seed=spec.seed, cores=cores, warn=False, **sampler)
    return family_class(spec.family).sweep_fit(
        spec.data, spec.law, spec.options, spec.config, settings
    )


def finished_row(spec: FitSpec, path: Path) -> dict | None:
    """The summary row of an existing output of ``spec``, or None when ``path`` is missing,
    unreadable or the fit of other inputs (its ``sweep_key`` differs)."""
    if not path.is_file():
        return None
    try:
        fit = load_fit(path)
    except (FitError, OSError, ValueError):
        return None
    if fit.idata.posterior.attrs.get("sweep_key") != spec.key:
        return None
    return _row(spec, path, fit, seconds=fit.meta.get("fit_seconds"))


def existing_key(path: Path) -> str | None:
    """The ``sweep_key`` of the fit file at ``path`` (None if unreadable or not a sweep's)."""
    try:
        return load_fit(path).idata.posterior.attrs.get("sweep_key")
    except (FitError, OSError, ValueError):
        return None


def run_fit(spec_json: str, out_dir: str, cores: int | None = None) -> dict:
    """A worker task: fit the spec (JSON), save it to ``out_dir/NAME.nc``, return its row.

    Idempotent: when the output already holds this spec's fit (a task rerun after its worker
    died just after saving), it is not fitted again."""
    spec = FitSpec.from_json(spec_json)
    path = Path(out_dir) / spec.file_name
    done = finished_row(spec, path)
    if done is not None:  # e.g. its worker died after saving, before the result was fetched
        return dict(done, note="output found: this task had run before")
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit, compiled = fit_spec(spec, cores)
        fit.idata.posterior.attrs.update(sweep_key=spec.key, sweep_spec=spec.to_json())
        fit.save(path, overwrite=True)
    except Exception as err:  # noqa: BLE001 - a failed fit is a row, never a stopped sweep
        text = " ".join(str(err).split()) or type(err).__name__
        return {
            **{k: None for k in ROW_KEYS},
            **_spec_cols(spec),
            "status": "failed",
            "seconds": round(time.perf_counter() - t0, 2),
            "worker": _worker(),
            "error": f"{type(err).__name__}: {text}"[:500],
        }
    return _row(spec, path, fit, seconds=time.perf_counter() - t0, compiled=compiled)


def _spec_cols(spec: FitSpec) -> dict:
    return {
        "name": spec.name,
        "family": spec.family,
        "law": spec.law,
        "data": spec.data,
        "seed": spec.seed,
        "key": spec.key,
        "data_hash": spec.data_hash,
    }


def _worker() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _row(spec: FitSpec, path: Path, fit, seconds, compiled=None) -> dict:
    d = fit.diagnostics()
    return {
        **_spec_cols(spec),
        "status": "ok" if d.ok else "diagnostics",
        "max_rhat": round(d.max_rhat, 5),
        "min_ess_bulk": round(d.min_ess_bulk, 1),
        "min_ess_tail": round(d.min_ess_tail, 1),
        "divergences": int(d.divergences),
        "seconds": None if seconds is None else round(float(seconds), 2),
        "compiled": compiled,
        "worker": _worker(),
        "output": str(path),
        "error": None,
        "note": None,
    }
