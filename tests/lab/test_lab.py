"""The CPT lab: config and corpus checks (no torch), and a seconds-long smoke run (torch)."""

import re
import sys
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bayescpt.lab import config as labconfig
from bayescpt.lab.corpora import load_corpus

# module-scoped fixtures: the module's tests run on one xdist worker (--dist loadgroup)
pytestmark = pytest.mark.xdist_group("lab/test_lab")

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "bayescpt" / "lab" / "configs" / "tiny.toml"
GRID = ROOT / "bayescpt" / "lab" / "configs" / "grid.toml"
PTSET = ROOT / "bayescpt" / "lab" / "configs" / "pt_schedules.toml"


def tiny_raw(tmp_path=None):
    """The bundled tiny config, with corpora from this repository (present in every clone)."""
    raw = tomllib.loads(TINY.read_text())
    raw["corpora"]["prose"]["paths"] = [str(ROOT / "*.md"), str(ROOT / "data" / "*.md")]
    raw["corpora"]["python"]["paths"] = [str(ROOT / "bayescpt" / "**" / "*.py")]
    for c in raw["corpora"].values():
        c["block_bytes"], c["val_every"] = 256, 5
    return raw


def toml_text(raw):
    def val(v):
        if isinstance(v, dict):
            return "{" + ", ".join(f"{k} = {val(x)}" for k, x in v.items()) + "}"
        if isinstance(v, list):
            return "[" + ", ".join(val(x) for x in v) + "]"
        if isinstance(v, str):
            return '"' + v + '"'
        return repr(v).lower() if isinstance(v, bool) else repr(v)

    return "\n".join(f"{k} = {val(v)}" for k, v in raw.items()) + "\n"


@pytest.mark.parametrize("path", [TINY, GRID, PTSET])
def test_bundled_configs_parse(path):
    cfg = labconfig.load_config(path)
    assert (cfg.runs or cfg.pt_runs) and set(cfg.sizes_in_use()) <= set(cfg.sizes)


def test_pt_set_holds_out_schedules_of_every_kind_the_issue_names():
    """The unseen-schedule set (issue 16, 3a): three sizes, each with the same three training
    schedules and held-out WSD cooldowns of other lengths and shapes, step decay, cyclic, 1-sqrt,
    and runs longer than any training run."""
    cfg = labconfig.load_config(PTSET)
    assert not cfg.runs and len(cfg.sizes_in_use()) == 3
    held = set(cfg.pt_heldout)
    for size in cfg.sizes_in_use():
        runs = [r for r in cfg.pt_runs if r.size == size]
        train = [r for r in runs if r.schedule not in held]
        test = [r for r in runs if r.schedule in held]
        assert len(train) == 3 and len(test) >= 6
        kinds = {cfg.pt_schedules[r.schedule]["kind"] for r in test}
        shapes = {cfg.pt_schedules[r.schedule].get("shape") for r in test}
        assert {"wsd", "multistep", "cyclic"} <= kinds and "1-sqrt" in shapes
        assert max(r.steps for r in test) >= 2 * max(r.steps for r in train)
    # no schedule of the CPT grid's kinds was a PT-set schedule: the grid ran only rewarmups
    grid = labconfig.load_config(GRID)
    assert {s["kind"] for s in grid.cpt_schedules.values()} == {"rewarmup"}


def pt_raw():
    """The tiny config with PT-only runs instead of its CPT grid."""
    raw = tiny_raw()
    del raw["cpt"]
    raw["pt"] = {
        "schedules": {
            "const": {"kind": "constant", "peak": 3e-3, "warmup_steps": 5},
            "wsd": {"kind": "wsd", "peak": 3e-3, "warmup_steps": 5, "decay_steps": 8},
        },
        "grid": [{"sizes": ["xs"], "schedules": ["const", "wsd"], "steps": [24]}],
        "heldout_schedules": ["wsd"],
    }
    return raw


def test_grid_has_heldout_schedule_and_replay_and_three_sizes():
    cfg = labconfig.load_config(GRID)
    assert len(cfg.sizes_in_use()) >= 3
    assert cfg.heldout_schedules and cfg.heldout_replay
    replays = {r.replay for r in cfg.runs}
    assert set(cfg.heldout_replay) < replays and len(replays - set(cfg.heldout_replay)) >= 2
    scheds = {r.schedule for r in cfg.runs}
    assert set(cfg.heldout_schedules) < scheds


def test_cpt_schedule_rewarms_from_the_pt_learning_rate():
    cfg = labconfig.parse_config(tiny_raw())
    run = next(r for r in cfg.runs if r.transfer == 30 and r.schedule == "cos")
    full = cfg.full_schedule(run)
    pt = cfg.pt_schedule_built()
    assert full.total_steps == 30 + run.steps
    np.testing.assert_array_equal(full.lr[:31], pt.lr)
    assert full.lr[30] == pytest.approx(3e-4)  # WSD PT ended at its final LR
    assert full.lr[31] > full.lr[30] and full.lr[33] == pytest.approx(3e-3)  # 3-step re-warmup
    assert full.lr[-1] == pytest.approx(0.0)  # cosine to 0 at the end


