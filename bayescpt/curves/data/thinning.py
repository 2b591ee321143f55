"""Automatic thinning of very long loss curves before a fit: fewer points, the same information.

A curve logged every step gives up to ~1e5 loss points, while the laws have a handful of
parameters per curve, and sampling time grows with every point. A curve with more than
:data:`AUTO_THIN_ABOVE` loss points is therefore reduced to about :data:`AUTO_MAX_POINTS` kept
points, placed by :func:`decimate` (evenly in steps, denser where the
learning rate anneals); shorter curves are left as they are. The rows stay (a dropped row's loss
becomes empty), so every schedule is unchanged.

Keeping one logged loss per kept point (``average=False``, the rule before 2026-12-05) throws
the dropped points' information away: on a simulated per-step log of 1e6 points with AR(1) noise
(lag-1 correlation 0.9) the posterior mean's error was 2.5x the full-data fit's
(``benchmarks/RESULTS.md``, issue 20). By default (``average=True``) each kept point instead
carries an estimate of the curve's log loss at its step from all logged losses in a window
around it:

* the window is the open interval (t_k - h_k, t_k + h_k) of steps, half-width
  h_k = min(t_k - t_{k-1}, t_{k+1} - t_k) / 2 (the kept neighbours), so the windows tile the
  curve where kept points are evenly spaced; the first and last kept points are not averaged;
* the estimate y_k is the mean of the window's log losses. Its bias where the curve bends is
  c_k m2_k (c_k the curve's second-order coefficient at t_k, from a quadratic through the
  window means around it; m2_k the mean squared step offset in the window): a window whose bias
  exceeds :data:`_MAX_BIAS` of the mean's standard error is narrowed until it does not
  (early in a run, where the loss falls fast, windows are narrower and fewer losses are used);
* the noise on log loss is taken as stationary AR(1) along the curve with lag-1 correlation rho
  per logged-step gap (estimated per curve from the residuals of the local quadratics, clipped
  to [0, 0.995]), so Var(y_k) = sigma^2 w' R w with R_ij = rho^(|t_i - t_j| / gap) (gap: the
  curve's median step between logged losses). The kept row's column ``_noise_scale`` holds
  sqrt(w' R w): the fit's likelihood uses sigma x ``_noise_scale`` for that point
  (:func:`bayescpt.curves.model.hierarchy.build_model`), so sigma keeps its meaning (the noise
  sd of one logged loss) and predictions of new logged losses are unchanged in kind.

The kept row's ``loss`` becomes exp(y_k). A curve whose logged steps are too sparse for a window
(one loss per window) keeps its logged losses, with scale 1.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from bayescpt.curves.data.table import NOISE_SCALE, schedules_of

__all__ = [
    "AUTO_THIN_ABOVE",
    "AUTO_MAX_POINTS",
    "thin_for_fit",
    "thin_long_curves",
    "average_windows",
    "decimate",
    "thin_cpt",
]

#: curves with more loss points than this are thinned by default
AUTO_THIN_ABOVE = 2000

#: about this many loss points are kept of such a curve
AUTO_MAX_POINTS = 500

#: rho and sigma are estimated from the residuals of local quadratics on consecutive chunks of
#: this many logged losses
_CHUNK = 40

#: a window is narrowed until its mean's bias from the curve's bend is at most this many of
#: the mean's own standard errors
_MAX_BIAS = 0.2


def thin_for_fit(
    df: pd.DataFrame, max_points: int | None = None, all_points: bool = False
) -> tuple[pd.DataFrame, str | None]:
    """The table a fit samples, thinned by the one default policy (``bayescpt fit`` and a
    sweep's fits): every curve with more than ``max_points`` loss points thinned to about that
    many, or, without ``max_points``, those with more than :data:`AUTO_THIN_ABOVE` to about
    :data:`AUTO_MAX_POINTS` (:func:`thin_long_curves`); ``all_points`` (without ``max_points``)
    keeps every point. Returns (table, the line saying what was thinned or None)."""
    if all_points and not max_points:
        return df, None
    return thin_long_curves(
        df, above=max_points or AUTO_THIN_ABOVE, points=max_points or AUTO_MAX_POINTS
    )


def thin_long_curves(
    df: pd.DataFrame,
    above: int = AUTO_THIN_ABOVE,
    points: int = AUTO_MAX_POINTS,
    average: bool = True,
) -> tuple[pd.DataFrame, str | None]:
    """Thin every (run, val_set) curve of the validated table ``df`` that has more than
    ``above`` loss points to about ``points`` of them; with ``average`` (default) each kept
    point carries the estimate from its window of logged losses and its noise scale in the
    column :data:`NOISE_SCALE` (module docstring), otherwise the logged loss at its step.

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
    how = "decay phases kept dense"
    if average:
        scale = (
            df[NOISE_SCALE].to_numpy(dtype=float).copy()
            if NOISE_SCALE in df.columns
            else np.ones(len(df))
        )
        rhos, used = [], 0
        for r, vs in long.index:
            rows = df.index[(df["run"] == r) & (df["val_set"] == vs) & df["loss"].notna()]
            kept = out.loc[rows, "loss"].notna().to_numpy()
            st = df.loc[rows, "step"].to_numpy(dtype=float)
            y = np.log(df.loc[rows, "loss"].to_numpy(dtype=float))
            est, sc, n, rho = average_windows(st, y, np.flatnonzero(kept))
            pos = df.index.get_indexer(rows[kept])
            out.loc[rows[kept], "loss"] = np.exp(est)
            scale[pos] = sc
            rhos.append(rho)
            used += int(n.sum())
        out[NOISE_SCALE] = scale
        how = (
            f"each kept loss the average of its window of logged losses ({used} of "
            f"{int(long.sum())} used; noise lag-1 correlation "
            f"{min(rhos):.2f}-{max(rhos):.2f}, weighed in the fit)"
        )
    note = (
        f"thinned {len(long)} curve(s) with more than {above} loss points (up to "
        f"{int(long.max())}) to about {points} each, {how}: {before} -> {after} loss points"
    )
    return out, note


def _ar1_var(w: np.ndarray, decay: np.ndarray) -> float:
    """w' R w for R_ij = prod of ``decay`` between i and j (AR(1) along the window):
    z_i = w_i + decay_i z_{i-1}, w' R w = sum_i w_i (2 z_i - w_i). ``decay[0]`` is unused."""
    from scipy.signal import lfilter

    w = np.asarray(w, float)
    if decay.size > 1 and np.all(decay[1:] == decay[1]):
        z = lfilter([1.0], [1.0, -decay[1]], w)
    else:
        z = np.empty_like(w)
        acc = 0.0
        for i, (wi, di) in enumerate(zip(w.tolist(), decay.tolist())):
            acc = wi + di * acc
            z[i] = acc
    return max(float(w @ (2.0 * z - w)), 0.0)


def _chunk_stats(t: np.ndarray, Y: np.ndarray):
    """Per row of ``Y`` (k, n) at steps ``t`` (n,): the residuals' lag-1 ratio r1'r0 / r'r and
    mean square r'r / n after a least-squares quadratic in t."""
    x = (t - t.mean()) / max(np.ptp(t), 1e-12)
    X = np.column_stack([np.ones(len(t)), x, x * x])
    R = Y - (Y @ np.linalg.pinv(X).T) @ X.T
    rr = np.einsum("ij,ij->i", R, R)
    ok = rr > 0
    return (np.einsum("ij,ij->i", R[ok, 1:], R[ok, :-1]) / rr[ok]), rr[ok] / len(t)


def _noise_of_residuals(st: np.ndarray, y: np.ndarray, gap: float):
    """(rho, sigma) of the AR(1) noise from the residuals of local quadratics on consecutive
    chunks of :data:`_CHUNK` logged losses: the medians over chunks of their lag-1 ratio and
    mean square (medians, because a few chunks where the curve is not quadratic, early in a run
    or on sparse logs, would dominate pooled sums) are matched to those of simulated AR(1)
    chunks at the first chunk's steps (fixed random numbers, so the match is smooth in rho).
    (0, 0) when the curve is shorter than a chunk."""
    from scipy.optimize import brentq

    n_chunks = len(st) // _CHUNK
    if n_chunks == 0:
        return 0.0, 0.0
    idx = np.arange(n_chunks * _CHUNK).reshape(n_chunks, _CHUNK)
    ratios, squares = [], []
    for i in range(n_chunks):  # chunks at their own steps (irregular logs); cheap
        r, q = _chunk_stats(st[idx[i]], y[idx[i]][None, :])
        ratios += r.tolist()
        squares += q.tolist()
    if not ratios:
        return 0.0, 0.0
    obs, mean_sq = float(np.median(ratios)), float(np.median(squares))
    t = st[:_CHUNK]
    lags = np.r_[0.0, np.diff(t)] / gap
    z = np.random.default_rng(0).standard_normal((400, _CHUNK))

    def simulated(rho):
        e = np.empty_like(z)
        e[:, 0] = z[:, 0]
        for j in range(1, _CHUNK):
            d = rho ** lags[j]
            e[:, j] = d * e[:, j - 1] + np.sqrt(1.0 - d * d) * z[:, j]
        r, q = _chunk_stats(t, e)
        return float(np.median(r)), float(np.median(q))

    lo_r, hi_r = 0.0, 0.995
    if obs <= simulated(lo_r)[0]:
        rho = 0.0
    elif obs >= simulated(hi_r)[0]:
        rho = hi_r
    else:
        rho = brentq(lambda r: simulated(r)[0] - obs, lo_r, hi_r, xtol=1e-3)
    return float(rho), float(np.sqrt(mean_sq / simulated(rho)[1]))


def average_windows(st: np.ndarray, y: np.ndarray, keep: np.ndarray):
    """The windowed estimates of one curve (module docstring).

    ``st`` (n,) increasing logged steps, ``y`` (n,) their log losses, ``keep`` (m,) increasing
    positions of the kept points (first and last included). Returns (estimates (m,), noise
    scales (m,), losses used per window (m,), rho).
    """
    st, y, keep = np.asarray(st, float), np.asarray(y, float), np.asarray(keep, int)
    gaps = np.diff(st)
    gap = float(np.median(gaps)) if gaps.size else 1.0
    tk = st[keep]
    h = np.minimum(np.r_[0.0, np.diff(tk) / 2], np.r_[np.diff(tk) / 2, 0.0])

    def bounds(h):
        # open intervals (t_k - h, t_k + h): symmetric, and a loss halfway between two kept
        # steps belongs to neither (an asymmetric window biases the mean by the curve's slope)
        lo = np.minimum(np.searchsorted(st, tk - h, side="right"), keep)
        return lo, np.maximum(np.searchsorted(st, tk + h, side="left"), keep + 1)

    lo, hi = bounds(h)
    rho, sigma = _noise_of_residuals(st, y, gap)

    def means(lo, hi):
        m = np.array([y[a:b].mean() for a, b in zip(lo, hi)])
        m2 = np.array([np.mean((st[a:b] - t) ** 2) for a, b, t in zip(lo, hi, tk)])
        scale = np.array(
            [
                np.sqrt(
                    _ar1_var(
                        np.full(b - a, 1.0 / (b - a)), rho ** (np.r_[0.0, np.diff(st[a:b])] / gap)
                    )
                )
                for a, b in zip(lo, hi)
            ]
        )
        return m, m2, scale

    if sigma <= 0:  # too short to see the noise: no averaging
        return y[keep], np.ones(len(keep)), np.ones(len(keep), dtype=int), rho

    m, m2, scale = means(lo, hi)
    # the curve's bend at each kept step: a quadratic through the window means around it
    bend = np.zeros(len(keep))
    for k in range(len(keep)):
        j = np.arange(max(k - 2, 0), min(k + 3, len(keep)))
        if j.size >= 4:
            u = tk[j] - tk[k]
            bend[k] = np.polyfit(u, m[j], 2)[0]
    for _ in range(3):  # narrow where the bend biases the mean; sd grows as h falls
        bias, sd = np.abs(bend) * m2, sigma * scale
        over = (bias > _MAX_BIAS * sd) & (h > 0)
        if not over.any():
            break
        h = np.where(over, h * np.sqrt(_MAX_BIAS * sd / np.maximum(bias, 1e-300)), h)
        lo, hi = bounds(h)
        m, m2, scale = means(lo, hi)
    return m, scale, hi - lo, rho


def decimate(df: pd.DataFrame, points: int = 60, warmup: str = "exact", lam: float = 0.999):
    """Thin the loss rows of long curves while keeping their information.

    Per (run, val_set) curve, keep about ``points`` loss rows spread evenly in the coordinate
    ``u = step / range + |S2 change| / range``: evenly in steps where the learning rate is steady,
    denser where it anneals (S2 moves), so decay phases stay dense. The first and last loss rows
    are always kept. Dropped rows keep their learning rate (their loss becomes NaN), so the
    schedule is unchanged. Thinning also weakens the strong autocorrelation of dense loss logs
    (lag-1 ~0.9 on the multi-power-law curves), which an iid likelihood would over-count.
    """
    sched = schedules_of(df)
    out = df.copy()
    for (r, _vs), g in df.groupby(["run", "val_set"], sort=False):
        has = g.index[g["loss"].notna()]
        if len(has) <= points:
            continue
        _, s2 = sched[r].areas(lam=lam, warmup=warmup)
        st = df.loc[has, "step"].to_numpy()
        u = (st - st[0]) / max(st[-1] - st[0], 1)
        moved = np.concatenate([[0.0], np.cumsum(np.abs(np.diff(s2[st])))])
        u = u + moved / max(moved[-1], 1e-12) if moved[-1] > 0 else u
        targets = np.linspace(u[0], u[-1], points)
        keep = set(np.searchsorted(u, targets, side="left").clip(0, len(st) - 1).tolist())
        keep |= {0, len(st) - 1}
        drop = [has[i] for i in range(len(st)) if i not in keep]
        out.loc[drop, "loss"] = np.nan
    return out


def thin_cpt(df: pd.DataFrame, every: int = 50, early=(1, 2, 4, 8, 12, 18)) -> pd.DataFrame:
    """Thin the loss rows of PT -> CPT runs evaluated on a fixed grid of steps.

    Losses are kept every ``every`` steps in PT and in CPT (counted from the run's transfer, its
    last PT step), at the CPT steps ``early`` after the transfer (the fast distribution shift)
    and at each run's last step; the others become NaN (the rows stay, so the schedule is
    unchanged). On the lab's curves (an evaluation every 25 steps with +-0.03 nats of noise on
    prose) halving the points halved the sampling time. ``every`` 0 returns ``df`` unchanged.
    """
    if not every:
        return df
    out = df.copy()
    phase = df["phase"] if "phase" in df.columns else pd.Series("cpt", index=df.index)
    ends = df.loc[phase == "pt"].groupby("run")["step"].max()
    st = df["step"].to_numpy()
    rel = st - df["run"].map(ends).fillna(0).to_numpy()
    last = df.groupby("run")["step"].transform("max").to_numpy()
    keep = np.where(
        phase.to_numpy() == "pt",
        st % every == 0,
        np.isin(rel, list(early)) | (rel % every == 0) | (st == last),
    )
    out.loc[~keep, "loss"] = np.nan
    return out
