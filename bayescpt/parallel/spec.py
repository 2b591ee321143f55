"""Sweep files: the fits a sweep runs, read from TOML and checked, one :class:`FitSpec` each.

A sweep file lists entries under ``[[fit]]``; every key is checked (an unknown key, a wrong type
or a missing data file is one :class:`SweepError` line naming the file, the entry and the key)::

    [defaults]                  # optional: keys every entry starts from
    sampler = { draws = 1000 }

    [[fit]]
    name = "mpl-annealing"      # optional (default: family, law and data file name)
    family = "curves"           # curves (default) | hparams | mixture
    data = "train.csv"          # relative to the sweep file
    law = "annealing"           # curves only (default annealing)
    options = { progress = true }    # the law's options (curves), e.g. anchored for cpt
    config = "priors.json"      # or an inline table: prior/structure overrides, as --config
    sampler = { chains = 4, draws = 1000, tune = 1000, init = "map" }
    seeds = [0, 1, 2]           # or seed = 0 (default 0)
    [fit.grid]                  # every combination is a fit: "options.X", "config.X.Y",
    "options.progress" = [true, false]   # "sampler.X"

Each fit is identified by a key: the SHA-256 (16 hex digits) of its family, law, options, config,
sampler settings, seed and the data's content hash (the family's ``table_hash``, for loss curves
:func:`bayescpt.core.tables.data_hash` of the table as read), so a fit's output can be recognised as
the result of the same inputs.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import re
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bayescpt.core.config import ConfigError
from bayescpt.core.families import family_class, family_names
from bayescpt.core.outputs import write_outputs
from bayescpt.core.sampler_settings import MAX_SEED, sampler_setting_problem
from bayescpt.core.tables import data_hash, shown
from bayescpt.curves.data.validate import read_curves
from bayescpt.curves.model.laws import law_names

#: the fit families a sweep entry may name (the family table, :mod:`bayescpt.core.families`)
FAMILIES = family_names()
ENTRY_KEYS = {
    "name",
    "family",
    "data",
    "law",
    "options",
    "config",
    "sampler",
    "seed",
    "seeds",
    "grid",
}
SAMPLER_KEYS = {"sampler", "chains", "draws", "tune", "target_accept", "init"}


class SweepError(ValueError):
    """A sweep file that cannot be run as written (one line naming file, entry and key)."""


@dataclass(frozen=True)
class FitSpec:
    """One fit of a sweep: what to fit (``family``, ``data``, ``law``, ``options``, ``config``,
    ``sampler`` overrides, ``seed``), the data's content hash and the output's name."""

    name: str
    family: str
    data: str
    data_hash: str
    law: str | None = None
    options: dict = field(default_factory=dict)
    config: dict = field(default_factory=dict)
    sampler: dict = field(default_factory=dict)
    seed: int = 0

    @property
    def key(self) -> str:
        """What identifies the fit's inputs (not its name or the data file's path)."""
        d = asdict(self)
        d.pop("name")
        d.pop("data")
        text = json.dumps(d, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    @property
    def file_name(self) -> str:
        return f"{self.name}.nc"

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True, default=str)

    @classmethod
    def from_json(cls, text: str) -> FitSpec:
        return cls(**json.loads(text))


@dataclass(frozen=True)
class StudyFit:
    """What every fit of a study (a cross-validation's folds, an SBC's simulations) runs: the
    curves ``law`` with its ``options`` and ``config``, the ``sampler`` overrides (a FitSpec's
    ``sampler`` table: sampler, chains, draws, tune, target_accept, init) and the ``seed``."""

    law: str = "annealing"
    options: dict | None = None
    config: dict | None = None
    sampler: dict | None = None
    seed: int = 0

    def spec(self, name: str, path: Path, table, offset: int = 0) -> FitSpec:
        """The sweep fit ``name`` of curve table ``table``, written to ``path`` (atomically;
        left alone when the file already holds exactly that text), with seed ``seed + offset``.
        """
        text = table.to_csv(index=False)
        if not (path.is_file() and path.read_text(encoding="utf-8") == text):
            write_outputs({path: lambda tmp: Path(tmp).write_text(text, encoding="utf-8")})
        return FitSpec(
            name,
            "curves",
            str(path.resolve()),
            data_hash(read_curves(path)),
            self.law,
            dict(self.options or {}),
            dict(self.config or {}),
            dict(self.sampler or {}),
            int(self.seed + offset),
        )


#: a study of the default curves law, options, config and sampler, seed 0 (frozen: one shared
#: instance)
DEFAULT_STUDY = StudyFit()


def _where(path: Path, i: int, key: str | None = None) -> str:
    return f"{path}, fit entry {i + 1}" + (f", key {key!r}" if key else "")


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.=-]+", "-", str(text)).strip("-")


def _set_path(entry: dict, dotted: str, value, where: str) -> None:
    parts = dotted.split(".")
    if parts[0] not in ("options", "config", "sampler") or len(parts) < 2:
        raise SweepError(
            f"{where}: grid key {dotted!r}; expected 'options.NAME', "
            "'config.KEY[.KEY]' or 'sampler.NAME'"
        )
    target = entry.setdefault(parts[0], {})
    for p in parts[1:-1]:
        target = target.setdefault(p, {})
        if not isinstance(target, dict):
            raise SweepError(
                f"{where}: grid key {dotted!r} goes through a value that is not a table"
            )
    target[parts[-1]] = value


def _merge(base: dict, over: dict) -> dict:
    out = copy.deepcopy(base)
    for k, v in over.items():
        out[k] = (
            _merge(out[k], v)
            if isinstance(v, dict) and isinstance(out.get(k), dict)
            else copy.deepcopy(v)
        )
    return out


def read_sweep(path, read_table=None) -> list[FitSpec]:
    """The fits of the sweep file ``path``, checked. ``read_table(family, path)`` reads a data
    file (for its content hash); the default reads it as the family's ``fit`` command does."""
    path = Path(path)
    if not path.is_file():
        raise SweepError(f"{path}: no such sweep file")
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise SweepError(f"{path}: not a TOML file ({err})") from None
    unknown = set(doc) - {"defaults", "fit"}
    if unknown:
        raise SweepError(
            f"{path}: unknown top-level key(s) {sorted(unknown)}; expected "
            "'defaults' and '[[fit]]' entries"
        )
    entries = doc.get("fit")
    if not isinstance(entries, list) or not entries:
        raise SweepError(f"{path}: no [[fit]] entries")
    defaults = doc.get("defaults", {})
    if not isinstance(defaults, dict):
        raise SweepError(f"{path}: 'defaults' must be a table")
    read_table = read_table or default_reader
    hashes: dict = {}
    specs: list[FitSpec] = []
    for i, raw in enumerate(entries):
        entry = _merge(defaults, raw)
        specs.extend(_entry_specs(path, i, entry, read_table, hashes))
    names = [s.name for s in specs]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise SweepError(
            f"{path}: fit names {dup} appear more than once; give entries their own 'name'"
        )
    # the same inputs under two names would be one fit (its key) whose summary row the second
    # overwrites: refuse rather than lose a row
    first: dict[str, str] = {}
    for s in specs:
        if s.key in first:
            raise SweepError(
                f"{path}: fits {first[s.key]!r} and {s.name!r} have the same inputs "
                "(data, law, options, config, sampler settings and seed), so they "
                "are one fit; drop one or change what should differ"
            )
        first[s.key] = s.name
    return specs


