"""The cpt law's options chosen from a CPT table (:func:`cpt_law_options`), used by
:meth:`bayescpt.curves.model.laws.cpt.CPTLaw.resolve_options` when an option is not given."""

from __future__ import annotations

import numpy as np
import pandas as pd


def cpt_law_options(
    df: pd.DataFrame,
    replay: bool | None = None,
    unknown_pt: bool | None = None,
    size_extension: bool | None = None,
    checkpoint: bool | None = None,
    anchored: bool | None = None,
) -> dict:
    """Options of the cpt law for a CPT table: given ones kept, the others chosen from the data.

    ``replay`` when runs differ in ``replay_ratio`` (with one ratio the extension is not
    identified: C2 and the shift absorb it); ``unknown_pt`` when some run has no PT rows;
    ``size_extension`` only when asked: every (validation set, model size) is a group of the
    hierarchy, whose parameters already vary log-linearly in size, so Eq. 7 on top of it would
    describe the same dependence twice. ``checkpoint`` (Lc, G, alpha instead of L0, A, C1) when
    every run continues the same checkpoint and the only PT losses are the checkpoint's own:
    there L0, A and C1 are not identified and sampling them does not converge. ``anchored``
    (Lr, G at a PT area inside the data instead of L0, A; alpha held by its prior) only when
    asked: it is for PT curves far from their floor (the lab's), where L0, A and alpha ridge.
    """

    def distinct(col):
        return df[col].dropna().nunique() if col in df.columns else 0

    if replay is None:
        replay = distinct("replay_ratio") > 1
    if unknown_pt is None:
        phases = df["phase"] if "phase" in df.columns else pd.Series("cpt", index=df.index)
        unknown_pt = bool((~phases.eq("pt").groupby(df["run"]).any()).any())
    if size_extension is None:
        size_extension = False
    if checkpoint is None:
        checkpoint = not unknown_pt and not size_extension and one_checkpoint(df)
    out = {
        "replay": bool(replay),
        "unknown_pt": bool(unknown_pt),
        "size_extension": bool(size_extension),
        "checkpoint": bool(checkpoint),
    }
    if anchored:
        if out["checkpoint"]:
            raise ValueError(
                "anchored: the data have one PT point (checkpoint mode), no PT "
                "curve to anchor the law in"
            )
        out["anchored"] = True
    return out


def one_checkpoint(df: pd.DataFrame) -> bool:
    """True when every run has PT rows, all share one PT schedule to one transfer step, and no
    run has a PT loss before that step (the data see PT only through the checkpoint's loss)."""
    if "phase" not in df.columns or "run" not in df.columns:
        return False
    pt = df[df["phase"] == "pt"]
    if pt.empty or pt["run"].nunique() != df["run"].nunique():
        return False
    ends = pt.groupby("run")["step"].max()
    if ends.nunique() != 1:
        return False
    if (pt["loss"].notna() & (pt["step"] < ends.iloc[0])).any():
        return False
    lrs = {
        r: tuple(
            np.round(
                g.sort_values("step").drop_duplicates("step")[["step", "lr"]].to_numpy().ravel(), 12
            )
        )
        for r, g in pt.groupby("run")
    }
    return len(set(lrs.values())) == 1
