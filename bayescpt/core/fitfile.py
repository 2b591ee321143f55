"""Fit files: one NetCDF InferenceData whose posterior attrs say what it is and how to rebuild it.

Shared by every kind of fit (loss-curve laws, hyperparameters, mixtures). ``attrs`` always hold
``format``, ``law`` (the model's name), ``bayescpt_version``, ``data_hash`` and ``config`` (JSON);
each kind adds its own (JSON strings for nested values). Writing never replaces a file unless
asked; reading checks the format, the version line and, when given, the expected law, with a
one-line error. :class:`FitBase` is the protocol the three fit classes share; :func:`load_fit`
reads any fit file as the class the family table (:mod:`bayescpt.core.families`) gives its law.

Labelled layout (issue 18): a fit's index tables (the curve fit's ``groups`` and ``curves``, the
grid fit's ``cells``, the mixture fit's ``groups`` and ``points``) are stored in the
``constant_data`` group, one variable per column on the table's dimension (``group``, ``curve``,
``cell``, ``obs``; the variable's attrs ``bayescpt_table`` and ``column`` say where it belongs),
and the dimensions of every group carry their labels as parallel coordinates (``group``:
``val_set``, ``model_size``; ``obs``: ``run``, ``val_set``, ``step``; ...), so xarray and ArviZ
select by them without bayescpt code: ``post.A.where(post.model_size == 1e8, drop=True)``,
``idata.observed_data.y.where(idata.observed_data.run == "100M/cosine_24000", drop=True)``.
Files written before (tables as JSON attrs) still load: :meth:`FitBase.load` reads the tables
from wherever the file holds them.
"""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import numpy as np
import pandas as pd

from bayescpt import __version__
from bayescpt.core.diagnostics import Diagnostics, summarize
from bayescpt.core.families import LAW_CLASSES
from bayescpt.core.outputs import write_outputs
from bayescpt.core.priorspec import priors_from_json

FORMAT = "bayescpt-fit/1"


class FitError(ValueError):
    """A fit file that cannot be used as asked (wrong law, version, not a bayescpt fit...)."""


#: attrs of a constant_data variable that holds a column of an index table
TABLE_ATTR, COLUMN_ATTR = "bayescpt_table", "column"


def _column_values(col: pd.Series) -> tuple[np.ndarray, dict]:
    """A table column as a NetCDF-writable array and the attrs that restore it: text as str
    (missing text as "" with ``missing_text``), bools as int8 (``bool``), numbers as they are."""
    attrs = {}
    if pd.api.types.is_bool_dtype(col):
        return col.to_numpy(dtype=np.int8), {"bool": 1}
    if pd.api.types.is_numeric_dtype(col):
        return col.to_numpy(), attrs
    missing = col.isna().to_numpy()
    values = np.array(["" if m else str(v) for v, m in zip(col, missing)], dtype=object)
    if missing.any():
        attrs["missing_text"] = 1
    return values, attrs


def put_tables(idata, tables: dict) -> None:
    """Store index tables in ``idata.constant_data`` (added or updated in place).

    ``tables``: name -> (dim, DataFrame); each column becomes variable ``{name}_{column}`` on
    ``dim`` (coordinate: the posterior's labels of ``dim`` where it has them, of equal length).
    """
    import xarray as xr

    data, coords = {}, {}
    post = idata.posterior if "posterior" in idata.groups() else None
    for name, (dim, table) in tables.items():
        if table is None:
            continue
        if post is not None and dim in post.coords and post.sizes.get(dim) == len(table):
            coords[dim] = post[dim].values
        for col in table.columns:
            values, attrs = _column_values(table[col])
            data[f"{name}_{col}"] = xr.Variable(
                (dim,), values, attrs={TABLE_ATTR: name, COLUMN_ATTR: str(col), **attrs}
            )
    if not data:
        return
    ds = xr.Dataset(data, coords=coords)
    if "constant_data" in idata.groups():
        old = idata.constant_data
        keep = [v for v in old.data_vars if old[v].attrs.get(TABLE_ATTR) not in tables]
        idata.constant_data = xr.merge([old[keep], ds], combine_attrs="override")
    else:
        idata.add_groups(constant_data=ds)


