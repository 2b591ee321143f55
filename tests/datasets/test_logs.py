"""Importing training logs written by the real writers (torch's SummaryWriter, Lightning's
CSVLogger, the Trainer's trainer_state.json layout, a W&B history export)."""

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from bayescpt.cli.main import main
from bayescpt.core.tables import DataError
from bayescpt.curves.data.validate import read_curves
from bayescpt.datasets.logs import (
    LogWarning,
    RunLabels,
    import_logs,
    read_hf_trainer,
    read_lightning_csv,
    read_tensorboard,
)
from bayescpt.datasets.schedule_spec import parse_schedule_spec

PEAK = 1e-3


def lr_at(step, warmup=20, total=200):
    """The test runs' schedule: linear warmup from 0, then linear decay to 0 at ``total``."""
    return PEAK * step / warmup if step <= warmup else PEAK * (total - step) / (total - warmup)


def loss_at(step):
    return 2.0 + 3.0 * (1 + step) ** -0.3


def write_tb(path, steps, lr=True, shift=0.0, loss_tag="eval/loss"):
    tb = pytest.importorskip("torch.utils.tensorboard")
    w = tb.SummaryWriter(str(path))
    for s in steps:
        if lr:
            w.add_scalar("train/learning_rate", lr_at(s), s)
        if s % 20 == 0 and s > 0:
            w.add_scalar(loss_tag, loss_at(s) + shift, s)
        w.add_scalar("train/grad_norm", 1.0, s)
    w.close()


def test_tensorboard_restart_later_value_wins(tmp_path):
    run = tmp_path / "run-a"
    write_tb(run, range(0, 101, 10))
    write_tb(run, range(60, 201, 10), shift=-0.5)  # resumed from step 60: 60..100 again
    assert (read_tensorboard(run)["tag"] == "eval/loss").sum() == 5 + 8
    with pytest.warns(
        LogWarning,
        match=r"run-a.*step\(s\) 60, 70, 80, 90, 100 logged more "
        r"than once.*later",
    ):
        df = import_logs(run, "tensorboard")
    assert set(df["run"]) == {"run-a"}
    got = df.dropna(subset=["loss"]).set_index("step")["loss"]
    assert list(got.index) == list(range(20, 201, 20))
    assert got[40] == pytest.approx(loss_at(40), abs=1e-6)  # before the restart
    assert got[80] == pytest.approx(loss_at(80) - 0.5, abs=1e-6)  # logged twice: the later
    lr = df.set_index("step")["lr"]
    assert lr[10] == pytest.approx(lr_at(10)) and lr[0] == 0.0
    assert str(lr[20]) == "0.001"  # float32 shown as logged


def test_tensorboard_missing_lr_takes_schedule_spec(tmp_path):
    write_tb(tmp_path / "r", range(0, 201, 10), lr=False)
    with pytest.raises(
        DataError,
        match=r"r: no learning-rate tag.*--schedule.*tags: eval/loss, "
        r"train/grad_norm",
    ):
        import_logs(tmp_path / "r", "tensorboard")
    sched = parse_schedule_spec("linear:peak=1e-3,warmup=20,total=200")
    df = import_logs(tmp_path / "r", "tensorboard", schedule=sched)
    # the schedule's knots (0, end of warmup, end) and every loss step, at the schedule's LR
    assert {0, 20, 200} <= set(df["step"])
    for s, v in df.set_index("step")["lr"].items():
        assert v == pytest.approx(lr_at(s), abs=1e-12)
    too_short = parse_schedule_spec("constant:peak=1e-3,total=100")
    with pytest.raises(DataError, match="up to step 200, after the end of the --schedule"):
        import_logs(tmp_path / "r", "tensorboard", schedule=too_short)


def test_wrong_tag_names_file_and_lists_tags(tmp_path):
    write_tb(tmp_path / "r", range(0, 41, 10))
    with pytest.raises(DataError) as err:
        import_logs(tmp_path / "r", "tensorboard", loss_tag="val/ppl")
    msg = str(err.value)
    assert "\n" not in msg and str(tmp_path / "r") in msg
    assert "no loss tag val/ppl; tags: eval/loss, train/grad_norm, train/learning_rate" in msg


def test_glob_of_runs_named_by_directory(tmp_path):
    for name, shift in (("wsd-a", 0.0), ("wsd-b", 0.1), ("other", 0.2)):
        write_tb(tmp_path / name, range(0, 61, 10), shift=shift)
    df = import_logs(str(tmp_path / "wsd-*"), "tensorboard", labels=RunLabels(model_size=25e6))
    assert sorted(df["run"].unique()) == ["wsd-a", "wsd-b"]
    b = df[(df["run"] == "wsd-b") & (df["step"] == 40)]
    assert b["loss"].iloc[0] == pytest.approx(loss_at(40) + 0.1, abs=1e-6)
    assert (df["model_size"] == 25e6).all()
    # a folder of run folders: one run each, named by the sub-folder
    assert df["run"].nunique() < import_logs(tmp_path, "tensorboard")["run"].nunique() == 3