@pytest.mark.parametrize(
    "make, edit, message",
    [
        (
            tiny_raw,
            lambda r: r["cpt"]["schedules"]["cos"].update(kind="zigzag"),
            "schedule kind 'zigzag'",
        ),
        (tiny_raw, lambda r: r["cpt"]["grid"][0].update(sizes=["xl"]), "'sizes' has 'xl'"),
        (tiny_raw, lambda r: r["cpt"]["grid"][0].update(replay=[1.5]), "'replay' = [1.5]"),
        (
            tiny_raw,
            lambda r: r["cpt"]["grid"][0].update(transfers=[31]),
            "expected PT steps in 1..30",
        ),
        (tiny_raw, lambda r: r["corpora"]["python"].update(role="code"), "role 'code'"),
        (
            tiny_raw,
            lambda r: r["cpt"]["schedules"]["cos"].update(peek=1e-3),
            "unexpected keyword argument 'peek'",
        ),
        (tiny_raw, lambda r: r["pt"]["schedule"].update(decay_steps=100), "decay_steps=100"),
        (pt_raw, lambda r: r["pt"]["grid"][0].update(schedules=["cos"]), "'schedules' has 'cos'"),
        (
            pt_raw,
            lambda r: r["pt"]["grid"][0].update(step=[10]),
            "[[pt.grid]] #1: unknown key(s) ['step']",
        ),
        (pt_raw, lambda r: r["pt"]["grid"][0].update(steps=[1]), "'steps' = [1]"),
        (
            pt_raw,
            lambda r: r["pt"].update(heldout_schedules=["cosine"]),
            "'heldout_schedules' has 'cosine'",
        ),
        (pt_raw, lambda r: r["pt"]["schedules"]["wsd"].update(decay_steps=50), "decay_steps=50"),
        (pt_raw, lambda r: r["pt"].update(grid=[]), "no runs; add [[cpt.grid]] blocks"),
        (pt_raw, lambda r: r["pt"].update(schedule_=1), "[pt] unknown key(s) ['schedule_']"),
    ],
)
def test_config_errors_are_one_line(make, edit, message):
    """CPT grids (the tiny config) and PT-only runs (``pt_raw``): one line naming the file."""
    raw = make()
    edit(raw)
    with pytest.raises(ValueError, match=re.escape(message)) as err:
        labconfig.parse_config(raw, source="x.toml")
    assert "\n" not in str(err.value) and str(err.value).startswith("x.toml")


def test_corpus_split_is_deterministic_and_pinned(tmp_path):
    (tmp_path / "a.txt").write_bytes(bytes(range(256)) * 20)
    (tmp_path / "b.txt").write_bytes(b"hello world\n" * 300)
    spec = {"paths": [str(tmp_path / "*.txt")], "block_bytes": 100, "val_every": 4}
    c = load_corpus("t", spec)
    total = 256 * 20 + 2 + 12 * 300 + 2
    assert c.train.size + c.val.size == total
    assert c.val.size == pytest.approx(total / 4, abs=100)
    np.testing.assert_array_equal(
        c.val[:100], np.frombuffer(bytes(range(256)) * 2, np.uint8)[44:144]
    )
    again = load_corpus("t", {**spec, "sha256": c.sha256})
    np.testing.assert_array_equal(again.train, c.train)
    with pytest.raises(ValueError, match="differ from the ones the config was made with"):
        load_corpus("t", {**spec, "sha256": "0" * 64})
    with pytest.raises(ValueError, match="no file matches"):
        load_corpus("t", {"paths": [str(tmp_path / "*.nothing")]})