def read_tables(idata) -> dict:
    """The index tables :func:`put_tables` stored: name -> DataFrame, columns in stored order;
    {} for a file written before the labelled layout."""
    if "constant_data" not in idata.groups():
        return {}
    cd = idata.constant_data
    cols: dict = {}
    for var in cd.data_vars:
        a = cd[var].attrs
        if TABLE_ATTR not in a:
            continue
        values = cd[var].values
        if a.get("bool"):
            values = values.astype(bool)
        elif values.dtype.kind in "OSU":
            values = pd.array([str(v) for v in values], dtype="string")
            if a.get("missing_text"):
                values[values == ""] = pd.NA
        cols.setdefault(a[TABLE_ATTR], {})[a[COLUMN_ATTR]] = values
    return {name: pd.DataFrame(c) for name, c in cols.items()}


def label_dims(idata, labels: dict, skip=()) -> None:
    """Attach parallel coordinates to the dimensions of every group of ``idata`` (in place).

    ``labels``: dim -> {coordinate name: values (one per position of dim)}. A group without the
    dimension, a length mismatch, or a name the group already uses is left as it is; groups
    named in ``skip`` are not touched.
    """
    for gname in idata.groups():
        if gname in skip:
            continue
        ds = getattr(idata, gname)
        new = {}
        for dim, coords in labels.items():
            if dim not in ds.dims:
                continue
            for name, values in coords.items():
                values = np.asarray(values)
                if name in ds.variables or name in new or len(values) != ds.sizes[dim]:
                    continue
                new[name] = (dim, values)
        if new:
            setattr(idata, gname, ds.assign_coords(new))


def as_table(value, orient: str = "split") -> pd.DataFrame | None:
    """A stored table: a DataFrame (labelled files) as is, JSON (older files) parsed, "" None."""
    if value is None or isinstance(value, pd.DataFrame):
        return value
    if not value:
        return None
    return pd.read_json(StringIO(value), orient=orient)


def save_idata(idata, attrs: dict, path, overwrite: bool = False) -> Path:
    """Write ``idata`` with ``attrs`` (on its posterior) to ``path`` atomically: a unique
    temporary in the same folder, synced, then renamed over ``path`` (see
    :mod:`bayescpt.core.outputs`), so ``path`` is always the old file or the complete new one."""
    path = Path(path)
    if path.exists() and not overwrite:
        raise FileExistsError(
            f"{path} exists; choose another name or allow overwriting (--force on the command line)"
        )
    idata.posterior.attrs.update(attrs)
    write_outputs({path: lambda tmp: idata.to_netcdf(str(tmp))})
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
        raise FitError(
            f"{path}: not a bayescpt fit (format {attrs.get('format')!r}, expected {FORMAT!r})"
        )
    saved = attrs.get("bayescpt_version", "?")
    if saved.split(".")[:2] != __version__.split(".")[:2]:
        raise FitError(
            f"{path}: saved by bayescpt {saved}, this is {__version__}; refit with this version"
        )
    if law is not None:
        accepted = (law,) if isinstance(law, str) else tuple(law)
        if attrs.get("law") not in accepted:
            raise FitError(
                f"{path}: a fit of the {attrs.get('law')!r} law, expected "
                f"{' or '.join(repr(x) for x in accepted)}"
            )
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


