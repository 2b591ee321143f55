"""The sections every fit contributes to a report, whatever its family: what it was fitted on,
the sampler's verdict in plain words, the sampler plots, the parameters per group, and what
produced it. Each function returns a list of blocks (:mod:`bayescpt.report.blocks`).

The verdict is the one ``bayescpt diagnose`` prints (:meth:`Diagnostics.problems`,
:meth:`Diagnostics.notes`, :meth:`Diagnostics.to_text`), worded per check; the sampler plots are
:func:`bayescpt.core.plotting.plot_diagnostics`, the forest
:func:`bayescpt.curves.evaluate.plots.plot_forest`.
"""

from __future__ import annotations

import hashlib
import platform
import sys
from importlib import metadata
from pathlib import Path

import numpy as np
import pandas as pd

from bayescpt import __version__
from bayescpt.core.diagnostics import ESS_MIN, RHAT_MAX
from bayescpt.core.plotting import plot_diagnostics
from bayescpt.curves.evaluate.plots import plot_forest
from bayescpt.report import blocks as B

#: the most parameters the forest plot shows (the rest are in the parameter table)
MAX_FOREST = 16
VERSIONS = ("pymc", "pytensor", "arviz", "numpy", "pandas", "nutpie", "matplotlib", "jinja2")


def data_summary(fit, label: str) -> list[dict]:
    """What the fit was fitted on: the observed points per curve (or cell), from the file."""
    obs = fit.idata.observed_data if "observed_data" in fit.idata.groups() else None
    out = [
        B.text(
            f"{label}: the {fit.meta.get('law')} law ({type(fit).__name__}), data hash "
            f"{fit.meta.get('data_hash')}."
        )
    ]
    if obs is None or not obs.data_vars:
        return out + [B.text("The file holds no observed data.")]
    name = list(obs.data_vars)[0]
    var = obs[name]
    dim = var.dims[0]
    frame = pd.DataFrame(
        {c: np.asarray(var[c].values) for c in var.coords if c != dim and var[c].dims == (dim,)}
    )
    frame["value"] = np.asarray(var.values, dtype=float)
    text_cols = [c for c in frame.columns if c != "value" and frame[c].dtype.kind in "OSU"]
    keys = text_cols or [c for c in frame.columns if c != "value"][:2]
    summary = frame.groupby(keys, sort=False)["value"].agg(["count", "min", "max"])
    summary.columns = ["points", f"{name} min", f"{name} max"]
    for c in frame.columns:
        if c not in keys and c != "value" and frame[c].dtype.kind in "iuf":
            span = frame.groupby(keys, sort=False)[c].agg(["min", "max"])
            summary[f"{c} range"] = [f"{lo:.4g} - {hi:.4g}" for lo, hi in span.to_numpy()]
    out.append(
        B.text(f"{len(frame)} observed {name} values in {len(summary)} {' x '.join(keys)} groups.")
    )
    return out + [B.table(summary, caption=f"observed data of {label}", index=True)]


def diagnostics_words(diag) -> list[str]:
    """One plain sentence per check: R-hat, ESS, divergences, stuck chains, prior conflict."""
    judged = diag.judged
    r, e, t = diag.max_rhat, diag.min_ess_bulk, diag.min_ess_tail
    words = []
    if judged["r_hat"].isna().all():
        words.append(
            f"R-hat: cannot be computed from {diag.chains} chain(s) x {diag.draws} "
            "draws, so nothing shows that the chains agree."
        )
    else:
        ok = np.isfinite(r) and r <= RHAT_MAX
        words.append(
            f"R-hat (do the chains agree?): the worst is {r:.4f} "
            f"({judged['r_hat'].idxmax()}); {'at most' if ok else 'above'} "
            f"{RHAT_MAX}, so the chains {'agree' if ok else 'disagree'}."
        )
    ok = np.isfinite(e) and e >= ESS_MIN
    words.append(
        f"Effective sample size (how many independent draws?): the smallest bulk ESS "
        f"is {e:.0f} and the smallest tail ESS {t:.0f}; {'at least' if ok else 'below'}"
        f" {ESS_MIN}, so the intervals are {'well' if ok else 'poorly'} estimated."
    )
    words.append(
        "Divergences: none, the sampler followed the posterior everywhere."
        if not diag.divergences
        else f"Divergences: {diag.divergences} divergent "
        "transitions, where the sampler could not follow the posterior."
    )
    words.append(
        "Stuck chains: none; no chain sits in a minor mode."
        if not diag.stuck
        else "Stuck chains: " + "; ".join(s.text() for s in diag.stuck)
    )
    words.append(
        "Prior-data conflict: none; every checked posterior lies within its prior."
        if not diag.conflicts
        else "Prior-data conflict: " + "; ".join(c.text() for c in diag.conflicts)
    )
    return words


