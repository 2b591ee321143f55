"""Where a schedule starts (issue 50, item 4): one rule for tidy CSVs, every log importer and
``predict --schedule``.

A table that starts at step 1 (as torch's SummaryWriter and most trainers log) and the same
schedule written from step 0 with ``lr = 0`` must give the same schedule, warmup and predictions
(max difference 0); a table that starts later is refused in one line; a log sampled every N steps
gets its step-0 row by the same rule (:func:`bayescpt.core.schedules.start_lr`).
"""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bayescpt.cli.main import main
from bayescpt.core import schedules as S
from bayescpt.core.tables import DataError
from bayescpt.curves.data.table import schedules_of
from bayescpt.curves.data.validate import read_curves
from bayescpt.datasets.logs import import_logs

T, PEAK, EVERY = 400, 3e-4, 20
# trained at 25M/100M/400M, peak LR 3e-4
REF_FIT = str(Path(__file__).resolve().parents[2] / "models" / "annealing_multipowerlaw.nc")

SCHEDULES = {
    "warmup-constant": S.constant(T, PEAK, warmup_steps=40),
    "warmup-cosine": S.cosine(T, PEAK, final=3e-5, warmup_steps=40),
    "warmup-wsd": S.wsd(T, PEAK, decay_steps=80, warmup_steps=25),
    "wsd": S.wsd(T, PEAK, decay_steps=80),
    "constant": S.constant(T, PEAK),
}


def loss_at(step):
    return 3.0 + 2.0 * (1 + step) ** -0.3


def table(sched: S.Schedule, first: int) -> pd.DataFrame:
    """A row per step from ``first`` on, a loss every ``EVERY`` steps (as a log writes it)."""
    steps = np.arange(first, sched.total_steps + 1)
    loss = np.where(steps % EVERY == 0, loss_at(steps), np.nan)
    loss[steps == 0] = np.nan
    return pd.DataFrame(
        {"run": "r", "step": steps, "lr": sched.lr[steps], "loss": loss, "model_size": 100e6}
    )


def write(df, path):
    df.to_csv(path, index=False)
    return path


@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_step_one_and_step_zero_tables_give_the_same_schedule(tmp_path, name):
    sched = SCHEDULES[name]
    zero = schedules_of(read_curves(write(table(sched, 0), tmp_path / "zero.csv")))["r"]
    one = schedules_of(read_curves(write(table(sched, 1), tmp_path / "one.csv")))["r"]
    assert np.array_equal(zero.lr, sched.lr)
    assert np.array_equal(one.lr, zero.lr)  # eta_0 by the rule
    assert one.warmup_steps == zero.warmup_steps == sched.warmup_steps
    for warmup in S.WARMUP_CONVENTIONS:
        for a, b in zip(one.areas(warmup=warmup), zero.areas(warmup=warmup)):
            assert np.array_equal(a, b)


def test_the_rule_for_eta_0():
    assert S.start_lr([1e-5, 2e-5, 3e-5]) == 0.0  # a warmup in progress: from zero
    assert S.start_lr([3e-4, 3e-4, 2e-4]) == 3e-4  # no rise: the first LR held back
    assert S.start_lr([3e-4]) == 3e-4
    # a step-1 warmup is detected as one (it was not: eta_0 = eta_1 hid the rise)
    assert S.from_points([1, 2, 10], [1e-5, 2e-5, 1e-4]).warmup_steps == 10


def test_a_table_starting_later_is_refused_in_one_line(tmp_path):
    path = write(table(SCHEDULES["warmup-constant"], 10), tmp_path / "late.csv")
    with pytest.raises(DataError) as err:
        read_curves(path)
    msg = str(err.value)
    assert "\n" not in msg and "late.csv" in msg and "'r'" in msg and "step 10" in msg
    assert "from step 0 or 1" in msg


@pytest.mark.parametrize("name", ["warmup-constant", "warmup-cosine", "constant"])
def test_predict_schedule_from_step_one_or_zero_is_the_same_prediction(tmp_path, name):
    sched = SCHEDULES[name]
    preds = {}
    for first in (0, 1):
        sched_csv = write(table(sched, first).drop(columns="loss"), tmp_path / f"s{first}.csv")
        out = tmp_path / f"p{first}.csv"
        assert (
            main(
                ["predict", REF_FIT, "--schedule", str(sched_csv), "--out", str(out), "--seed", "4"]
            )
            == 0
        )
        p = pd.read_csv(out)
        preds[first] = p[p["step"] >= 1].reset_index(drop=True)
    assert preds[0]["mean"].notna().sum() > 300
    pd.testing.assert_frame_equal(preds[0], preds[1], check_exact=True)  # max difference 0