def trainer_state(steps_done, log_every=10, eval_every=50):
    """A trainer_state.json as ``TrainerState.save_to_json`` writes it (asdict, sorted keys)."""
    hist = []
    for s in range(log_every, steps_done + 1, log_every):
        hist.append(
            {
                "epoch": s / 100,
                "grad_norm": 0.9,
                "learning_rate": lr_at(s),
                "loss": loss_at(s) + 0.05,
                "step": s,
            }
        )
        if s % eval_every == 0:
            hist.append(
                {
                    "epoch": s / 100,
                    "eval_loss": loss_at(s),
                    "eval_runtime": 1.5,
                    "eval_samples_per_second": 100.0,
                    "eval_steps_per_second": 12.5,
                    "step": s,
                }
            )
    hist.append(
        {
            "epoch": steps_done / 100,
            "step": steps_done,
            "total_flos": 1e12,
            "train_loss": 3.1,
            "train_runtime": 50.0,
            "train_samples_per_second": 80.0,
            "train_steps_per_second": 2.0,
        }
    )
    state = {
        "best_global_step": None,
        "best_metric": None,
        "best_model_checkpoint": None,
        "epoch": steps_done / 100,
        "eval_steps": eval_every,
        "global_step": steps_done,
        "is_hyper_param_search": False,
        "is_local_process_zero": True,
        "is_world_process_zero": True,
        "log_history": hist,
        "logging_steps": log_every,
        "max_steps": 200,
        "num_input_tokens_seen": 0,
        "num_train_epochs": 2,
        "save_steps": 100,
        "stateful_callbacks": {},
        "total_flos": 1e12,
        "train_batch_size": 8,
        "trial_name": None,
        "trial_params": None,
    }
    return json.dumps(state, indent=2, sort_keys=True) + "\n"


def test_hf_trainer_state_latest_checkpoint(tmp_path):
    out = tmp_path / "my-run"
    for n in (100, 200):
        (out / f"checkpoint-{n}").mkdir(parents=True)
        (out / f"checkpoint-{n}" / "trainer_state.json").write_text(trainer_state(n))
    raw = read_hf_trainer(out / "checkpoint-200" / "trainer_state.json")
    assert {"eval_loss", "loss", "learning_rate", "train_loss"} <= set(raw["tag"])
    df = import_logs(out, "hf-trainer", labels=RunLabels(val_role="general", phase="pt"))
    assert set(df["run"]) == {"my-run"}
    ev = df.dropna(subset=["loss"]).set_index("step")["loss"]
    assert list(ev.index) == [50, 100, 150, 200]  # eval_loss, not train loss
    assert ev[150] == pytest.approx(loss_at(150))
    lr = df.set_index("step")["lr"]
    assert lr[0] == 0.0 and lr[30] == pytest.approx(lr_at(30))  # warmup from zero added
    train = import_logs(out, "hf-trainer", loss_tag="loss")
    assert train["loss"].notna().sum() == 20


def lightning_log(csv_logs, root, version, first, last, shift=0.0):
    lg = csv_logs.CSVLogger(str(root), name="cpt-run", version=version)
    for s in range(first, last + 1, 10):
        lg.log_metrics({"lr-AdamW": lr_at(s)}, step=s)
        if s % 40 == 0 and s > 0:
            lg.log_metrics({"val_loss": loss_at(s) + shift}, step=s)
    lg.save()
    lg.finalize("success")
    return lg


def test_lightning_csvlogger_resume_and_lr_monitor(tmp_path):
    csv_logs = pytest.importorskip("lightning_fabric.loggers")
    # a run resumed from its step-80 checkpoint: the new session logs to version_1
    lightning_log(csv_logs, tmp_path, None, 0, 120)
    lightning_log(csv_logs, tmp_path, None, 80, 200, shift=-0.3)
    v1 = tmp_path / "cpt-run" / "version_1" / "metrics.csv"
    assert (read_lightning_csv(v1)["tag"] == "val_loss").sum() == 4
    with pytest.warns(
        LogWarning,
        match=r"version_0/metrics\.csv, .*version_1/metrics\.csv: "
        r"step\(s\) 80, 90, 100, 110, 120 logged more than once",
    ):
        df = import_logs(tmp_path / "cpt-run", "lightning-csv")
    assert set(df["run"]) == {"cpt-run"}
    got = df.dropna(subset=["loss"]).set_index("step")["loss"]
    assert list(got.index) == [40, 80, 120, 160, 200]
    assert got[40] == pytest.approx(loss_at(40)) and got[80] == pytest.approx(loss_at(80) - 0.3)
    assert df.set_index("step")["lr"][150] == pytest.approx(lr_at(150))


