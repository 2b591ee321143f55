"""The mixing-laws CPT experiment (``mixinglaws/ct/70M.txt``) as curves of the CPT data model.

Pythia-70M's step-20000 checkpoint continued for 10000 steps on Pile + Python code at five Pile
shares (the replay ratio r = 0.125, 0.25, 0.285, 0.375, 0.5), evaluated every 1000 steps on 22
Pile subsets and on Python (Ye et al. 2024, github.com/yegcjs/mixinglaws @8ad3e12).

* ``general`` = the Pile loss, the 22 subsets averaged with ``valid_weight.json``;
  ``domain`` = ``starcoder.python``. The base checkpoint's losses are the PT row at step 20000.
* PT history (published, Biderman et al. 2023): Pythia's schedule, linear warmup over 1 % of
  143000 steps to 1e-3 (the 70M peak), cosine decay to 10 % of the peak at step 143000; the
  checkpoint was taken at step 20000 (LR 9.6e-4). ``model_size`` = 18.9e6 non-embedding
  parameters (Pythia-70M).
* The CPT schedule was **not published**. :data:`CPT_SCHEDULES` are the candidates; which one
  the data support is tested by comparing the CPT law's fit under each (PSIS-LOO,
  ``benchmarks/cpt_mixinglaws.py``), and the default is the winner of that comparison.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from bayescpt.core import schedules as S
from bayescpt.core.tables import DataError
from bayescpt.curves.data.cpt_rows import cpt_rows
from bayescpt.curves.data.validate import validate_curves

PYTHIA_70M = {
    "peak": 1e-3,
    "total": 143000,
    "warmup": 1430,
    "final_frac": 0.1,
    "non_embedding": 18.9e6,
}
TRANSFER = 20000
CPT_STEPS = 10000
#: candidate CPT schedules (10000 steps from Pythia's step-20000 checkpoint)
CPT_SCHEDULES = ("constant", "cosine", "rewarmup-cosine", "continue")
DEFAULT_CPT_SCHEDULE = "cosine"


def pythia_pt(until: int = TRANSFER) -> S.Schedule:
    """Pythia-70M's published PT schedule, steps 0..``until``."""
    p = PYTHIA_70M
    full = S.cosine(
        p["total"],
        p["peak"],
        p["peak"] * p["final_frac"],
        warmup_steps=p["warmup"],
        name="pythia-70m",
    )
    return S.Schedule(full.lr[: until + 1], p["warmup"], f"pythia-70m@{until}")


def cpt_segment(kind: str) -> S.Schedule:
    """The CPT segment under one assumption about the unpublished schedule.

    ``constant``: the checkpoint's LR kept for 10000 steps. ``cosine``: cosine decay from it to 10 %
    of Pythia's peak. ``rewarmup-cosine``: 100-step re-warmup to Pythia's peak 1e-3, then cosine to
    10 %. ``continue``: Pythia's own schedule continued (steps 20000..30000).
    """
    p = PYTHIA_70M
    start = float(pythia_pt().lr[-1])
    if kind == "constant":
        return S.constant(CPT_STEPS, start, name="constant")
    if kind == "cosine":
        return S.cosine(CPT_STEPS, start, p["peak"] * p["final_frac"], name="cosine")
    if kind == "rewarmup-cosine":
        return S.rewarmup(
            CPT_STEPS,
            p["peak"],
            100,
            final=p["peak"] * p["final_frac"],
            start_lr=start,
            name="rewarmup-cosine",
        )
    if kind == "continue":
        full = pythia_pt(TRANSFER + CPT_STEPS)
        return S.Schedule(full.lr[TRANSFER:], 0, "continue")
    raise ValueError(f"CPT schedule {kind!r}; expected one of {CPT_SCHEDULES}")