# ---- the importers: a log from step 1 (every step's LR) or one sampled every N steps

SCHED = SCHEDULES["warmup-wsd"]


def tb_log(root, every):
    tb = pytest.importorskip("torch.utils.tensorboard")
    w = tb.SummaryWriter(str(root / "r"))
    for s in range(every, T + 1, every):
        w.add_scalar("train/learning_rate", SCHED.lr[s], s)
        if s % EVERY == 0:
            w.add_scalar("eval/loss", loss_at(s), s)
    w.close()
    return root / "r"


def hf_log(root, every):
    hist = []
    for s in range(every, T + 1, every):
        hist.append({"learning_rate": float(SCHED.lr[s]), "loss": loss_at(s) + 0.05, "step": s})
        if s % EVERY == 0:
            hist.append({"eval_loss": loss_at(s), "step": s})
    (root / "r").mkdir()
    (root / "r" / "trainer_state.json").write_text(
        json.dumps({"log_history": hist, "global_step": T})
    )
    return root / "r"


def wandb_log(root, every):
    rows = []
    for s in range(every, T + 1, every):
        rows.append(
            {"_step": len(rows), "train/global_step": s, "train/learning_rate": SCHED.lr[s]}
        )
        if s % EVERY == 0:
            rows.append({"_step": len(rows), "train/global_step": s, "eval/loss": loss_at(s)})
    pd.DataFrame(rows).to_csv(root / "r.csv", index=False)
    return root / "r.csv"


def lightning_log(root, every):
    csv_logs = pytest.importorskip("lightning_fabric.loggers")
    lg = csv_logs.CSVLogger(str(root), name="r", version=0)
    for s in range(every, T + 1, every):
        lg.log_metrics({"lr-AdamW": float(SCHED.lr[s])}, step=s)
        if s % EVERY == 0:
            lg.log_metrics({"val_loss": loss_at(s)}, step=s)
    lg.save()
    lg.finalize("success")
    return root / "r"


def csv_log(root, every):
    steps = np.arange(every, T + 1, every)
    loss = np.where(steps % EVERY == 0, loss_at(steps), np.nan)
    pd.DataFrame({"run": "r", "step": steps, "lr": SCHED.lr[steps], "loss": loss}).to_csv(
        root / "r.csv", index=False
    )
    return root / "r.csv"


WRITERS = {
    "tensorboard": tb_log,
    "hf-trainer": hf_log,
    "wandb-csv": wandb_log,
    "lightning-csv": lightning_log,
    "csv": csv_log,
}


@pytest.mark.parametrize("fmt", sorted(WRITERS))
def test_every_importer_keeps_the_warmup_of_a_log_from_step_one(tmp_path, fmt):
    src = WRITERS[fmt](tmp_path, every=1)
    df = import_logs(src, fmt, run="r")
    assert df["step"].min() == 1  # nothing added
    got = schedules_of(df)["r"]
    # the same log with its step-0 row written out is the same schedule, exactly
    zero = pd.concat([df.head(1).assign(step=0, lr=0.0, loss=np.nan), df], ignore_index=True)
    assert np.array_equal(schedules_of(zero)["r"].lr, got.lr)
    assert got.warmup_steps == SCHED.warmup_steps == 25
    # TensorBoard stores float32 scalars; the others keep every digit
    assert np.allclose(got.lr, SCHED.lr, rtol=1e-6 if fmt == "tensorboard" else 1e-15, atol=0)
    # and through the file the importer writes, read back as fit reads it
    out = tmp_path / "imported.csv"
    assert main(["import", str(src), "--from", fmt, "--run", "r", "--out", str(out)]) == 0
    back = schedules_of(read_curves(out))["r"]
    assert back.warmup_steps == 25 and np.allclose(back.lr, got.lr, rtol=1e-9, atol=0)


@pytest.mark.parametrize("fmt", sorted(WRITERS))
def test_every_importer_starts_a_sampled_log_by_the_same_rule(tmp_path, fmt):
    """Logged every 5 steps from step 5 (a Trainer's logging_steps): the step-0 row is lr = 0,
    as for a warmup written out, so the linear warmup comes back to rounding."""
    src = WRITERS[fmt](tmp_path, every=5)
    got = schedules_of(import_logs(src, fmt, run="r"))["r"]
    assert got.lr[0] == 0.0 and got.warmup_steps == SCHED.warmup_steps
    assert np.allclose(got.lr, SCHED.lr, rtol=1e-6 if fmt == "tensorboard" else 1e-12, atol=0)
