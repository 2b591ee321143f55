"""EvalLogger and the TrainerCallback-shaped hook: files that fit and ``import --from csv`` read."""

from types import SimpleNamespace

import pytest

from bayescpt.cli.main import main
from bayescpt.core.tables import DataError
from bayescpt.curves.data.validate import read_curves
from bayescpt.datasets.integrations import BayescptCallback, EvalLogger
from bayescpt.datasets.logs import LogWarning, import_logs
from bayescpt.datasets.schedule_spec import parse_schedule_spec


def lr_at(step):
    return 1e-3 * min(step / 20, 1.0)


def test_eval_logger_file_is_read_by_fit_and_appended_on_resume(tmp_path):
    path = tmp_path / "evals.csv"
    lg = EvalLogger(path, run="r1", val_role="domain", model_size=25e6)
    lg.log_lr(0, 0.0)
    for s in range(10, 101, 10):
        lg.log(s, 3.0 - s / 100, lr=lr_at(s))
        assert path.read_text().count("\n") == s // 10 + 2  # flushed row by row
    df = read_curves(path)  # fit's reader, as it is
    assert len(df) == 11 and set(df["val_role"]) == {"domain"} and df["model_size"][0] == 25e6
    # a resumed run: a new logger on the same file appends (steps 60.. again), never truncates
    lg2 = EvalLogger(path, run="r1", val_role="domain", model_size=25e6)
    for s in range(60, 121, 20):
        lg2.log(s, 2.0 - s / 1000, lr=lr_at(s))
    assert path.read_text().count("\n") == 12 + 4
    with pytest.warns(LogWarning, match=r"evals\.csv: step\(s\) 60, 80, 100 logged more than once"):
        imp = import_logs(path, "csv")
    got = imp.dropna(subset=["loss"]).set_index("step")["loss"]
    assert got[50] == pytest.approx(2.5) and got[80] == pytest.approx(1.92)
    assert set(imp["run"]) == {"r1"} and set(imp["val_role"]) == {"domain"}
    with pytest.raises(
        DataError,
        match=r"evals\.csv: columns run, step, lr, loss, val_set, "
        r"val_role, model_size; this logger writes",
    ):
        EvalLogger(path, run="r1")  # other columns: refused
    assert path.read_text().count("\n") == 16  # and left untouched


def test_callback_in_a_trainer_like_loop_then_cli_import(tmp_path, capsys):
    """The events in the order a Trainer sends them; LR from on_log, losses from on_evaluate
    (two evaluation sets), then ``bayescpt import --from csv`` and the fit's reader."""
    path = tmp_path / "run" / "evals.csv"
    path.parent.mkdir()
    cb = BayescptCallback(path, run="cpt-1", phase="cpt")
    state = SimpleNamespace(global_step=0, is_world_process_zero=True)
    sched = SimpleNamespace(get_last_lr=lambda: [lr_at(state.global_step)])
    cb.on_init_end(None, state, None)
    cb.on_train_begin(None, state, None, lr_scheduler=sched, optimizer=None)
    for s in range(1, 101):
        state.global_step = s
        cb.on_step_end(None, state, None)
        if s % 10 == 0:
            cb.on_log(
                None,
                state,
                None,
                logs={"loss": 3.1, "learning_rate": lr_at(s), "grad_norm": 1.0, "epoch": s / 100},
            )
        if s % 25 == 0:
            cb.on_evaluate(
                None,
                state,
                None,
                lr_scheduler=sched,
                metrics={
                    "eval_web_loss": 3.0 - s / 200,
                    "eval_code_loss": 2.0 - s / 100,
                    "eval_web_runtime": 1.0,
                    "epoch": s / 100,
                },
            )
    with pytest.raises(AttributeError):
        _ = cb.not_an_event  # only on_* events are no-ops
    other = SimpleNamespace(global_step=200, is_world_process_zero=False)
    cb.on_evaluate(None, other, None, metrics={"eval_web_loss": 9.0})  # not the main process
    out = tmp_path / "data.csv"
    assert main(["import", str(path.parent), "--from", "csv", "--out", str(out)]) == 0
    assert "cpt-1: 8 losses from 'loss@code', 'loss@web'" in capsys.readouterr().err
    df = read_curves(out)
    assert sorted(df["val_set"].unique()) == ["code", "web"] and set(df["phase"]) == {"cpt"}
    web = df[df["val_set"] == "web"].set_index("step")
    assert web["loss"][75] == pytest.approx(2.625) and web["lr"][75] == pytest.approx(1e-3)
    assert 200 not in set(df["step"])
    # an evaluation between LR logs takes the scheduler's LR; LR logs alone are LR-only rows
    assert df[df["step"] == 25]["lr"].iloc[0] == pytest.approx(1e-3)
    assert df[df["step"] == 10]["loss"].isna().all() and df[df["step"] == 10]["lr"].iloc[0] == 5e-4
    assert df[df["step"] == 0]["lr"].iloc[0] == 0.0  # warmup from zero


def test_eval_logger_without_lr_needs_a_schedule(tmp_path, capsys):
    path = tmp_path / "evals.csv"
    lg = EvalLogger(path, run="r")
    for s in (50, 100, 150):
        lg.log(s, 3.0 - s / 1000)
    with pytest.raises(
        DataError,
        match=r"evals\.csv: no learning-rate tag \(lr\); give "
        r"--lr-tag or --schedule; tags: loss@default",
    ):
        import_logs(path, "csv")
    sched = parse_schedule_spec("cosine:peak=1e-3,total=150,warmup=10")
    df = import_logs(path, "csv", schedule=sched)
    for s, v in df.set_index("step")["lr"].items():
        assert v == pytest.approx(sched.lr[s])
    assert df["step"].min() == 0 and df["loss"].notna().sum() == 3
    with pytest.raises(ValueError, match="non-negative whole number"):
        lg.log(2.5, 3.0)
