"""The mixture table: validation messages, loaders for the shared files, the bundled copies."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bayescpt.mixture import data as D
from bayescpt.mixture.data import DataError

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "data"
MIX = SHARED / "mixinglaws"

GOOD = """run,model_size,ratio,tokens,val_set,val_role,loss
a,70e6,0.5,0,pile,general,2.87
a,70e6,0.5,1000,pile,general,2.90
a,70e6,0.5,0,py,domain,1.84
a,70e6,0.5,1000,py,domain,1.50
b,70e6,0.25,0,pile,general,2.87
b,70e6,0.25,1000,pile,general,2.88
"""


def write(tmp_path, text):
    p = tmp_path / "mix.csv"
    p.write_text(text)
    return p


def test_good_file(tmp_path):
    df = D.read_mixture(write(tmp_path, GOOD))
    assert list(df.columns) == list(D.COLUMNS)
    assert df["ratio"].dtype == float and df["model_size"].iloc[0] == 70e6
    base = D.baselines(df)
    assert set(base["val_set"]) == {"pile", "py"}
    assert base.set_index("val_set").loc["pile", "loss0"] == pytest.approx(2.87)


@pytest.mark.parametrize(
    "edit, expected",
    [
        (lambda t: t.replace("val_role,loss", "role,loss"), "missing column(s) ['val_role']"),
        (
            lambda t: t.replace("1000,pile,general,2.90", "1000,pile,general,-1"),
            "line 3, run 'a', column 'loss': value '-1'; expected a positive",
        ),
        (
            lambda t: t.replace("1000,pile,general,2.90", "1000,pile,general,nan"),
            "line 3, run 'a', column 'loss'",
        ),
        (
            lambda t: t.replace("1000,pile,general,2.90", "1000,pile,general,"),
            "line 3, run 'a', column 'loss': empty",
        ),
        (lambda t: t.replace("b,70e6,0.25,1000", "b,70e6,25,1000"), "column 'ratio': value '25'"),
        (
            lambda t: t.replace("b,70e6,0.25,1000", "b,70e6,0.3,1000"),
            "run 'b', column 'ratio': several values",
        ),
        (lambda t: t.replace("a,70e6,0.5,1000,pile", "a,70,0.5,1000,pile"), "not millions"),
        (
            lambda t: t.replace("1000,py,domain", "1000,py,Domain"),
            "expected one of ['general', 'domain']",
        ),
        (
            lambda t: t.replace("b,70e6,0.25,1000,pile,general", "b,70e6,0.25,1000,pile,domain"),
            "val_set 'pile', column 'val_role': both",
        ),
        (lambda t: t.replace("a,70e6,0.5,1000,pile", "a,70e6,0.5,-5,pile"), "column 'tokens'"),
        (
            lambda t: t + "a,70e6,0.5,1000,pile,general,2.91\n",
            "1000 appears twice for val_set 'pile'",
        ),
    ],
)
def test_bad_input_one_line(tmp_path, edit, expected):
    with pytest.raises(DataError) as err:
        D.read_mixture(write(tmp_path, edit(GOOD)))
    msg = str(err.value)
    assert expected in msg and "\n" not in msg and str(tmp_path) in msg


def test_no_trained_rows(tmp_path):
    text = "\n".join(line for line in GOOD.splitlines() if ",1000," not in line) + "\n"
    with pytest.raises(DataError, match="no rows with tokens > 0"):
        D.read_mixture(write(tmp_path, text))


def test_2mix_loader_orientation():
    df = D.load_2mix(MIX / "2Mix")
    assert len(df) == 220 and set(df["model_size"]) == {70e6, 160e6}
    final = df[df["tokens"] == 30000].set_index(["model_size", "val_set", "ratio"])["loss"]
    # the domain (Github) loss falls and the general (Pile-CC) loss rises with the Github share
    for size in (70e6, 160e6):
        assert np.all(np.diff(final.loc[(size, "Github")].to_numpy()) < 0)
        assert np.all(np.diff(final.loc[(size, "Pile-CC")].to_numpy()) > 0)


def test_ct_loader_weights_and_baseline():
    df = D.load_ct(MIX / "ct" / "70M.txt", MIX / "valid_weight.json")
    assert sorted(df["ratio"].unique()) == pytest.approx([0.5, 0.625, 0.71484375, 0.75, 0.875])
    base = D.baselines(df).set_index("val_set")["loss0"]
    # the weighted Pile loss of the base checkpoint, recomputed here from the raw file
    w = json.loads((MIX / "valid_weight.json").read_text())
    raw = pd.read_csv(MIX / "ct" / "70M.txt", sep="\t", header=None, names=["c", "v", "loss"])
    raw = raw[raw["c"].str.contains("model_configs")]
    name = raw["v"].str.split("/").str[-1].str.extract(r"valid\.(.+)\.bin$")[0]
    expect = sum(w[n] * loss for n, loss in zip(name, raw["loss"]) if n in w)
    assert base["pile"] == pytest.approx(expect, rel=1e-12)
    assert base["python"] == pytest.approx(1.83812, abs=1e-5)
    assert (df[df["tokens"] == 0].groupby("run").size() == 2).all()


def test_table2_and_bundled_copies_match_loaders():
    t2 = D.load_cmr_table2(SHARED / "paper-figures" / "cmr_table2_domain_loss_vs_ratio.csv")
    assert len(t2) == 20 and set(t2["val_role"]) == {"domain"}
    for name, fresh in [
        ("mixture_cmr_table2.csv", t2),
        ("mixture_2mix.csv", D.load_2mix(MIX / "2Mix")),
        ("mixture_ct70m.csv", D.load_ct(MIX / "ct" / "70M.txt", MIX / "valid_weight.json")),
    ]:
        bundled = D.read_mixture(ROOT / "data" / name)
        assert D.mixture_hash(bundled) == D.mixture_hash(fresh), name