class FitBase:
    """What every fit (loss-curve law, hparams, mixture) has in common, written once.

    A subclass holds at least ``idata`` (ArviZ InferenceData), ``config`` (the model's config, a
    JSON-able dict) and ``meta`` (the common attrs: format, law, bayescpt_version, data_hash,
    fit_seconds, ...). It declares the law names it reads in ``laws`` (:func:`load_fit` finds it
    through the family table, :mod:`bayescpt.core.families`) and implements two hooks:

    * ``_own_attrs()``: its own attrs (JSON strings), added to ``meta`` when saving;
    * ``_from_attrs(idata, attrs)`` (classmethod): the fit rebuilt from a file's attrs (a
      KeyError or ValueError there becomes a one-line :class:`FitError`).

    Flat draws: a posterior variable of shape (chain, draw, *rest) as (chain * draw, *rest),
    chain-major (draw s = chain * n_draws + draw), the order of ``stack(("chain", "draw"))``.
    """

    laws: tuple = ()
    #: keys of ``_own_attrs`` (left out of ``meta`` when a file is read)
    own_keys: tuple = ()
    #: whether :meth:`group_index` answers None for a group the fit has not seen (else it raises)
    new_groups: bool = True
    #: law name -> fit class, read from the family table (kept under its former name)
    _registry = LAW_CLASSES

    #: own keys that are index tables, stored in ``constant_data``: key -> its dimension
    tables: dict = {}

    # -- attrs, tables, labels, save, load -----------------------------------------------------
    def _own_attrs(self) -> dict:
        return {}

    def _tables(self) -> dict:
        """The index tables: key of :attr:`tables` -> DataFrame (None where the fit has none)."""
        return {key: getattr(self, key, None) for key in self.tables}

    def _labels(self) -> dict:
        """Parallel coordinates for the dimensions the tables index: dim -> {name: values}."""
        return {}

    def _write_attrs(self):
        """Put everything the file holds into ``idata``: the attrs on the posterior (older JSON
        table attrs removed), the index tables in ``constant_data``, the dimension labels."""
        post = self.idata.posterior
        for key in self.tables:
            post.attrs.pop(key, None)
        post.attrs.update(self.attrs)
        put_tables(self.idata, {k: (self.tables[k], t) for k, t in self._tables().items()})
        self.label(self._labels())

    def label(self, labels: dict) -> None:
        """Attach ``labels`` (dim -> {coordinate: values}) to every group but ``constant_data``,
        which holds the tables themselves (see :func:`label_dims`)."""
        label_dims(self.idata, labels, skip=("constant_data",))

    @property
    def attrs(self) -> dict:
        """Everything the file's posterior attrs hold: ``meta``, ``config`` (JSON) and the
        subclass's own keys."""
        return dict(self.meta, config=json.dumps(self.config), **self._own_attrs())

    @property
    def fit_seconds(self) -> float | None:
        """Seconds NUTS spent sampling (compiling excluded); None where the file does not say."""
        value = self.meta.get("fit_seconds", self.meta.get("sampling_seconds"))
        return None if value is None else float(value)

    def save(self, path, overwrite: bool = False) -> Path:
        """Write the fit as NetCDF (labelled layout, see the module docstring); refuses to replace
        an existing file unless ``overwrite``."""
        self._write_attrs()
        return save_idata(self.idata, self.attrs, path, overwrite=overwrite)

    @classmethod
    def load(cls, path, law=None):
        """Read a fit file. On FitBase: the family table's class for the law the file names; on a
        subclass: that class, ``law`` (one name or several) defaulting to the ones it reads.
        Anything else raises a one-line :class:`FitError`."""
        if cls is FitBase:
            return load_fit(path, law)
        idata, attrs = load_idata(path, law if law is not None else cls.laws)
        try:
            fit = cls._from_attrs(idata, {**attrs, **read_tables(idata)})
            fit.label(fit._labels())  # files written before the labels: the tables' at least
        except (KeyError, ValueError, TypeError) as err:
            raise FitError(
                f"{path}: damaged {attrs.get('law')} fit ({type(err).__name__}: {err})"
            ) from None
        return fit

    @classmethod
    def load_any(cls, path):
        """:func:`load_fit` of ``path`` (its former name, kept for callers)."""
        return load_fit(path)

    @classmethod
    def _meta_of(cls, attrs: dict) -> dict:
        """The common attrs of a file: all but ``config`` and the subclass's own keys; the
        sampling time under its one name ``fit_seconds`` (older files: ``sampling_seconds``)."""
        meta = {k: v for k, v in attrs.items() if k not in ("config",) + tuple(cls.own_keys)}
        if "sampling_seconds" in meta:
            meta.setdefault("fit_seconds", meta["sampling_seconds"])
            del meta["sampling_seconds"]
        return meta

    # -- posterior -----------------------------------------------------------------------------
    def param_vars(self) -> list[str]:
        """The posterior variables the diagnostics judge (not the standardised helpers)."""
        return [v for v in self.idata.posterior.data_vars if not v.endswith(("_z", "__"))]

    def derived_names(self) -> tuple:
        """Variables summarised but not judged (deterministic transforms)."""
        return ()

    def diagnostics(self, prior_check: bool = True) -> Diagnostics:
        """R-hat, ESS, divergences of :meth:`param_vars` (see :mod:`bayescpt.core.diagnostics`),
        and, with ``prior_check``, prior-data conflicts of :attr:`priors` (a sampler's judge of
        slow mixing reads only the former and leaves it off)."""
        return summarize(
            self.idata,
            self.param_vars(),
            self.derived_names(),
            self.priors if prior_check else None,
        )

    @property
    def priors(self) -> dict | None:
        """{top-level node: ``pymc_extras`` Prior} for the prior-data conflict check
        (:mod:`bayescpt.core.priorcheck`): those stored in the file's ``priors`` attr (JSON,
        :func:`~bayescpt.core.priorspec.priors_json`; a family whose model is written with plain
        PyMC distributions stores :func:`~bayescpt.core.priorcheck.model_priors` of it); None
        when the file has none (written before the attr, or a family that does not give them)."""
        if self.meta.get("priors"):
            return priors_from_json(self.meta["priors"])
        return None

    def flat(self, name: str) -> np.ndarray:
        """Draws of posterior variable ``name`` flattened over (chain, draw): shape (S, *rest),
        a copy (callers may change it without touching the posterior)."""
        x = self.idata.posterior[name].values
        return np.array(x.reshape(-1, *x.shape[2:]))

    def draws(self, names) -> dict:
        """Flat draws (:meth:`flat`) of each of ``names``: name -> array (S, ...)."""
        return {v: self.flat(v) for v in ([names] if isinstance(names, str) else names)}

    # -- groups --------------------------------------------------------------------------------
    def group_index(self, model_size=None, val_set=None) -> int | None:
        """Row of ``groups`` for (model size, validation set); a size of None/NaN matches a group
        fitted without sizes. A group the fit has not seen gives None, or a ValueError naming
        the fitted groups where the fit cannot predict new groups (``new_groups`` False)."""
        g = getattr(self, "groups", None)
        if g is None:
            raise TypeError(f"a {type(self).__name__} has no groups")
        col = "size" if "size" in g.columns else "model_size"
        size = -1.0 if model_size is None or pd.isna(model_size) else float(model_size)
        hit = g.index[(g["val_set"] == val_set) & (g[col].fillna(-1.0) == size)]
        if len(hit):
            return int(hit[0])
        if self.new_groups:
            return None
        have = [f"{v} @ {s:g}" for v, s in zip(g["val_set"], g[col])]
        raise ValueError(
            f"no fitted group for val_set {val_set!r}, model_size {size:g}; the fit has {have}"
        )


def load_fit(path, law=None):
    """Read any bayescpt fit file as the class the family table (:mod:`bayescpt.core.families`)
    gives the law it names. ``law`` (optional) is the law name, or names, the caller accepts.
    Raises a one-line :class:`FitError`.
    """
    name = saved_law(path)
    cls = LAW_CLASSES.get(name)
    if cls is None:
        load_idata(path, law)  # says why the file is not a fit, if it is not one
        known = ", ".join(repr(k) for k in sorted(LAW_CLASSES))
        raise FitError(
            f"{path}: a fit of the {name!r} law, which no imported fit class reads (known: {known})"
        )
    return cls.load(path, law)
