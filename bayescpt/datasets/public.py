"""Loaders for published loss-curve releases, each returning the tidy loss-curve table
(:mod:`bayescpt.curves.data.table`) validated.

* :func:`load_multipowerlaw`: the multi-power-law authors' curves (Luo et al. 2025, arXiv
  2503.12811; github.com/thu-yao-01-luo/MultiPowerLaw, ``loss_curve_repo/csv_{25,100,400}/``):
  training loss at 25M/100M/400M over their LR schedules, after a linear warmup of
  :data:`MULTIPOWER_WARMUP_STEPS` steps to the peak 3e-4.
* :func:`load_olmo_ladder`: the OLMo-2 model ladder's logged validation losses
  (``eval/<set>-validation/CrossEntropyLoss``, nats), one run per size and token multiple.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from bayescpt.core.tables import DataError
from bayescpt.curves.data.validate import validate_curves

MULTIPOWER_WARMUP_STEPS = 2160


def load_multipowerlaw(root, sizes=("25", "100", "400"), schedules=None) -> pd.DataFrame:
    """The multi-power-law curves (Luo et al. 2025): ``root/csv_{size}/{schedule}.csv``.

    Runs are named ``"{size}M/{schedule}"`` and get ``model_size = size * 1e6`` (the authors'
    nominal sizes). Each run gets a row ``step=0, lr=0`` without loss, since the files start at the
    end of the 2160-step linear warmup from zero (and a row ``step=2160`` at the peak where the file
    starts later).
    """
    root = Path(root)
    frames = []
    for size in sizes:
        folder = root / f"csv_{size}"
        if not folder.is_dir():
            raise DataError(f"{folder}: no such folder (expected csv_{{25,100,400}} under {root})")
        names = schedules or sorted(p.stem for p in folder.glob("*.csv"))
        for name in names:
            path = folder / f"{name}.csv"
            if not path.exists():
                raise DataError(f"{path}: no such file")
            f = pd.read_csv(path)
            missing = {"step", "lr", "loss"} - set(f.columns)
            if missing:
                raise DataError(f"{path}: missing column(s) {sorted(missing)}")
            head = [pd.DataFrame({"step": [0], "lr": [0.0], "loss": [np.nan]})]
            if f["step"].iloc[0] > MULTIPOWER_WARMUP_STEPS:
                head.append(
                    pd.DataFrame(
                        {
                            "step": [MULTIPOWER_WARMUP_STEPS],
                            "lr": [f["lr"].iloc[0]],
                            "loss": [np.nan],
                        }
                    )
                )
            f = pd.concat(head + [f])
            f.insert(0, "run", f"{size}M/{name}")
            f["model_size"] = float(size) * 1e6
            frames.append(f)
    return validate_curves(pd.concat(frames, ignore_index=True), source=root)


OLMO_LOSS = re.compile(r"^eval/(.+)-validation/CrossEntropyLoss$")


def load_olmo_ladder(root, val_sets=("c4_en",), runs=None) -> pd.DataFrame:
    """The OLMo-2 ladder (``peteish-moreeval``): one file per run, e.g. ``190M-1xC.csv``.

    ``val_sets`` are names such as ``c4_en``, ``pile``, ``dolma_stack`` (``"all"`` for every one).
    ``model_size`` is the nominal size in the file name. A row ``step=0, lr=0`` is added, assuming
    the ladder's linear warmup from zero.
    """
    root = Path(root)
    paths = sorted(root.glob("*.csv")) if runs is None else [root / f"{r}.csv" for r in runs]
    if not paths:
        raise DataError(f"{root}: no run files")
    frames = []
    for path in paths:
        if not path.exists():
            raise DataError(f"{path}: no such file")
        f = pd.read_csv(path)
        if "_step" not in f.columns or "optim/learning_rate_group0" not in f.columns:
            raise DataError(f"{path}: missing column '_step' or 'optim/learning_rate_group0'")
        avail = {OLMO_LOSS.match(c).group(1): c for c in f.columns if OLMO_LOSS.match(c)}
        wanted = list(avail) if val_sets == "all" else list(val_sets)
        for vs in wanted:
            if vs not in avail:
                raise DataError(f"{path}: no validation set {vs!r}; available {sorted(avail)}")
        m = re.match(r"^(\d+(?:\.\d+)?)([MB])", path.stem)
        if not m:
            raise DataError(f"{path}: cannot read the model size from the file name")
        size = float(m.group(1)) * (1e6 if m.group(2) == "M" else 1e9)
        for vs in wanted:
            g = pd.DataFrame(
                {
                    "run": path.stem,
                    "step": f["_step"],
                    "lr": f["optim/learning_rate_group0"],
                    "loss": f[avail[vs]],
                    "val_set": vs,
                    "model_size": size,
                }
            )
            g = g.dropna(subset=["loss"])
            zero = pd.DataFrame(
                {
                    "run": [path.stem],
                    "step": [0],
                    "lr": [0.0],
                    "loss": [np.nan],
                    "val_set": [vs],
                    "model_size": [size],
                }
            )
            frames.append(pd.concat([zero, g], ignore_index=True))
    return validate_curves(pd.concat(frames, ignore_index=True), source=root)