def _entry_specs(path: Path, i: int, entry: dict, read_table, hashes: dict) -> list[FitSpec]:
    """The fits of entry ``i`` of sweep file ``path``: one per grid point and seed, every key
    checked (``read_table`` reads a family's data file; ``hashes`` caches each file's (content
    hash, table))."""
    family, data, law, seeds = _checked_entry(path, i, entry)
    config = _entry_config(path, i, entry)
    if str(data) not in hashes:
        table = read_table(family, data)
        hashes[str(data)] = (family_class(family).table_hash(table), table)
    data_key, table = hashes[str(data)]
    grid = entry.get("grid", {})
    for k, v in grid.items():
        if not isinstance(v, list) or not v:
            raise SweepError(f"{_where(path, i, 'grid.' + k)}: expected a non-empty list")
    base = entry.get("name") or "-".join(_safe(x) for x in (family, law, data.stem) if x)
    out = []
    for combo in itertools.product(*grid.values()) if grid else [()]:
        e, label = _grid_point(path, i, entry, config, grid, combo, (family, law, table))
        for seed in seeds:
            name = "__".join([_safe(base), *label, f"seed{seed}"])
            out.append(
                FitSpec(
                    name,
                    family,
                    str(data),
                    data_key,
                    law,
                    e["options"],
                    e["config"],
                    e["sampler"],
                    int(seed),
                )
            )
    return out


def _checked_entry(path: Path, i: int, entry: dict) -> tuple:
    """(family, data file, law, seeds) of entry ``i``, its keys, family, data file, law, the
    types of its tables, its sampler settings and its seeds checked."""
    bad = set(entry) - ENTRY_KEYS
    if bad:
        raise SweepError(
            f"{_where(path, i, sorted(bad)[0])}: unknown key; expected one of {sorted(ENTRY_KEYS)}"
        )
    family = entry.get("family", "curves")
    if family not in FAMILIES:
        raise SweepError(f"{_where(path, i, 'family')}: {family!r}; expected one of {FAMILIES}")
    if "data" not in entry or not isinstance(entry["data"], str):
        raise SweepError(
            f"{_where(path, i, 'data')}: missing or not a string (a data file, "
            "relative to the sweep file)"
        )
    data = (path.parent / entry["data"]).resolve()
    if not data.is_file():
        raise SweepError(f"{_where(path, i, 'data')}: {data}: no such file")
    law = entry.get("law", "annealing" if family == "curves" else None)
    if family != "curves" and "law" in entry:
        raise SweepError(f"{_where(path, i, 'law')}: only curves entries take a law")
    if family == "curves" and law not in law_names():
        raise SweepError(
            f"{_where(path, i, 'law')}: {shown(law)}; expected one of {', '.join(law_names())}"
        )
    for key in ("options", "sampler", "grid"):
        if key in entry and not isinstance(entry[key], dict):
            raise SweepError(f"{_where(path, i, key)}: expected a table")
    _check_sampler(entry.get("sampler", {}), _where(path, i), "sampler")
    if "seed" in entry and "seeds" in entry:
        raise SweepError(f"{_where(path, i, 'seeds')}: give 'seed' or 'seeds', not both")
    seeds = entry.get("seeds", [entry.get("seed", 0)])
    if (
        not isinstance(seeds, list)
        or not seeds
        or not all(
            isinstance(s, int) and not isinstance(s, bool) and 0 <= s <= MAX_SEED for s in seeds
        )
    ):
        raise SweepError(
            f"{_where(path, i, 'seeds')}: {seeds!r}; expected non-negative integers "
            f"(whole numbers from 0 to {MAX_SEED})"
        )
    return family, data, law, seeds