def test_lightning_one_file_rewound_steps(tmp_path):
    """One logger that goes back to an earlier step (a restart inside the process) writes both
    values of those steps into one metrics.csv."""
    csv_logs = pytest.importorskip("lightning_fabric.loggers")
    lg = csv_logs.CSVLogger(str(tmp_path), name="cpt-run", version=0)
    for first, last, shift in ((0, 120, 0.0), (80, 200, -0.3)):
        for s in range(first, last + 1, 10):
            lg.log_metrics({"lr-AdamW": lr_at(s)}, step=s)
            if s % 40 == 0 and s > 0:
                lg.log_metrics({"val_loss": loss_at(s) + shift}, step=s)
        lg.save()
    path = tmp_path / "cpt-run" / "version_0" / "metrics.csv"
    assert (read_lightning_csv(path)["tag"] == "val_loss").sum() == 3 + 4
    with pytest.warns(LogWarning, match=r"version_0/metrics\.csv: step\(s\) 80, 90"):
        df = import_logs(path, "lightning-csv", run="r")
    got = df.dropna(subset=["loss"]).set_index("step")["loss"]
    assert got[120] == pytest.approx(loss_at(120) - 0.3)


def wandb_history(path):
    """A W&B run history export: one row per wandb.log call (the HF integration's keys)."""
    rows, k = [], 0
    for s in range(10, 201, 10):
        rows.append(
            {
                "_step": k,
                "_runtime": 1.0 * k,
                "_timestamp": 1.7e9 + k,
                "train/global_step": s,
                "train/loss": loss_at(s) + 0.05,
                "train/learning_rate": lr_at(s),
                "train/epoch": s / 100,
            }
        )
        k += 1
        if s % 50 == 0:
            rows.append(
                {
                    "_step": k,
                    "_runtime": 1.0 * k,
                    "_timestamp": 1.7e9 + k,
                    "train/global_step": s,
                    "eval/loss": loss_at(s),
                    "eval/runtime": 2.0,
                }
            )
            k += 1
    pd.DataFrame(rows).to_csv(path, index=False)


def test_wandb_history_uses_global_step(tmp_path):
    (tmp_path / "sweep").mkdir()
    wandb_history(tmp_path / "sweep" / "run-7.csv")
    df = import_logs(tmp_path / "sweep" / "run-7.csv", "wandb-csv", run="lr1e-3")
    ev = df.dropna(subset=["loss"]).set_index("step")["loss"]
    assert list(ev.index) == [50, 100, 150, 200]  # the trainer's steps, not W&B's _step
    assert ev[100] == pytest.approx(loss_at(100))
    assert set(df["run"]) == {"lr1e-3"}


def test_cli_import_end_to_end_then_fit_reader(tmp_path, capsys):
    write_tb(tmp_path / "logs" / "a", range(0, 201, 10))
    write_tb(tmp_path / "logs" / "b", range(0, 121, 10), lr=False)
    write_tb(tmp_path / "logs" / "b", range(100, 201, 10), lr=False)  # restart at 100
    out = tmp_path / "data.csv"
    assert (
        main(
            [
                "import",
                str(tmp_path / "logs" / "a"),
                "--from",
                "tensorboard",
                "--out",
                str(out),
                "--val-set",
                "web",
                "--val-role",
                "general",
                "--phase",
                "cpt",
            ]
        )
        == 0
    )
    df = read_curves(out)
    assert set(df["val_role"]) == {"general"} and set(df["phase"]) == {"cpt"}
    assert df["loss"].notna().sum() == 10 and set(df["val_set"]) == {"web"}
    before = out.read_text()
    assert (
        main(
            [
                "import",
                str(tmp_path / "logs" / "b"),
                "--from",
                "tensorboard",
                "--out",
                str(out),
                "--schedule",
                "linear:peak=1e-3,warmup=20,total=200",
            ]
        )
        == 2
    )
    assert "exists" in capsys.readouterr().err and out.read_text() == before  # no --force
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the CLI prints warnings, raises none
        rc = main(
            [
                "import",
                str(tmp_path / "logs" / "b"),
                "--from",
                "tensorboard",
                "--out",
                str(out),
                "--force",
                "--schedule",
                "linear:peak=1e-3,warmup=20,total=200",
            ]
        )
    err = capsys.readouterr().err
    assert rc == 0
    assert [ln for ln in err.splitlines() if "warning" in ln] == [
        f"warning: {tmp_path / 'logs' / 'b'}: step(s) 100, 110, 120 logged more than once (a "
        "restart); kept the later values"
    ]
    df = read_curves(out)
    assert set(df["run"]) == {"b"} and df["loss"].notna().sum() == 10
    assert not list(tmp_path.glob(".data.csv.*"))  # no temporary file left behind
    assert (
        main(
            [
                "import",
                str(tmp_path / "logs" / "b"),
                "--from",
                "tensorboard",
                "--out",
                str(tmp_path / "x.csv"),
            ]
        )
        == 2
    )
    assert "no learning-rate tag" in capsys.readouterr().err and not (tmp_path / "x.csv").exists()


