"""Plot functions draw into the figure or axes they are given (or a new one) and write nothing;
the command line's save_figure writes atomically and refuses to overwrite without --force."""

from __future__ import annotations

import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from bayescpt.cli.outputs import save_figure  # noqa: E402
from bayescpt.cpt.plots import plot_plans  # noqa: E402
from bayescpt.curves.evaluate.plots import plot_forest, plot_predictions  # noqa: E402


def _plans():
    return pd.DataFrame(
        {
            "p_within_tolerance": [0.5, 0.95, 1.0],
            "domain_mean": [2.6, 2.7, 2.8],
            "domain_lower": [2.5, 2.6, 2.7],
            "domain_upper": [2.7, 2.8, 2.9],
            "pareto": [True, True, True],
            "chosen": [False, True, False],
            "shape": ["linear", "cosine", "cosine"],
            "peak_lr": [2e-4, 2e-4, 1e-4],
            "steps": [8000, 8000, 8000],
            "transfer": [8000] * 3,
            "replay_ratio": [0.0] * 3,
        }
    )


def _forest():
    return pd.DataFrame(
        {
            "param": ["A", "A", "L0", "L0"],
            "fit": ["a", "b", "a", "b"],
            "group": ["g"] * 4,
            "mean": [1.0, 1.2, 2.0, 2.1],
            "lower": [0.9, 1.0, 1.9, 2.0],
            "upper": [1.1, 1.4, 2.1, 2.2],
        }
    )


def _pred():
    step = np.arange(0, 1000, 100)
    y = 3 - step / 1e3
    return pd.DataFrame(
        {
            "run": "r",
            "step": step,
            "mean": y,
            "lower": y - 0.1,
            "upper": y + 0.1,
            "curve_lower": y - 0.05,
            "curve_upper": y + 0.05,
            "loss": y,
        }
    )


def test_plots_draw_on_what_they_are_given_and_write_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    fig, ax = plt.subplots()
    assert plot_plans(_plans(), tolerance=0.05, risk=0.1, ax=ax) is fig
    assert len(ax.lines) >= 2 and fig.axes == [ax]
    own = plot_plans(_plans(), tolerance=0.05, risk=0.1)
    assert own is not fig and len(own.axes) == 1
    given = plt.figure()
    assert plot_forest(_forest(), fig=given) is given and len(given.axes) == 2
    given = plt.figure()
    assert plot_predictions(_pred(), fig=given) is given and len(given.axes) == 3
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(TypeError):  # the old positional path is refused, not misread
        plot_plans(_plans(), tmp_path / "x.png")
    plt.close("all")


def test_save_figure_is_atomic_and_refuses_to_overwrite(tmp_path):
    path = tmp_path / "plans.png"
    fig = plot_plans(_plans())
    assert save_figure(fig, path, force=False) == path
    assert not plt.fignum_exists(fig.number)  # closed once written
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [p.name for p in tmp_path.iterdir()] == ["plans.png"]  # no temporary left
    size = path.stat().st_size
    with pytest.raises(FileExistsError, match="--force"):
        save_figure(plot_plans(_plans()), path, force=False)
    assert path.stat().st_size == size
    save_figure(plot_plans(_plans().iloc[:2]), path, force=True)
    assert [p.name for p in tmp_path.iterdir()] == ["plans.png"]
    pdf = tmp_path / "plans.pdf"  # the format follows the suffix
    save_figure(plot_plans(_plans()), pdf, force=False)
    assert pdf.read_bytes()[:4] == b"%PDF"
    bare = tmp_path / "plans"  # no suffix: matplotlib's default, PNG
    save_figure(plot_plans(_plans()), bare, force=False)
    assert bare.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plans", "plans.pdf", "plans.png"]
    plt.close("all")


def test_a_failed_save_leaves_neither_file_nor_temporary(tmp_path, monkeypatch):
    fig = plot_plans(_plans())

    def broken(path, **kw):
        with open(path, "wb") as f:
            f.write(b"half")
        raise OSError("disk full")

    monkeypatch.setattr(fig, "savefig", broken)
    with pytest.raises(OSError):
        save_figure(fig, tmp_path / "p.png", force=False)
    assert os.listdir(tmp_path) == []
