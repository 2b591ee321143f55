"""Input and option validation: nothing is read or accepted silently wrong (issue 15)."""

import json

import pytest

from bayescpt.cli.main import main
from bayescpt.core.tables import DataError
from bayescpt.curves.data import validate as data
from tests.helpers import GOOD, write


def one_line_error(capsys, argv) -> str:
    """Run the CLI expecting exit 2 with one error line on stderr; return that line."""
    try:
        rc = main([str(x) for x in argv])
    except SystemExit as exc:  # argparse's own errors
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
    with pytest.raises(
        DataError, match=r"line 4, run 'a', column 'loss': value .* is not a number"
    ):
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


@pytest.mark.parametrize(
    "argv, option",
    [
        (["mixture", "cmr", "MIX.nc", "--tolerance", "nan", "--tokens", "1e4"], "--tolerance"),
        (["mixture", "cmr", "MIX.nc", "--tolerance", "0.05", "--tokens", "inf"], "--tokens"),
        (
            ["mixture", "cmr", "MIX.nc", "--tolerance", "0.05", "--tokens", "1e4", "--prob", "1.5"],
            "--prob",
        ),
        (["predict", "FIT.nc", "--schedule", "S.csv", "--out", "P.csv", "--prob", "1.5"], "--prob"),
        (["predict", "FIT.nc", "--schedule", "S.csv", "--out", "P.csv", "--prob", "NaN"], "--prob"),
        (["compare", "A.nc", "B.nc", "--prob", "0"], "--prob"),
        (
            [
                "plan",
                "FIT.nc",
                "--pt",
                "PT.csv",
                "--tolerance",
                "0.02",
                "--steps",
                "100",
                "--out",
                "P.csv",
                "--quantile",
                "2",
            ],
            "--quantile",
        ),
        (
            [
                "plan",
                "FIT.nc",
                "--pt",
                "PT.csv",
                "--tolerance",
                "0.02",
                "--steps",
                "100",
                "--out",
                "P.csv",
                "--prob",
                "0",
            ],
            "--prob",
        ),
        (
            [
                "plan",
                "FIT.nc",
                "--pt",
                "PT.csv",
                "--tolerance",
                "0.02",
                "--steps",
                "100",
                "--out",
                "P.csv",
                "--peak-lrs",
                "",
            ],
            "--peak-lrs",
        ),
        (
            [
                "plan",
                "FIT.nc",
                "--pt",
                "PT.csv",
                "--tolerance",
                "0.02",
                "--steps",
                "100",
                "--out",
                "P.csv",
                "--peak-lrs",
                "1e-4,nan",
            ],
            "--peak-lrs",
        ),
        (
            [
                "plan",
                "FIT.nc",
                "--pt",
                "PT.csv",
                "--tolerance",
                "0.02",
                "--steps",
                "100",
                "--out",
                "P.csv",
                "--points",
                "0",
            ],
            "--points",
        ),
        (
            [
                "plan",
                "FIT.nc",
                "--pt",
                "PT.csv",
                "--tolerance",
                "inf",
                "--steps",
                "100",
                "--out",
                "P.csv",
            ],
            "--tolerance",
        ),
        (["fit", "D.csv", "--law", "annealing", "--out", "F.nc", "--chains", "0"], "--chains"),
        (["fit", "D.csv", "--law", "annealing", "--out", "F.nc", "--draws=-1"], "--draws"),
        (
            ["fit", "D.csv", "--law", "annealing", "--out", "F.nc", "--max-points", "-5"],
            "--max-points",
        ),
        (["fit", "D.csv", "--law", "annealing", "--out", "F.nc", "--chains", "2.5"], "--chains"),
        (["hparams", "predict", "HP.nc", "--n-params", "-1e8"], "--n-params"),
        (["hparams", "predict", "HP.nc", "--n-params", "4e8", "--tokens", "1_0e9"], "--tokens"),
    ],
)
def test_bad_option_values_name_the_option(tmp_path, monkeypatch, capsys, argv, option):
    monkeypatch.chdir(tmp_path)
    line = one_line_error(capsys, argv)
    assert f"argument {option}" in line


