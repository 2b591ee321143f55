"""Training one model size of the lab: seeded streams of random training windows, fixed
validation windows, the model with its AdamW optimizer (:class:`Trainer`), and the pre-training
loop with its evaluations and checkpoints. Needs torch (handed in by :mod:`bayescpt.lab.runner`).
"""

from __future__ import annotations

import copy
import hashlib

import numpy as np

from bayescpt.lab.config import LabConfig
from bayescpt.lab.model import byte_lm


def derive_seed(seed: int, *purpose) -> int:
    """A 63-bit seed from the config seed and a purpose (stable across machines and versions)."""
    text = "/".join(map(str, (seed,) + purpose)).encode()
    return int.from_bytes(hashlib.sha256(text).digest()[:8], "little") >> 1


class Batches:
    """Random windows of ``seq_len + 1`` bytes from a training stream, one seeded stream each."""

    def __init__(self, data: np.ndarray, seq_len: int, seed: int):
        self.data, self.width = data, seq_len + 1
        self.rng = np.random.Generator(np.random.PCG64(seed))

    def take(self, n: int) -> np.ndarray:
        starts = self.rng.integers(0, self.data.size - self.width + 1, size=n)
        return self.data[starts[:, None] + np.arange(self.width)]


def fixed_windows(data: np.ndarray, seq_len: int, n: int) -> np.ndarray:
    """``n`` evenly spaced validation windows (no randomness), shape (n, seq_len + 1)."""
    starts = np.linspace(0, data.size - seq_len - 1, n).astype(np.int64)
    return data[starts[:, None] + np.arange(seq_len + 1)]


class Trainer:
    """One model size: the model, its AdamW optimizer and evaluation on the validation sets."""

    def __init__(self, torch, cfg: LabConfig, size: str, val: dict):
        self.torch, self.cfg, tr = torch, cfg, cfg.train
        torch.manual_seed(derive_seed(cfg.seed, "init", size))
        spec = cfg.sizes[size]
        self.model = byte_lm(
            torch, spec["d_model"], spec["n_layers"], spec["n_heads"], tr["seq_len"]
        )
        params = list(self.model.parameters())
        groups = [
            {"params": [p for p in params if p.dim() >= 2], "weight_decay": tr["weight_decay"]},
            {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
        ]
        self.opt = torch.optim.AdamW(
            groups, lr=0.0, betas=(tr["beta1"], tr["beta2"]), eps=tr["eps"]
        )
        self.val = {name: torch.from_numpy(w.astype(np.int64)) for name, w in val.items()}

    def step(self, batch: np.ndarray, lr: float) -> float:
        torch = self.torch
        for g in self.opt.param_groups:
            g["lr"] = lr
        loss = self.model.loss(torch.from_numpy(batch.astype(np.int64)))
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        if self.cfg.train["grad_clip"]:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.train["grad_clip"])
        self.opt.step()
        return loss.item()

    def evaluate(self) -> dict:
        with self.torch.no_grad():
            return {name: float(self.model.loss(x)) for name, x in self.val.items()}

    def snapshot(self):
        return copy.deepcopy(self.model.state_dict()), copy.deepcopy(self.opt.state_dict())

    def restore(self, snap):
        self.model.load_state_dict(copy.deepcopy(snap[0]))
        self.opt.load_state_dict(copy.deepcopy(snap[1]))


def check_finite(loss: float, what: str, step: int, lr: float):
    """Refuse a diverged training loss (naming ``what``, the step and its learning rate)."""
    if not np.isfinite(loss):
        raise ValueError(
            f"{what} diverged at step {step} (training loss {loss}, lr {lr:g}); "
            "lower the peak learning rate or raise grad_clip in the config"
        )


def pretrain(
    trainer: Trainer,
    lr: np.ndarray,
    last: int,
    batches: Batches,
    B: int,
    every: int,
    marks: set,
    losses: dict,
    what: str,
    snapshot: bool = False,
) -> dict:
    """Steps 1..``last`` at learning rates ``lr[s]`` on batches of ``B`` from ``batches``;
    evaluates into ``losses`` every ``every`` steps and at the steps in ``marks``; with
    ``snapshot``, returns {step: snapshot} at the ``marks`` (the CPT grid's transfers)."""
    snaps = {}
    for s in range(1, last + 1):
        rate = float(lr[s])
        check_finite(trainer.step(batches.take(B), rate), what, s, rate)
        if s % every == 0 or s in marks:
            losses[s] = trainer.evaluate()
        if snapshot and s in marks:
            snaps[s] = trainer.snapshot()
    return snaps
