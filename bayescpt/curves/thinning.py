"""Automatic thinning of very long loss curves before a fit.

A curve logged every step gives up to ~1e5 loss points, while the laws have a handful of
parameters per curve and neighbouring losses are strongly autocorrelated (lag-1 ~0.9 on dense
logs), so an iid likelihood over-counts them and sampling time grows with every point. A curve
with more than :data:`AUTO_THIN_ABOVE` loss points is therefore thinned to about
:data:`AUTO_MAX_POINTS` with :func:`bayescpt.curves.data.decimate` (evenly in steps, denser where
the learning rate anneals); shorter curves are left as they are. The rows stay (their loss becomes
empty), so every schedule is unchanged.
"""

from __future__ import annotations

import pandas as pd

from bayescpt.curves.data import decimate

__all__ = ["AUTO_THIN_ABOVE", "AUTO_MAX_POINTS", "thin_long_curves"]

#: curves with more loss points than this are thinned by default
AUTO_THIN_ABOVE = 2000

#: about this many loss points are kept of such a curve
AUTO_MAX_POINTS = 500


def thin_long_curves(df: pd.DataFrame, above: int = AUTO_THIN_ABOVE,
                     points: int = AUTO_MAX_POINTS) -> tuple[pd.DataFrame, str | None]:
    """Thin every (run, val_set) curve of the validated table ``df`` that has more than
    ``above`` loss points to about ``points`` of them.

    Returns the table (``df`` itself when nothing is thinned) and one line saying what was
    thinned (None when nothing was).
    """
    if points < 1 or above < points:
        raise ValueError(f"expected 1 <= points <= above; got points={points}, above={above}")
    counts = df[df["loss"].notna()].groupby(["run", "val_set"], sort=False).size()
    long = counts[counts > above]
    if long.empty:
        return df, None
    out = decimate(df, points)
    key = pd.MultiIndex.from_frame(df[["run", "val_set"]])
    short = ~key.isin(long.index)
    out.loc[short, "loss"] = df.loc[short, "loss"]
    before, after = int(df["loss"].notna().sum()), int(out["loss"].notna().sum())
    note = (f"thinned {len(long)} curve(s) with more than {above} loss points (up to "
            f"{int(long.max())}) to about {points} each, decay phases kept dense: {before} -> "
            f"{after} loss points")
    return out, note