def test_good_option_values_still_parse():
    from bayescpt.cli.main import build_parser

    a = build_parser().parse_args(
        ["hparams", "predict", "HP.nc", "--n-params", "4e8", "--init-loss", "2.5", "--prob", "0.8"]
    )
    assert (a.n_params, a.init_loss, a.prob) == (4e8, 2.5, 0.8)
    a = build_parser().parse_args(
        [
            "plan",
            "F.nc",
            "--pt",
            "P.csv",
            "--tolerance",
            "0.02",
            "--steps",
            "100,2e3",
            "--out",
            "o.csv",
            "--peak-lrs",
            "1e-4,",
        ]
    )
    assert a.steps == [100, 2000] and a.peak_lrs == [1e-4]


def test_json_outputs_are_standard_json():
    import numpy as np

    from bayescpt.cli.outputs import json_text

    text = json_text({"a": float("nan"), "b": [np.float64(1.5), float("inf")], "c": np.int64(3)})
    assert json.loads(text) == {"a": None, "b": [1.5, None], "c": 3}
    assert "NaN" not in text and "Infinity" not in text


# --- item 9: all-zero learning rate, directories as files ---------------------------------------


def test_a_run_with_all_zero_learning_rate_is_rejected(tmp_path):
    text = GOOD + "b,0,0,\nb,100,0,4.0\nb,200,0,3.9\n"
    with pytest.raises(
        DataError,
        match=r"line 6, run 'b', column 'lr': the learning rate is 0 "
        r"on every row",
    ):
        data.read_curves(write(tmp_path, text))


def test_a_directory_as_data_or_config_is_one_line(tmp_path, capsys):
    line = one_line_error(
        capsys, ["fit", tmp_path, "--law", "annealing", "--out", tmp_path / "f.nc"]
    )
    assert "a directory, not a CSV file" in line and str(tmp_path) in line
    line = one_line_error(capsys, ["lab", "run", tmp_path, "--out", tmp_path / "o"])
    assert "a directory, not a TOML config file" in line


# --- items 10 and 13: lab configs with wrong types name the file and the key --------------------


def _tiny_toml(tmp_path, edit):
    import tomllib
    from pathlib import Path

    from tests.lab.test_lab import TINY, toml_text

    raw = tomllib.loads(Path(TINY).read_text())
    edit(raw)
    return write(tmp_path, toml_text(raw), "bad.toml")


@pytest.mark.parametrize(
    "edit, key",
    [
        (lambda r: r.update(sizes=5), "'sizes' = 5"),
        (lambda r: r.update(corpora="x"), "'corpora' = 'x'"),
        (lambda r: r["cpt"]["grid"][0].update(replay=0.5), "'replay' = 0.5"),
        (lambda r: r.update(threads=-4), "'threads' = -4"),
        (lambda r: r.update(threads=0), "'threads' = 0"),
        (lambda r: r.update(seed="x"), "'seed' = 'x'"),
        (lambda r: r["train"].update(beta1="a"), "'beta1' = 'a'"),
        (lambda r: r["cpt"].update(heldout_replay=0.5), "'heldout_replay' = 0.5"),
    ],
)
def test_lab_config_type_errors_name_file_and_key(tmp_path, capsys, edit, key):
    path = _tiny_toml(tmp_path, edit)
    line = one_line_error(capsys, ["lab", "run", path, "--out", tmp_path / "o"])
    assert "bad.toml" in line and key in line


def test_lab_config_not_utf8_is_one_line(tmp_path, capsys):
    path = tmp_path / "bad.toml"
    path.write_bytes(b'name = "\xff\xfe"\n')
    line = one_line_error(capsys, ["lab", "run", path, "--out", tmp_path / "o"])
    assert "bad.toml" in line and "UTF-8" in line


# --- item 12: errors after parsing carry the line; plain values; huge steps ---------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        (
            GOOD.replace("a,300,1e-4,3.2", "a,150,1e-4,3.2"),
            r"line 5, run 'a', column 'step', step 150: comes after step 200",
        ),
        (
            GOOD.replace("a,300,1e-4,3.2", "a,200,3e-4,3.2"),
            r"line 5, run 'a', column 'step', step 200: duplicated step",
        ),
        (
            "run,step,lr,loss,model_size\na,0,0,,25e6\na,10,1e-4,3.0,25e6\na,20,1e-4,2.9,26e6\n",
            r"line 4, run 'a', column 'model_size': several values \[2.5e\+07, 2.6e\+07\]; a run",
        ),
        (
            "run,step,lr,loss,val_set\na,0,0,,x\na,10,1e-4,3.0,x\na,10,2e-4,3.1,y\n",
            r"line 4, run 'a', column 'lr', step 10: different learning rates \[0.0001, 0.0002\]",
        ),
        (
            GOOD.replace("a,300,", "a,99999999999999999999,"),
            r"line 5, run 'a', column 'step': value '99999999999999999999'; "
            r"expected a non-negative "
            r"whole number of optimizer steps \(below 2\*\*53\)",
        ),
        (
            GOOD + "b,0,1e-4,3.0\n",
            r"line 6, run 'b', column 'step', step 0: the run has rows at step 0 only",
        ),
    ],
)
def test_errors_after_parsing_carry_the_line(tmp_path, text, expected):
    with pytest.raises(DataError, match=expected) as info:
        data.read_curves(write(tmp_path, text))
    assert "np.float" not in str(info.value) and "\n" not in str(info.value)