def read_ct(path) -> pd.DataFrame:
    """The raw file as a table: run ('base' or the mixture dir), step (CPT steps), subset, loss."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: no such file")
    raw = pd.read_csv(path, sep="\t", header=None, names=["ckpt", "valid", "loss"])
    if raw["loss"].isna().any() or not np.all(np.isfinite(raw["loss"])) or (raw["loss"] <= 0).any():
        i = int((raw["loss"].isna() | ~(raw["loss"] > 0)).idxmax())
        raise DataError(
            f"{path}, line {i + 1}, column 'loss': value {raw['loss'][i]!r}; expected a "
            "positive loss"
        )
    parts = raw["ckpt"].str.rstrip("/").str.split("/")
    last, parent = parts.str[-1], parts.str[-2]
    base = last.str.startswith("pythia_")
    out = pd.DataFrame(
        {
            "run": np.where(base, "base", parent),
            "step": np.where(base, 0, pd.to_numeric(last, errors="coerce")),
            "subset": raw["valid"]
            .str.split("/")
            .str[-1]
            .str.replace(".bin", "", regex=False)
            .str.replace("pythia-pile.valid.", "", regex=False),
            "loss": raw["loss"],
        }
    )
    if out["step"].isna().any():
        i = int(out["step"].isna().idxmax())
        raise DataError(f"{path}, line {i + 1}: cannot read the step from {raw['ckpt'][i]!r}")
    return out.groupby(["run", "step", "subset"], as_index=False)["loss"].mean()


def pile_share(run: str) -> float:
    """The Pile (replay) share from a run directory name such as ``70M_ct_1-0.25-0.75``."""
    try:
        return float(run.split("_")[-1].split("-")[1])
    except (IndexError, ValueError):
        raise DataError(f"run {run!r}: cannot read the Pile share from the name") from None


def load_mixinglaws_ct(
    root, cpt_schedule: str = DEFAULT_CPT_SCHEDULE, lr_every: int = 100
) -> pd.DataFrame:
    """The five CPT runs in the CPT data model (``root`` = the ``mixinglaws`` folder).

    Runs are named ``pile=<share>``; each lists the PT schedule (rows every ``lr_every`` steps,
    denser in the warmup), the base checkpoint's two losses at step 20000 (phase ``pt``), then the
    CPT learning rates and losses at 21000..30000 under the assumed ``cpt_schedule``.
    """

    root = Path(root)
    ct = read_ct(root / "ct" / "70M.txt")
    weights = json.loads((root / "valid_weight.json").read_text())
    missing = sorted(set(weights) - set(ct["subset"]))
    if missing:
        raise DataError(f"{root / 'ct' / '70M.txt'}: no losses for Pile subsets {missing}")
    w = pd.Series(weights, dtype=float)
    pile = ct[ct["subset"].isin(w.index)]
    general = (
        pile.assign(wl=pile["loss"] * pile["subset"].map(w)).groupby(["run", "step"])["wl"].sum()
        / w.sum()
    )
    domain = ct[ct["subset"] == "starcoder.python.valid"].set_index(["run", "step"])["loss"]
    pt = pythia_pt()
    seg = cpt_segment(cpt_schedule)
    frames = []
    for run in sorted(r for r in ct["run"].unique() if r != "base"):
        steps = np.sort(ct.loc[ct["run"] == run, "step"].unique()).astype(int)
        loss_steps = np.concatenate([[TRANSFER], TRANSFER + steps])
        losses = {
            "general": np.concatenate(
                [[general[("base", 0)]], general.loc[run].loc[steps].to_numpy()]
            ),
            "domain": np.concatenate(
                [[domain[("base", 0)]], domain.loc[run].loc[steps].to_numpy()]
            ),
        }
        r = pile_share(run)
        frames.append(
            cpt_rows(
                f"pile={r:g}",
                pt,
                seg,
                {"general": "general", "domain": "domain"},
                loss_steps=loss_steps,
                losses=losses,
                model_size=PYTHIA_70M["non_embedding"],
                replay_ratio=r,
                lr_every=lr_every,
            )
        )
    return validate_curves(pd.concat(frames, ignore_index=True), source=root / "ct" / "70M.txt")
