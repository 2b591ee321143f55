"""The quick start on bundled data: fit -> diagnose -> predict unseen schedules -> CSV + plot.

Fits the law on the multi-power-law authors' training split (``cosine_24000, constant_24000,
wsdcon_9`` at 25M/100M/400M), predicts the six other schedules per size with 90 % intervals, and
reports error and coverage.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

TRAIN_SCHEDULES = ("cosine_24000", "constant_24000", "wsdcon_9")
BUNDLED = Path(__file__).resolve().parent.parent / "data" / "multipowerlaw.csv"


def bundled_multipowerlaw() -> pd.DataFrame:
    """The bundled multi-power-law curves (validated)."""
    from .data import read_curves

    if not BUNDLED.exists():
        raise FileNotFoundError(f"{BUNDLED}: bundled data missing (run from a source checkout)")
    return read_curves(BUNDLED)


def split(df: pd.DataFrame, train=TRAIN_SCHEDULES):
    """(train, test) tables by schedule name (the part of ``run`` after the '/')."""
    is_train = df["run"].str.split("/").str[-1].isin(train)
    return df[is_train].reset_index(drop=True), df[~is_train].reset_index(drop=True)


def score(pred: pd.DataFrame) -> pd.DataFrame:
    """Per model size: mean/worst relative error of the posterior mean, R^2, 90 % coverage."""
    rows = []
    h = pred[pred["loss"].notna() & pred["mean"].notna()]   # no prediction inside the warmup
    for size, g in h.groupby("model_size"):
        rel = np.abs(g["mean"] / g["loss"] - 1)
        ss_res = np.sum((g["loss"] - g["mean"]) ** 2)
        ss_tot = np.sum((g["loss"] - g["loss"].mean()) ** 2)
        inside = (g["loss"] >= g["lower"]) & (g["loss"] <= g["upper"])
        rows.append({"model_size": f"{size / 1e6:g}M", "points": len(g),
                     "mean_rel_err": rel.mean(), "worst_rel_err": rel.max(),
                     "r2": 1 - ss_res / ss_tot, "coverage": inside.mean()})
    return pd.DataFrame(rows)


def run_demo(out: Path, law: str = "annealing", sampler: str = "auto", seed: int = 0,
             force: bool = False, log=print) -> dict:
    from .fit import Fit
    from .plots import plot_predictions
    from .predict import predict_frame

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    targets = [out / f"{law}_fit.nc", out / f"{law}_predictions.csv", out / f"{law}_predictions.png"]
    for t in targets:
        if t.exists() and not force:
            raise FileExistsError(f"{t} exists; pass --force to replace the demo outputs")
    df = bundled_multipowerlaw()
    train, test = split(df)
    log(f"[1/4] fitting the {law} law on {train['run'].nunique()} training curves "
        f"({', '.join(TRAIN_SCHEDULES)} x 3 sizes) with NUTS ...")
    fit = Fit.run(train, law=law, sampler=sampler, seed=seed, warn=False)
    fit.save(targets[0], overwrite=force)
    diag = fit.diagnostics()
    log(f"[2/4] diagnostics: max R-hat {diag.max_rhat:.4f}, min bulk ESS {diag.min_ess_bulk:.0f}, "
        f"divergences {diag.divergences} -> {'OK' if diag.ok else 'PROBLEMS'}")
    for msg in diag.problems():
        log(f"      warning: {msg}")
    log(f"[3/4] predicting {test['run'].nunique()} unseen schedules with 90 % intervals ...")
    pred = predict_frame(fit, test, prob=0.9, seed=seed)
    pred.to_csv(targets[1], index=False, float_format="%.6g")
    table = score(pred)
    log(table.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    plot_predictions(pred, targets[2], prob=0.9,
                     title=f"{law} law: unseen schedules, posterior mean and 90 % intervals")
    log(f"[4/4] wrote {', '.join(str(t) for t in targets)}")
    return {"fit": fit, "predictions": pred, "score": table, "diagnostics": diag}
