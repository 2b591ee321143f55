"""Numbers for the CPT phenomena in lab curves (Wang et al. 2025, arXiv 2505.07796), one row per
run.

Columns (losses in nats per byte, on the fixed validation windows):

* ``gen_transfer``, ``gen_peak``, ``gen_end``: general-set loss at the transfer step, its maximum
  over the CPT evaluations, and at the last CPT step; ``gen_rise_peak = gen_peak - gen_transfer``,
  ``gen_rise_end = gen_end - gen_transfer`` (> 0: the general loss went up).
* ``dom_transfer``, ``dom_end``, ``dom_change = dom_end - dom_transfer`` (< 0: domain loss fell).
* ``anneal_gen``, ``anneal_dom``: the final loss of the constant-LR CPT run of the same size,
  transfer, length and replay ratio (schedule ``const_name``) minus this run's final loss (> 0:
  the decaying schedule ended lower); NaN without such a run.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

KEYS = ["size", "transfer", "cpt_steps", "replay_ratio"]


def per_run(curves: pd.DataFrame, runs: pd.DataFrame, const_name: str = "const") -> pd.DataFrame:
    out = []
    for _, r in runs.iterrows():
        c = curves[curves["run"] == r["run"]]
        t, end = int(r["transfer"]), int(r["transfer"] + r["cpt_steps"])
        row = dict(r)
        for role, key in (("general", "gen"), ("domain", "dom")):
            s = c[(c["val_role"] == role) & c["loss"].notna()].set_index("step")["loss"]
            row[f"{key}_transfer"], row[f"{key}_end"] = s[t], s[end]
            row[f"{key}_peak"] = s[s.index > t].max()
        row["gen_rise_peak"] = row["gen_peak"] - row["gen_transfer"]
        row["gen_rise_end"] = row["gen_end"] - row["gen_transfer"]
        row["dom_change"] = row["dom_end"] - row["dom_transfer"]
        out.append(row)
    df = pd.DataFrame(out)
    const = df[df["schedule"] == const_name].set_index(KEYS)
    for key in ("gen", "dom"):
        ref = [const[f"{key}_end"].get(tuple(k), np.nan) for k in df[KEYS].itertuples(index=False)]
        df[f"anneal_{key}"] = np.where(
            df["schedule"] == const_name, np.nan, np.asarray(ref, dtype=float) - df[f"{key}_end"]
        )
    return df
