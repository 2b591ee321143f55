"""A command's output files: the checks before any work (refuse to overwrite without --force, an
output that is an input, a missing folder), writers of tables, text, figures and draws, and
writing several outputs all or none, each atomically (a unique temporary file in the same folder,
synced, then ``os.replace``: a reader never sees half a file); JSON text as standard JSON."""

from __future__ import annotations

import json
from pathlib import Path

from bayescpt.core.outputs import check_not_input, check_output, write_outputs
from bayescpt.core.tables import plain


def refuse_overwrite(path, force: bool) -> None:
    """Raise FileExistsError when ``path`` exists and ``force`` is off (None: nothing to check)."""
    if path is not None and Path(path).exists() and not force:
        raise FileExistsError(f"{path} exists; choose another --out or pass --force to replace it")


def prepare_outputs(force: bool, inputs=None, **outputs) -> None:
    """The checks a command runs on its outputs before any work: each (``outputs`` maps an
    option name, ``_`` for ``-``, to a path or None) is refused when it exists and ``force`` is
    off, when it is one of ``inputs`` (label -> path, or (label, path) pairs) or another output,
    when it exists and is not a regular file, or when its folder is missing or not writable; a
    ValueError / FileExistsError naming the option otherwise."""
    named = {"--" + k.replace("_", "-"): v for k, v in outputs.items()}
    for option, path in named.items():
        check_output(path, option)
    check_not_input(named, inputs or {})  # before "pass --force", which would not help
    for path in named.values():
        refuse_overwrite(path, force)


def csv_writer(df, float_format: str = "%.10g"):
    """A writer for :func:`write_files`: ``df`` as CSV without its index."""
    return lambda tmp: df.to_csv(tmp, index=False, float_format=float_format)


def text_writer(text: str):
    """A writer for :func:`write_files`: ``text`` as UTF-8."""
    return lambda tmp: Path(tmp).write_text(text, encoding="utf-8")


def figure_writer(fig, path, dpi: int = 110):
    """A writer for :func:`write_files`: a matplotlib figure in the format of ``path``'s suffix
    (matplotlib's default format, PNG, when there is none)."""
    import matplotlib

    fmt = Path(path).suffix[1:].lower() or matplotlib.rcParams["savefig.format"]
    return lambda tmp: fig.savefig(tmp, dpi=dpi, format=fmt)


def netcdf_writer(idata):
    """A writer for :func:`write_files`: ArviZ InferenceData as NetCDF."""
    return lambda tmp: idata.to_netcdf(str(tmp))


def write_files(writers: dict, force: bool) -> list[Path]:
    """Write several outputs all or none (``writers``: path -> writer; None paths skipped), each
    atomically (:func:`bayescpt.core.outputs.write_outputs`); refuses to replace an existing
    file unless ``force``. Returns the paths written."""
    writers = {Path(p): w for p, w in writers.items() if p is not None}
    for path in writers:
        refuse_overwrite(path, force)
    return write_outputs(writers)


def write_csv(df, path, force: bool, float_format: str = "%.10g") -> Path:
    """Write a table as CSV to ``path`` atomically (a unique temporary file in the same folder,
    synced, then ``os.replace``), so a reader never sees half a file; refuses to replace an
    existing file unless ``force``. Returns the path."""
    return write_files({path: csv_writer(df, float_format)}, force)[0]


def write_result(a, text: str, fig, idata) -> None:
    """A result command's outputs, all or none: ``text`` (JSON) plus a newline to ``a.out``, the
    figure ``fig`` to ``a.plot`` and the draws ``idata`` to ``a.draws_out`` (each skipped when
    its path, or ``fig`` / ``idata``, is None; an existing file replaced only with ``a.force``);
    the figure is closed either way."""
    try:  # every output or none
        write_files(
            {
                a.out: text_writer(text + "\n"),
                a.plot: None if fig is None else figure_writer(fig, a.plot),
                a.draws_out: None if idata is None else netcdf_writer(idata),
            },
            a.force,
        )
    finally:
        close_figure(fig)


def close_figure(fig) -> None:
    """Release a matplotlib figure (None: nothing)."""
    if fig is not None:
        import matplotlib.pyplot as plt

        plt.close(fig)


def save_figure(fig, path, force: bool, dpi: int = 110) -> Path:
    """Write a matplotlib figure to ``path`` and close it; the format follows the suffix
    (matplotlib's default format, PNG, when there is none).

    Atomic: the image is written under a unique temporary name in the same folder, then moved
    over ``path`` with ``os.replace``, so a reader never sees half a file. Refuses to replace an
    existing file unless ``force``. Returns the path."""
    try:
        return write_files({path: figure_writer(fig, path, dpi)}, force)[0]
    finally:
        close_figure(fig)


def json_text(obj, indent: int = 2) -> str:
    """Standard JSON (RFC 8259): a NaN or infinite float, a value that is legitimately missing,
    becomes ``null``; numpy scalars and arrays become numbers and lists."""
    return json.dumps(plain(obj, nan_as_none=True), indent=indent, allow_nan=False)
