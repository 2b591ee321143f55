"""Fit files: one NetCDF InferenceData whose posterior attrs say what it is and how to rebuild it.

Shared by every kind of fit (loss-curve laws, hyperparameters, mixtures). ``attrs`` always hold
``format``, ``law`` (the model's name), ``bayescpt_version`` and ``data_hash``; each kind adds its
own (JSON strings for nested values). Writing never replaces a file unless asked; reading checks
the format, the version line and, when given, the expected law, with a one-line error.
"""

from __future__ import annotations

import os
from pathlib import Path

from bayescpt import __version__

FORMAT = "bayescpt-fit/1"


class FitError(ValueError):
    """A fit file that cannot be used as asked (wrong law, version, not a bayescpt fit...)."""


def save_idata(idata, attrs: dict, path, overwrite: bool = False) -> Path:
    """Write ``idata`` with ``attrs`` (on its posterior) to ``path`` atomically."""
    path = Path(path)
    if path.exists() and not overwrite:
        raise FileExistsError(f"{path} exists; choose another name or allow overwriting "
                              "(--force on the command line)")
    idata.posterior.attrs.update(attrs)
    tmp = path.with_name(path.name + ".tmp")
    idata.to_netcdf(str(tmp))
    os.replace(tmp, path)
    return path


def load_idata(path, law=None):
    """Read a fit file; ``law`` is the expected law name or a tuple of accepted names.

    Returns ``(idata, attrs)``. Raises :class:`FitError` naming the file and what is wrong.
    """
    import arviz as az

    path = Path(path)
    if not path.exists():
        raise FitError(f"{path}: no such file")
    try:
        idata = az.from_netcdf(str(path))
    except Exception as err:  # noqa: BLE001 - any reader error means "not a fit file"
        raise FitError(f"{path}: not a NetCDF fit file ({type(err).__name__})") from None
    attrs = dict(idata.posterior.attrs) if "posterior" in idata else {}
    if attrs.get("format") != FORMAT:
        raise FitError(f"{path}: not a bayescpt fit (format {attrs.get('format')!r}, "
                       f"expected {FORMAT!r})")
    saved = attrs.get("bayescpt_version", "?")
    if saved.split(".")[:2] != __version__.split(".")[:2]:
        raise FitError(f"{path}: saved by bayescpt {saved}, this is {__version__}; refit with "
                       "this version")
    if law is not None:
        accepted = (law,) if isinstance(law, str) else tuple(law)
        if attrs.get("law") not in accepted:
            raise FitError(f"{path}: a fit of the {attrs.get('law')!r} law, expected "
                           f"{' or '.join(repr(x) for x in accepted)}")
    return idata, attrs


def saved_law(path) -> str | None:
    """The law a fit file names, read from its posterior's attributes without loading the draws;
    None when the file is not readable as a fit (the full loaders then say why)."""
    import xarray as xr

    try:
        with xr.open_dataset(str(path), group="posterior") as ds:
            return ds.attrs.get("law")
    except Exception:  # noqa: BLE001 - any reader error: let load_idata report it
        return None