def diagnostics(fit, diag, label: str) -> list[dict]:
    """The verdict in plain words, then the problems and notes, then diagnose's full text."""
    head = (
        f"{label}: the sampler worked ({diag.chains} chains x {diag.draws} draws); the "
        "posterior can be trusted as far as these checks see."
        if diag.ok
        else f"{label}: the sampler has problems ({diag.chains} chains x {diag.draws} draws); "
        "read the fixes below before using the fit."
    )
    out = [B.verdict(head, diag.ok), B.bullets(diagnostics_words(diag))]
    if not diag.ok:
        out += [B.text("What failed and what to do:"), B.bullets(diag.problems())]
    if diag.notes():
        out += [B.text("Notes:"), B.bullets(diag.notes())]
    level = getattr(fit, "schedule_level", None)
    body = diag.to_text() + (f"\n{level.text()}" if level is not None else "")
    return out + [B.pre("what `bayescpt diagnose` prints", body)]


def sampler_plots(fit, diag, label: str) -> list[dict]:
    """Rank plots of the worst parameters, the energy plot and the most correlated pair."""
    fig = plot_diagnostics(
        fit.idata,
        diag,
        title=f"{label}: {fit.meta.get('law')} law, "
        f"{diag.chains} chains x {diag.draws} draws, "
        f"{diag.divergences} divergences",
    )
    return [
        B.image(
            fig, f"{label}: rank plots of the worst-mixing parameters, energy, most correlated pair"
        )
    ]


def forest_table(items) -> pd.DataFrame:
    """The forest plot's table (fit, param, group, mean, lower, upper: the 90 % HDI) from the
    diagnostics tables of ``items`` ((label, diag) pairs): per-group parameters where the fits
    have any, else every judged one."""
    rows = []
    for label, diag in items:
        t = diag.table
        for name, row in t.iterrows():
            base, _, rest = str(name).partition("[")
            rows.append(
                {
                    "fit": label,
                    "param": base,
                    "group": rest.rstrip("]") or "all",
                    "mean": row["mean"],
                    "lower": row["hdi_5%"],
                    "upper": row["hdi_95%"],
                    "indexed": bool(rest),
                }
            )
    frame = pd.DataFrame(rows)
    if frame["indexed"].any():
        frame = frame[frame["indexed"]]
    keep = list(dict.fromkeys(frame["param"]))[:MAX_FOREST]
    return frame[frame["param"].isin(keep)].drop(columns="indexed").reset_index(drop=True)


def parameters(items) -> list[dict]:
    """The forest plot of ``items`` ((label, diag) pairs, one per fit) and each fit's table."""
    forest = forest_table(items)
    n = forest["param"].nunique()
    out = [
        B.image(
            plot_forest(forest, prob=0.9),
            f"parameters per group: posterior means and 90 % HDIs ({n} parameters)",
        )
    ]
    for label, diag in items:
        cols = ["mean", "sd", "hdi_5%", "hdi_95%", "r_hat", "ess_bulk", "ess_tail"]
        out.append(B.table(diag.table[cols], caption=f"{label}: every parameter", index=True))
    return out


def file_hash(path) -> str:
    """The first 16 hex digits of a file's SHA-256."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()[:16]


def versions() -> dict:
    """Versions of bayescpt, Python and the libraries a fit depends on (installed ones)."""
    out = {
        "bayescpt": __version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
    }
    for name in VERSIONS:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def fit_provenance(fit, path: Path | None, label: str) -> dict:
    """What produced a fit: file, its hash, data hash, seed, sampler settings, how and when."""
    sampler = fit.config.get("sampler", {}) if isinstance(fit.config, dict) else {}
    row = {
        "fit": label,
        "file": str(path) if path else "",
        "file sha256": file_hash(path) if path else "",
        "law": fit.meta.get("law"),
        "data hash": fit.meta.get("data_hash"),
        "seed": sampler.get("seed", 0),
        "sampler": ", ".join(f"{k}={v}" for k, v in sampler.items() if v is not None),
        "made by": fit.meta.get("made_by", ""),
        "created": fit.meta.get("created_at", ""),
        "sampling s": fit.fit_seconds,
    }
    return row


def provenance(command: str | None, fits: list[dict], inputs: list[Path]) -> list[dict]:
    """The command, the versions, every fit's origin and every input file's hash."""
    out = [B.text(f"Command: {command or ' '.join(sys.argv)}")]
    out.append(B.table(pd.DataFrame([versions()]), caption="versions"))
    if fits:
        out.append(B.table(pd.DataFrame(fits), caption="fits"))
    files = [
        {"input": str(p), "sha256": file_hash(p) if p.is_file() else "(folder)"} for p in inputs
    ]
    return out + [B.table(pd.DataFrame(files), caption="input files")]
