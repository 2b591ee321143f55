"""Input and option validation: nothing is read or accepted silently wrong (issue 15)."""

import json
import math

import pytest

from bayescpt.cli.main import main
from bayescpt.core.tables import DataError
from bayescpt.curves import data

GOOD = """run,step,lr,loss
a,0,0,
a,100,3e-4,4.0
a,200,3e-4,3.5
a,300,1e-4,3.2
"""


def write(tmp_path, text, name="curves.csv"):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def one_line_error(capsys, argv) -> str:
    """Run the CLI expecting exit 2 with one error line on stderr; return that line."""
    try:
        rc = main([str(x) for x in argv])
    except SystemExit as exc:   # argparse's own errors
        rc = exc.code
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2, err
    assert err and "Traceback" not in "\n".join(err)
    return err[-1]


# --- item 4: duplicated columns, plain decimal numbers only --------------------------------------

def test_duplicated_column_is_an_error_not_the_first_one(tmp_path):
    text = "run,step,lr,loss,loss\na,0,0,,\na,100,3e-4,4.0,9.0\na,200,3e-4,3.5,9.0\n"
    with pytest.raises(DataError, match=r"curves.csv, line 1, column 'loss': .*appears twice"):
        data.read_curves(write(tmp_path, text))
    spaced = "run,step,lr,loss, loss\na,0,0,,\na,100,3e-4,4.0,9.0\n"
    with pytest.raises(DataError, match="appears twice"):
        data.read_curves(write(tmp_path, spaced))


@pytest.mark.parametrize("bad", ["3_5", "\u0663.\u0665", "\uff13.5", "0x3", "3.5.1", "3,5"])
def test_only_plain_decimal_numbers(tmp_path, bad):
    text = GOOD.replace("a,200,3e-4,3.5", f'a,200,3e-4,"{bad}"')
    with pytest.raises(DataError, match=r"line 4, run 'a', column 'loss': value .* is not a number"):
        data.read_curves(write(tmp_path, text))


def test_rows_with_a_wrong_number_of_fields_name_the_line(tmp_path):
    extra = GOOD.replace("a,200,3e-4,3.5", "a,200,3e-4,3.5,7")
    with pytest.raises(DataError, match=r"curves.csv, line 4: 5 fields; the header has 4"):
        data.read_curves(write(tmp_path, extra))
    short = GOOD.replace("a,200,3e-4,3.5", "a,200,3e-4")
    with pytest.raises(DataError, match=r"curves.csv, line 4: 3 fields; the header has 4"):
        data.read_curves(write(tmp_path, short))


def test_blank_lines_keep_the_line_numbers(tmp_path):
    text = GOOD.replace("a,100,3e-4,4.0\n", "a,100,3e-4,4.0\n\n").replace("3.2", "x")
    with pytest.raises(DataError, match=r"line 6, run 'a', column 'loss'"):
        data.read_curves(write(tmp_path, text))
    df = data.read_curves(write(tmp_path, GOOD.replace("\n", "\n\n")))
    assert list(df["loss"].iloc[1:]) == [4.0, 3.5, 3.2]


def test_plain_numbers_still_read(tmp_path):
    text = GOOD.replace("3e-4,3.5", "+3E-4,.35e1").replace("4.0", " 4.")
    df = data.read_curves(write(tmp_path, text))
    assert list(df["loss"].iloc[1:]) == [4.0, 3.5, 3.2] and df["lr"].iloc[2] == 3e-4


# --- item 5 and 13: option values are finite and in range; errors name the option --------------

@pytest.mark.parametrize("argv, option", [
    (["mixture", "cmr", "MIX.nc", "--tolerance", "nan", "--tokens", "1e4"], "--tolerance"),
    (["mixture", "cmr", "MIX.nc", "--tolerance", "0.05", "--tokens", "inf"], "--tokens"),
    (["mixture", "cmr", "MIX.nc", "--tolerance", "0.05", "--tokens", "1e4", "--prob", "1.5"],
     "--prob"),
    (["predict", "FIT.nc", "--schedule", "S.csv", "--out", "P.csv", "--prob", "1.5"], "--prob"),
    (["predict", "FIT.nc", "--schedule", "S.csv", "--out", "P.csv", "--prob", "NaN"], "--prob"),
    (["compare", "A.nc", "B.nc", "--prob", "0"], "--prob"),
    (["plan", "FIT.nc", "--pt", "PT.csv", "--tolerance", "0.02", "--steps", "100", "--out",
      "P.csv", "--quantile", "2"], "--quantile"),
    (["plan", "FIT.nc", "--pt", "PT.csv", "--tolerance", "0.02", "--steps", "100", "--out",
      "P.csv", "--prob", "0"], "--prob"),
    (["plan", "FIT.nc", "--pt", "PT.csv", "--tolerance", "0.02", "--steps", "100", "--out",
      "P.csv", "--peak-lrs", ""], "--peak-lrs"),
    (["plan", "FIT.nc", "--pt", "PT.csv", "--tolerance", "0.02", "--steps", "100", "--out",
      "P.csv", "--peak-lrs", "1e-4,nan"], "--peak-lrs"),
    (["plan", "FIT.nc", "--pt", "PT.csv", "--tolerance", "0.02", "--steps", "100", "--out",
      "P.csv", "--points", "0"], "--points"),
    (["plan", "FIT.nc", "--pt", "PT.csv", "--tolerance", "inf", "--steps", "100", "--out",
      "P.csv"], "--tolerance"),
    (["fit", "D.csv", "--law", "annealing", "--out", "F.nc", "--chains", "0"], "--chains"),
    (["fit", "D.csv", "--law", "annealing", "--out", "F.nc", "--draws=-1"], "--draws"),
    (["fit", "D.csv", "--law", "annealing", "--out", "F.nc", "--max-points", "-5"],
     "--max-points"),
    (["fit", "D.csv", "--law", "annealing", "--out", "F.nc", "--chains", "2.5"], "--chains"),
    (["hparams", "predict", "HP.nc", "--n-params", "-1e8"], "--n-params"),
    (["hparams", "predict", "HP.nc", "--n-params", "4e8", "--tokens", "1_0e9"], "--tokens"),
])
def test_bad_option_values_name_the_option(tmp_path, monkeypatch, capsys, argv, option):
    monkeypatch.chdir(tmp_path)
    line = one_line_error(capsys, argv)
    assert f"argument {option}" in line


def test_good_option_values_still_parse():
    from bayescpt.cli.main import build_parser

    a = build_parser().parse_args(["hparams", "predict", "HP.nc", "--n-params", "4e8",
                                   "--init-loss", "2.5", "--prob", "0.8"])
    assert (a.n_params, a.init_loss, a.prob) == (4e8, 2.5, 0.8)
    a = build_parser().parse_args(["plan", "F.nc", "--pt", "P.csv", "--tolerance", "0.02",
                                   "--steps", "100,2e3", "--out", "o.csv", "--peak-lrs", "1e-4,"])
    assert a.steps == [100, 2000] and a.peak_lrs == [1e-4]


def test_json_outputs_are_standard_json():
    from bayescpt.cli.common import json_text

    import numpy as np

    text = json_text({"a": float("nan"), "b": [np.float64(1.5), float("inf")], "c": np.int64(3)})
    assert json.loads(text) == {"a": None, "b": [1.5, None], "c": 3}
    assert "NaN" not in text and "Infinity" not in text