def _grid_point(
    path: Path, i: int, entry: dict, config: dict, grid: dict, combo: tuple, fit: tuple
) -> tuple[dict, list]:
    """The options, config and sampler of entry ``i`` at grid point ``combo`` (its values of the
    ``grid`` keys) and its name parts; the sampler settings, the law's options and the config
    checked as the fit (``fit``: family, law, data table) will take them."""
    family, law, table = fit
    e = {
        "options": copy.deepcopy(entry.get("options", {})),
        "config": copy.deepcopy(config),
        "sampler": copy.deepcopy(entry.get("sampler", {})),
    }
    label = []
    for k, v in zip(grid, combo):
        _set_path(e, k, v, _where(path, i, "grid"))
        label.append(f"{k.split('.')[-1]}={_safe(v)}")
    # every sampler setting in range before any fit starts (grid values included)
    _check_sampler(e["sampler"], _where(path, i), "sampler", grid)
    if isinstance(e["config"].get("sampler"), dict):
        _check_sampler(e["config"]["sampler"], _where(path, i), "config.sampler", grid, known=False)
    # the law's options and the config (priors, structure) as the fit will take them
    try:
        law_options = fit_law_options(family, law, e["options"], table)
    except (ValueError, TypeError) as err:
        raise SweepError(f"{_where(path, i, 'options')}: {err}") from None
    try:
        check_fit_config(family, law, law_options, e["config"])
    except ConfigError as err:
        given = [f"grid.{k} = {shown(v)}" for k, v in zip(grid, combo) if k.startswith("config.")]
        raise SweepError(
            f"{_where(path, i, 'config')}"
            + (f" (with {', '.join(given)})" if given else "")
            + f": {err}"
        ) from None
    return e, label


def _entry_config(path: Path, i: int, entry: dict) -> dict:
    """Entry ``i``'s ``config``: its table, or the JSON file it names (relative to the sweep file
    ``path``); empty when not given."""
    config = entry.get("config", {})
    if isinstance(config, str):
        cfile = (path.parent / config).resolve()
        try:
            config = json.loads(cfile.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as err:
            raise SweepError(
                f"{_where(path, i, 'config')}: {cfile}: not a readable JSON file ({err})"
            ) from None
    if not isinstance(config, dict):
        raise SweepError(f"{_where(path, i, 'config')}: expected a table or a JSON file name")
    return config


def _check_sampler(settings: dict, where: str, prefix: str, grid=(), known: bool = True):
    """Each sampler setting of an entry (``prefix``: its key) known (unless not ``known``: a
    config's, checked with the config) and in range; a grid's value named by its grid key."""
    bad = set(settings) - SAMPLER_KEYS
    if known and bad:
        key = f"{prefix}.{sorted(bad)[0]}"
        raise SweepError(
            f"{where}, key {(('grid.' + key) if key in grid else key)!r}: unknown "
            f"sampler setting; expected one of {sorted(SAMPLER_KEYS)}"
        )
    for k, v in settings.items():
        problem = sampler_setting_problem(k, v)
        if problem:
            key = f"{prefix}.{k}"
            key = f"grid.{key}" if key in grid else key
            raise SweepError(f"{where}, key {key!r}: {shown(v)}; expected {problem}")


def fit_law_options(family: str, law: str | None, options: dict, table) -> dict:
    """The law options a fit of ``table`` takes (curves: the given ones checked, the rest
    resolved from the table as :func:`bayescpt.parallel.tasks.fit_spec` resolves them; other
    families: none). Raises ValueError for an option the law does not take."""
    return family_class(family).sweep_options(law, options, table)


def check_fit_config(family: str, law: str | None, law_options: dict, config: dict) -> None:
    """Check ``config`` (priors, structure, sampler settings) as the fit of ``family`` (curves:
    ``law`` with ``law_options``) will read it; raises the family's one-line ConfigError (key
    path, value and what is expected), so that a bad config is refused before any fit starts."""
    family_class(family).check_sweep_config(law, law_options, config)


def default_reader(family: str, path):
    """The table a family's ``fit`` command reads from ``path`` (before any thinning)."""
    return family_class(family).read_table(path)
