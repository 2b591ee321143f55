"""Issue 50, items 11, 15 and 17 (import and --observed parts): nothing a log importer reads is
lost or changed without a word, and every refusal names the file, line, column and value."""

import json
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from bayescpt.cli import demo
from bayescpt.cli.main import main
from bayescpt.core.tables import DataError
from bayescpt.curves.data.observed import read_observed
from bayescpt.curves.data.validate import validate_curves
from bayescpt.datasets.logs import LogWarning, import_logs
from tests.datasets.test_logs import trainer_state, wandb_history, write_tb

README = Path(__file__).resolve().parents[2] / "README.md"


def hf_run(tmp_path, edit, name="exp"):
    out = tmp_path / name
    out.mkdir(parents=True)
    state = json.loads(trainer_state(200))
    edit(state["log_history"])
    (out / "trainer_state.json").write_text(json.dumps(state))
    return out


def run_cli(args, capsys):
    rc = main(args)
    return rc, capsys.readouterr().err


# --- item 11 ---


def test_truncated_event_file_warns_naming_file_and_last_step(tmp_path):
    write_tb(tmp_path / "full" / "r", range(0, 201, 10))
    f = next((tmp_path / "full" / "r").glob("*tfevents*"))
    cut = tmp_path / "cut" / "r" / f.name
    cut.parent.mkdir(parents=True)
    cut.write_bytes(f.read_bytes()[: f.stat().st_size // 2])
    with pytest.warns(LogWarning) as caught:
        df = import_logs(cut.parent, "tensorboard")
    msgs = [str(w.message) for w in caught if "truncated" in str(w.message)]
    assert len(msgs) == 1 and str(cut) in msgs[0] and "\n" not in msgs[0]
    last = int(msgs[0].split("after step ")[1].split()[0])
    assert 0 < last < 200 and df["step"].max() <= last  # the steps that were read


def test_lr_log_shorter_than_losses_warns_naming_run_and_both_ends(tmp_path):
    def drop_late_lr(hist):
        for e in hist:
            if e.get("step", 0) > 100:
                e.pop("learning_rate", None)

    with pytest.warns(
        LogWarning,
        match=r"run 'exp': the learning-rate log 'learning_rate' ends at "
        r"step 100, the losses at step 200",
    ):
        import_logs(hf_run(tmp_path, drop_late_lr), "hf-trainer")


def test_fractional_steps_are_refused_naming_file_row_column_value(tmp_path):
    def frac(hist):
        hist[0]["step"] = 10.7  # log_history[0]

    with pytest.raises(
        DataError,
        match=r"trainer_state\.json, log_history\[0\], column 'step': "
        r"value 10\.7; expected a whole number",
    ):
        import_logs(hf_run(tmp_path, frac), "hf-trainer")
    wandb_history(tmp_path / "w.csv")
    d = pd.read_csv(tmp_path / "w.csv")
    d["train/global_step"] = d["train/global_step"].astype(float)
    d.loc[3, "train/global_step"] = 1.5  # data row 3: line 5
    d.to_csv(tmp_path / "w.csv", index=False)
    with pytest.raises(
        DataError,
        match=r"w\.csv, line 5, column 'train/global_step': value 1\.5; "
        r"expected a whole number",
    ):
        import_logs(tmp_path / "w.csv", "wandb-csv")


def test_hf_text_nan_warns_like_tensorboard_and_true_is_refused(tmp_path):
    def text_nan(hist):
        hist[5]["eval_loss"] = "NaN"  # the step-50 evaluation

    with pytest.warns(
        LogWarning,
        match=r"1 non-finite value\(s\) of 'eval_loss' dropped "
        r"\(step\(s\) 50\)",
    ):
        df = import_logs(hf_run(tmp_path, text_nan, "a"), "hf-trainer")
    assert df["loss"].notna().sum() == 3

    def true(hist):
        hist[5]["eval_loss"] = True

    with pytest.raises(DataError) as err:
        import_logs(hf_run(tmp_path, true, "b"), "hf-trainer")
    msg = str(err.value)
    assert (
        "\n" not in msg
        and "b/trainer_state.json, log_history[5] (step 50), key "
        "'eval_loss': value True is not a number"
        in msg
    )


def test_observed_step_given_twice_is_refused(tmp_path):
    f = tmp_path / "obs.csv"
    f.write_text("run,step,loss\nr,10,3.0\nr,20,2.9\nr,10,2.8\n")
    with pytest.raises(
        DataError,
        match=r"obs\.csv, line 4, run 'r', column 'step', step 10: a "
        r"loss is given twice",
    ):
        read_observed(f)


# --- item 15 ---


def test_import_errors_name_the_file_not_only_the_run(tmp_path, capsys):
    wandb_history(tmp_path / "r.csv")
    d = pd.read_csv(tmp_path / "r.csv")
    d.loc[3, "train/learning_rate"] = -1.0
    d.to_csv(tmp_path / "r.csv", index=False)
    rc, err = run_cli(
        [
            "import",
            str(tmp_path / "r.csv"),
            "--from",
            "wandb-csv",
            "--out",
            str(tmp_path / "o.csv"),
        ],
        capsys,
    )
    line = err.strip().splitlines()[-1]
    assert (
        rc == 2
        and line.startswith(f"bayescpt: error: {tmp_path / 'r.csv'}, run 'r', column 'lr'")
        and "value -1.0;" in line
    )


def test_unreadable_event_file_said_so(tmp_path):
    (tmp_path / "r").mkdir()
    bad = tmp_path / "r" / "events.out.tfevents.1.host"
    bad.write_bytes(b"this is not a TensorBoard event file" * 8)
    with pytest.raises(DataError, match=f"{bad}: not a readable TensorBoard event file"):
        import_logs(tmp_path / "r", "tensorboard")
    bad.write_bytes(b"")
    with pytest.raises(DataError, match="no scalar values in its TensorBoard event file"):
        import_logs(tmp_path / "r", "tensorboard")


def test_string_step_names_column_line_and_value(tmp_path):
    f = tmp_path / "r.csv"
    f.write_text("run,step,lr,loss,val_set\nr,0,0.001,,web\nr,abc,0.001,3.0,web\n")
    with pytest.raises(
        DataError,
        match=r"r\.csv, line 3, column 'step': value 'abc'; expected a "
        r"whole number",
    ):
        import_logs(f, "csv")


def test_same_source_twice_is_said(tmp_path, capsys):
    write_tb(tmp_path / "r", range(0, 61, 10))
    rc, err = run_cli(
        [
            "import",
            str(tmp_path / "r"),
            str(tmp_path / "r"),
            "--from",
            "tensorboard",
            "--out",
            str(tmp_path / "o.csv"),
        ],
        capsys,
    )
    assert rc == 2 and "the same source was given twice" in err and "sort" not in err


def test_empty_observed_file_named(tmp_path):
    f = tmp_path / "prefix.csv"
    f.write_text("")
    with pytest.raises(DataError, match=f"{f}: empty file"):
        read_observed(f)


def test_messages_print_plain_numbers():
    for row, shown in (
        (dict(step=-50, lr=1e-3, loss=3.0), "value -50;"),
        (dict(step=1, lr=-1.0, loss=3.0), "value -1.0;"),
        (dict(step=1, lr=1e-3, loss=-1.0), "value -1.0;"),
    ):
        with pytest.raises(DataError) as err:
            validate_curves(pd.DataFrame([{"run": "r", **row}]), source="x")
        assert shown in str(err.value) and "np." not in str(err.value)


# --- item 17 ---


def test_quick_start_installs_logs_and_missing_tensorboard_names_the_extra(
    tmp_path, capsys, monkeypatch
):
    quick = [
        ln
        for ln in README.read_text().splitlines()
        if "bayescpt demo" in ln and "pip install" in ln
    ]
    assert quick and "'.[nutpie,logs]'" in quick[0]
    write_tb(tmp_path / "r", range(0, 61, 10))
    for mod in ["tensorboard"] + [m for m in sys.modules if m.startswith("tensorboard.")]:
        monkeypatch.setitem(sys.modules, mod, None)  # not installed
    rc, err = run_cli(
        ["import", str(tmp_path / "r"), "--from", "tensorboard", "--out", str(tmp_path / "o.csv")],
        capsys,
    )
    assert rc == 2 and len(err.strip().splitlines()) == 1
    assert "pip install 'bayescpt[logs]'" in err and "pip install -e '.[logs]'" in err


def test_demo_says_it_is_fitting_while_it_fits(tmp_path, monkeypatch):
    class Stop(Exception):
        pass

    lines, during = [], []

    def slow_fit(*args, **kwargs):
        time.sleep(1.0)
        during.extend(lines)
        raise Stop

    monkeypatch.setattr(demo.Fit, "run", slow_fit)
    monkeypatch.setattr(demo, "PROGRESS_AFTER", 0.1, raising=False)
    monkeypatch.setattr(demo, "PROGRESS_EVERY", 0.3, raising=False)
    with pytest.raises(Stop):
        demo.run_demo(tmp_path, log=lines.append)
    assert during[0].startswith("[1/5] fitting")
    ticks = [ln for ln in during[1:] if "fitting" in ln and " s" in ln]
    assert len(ticks) >= 2  # the stage, then a periodic line while it samples