def test_a_single_row_run_during_a_fit_names_the_file(tmp_path, capsys):
    path = write(tmp_path, GOOD + "b,0,1e-4,3.0\n")
    line = one_line_error(capsys, ["fit", path, "--law", "annealing", "--out", tmp_path / "f.nc"])
    assert "curves.csv, line 6, run 'b'" in line and "to predict" not in line


# --- item 7: loss plausibility ------------------------------------------------------------------


def _curve(losses, run="a"):
    rows = [f"{run},0,0,"] + [f"{run},{100 * (k + 1)},3e-4,{v}" for k, v in enumerate(losses)]
    return "\n".join(rows) + "\n"


SMOOTH = [round(3.5 + 1.0 / (k + 1) + 0.01 * ((-1) ** k), 4) for k in range(30)]


@pytest.mark.parametrize("value", ["250", "1e308", "350.2"])
def test_impossible_loss_scale_is_an_error_with_the_line(tmp_path, value):
    losses = [str(v) for v in SMOOTH]
    losses[10] = value
    text = "run,step,lr,loss\n" + _curve(losses)
    with pytest.raises(
        DataError,
        match=r"line 13, run 'a', column 'loss', step 1100: value .* "
        r"nats is not a language-model loss",
    ):
        data.read_curves(write(tmp_path, text))


def test_loss_outlier_is_a_warning_line_naming_the_place(tmp_path, capsys):
    from bayescpt.core.tables import DataWarning

    losses = list(SMOOTH)
    losses[12] = 7.5
    path = write(tmp_path, "run,step,lr,loss\n" + _curve(losses))
    with pytest.warns(
        DataWarning,
        match=r"curves.csv, line 15, run 'a', column 'loss', step "
        r"1300: value 7.5 is far from its neighbours",
    ):
        df = data.read_curves(path)
    assert df["loss"].iloc[13] == 7.5  # warned, not changed
    # the command line prints it as one line
    import warnings

    from bayescpt.cli.main import _show_warning

    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        warnings.simplefilter("always", DataWarning)
        data.read_curves(path)
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("bayescpt: warning: ") and "line 15" in err[0]


def test_smooth_steps_and_ramps_are_not_outliers(tmp_path):
    import warnings

    from bayescpt.core.tables import DataWarning

    # a fast fall at the start and a drop of 1 nat at a transfer: no warning
    losses = [9.0, 6.0, 4.5] + SMOOTH[:12] + [v - 1.0 for v in SMOOTH[12:]]
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)
        df = data.read_curves(write(tmp_path, "run,step,lr,loss\n" + _curve(losses)))
    assert df["loss"].notna().sum() == len(losses)


def test_json_config_with_nan_is_refused(tmp_path, capsys):
    cfg = write(tmp_path, '{"priors": {"L0": {"mu": NaN}}}', "cfg.json")
    line = one_line_error(
        capsys,
        [
            "fit",
            write(tmp_path, GOOD),
            "--law",
            "annealing",
            "--out",
            tmp_path / "f.nc",
            "--config",
            cfg,
        ],
    )
    assert "cfg.json: NaN in the config" in line


def test_negative_exponent_number_reaches_its_option_check(capsys):
    line = one_line_error(capsys, ["hparams", "predict", "HP.nc", "--n-params", "-1e8"])
    assert "argument --n-params: '-1e8': expected a finite number > 0" in line


def test_a_zero_tolerance_is_a_valid_mixture_question():
    """CMR with tolerance 0 (the general loss may not rise at all) is the paper's definition and
    the README's example; option checks refuse only non-finite values there."""
    from bayescpt.cli.main import build_parser

    a = build_parser().parse_args(
        ["mixture", "cmr", "MIX.nc", "--tolerance", "0", "--tokens", "1e4"]
    )
    assert a.tolerance == 0.0