def test_missing_torch_is_a_one_line_hint(monkeypatch, tmp_path, capsys):
    from bayescpt.cli.main import main

    cfg = tmp_path / "tiny.toml"
    cfg.write_text(toml_text(tiny_raw()))
    monkeypatch.setitem(sys.modules, "torch", None)
    assert main(["lab", "run", str(cfg), "--out", str(tmp_path / "out"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "pip install 'bayescpt[lab]'" in err


# ------------------------------------------------------------------ torch from here on
def _run(tmp_path, name):
    from bayescpt.cli.main import main

    cfg = tmp_path / "tiny.toml"
    cfg.write_text(toml_text(tiny_raw()))
    out = tmp_path / name
    assert main(["lab", "run", str(cfg), "--out", str(out), "--quiet"]) == 0
    return cfg, out


@pytest.fixture(scope="module")
def tiny_runs(tmp_path_factory):
    pytest.importorskip("torch")
    tmp = tmp_path_factory.mktemp("lab")
    return tmp, _run(tmp, "a"), _run(tmp, "b")


def test_same_config_and_seed_give_bitwise_identical_curves(tiny_runs):
    _, (_, a), (_, b) = tiny_runs
    assert (a / "curves.csv").read_bytes() == (b / "curves.csv").read_bytes()


def test_lab_output_is_the_cpt_data_model(tiny_runs):
    from bayescpt.curves.data.validate import read_curves

    _, (cfg_path, out), _ = tiny_runs
    df = pd.read_csv(out / "curves.csv")
    assert list(df.columns) == [
        "run",
        "step",
        "lr",
        "loss",
        "val_set",
        "val_role",
        "phase",
        "replay_ratio",
        "model_size",
    ]
    cfg = labconfig.load_config(cfg_path)
    assert df["run"].nunique() == len(cfg.runs) == 8
    assert set(df["val_role"]) == {"general", "domain"} and set(df["phase"]) == {"pt", "cpt"}
    for run in cfg.runs:
        g = df[df["run"] == run.name]
        gen = g[g["val_role"] == "general"]
        # the LR at every step from 0, PT rows then CPT rows, exactly the configured schedule
        np.testing.assert_array_equal(gen["step"], np.arange(run.transfer + run.steps + 1))
        np.testing.assert_allclose(gen["lr"], cfg.full_schedule(run).lr, rtol=1e-7)
        phases = g["phase"].to_numpy()
        assert (phases[: (g["step"] <= run.transfer).sum()] == "pt").all()
        assert (g.loc[g["step"] > run.transfer, "phase"] == "cpt").all()
        assert (g["replay_ratio"] == run.replay).all() and g["model_size"].nunique() == 1
        # losses on both sets at step 0, every eval_every steps, at the transfer and at the end
        for role in ("general", "domain"):
            steps = set(g.loc[(g["val_role"] == role) & g["loss"].notna(), "step"])
            assert {0, 5, run.transfer, run.transfer + 5, run.transfer + run.steps} <= steps
    assert (df["loss"].dropna() > 0).all()
    read_curves(out / "curves.csv")  # the spine's validator accepts it
    runs = pd.read_csv(out / "runs.csv")
    assert runs["heldout_schedule"].dtype == bool and len(runs) == 8


def test_domain_loss_falls_during_cpt(tiny_runs):
    _, (_, out), _ = tiny_runs
    df = pd.read_csv(out / "curves.csv").dropna(subset=["loss"])
    run = df[df["run"] == "xs/pt30/cos-12/r0"]
    dom = run[run["val_role"] == "domain"].set_index("step")["loss"]
    assert dom[42] < dom[30]


def test_refuses_to_overwrite_without_force(tiny_runs, capsys):
    from bayescpt.cli.main import main

    tmp, (cfg, out), _ = tiny_runs
    assert main(["lab", "run", str(cfg), "--out", str(out), "--quiet"]) == 2
    assert "pass --force" in capsys.readouterr().err


def test_plot_writes_figures(tiny_runs, tmp_path):
    from bayescpt.cli.main import main

    _, (_, out), _ = tiny_runs
    assert main(["lab", "plot", str(out / "curves.csv"), "--out", str(tmp_path)]) == 0
    assert {p.name for p in tmp_path.glob("*.png")} >= {
        "by_schedule.png",
        "by_transfer.png",
        "by_replay_ratio.png",
    }
    table = pd.read_csv(tmp_path / "phenomena.csv")
    assert len(table) == 8 and table["dom_change"].notna().all()


def test_pt_only_runs_share_initialisation_and_batches(tmp_path):
    """Two PT-only runs of one size differ only in their schedule: identical losses while the
    schedules agree (common random numbers), different after the cooldown starts; rows in the
    data model with phase pt; the plot command draws them."""
    pytest.importorskip("torch")
    from bayescpt.cli.main import main
    from bayescpt.curves.data.validate import read_curves

    cfg_path = tmp_path / "pt.toml"
    cfg_path.write_text(toml_text(pt_raw()))
    out = tmp_path / "out"
    assert main(["lab", "run", str(cfg_path), "--out", str(out), "--quiet"]) == 0
    df = read_curves(out / "curves.csv")
    assert set(df["phase"]) == {"pt"} and df["run"].nunique() == 2
    gen = df[df["val_role"] == "general"].dropna(subset=["loss"])
    const = gen[gen["run"] == "xs/pt/const-24"].set_index("step")["loss"]
    wsd = gen[gen["run"] == "xs/pt/wsd-24"].set_index("step")["loss"]
    assert list(const.index) == [0, 5, 10, 15, 20, 24] == list(wsd.index)
    np.testing.assert_array_equal(const.loc[:15], wsd.loc[:15])  # the decay starts after step 16
    assert const[24] != wsd[24]
    runs = pd.read_csv(out / "runs.csv")
    assert runs.set_index("schedule")["heldout_schedule"].to_dict() == {"const": False, "wsd": True}
    assert main(["lab", "plot", str(out / "curves.csv"), "--out", str(tmp_path / "p")]) == 0
    assert {p.name for p in (tmp_path / "p").glob("*.png")} == {"pt_xs.png"}


# ------------------------------------------------------------------ the bundled grid (no torch)
BUNDLED = ROOT / "data" / "lab"


@pytest.fixture(scope="module")
def bundled():
    from bayescpt.lab.phenomena import per_run

    curves = pd.read_csv(BUNDLED / "curves.csv.gz")
    runs = pd.read_csv(BUNDLED / "runs.csv")
    return curves, runs, per_run(curves, runs)


def test_bundled_data_is_what_the_grid_config_wrote():
    import gzip
    import hashlib
    import json

    from bayescpt.curves.data.validate import read_curves

    manifest = json.loads((BUNDLED / "manifest.json").read_text())
    text = gzip.decompress((BUNDLED / "curves.csv.gz").read_bytes())
    assert hashlib.sha256(text).hexdigest() == manifest["curves_sha256"]
    assert manifest["config"] == tomllib.loads(GRID.read_text())
    df = read_curves(BUNDLED / "curves.csv.gz")
    assert df["run"].nunique() == len(labconfig.load_config(GRID).runs) == manifest["runs"]


def test_bundled_pt_set_is_what_its_config_wrote():
    """data/lab_pt: the curves the pt_schedules config wrote (hash, config, runs, held-out flags);
    per size the held-out schedules are the config's, and every run starts from the same
    initialisation (same loss at step 0) and sees the same batches (identical losses while
    the schedules agree: the constant and WSD runs up to the cooldown)."""
    import gzip
    import hashlib
    import json

    from bayescpt.curves.data.validate import read_curves

    root = ROOT / "data" / "lab_pt"
    manifest = json.loads((root / "manifest.json").read_text())
    text = gzip.decompress((root / "curves.csv.gz").read_bytes())
    assert hashlib.sha256(text).hexdigest() == manifest["curves_sha256"]
    assert manifest["config"] == tomllib.loads(PTSET.read_text())
    cfg = labconfig.load_config(PTSET)
    df = read_curves(root / "curves.csv.gz")
    assert df["run"].nunique() == len(cfg.pt_runs) == manifest["runs"] == 30
    runs = pd.read_csv(root / "runs.csv")
    assert set(runs.loc[runs["heldout_schedule"], "schedule"]) == set(cfg.pt_heldout)
    gen = df[(df["val_role"] == "general")].dropna(subset=["loss"])
    for size in ("s", "m", "l"):
        at0 = gen[gen["run"].str.startswith(f"{size}/") & (gen["step"] == 0)]["loss"]
        assert len(at0) == 10 and at0.nunique() == 1
        const = gen[gen["run"] == f"{size}/pt/constant-1200"].set_index("step")["loss"]
        wsd = gen[gen["run"] == f"{size}/pt/wsd_sqrt20-1200"].set_index("step")["loss"]
        np.testing.assert_array_equal(const.loc[:960], wsd.loc[:960])  # cooldown from 971
        assert const[1200] - wsd[1200] > 0.05  # the cooldown's drop


def test_bundled_data_shows_the_cpt_phenomena(bundled):
    _, _, ph = bundled
    no_replay = ph[ph["replay_ratio"] == 0]
    # general loss rises after the switch, domain loss falls, in every run without replay
    assert (no_replay["gen_rise_peak"] > 0.1).all()
    assert (ph["dom_change"] < -0.2).all()
    # annealing: every schedule that decays from the constant run's peak ends below it on the
    # domain set (the lower-peak cos_lo from the stable phase of the smallest model only ties it:
    # -0.001 nats, so it is not part of the claim)
    decaying = ph[ph["anneal_dom"].notna() & ph["schedule"].isin(["cos", "wsd"])]
    assert len(decaying) >= 10 and (decaying["anneal_dom"] > 0.02).all()
    assert (ph.loc[ph["anneal_gen"].notna(), "anneal_gen"] > 0.05).all()
    # replay reduces the general rise, monotonically in the ratio, at every size
    rep = ph[(ph["schedule"] == "cos") & (ph["transfer"] == 900) & (ph["cpt_steps"] == 600)]
    for size, g in rep.groupby("size"):
        rise = g.sort_values("replay_ratio")["gen_rise_peak"].to_numpy()
        assert len(rise) >= 3 and np.all(np.diff(rise) < 0), (size, rise)