@pytest.mark.parametrize(
    "spec, at",
    [
        (
            "wsd:peak=3e-4,warmup=2000,total=100000,decay=0.2",
            {0: 0, 1000: 1.5e-4, 80000: 3e-4, 90000: 1.5e-4, 100000: 0},
        ),
        ("cosine:peak=1e-3,total=100,final=1e-4", {0: 1e-3, 50: 5.5e-4, 100: 1e-4}),
        ("constant:peak=2e-4,total=10,warmup=5", {0: 0, 5: 2e-4, 10: 2e-4}),
    ],
)
def test_schedule_spec(spec, at):
    s = parse_schedule_spec(spec)
    for step, v in at.items():
        assert s.lr[step] == pytest.approx(v, abs=1e-12)


def test_schedule_toml_and_errors(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text(
        '[schedule]\nshape = "multistep"\npeak = 1e-3\ntotal = 100\n'
        "milestones = [50, 80]\nfactors = [0.1, 0.01]\n"
    )
    s = parse_schedule_spec(f)
    assert np.allclose(s.lr[[1, 49, 50, 79, 80]], [1e-3, 1e-3, 1e-4, 1e-4, 1e-5])
    for bad, msg in (
        ("wsd:peak=3e-4,total=100", "exactly one of decay"),
        ("cosine:peak=3e-4,total=100,decy=0.1", r"unknown key\(s\) decy"),
        ("sqrt:peak=3e-4,total=100", "shape 'sqrt'"),
        ("cosine:total=100", "missing peak"),
    ):
        with pytest.raises(ValueError, match=msg):
            parse_schedule_spec(bad)


def test_same_names_get_their_paths_and_nan_losses_dropped(tmp_path):
    """Runs of one name in two folders keep apart; a NaN loss (an overflow) is dropped, said."""
    write_tb(tmp_path / "x" / "run", range(0, 61, 10))
    write_tb(tmp_path / "y" / "run", range(0, 61, 10), shift=0.1)
    df = import_logs([tmp_path / "x" / "run", tmp_path / "y" / "run"], "tensorboard")
    assert sorted(df["run"].unique()) == ["x/run", "y/run"]
    out = tmp_path / "hf" / "exp-1"
    out.mkdir(parents=True)
    state = json.loads(trainer_state(200))
    state["log_history"][5]["eval_loss"] = float("nan")  # the step-50 evaluation
    (out / "trainer_state.json").write_text(json.dumps(state))
    with pytest.warns(
        LogWarning,
        match=r"1 non-finite value\(s\) of 'eval_loss' dropped "
        r"\(step\(s\) 50\)",
    ):
        df = import_logs(tmp_path / "hf", "hf-trainer")  # a folder of run folders
    assert set(df["run"]) == {"exp-1"} and df["loss"].notna().sum() == 3


def test_file_sources_are_named_after_the_run_not_the_file(tmp_path):
    """W&B exports by file name; a checkpoint's trainer_state.json by the output folder."""
    (tmp_path / "sweep").mkdir()
    for name in ("lr1e-3", "lr3e-4"):
        wandb_history(tmp_path / "sweep" / f"{name}.csv")
    df = import_logs(str(tmp_path / "sweep" / "*.csv"), "wandb-csv")
    assert sorted(df["run"].unique()) == ["lr1e-3", "lr3e-4"]
    for out in ("a/exp", "b/exp"):
        (tmp_path / out / "checkpoint-200").mkdir(parents=True)
        (tmp_path / out / "checkpoint-200" / "trainer_state.json").write_text(trainer_state(200))
    one = import_logs(tmp_path / "a/exp/checkpoint-200/trainer_state.json", "hf-trainer")
    assert set(one["run"]) == {"exp"}
    two = import_logs(str(tmp_path / "*/exp/checkpoint-200/trainer_state.json"), "hf-trainer")
    assert sorted(two["run"].unique()) == ["a/exp", "b/exp"]
