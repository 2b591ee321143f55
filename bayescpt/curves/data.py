"""The tidy loss-curve table, its validation, and the per-curve views the laws need.

One row per logged step of one run (and validation set)::

    run        str    the training run (one LR schedule); required
    step       int    optimizer steps done (>= 0), strictly increasing within (run, val_set)
    lr         float  raw learning rate used at that step (e.g. 3e-4, never normalised); required
    loss       float  validation/training loss in nats (> 0); empty on rows that only give the LR
    val_set    str    optional, the validation set (default ``"default"``)
    model_size float  optional, non-embedding parameters (a count, e.g. 25e6), constant per run

The learning rate between logged steps is taken as linear in the step (the multi-power-law
authors' convention); give a dense ``lr`` (rows without loss) where that is not good enough,
e.g. a row ``step=0, lr=0`` for a linear warmup from zero. Other columns are kept as they are;
one is read by the fits: ``_noise_scale`` (float > 0, default 1), a loss's noise sd relative to
one logged loss, which :func:`bayescpt.curves.thinning.thin_long_curves` writes on the points it
averages from windows of logged losses.

Continual pre-training (CPT) runs add, all optional for the other laws and required by the CPT law::

    phase        str    ``pt`` or ``cpt``; a run lists its PT rows, then its CPT rows (steps count
                        from the start of PT; the last PT step is the transfer point). A run with
                        no ``pt`` rows is a base model with unknown PT history.
    val_role     str    per validation set: ``general`` (the PT distribution), ``domain`` (the CPT
                        distribution) or ``other`` (out of domain); every loss needs one
    replay_ratio float  share of PT data in the CPT mixture, in [0, 1], constant per run

Every problem raises :class:`DataError` with one line naming the file, run, column and value.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from bayescpt.core.schedules import Schedule, from_points
from bayescpt.core.tables import (
    MAX_RAW_LR,
    MIN_MODEL_SIZE,
    DataError,
    parse_numeric,
    read_text_csv,
    start_table,
    shown,
    where,
)
from bayescpt.curves.checks import check_losses, check_runs

REQUIRED = ("run", "step", "lr", "loss")


#: steps at or above this are refused: a float holds every whole number only up to 2**53
MAX_STEP = 2 ** 53


DEFAULT_VAL_SET = "default"

#: the column with a loss's noise sd relative to one logged loss (set where losses are averaged)
NOISE_SCALE = "_noise_scale"


PHASES = ("pt", "cpt")


VAL_ROLES = ("general", "domain", "other")


def read_curves(path, max_lr: float = MAX_RAW_LR, need_loss: bool = True) -> pd.DataFrame:
    """Read and validate a tidy loss-curve CSV (see the module docstring).

    ``need_loss=False`` accepts a schedule without losses (for prediction): the ``loss`` column may
    then be missing or empty.
    """
    path = Path(path)
    raw = read_text_csv(path)
    return validate_curves(raw, source=path, max_lr=max_lr, need_loss=need_loss, _from_text=True)


def validate_curves(df: pd.DataFrame, source="<DataFrame>", max_lr: float = MAX_RAW_LR,
                    need_loss: bool = True, _from_text: bool = False) -> pd.DataFrame:
    """Check a loss-curve table and return a clean copy with proper dtypes, sorted by
    (run, val_set, step). The input is not modified.

    With a DataFrame (rather than a CSV) a NaN loss means "no loss logged at this step"; in a CSV
    only an empty cell means that, and a written ``nan``/``inf`` is an error.
    """
    df = df.rename(columns=lambda c: str(c).strip())
    if not need_loss and "loss" not in df.columns:
        df["loss"] = "" if _from_text else np.nan
    df, lines = start_table(df, source, REQUIRED, "val_set, model_size", _from_text)
    lines = pd.Series(lines)
    runs = df["run"].astype(str).str.strip()
    if (runs == "").any() or df["run"].isna().any():
        i = int(((runs == "") | df["run"].isna()).idxmax())
        raise DataError(f"{where(source, column='run', line=lines[i])}: empty run name")
    df["run"] = runs

    if "val_set" in df.columns:
        vs = df["val_set"].astype(str).str.strip()
        df["val_set"] = vs.where((vs != "") & (vs.str.lower() != "nan") & df["val_set"].notna(),
                                 DEFAULT_VAL_SET)
    else:
        df["val_set"] = DEFAULT_VAL_SET

    step = parse_numeric(df["step"], "step", source, runs, lines, allow_empty=False)
    bad = ~np.isfinite(step) | (step < 0) | (step != np.round(step)) | (step >= MAX_STEP)
    if bad.any():
        i = int(bad.idxmax())
        raise DataError(f"{where(source, runs[i], 'step', line=lines[i])}: value "
                        f"{shown(df['step'][i])}"
                        "; expected a non-negative whole number of optimizer steps (below 2**53)")
    df["step"] = step.astype(np.int64)

    lr = parse_numeric(df["lr"], "lr", source, runs, lines, allow_empty=False)
    bad = ~np.isfinite(lr) | (lr < 0)
    if bad.any():
        i = int(bad.idxmax())
        raise DataError(f"{where(source, runs[i], 'lr', df['step'][i], lines[i])}: value "
                        f"{shown(df['lr'][i])}; expected a finite, non-negative raw learning rate")
    df["lr"] = lr

    if _from_text:
        loss = parse_numeric(df["loss"], "loss", source, runs, lines, allow_empty=True)
        given = df["loss"].astype(str).str.strip() != ""
    else:
        loss = pd.to_numeric(df["loss"], errors="coerce").astype(float)
        notnum = loss.isna() & df["loss"].notna()
        if notnum.any():
            i = int(notnum.idxmax())
            raise DataError(f"{where(source, runs[i], 'loss', df['step'][i])}: value "
                            f"{shown(df['loss'][i])} is not a number")
        given = loss.notna()
    bad = given & (~np.isfinite(loss) | (loss <= 0))
    if bad.any():
        i = int(bad.idxmax())
        raise DataError(f"{where(source, runs[i], 'loss', df['step'][i], lines[i])}: value "
                        f"{shown(df['loss'][i])}; expected a positive, finite loss in nats "
                        "(leave the cell empty on rows that only give the learning rate)")
    df["loss"] = loss.where(given)

    if "model_size" in df.columns:
        ms = parse_numeric(df["model_size"], "model_size", source, runs, lines, allow_empty=False)
        bad = ~np.isfinite(ms) | (ms <= 0)
        if bad.any():
            i = int(bad.idxmax())
            raise DataError(f"{where(source, runs[i], 'model_size', line=lines[i])}: value "
                            f"{shown(df['model_size'][i])}; expected a positive parameter count")
        small = ms < MIN_MODEL_SIZE
        if small.any():
            i = int(small.idxmax())
            raise DataError(f"{where(source, runs[i], 'model_size', line=lines[i])}: value "
                            f"{shown(df['model_size'][i])} looks like millions or billions; "
                            "expected the number of non-embedding parameters (e.g. 25e6)")
        df["model_size"] = ms

    if NOISE_SCALE in df.columns:
        ns = parse_numeric(df[NOISE_SCALE], NOISE_SCALE, source, runs, lines, allow_empty=True) \
            if _from_text else pd.to_numeric(df[NOISE_SCALE], errors="coerce").astype(float)
        bad = df["loss"].notna() & ((ns.notna() & (~np.isfinite(ns) | (ns <= 0)))
                                    | (ns.isna() & df[NOISE_SCALE].notna()
                                       & (df[NOISE_SCALE].astype(str).str.strip() != "")))
        if bad.any():
            i = int(bad.idxmax())
            raise DataError(f"{where(source, runs[i], NOISE_SCALE, df['step'][i], lines[i])}: "
                            f"value {shown(df[NOISE_SCALE][i])}; expected a positive noise scale "
                            "(a loss's noise sd relative to one logged loss; empty means 1)")
        df[NOISE_SCALE] = ns.fillna(1.0)

    _validate_cpt_columns(df, source, runs, lines)

    check_runs(df, source, lines, max_lr, need_loss)
    check_losses(df, source, lines)
    return df.sort_values(["run", "val_set", "step"], kind="stable").reset_index(drop=True)


def _validate_cpt_columns(df: pd.DataFrame, source, runs, lines) -> None:
    """Normalise and check ``phase``, ``val_role`` and ``replay_ratio`` where present (in place)."""
    def text(col):
        t = df[col].astype(str).str.strip().str.lower()
        return t.where(df[col].notna() & ~t.isin(["", "nan", "none"]), "")

    if "phase" in df.columns:
        ph = text("phase")
        bad = ~ph.isin(PHASES)
        if bad.any():
            i = int(bad.idxmax())
            raise DataError(f"{where(source, runs[i], 'phase', df['step'][i], lines[i])}: value "
                            f"{shown(df['phase'][i])}; expected 'pt' or 'cpt' on every row")
        df["phase"] = ph
        for r, g in df.groupby("run", sort=False):
            pt_steps, cpt_steps = g.loc[ph[g.index] == "pt", "step"], g.loc[ph[g.index] == "cpt",
                                                                             "step"]
            if len(pt_steps) and len(cpt_steps) and cpt_steps.min() <= pt_steps.max():
                raise DataError(f"{where(source, r, 'phase', int(cpt_steps.min()))}: a CPT row "
                                f"at or before the end of the run's PT (step {int(pt_steps.max())}); "
                                "steps count from the start of PT and the CPT segment follows it")
    if "val_role" in df.columns:
        role = text("val_role")
        bad = ~role.isin(VAL_ROLES + ("",))
        if bad.any():
            i = int(bad.idxmax())
            raise DataError(f"{where(source, runs[i], 'val_role', line=lines[i])}: value "
                            f"{shown(df['val_role'][i])}; expected one of {list(VAL_ROLES)}")
        df["val_role"] = role
        for vs, g in df[role != ""].groupby("val_set"):
            if g["val_role"].nunique() > 1:
                raise DataError(f"{where(source, column='val_role')}: validation set {vs!r} has "
                                f"several roles {sorted(g['val_role'].unique())}; give it one")
        known = set(df.loc[role != "", "val_set"])
        lost = df["loss"].notna() & (role == "") & ~df["val_set"].isin(known)
        if lost.any():
            i = int(lost.idxmax())
            raise DataError(f"{where(source, runs[i], 'val_role', df['step'][i], lines[i])}: "
                            f"a loss for validation set {df['val_set'][i]!r}, which has no role; "
                            f"expected one of {list(VAL_ROLES)}")
        role = role.mask(role == "", df["val_set"].map(
            df[role != ""].groupby("val_set")["val_role"].first()).fillna(""))
        df["val_role"] = role
    if "replay_ratio" in df.columns:
        rr = parse_numeric(df["replay_ratio"], "replay_ratio", source, runs, lines,
                            allow_empty=True)
        bad = rr.notna() & ((rr < 0) | (rr > 1))
        if bad.any():
            i = int(bad.idxmax())
            raise DataError(f"{where(source, runs[i], 'replay_ratio', line=lines[i])}: value "
                            f"{shown(df['replay_ratio'][i])}; expected the share of PT data in "
                            "the CPT mixture, between 0 and 1 (not percent)")
        per_run = rr.groupby(runs).nunique()
        if (per_run > 1).any():
            r = per_run.index[per_run > 1][0]
            raise DataError(f"{where(source, r, 'replay_ratio')}: several values "
                            f"{sorted(rr[runs == r].dropna().unique())}; a run has one replay ratio")
        df["replay_ratio"] = rr.groupby(runs).transform("first")


def curve_info(df: pd.DataFrame, run: str, val_set: str) -> dict:
    """What a law may need to know about one curve (see :meth:`Law.design`).

    ``pt_end`` is the last step of the run's PT rows (0 when it has none: unknown PT history, or
    a plain pre-training table without a ``phase`` column, whose whole run is then "CPT").
    """
    rows = df[df["run"] == run]
    vs_rows = rows[rows["val_set"] == val_set]
    size = rows["model_size"].iloc[0] if "model_size" in rows.columns else None
    role = None
    if "val_role" in rows.columns:
        given = df.loc[(df["val_set"] == val_set) & (df["val_role"] != ""), "val_role"]
        role = given.iloc[0] if len(given) else None
    pt_end = 0
    if "phase" in rows.columns and (rows["phase"] == "pt").any():
        pt_end = int(rows.loc[rows["phase"] == "pt", "step"].max())
    replay = None
    if "replay_ratio" in rows.columns and rows["replay_ratio"].notna().any():
        replay = float(rows["replay_ratio"].dropna().iloc[0])
    return {"model_size": None if size is None or pd.isna(size) else float(size),
            "run": run, "val_set": val_set, "val_role": role, "pt_end": pt_end, "replay_ratio": replay,
            "n_rows": int(len(vs_rows))}


def schedules_of(df: pd.DataFrame) -> dict[str, Schedule]:
    """The per-step schedule of every run, from all its (step, lr) rows by linear interpolation."""
    out = {}
    for r, g in df.groupby("run", sort=False):
        pts = g.groupby("step")["lr"].first()
        try:
            out[r] = from_points(pts.index.to_numpy(), pts.to_numpy(), name=r)
        except ValueError as err:
            raise DataError(f"run {r!r}: {err} (a table to predict must list the run's whole "
                            "schedule, not only the rows to score)") from None
    return out


def schedule_ids(df: pd.DataFrame, rtol: float = 0.05,
                 schedules: dict[str, Schedule] | None = None) -> dict[str, str]:
    """Which runs share a learning-rate schedule: run -> schedule id.

    Uses the ``schedule`` column when the table has one; otherwise runs whose per-step learning
    rates agree on the steps both ran (every step within ``rtol`` of the peak; one run may be
    logged for longer) share the id of the first such run (``schedules``, from
    :func:`schedules_of`, saves recomputing them). Runs of one schedule at several model sizes
    then share their schedule deviation in
    the hierarchy.
    """
    if "schedule" in df.columns:
        per_run = df.groupby("run")["schedule"].first().astype(str)
        return per_run.to_dict()
    sched = schedules if schedules is not None else schedules_of(df)
    rep_of, reps = {}, []
    for run, sch in sched.items():
        for rep in reps:
            other = sched[rep]
            m = min(other.lr.size, sch.lr.size)
            if np.max(np.abs(other.lr[:m] - sch.lr[:m])) <= rtol * max(other.peak, sch.peak):
                rep_of[run] = rep
                break
        else:
            reps.append(run)
            rep_of[run] = run
    short = {rep: rep.split("/")[-1] for rep in reps}
    counts = pd.Series(list(short.values())).value_counts()
    name = {rep: short[rep] if counts[short[rep]] == 1 else rep for rep in reps}
    return {run: name[rep] for run, rep in rep_of.items()}


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
    keep = np.where(phase.to_numpy() == "pt", st % every == 0,
                    np.isin(rel, list(early)) | (rel % every == 0) | (st == last))
    out.loc[~keep, "loss"] = np.nan
    return out


def describe(df: pd.DataFrame) -> str:
    """A short human summary: runs, validation sets, sizes, loss rows."""
    info = {"runs": df["run"].nunique(), "val_sets": sorted(df["val_set"].unique()),
            "loss_rows": int(df["loss"].notna().sum())}
    if "model_size" in df.columns:
        info["model_sizes"] = sorted(float(x) for x in df["model_size"].unique())
    return json.dumps(info)
