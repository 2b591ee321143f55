"""Build a report from its inputs: fit files, a table to predict (schedule or grid), a plan
table, a sweep's folder or summary. :func:`build_report` returns the page and its pictures;
:func:`write_report` also writes the page.

The sections, always all present (a section with nothing to show says why): data, diagnostics,
sampler plots, parameters per group, predictions, extrapolation, plan, provenance.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from bayescpt.core.fitfile import load_fit
from bayescpt.parallel.engine import sweep_outputs
from bayescpt.report import blocks as B
from bayescpt.report import sections as S
from bayescpt.report.plan import is_plan_table, plan_section
from bayescpt.report.predictions import predictions
from bayescpt.report.render import render, write_html

#: (id, title) of every section, in page order
SECTIONS = (
    ("data", "Data"),
    ("diagnostics", "Diagnostics"),
    ("sampler", "Sampler plots"),
    ("parameters", "Parameters per group"),
    ("predictions", "Predictions"),
    ("extrapolation", "Extrapolation"),
    ("plan", "Plan"),
    ("provenance", "Provenance"),
)
#: the most fits of a sweep drawn in full (the others get their verdict only)
MAX_FITS = 12


@dataclass
class Inputs:
    """The inputs sorted: fits as (label, path), the table to predict, the plan table, the
    sweep's summary table."""

    fits: list = field(default_factory=list)
    table: Path | None = None
    plan: Path | None = None
    sweep: pd.DataFrame | None = None
    paths: list = field(default_factory=list)


@dataclass
class Report:
    """A rendered report: the page, its pictures (name -> PNG bytes) and its title."""

    html: str
    images: dict
    title: str


def sort_inputs(paths) -> Inputs:
    """Sort the inputs by what they are; a ValueError for one that is none of them."""
    got = Inputs(paths=[Path(p) for p in paths])
    for p in got.paths:
        if p.is_dir() or p.name == "summary.csv":
            got.fits += [(name, path) for name, path in sweep_outputs(p)]
            summary = p / "summary.csv" if p.is_dir() else p
            got.sweep = pd.read_csv(summary) if summary.is_file() else None
        elif p.suffix == ".nc":
            got.fits.append((p.stem, p))
        elif p.suffix == ".csv" and p.is_file():
            if is_plan_table(pd.read_csv(p, nrows=1).columns):
                got.plan = _one(got.plan, p, "plan table")
            else:
                got.table = _one(got.table, p, "table to predict")
        else:
            raise ValueError(f"{p}: not a fit file (.nc), a table (.csv) or a sweep's folder")
    if not got.fits and got.plan is None:
        raise ValueError("nothing to report: give a fit file, a plan table or a sweep's folder")
    return got


def _one(old, new, what):
    if old is not None:
        raise ValueError(f"two {what}s given ({old}, {new}); a report takes one")
    return new


def _fit_blocks(out: dict, fit, path, label: str, got: Inputs, kw: dict, full: bool) -> dict:
    """Add one fit's blocks to every section of ``out``; returns its provenance row."""
    diag = fit.diagnostics()
    many = len(got.fits) > 1
    head = [B.heading(label)] if many else []
    out["data"] += head + S.data_summary(fit, label)
    out["diagnostics"] += head + S.diagnostics(fit, diag, label)
    if full:
        out["sampler"] += S.sampler_plots(fit, diag, label)
        pred, ext = predictions(fit, label, got.table, kw["prob"], kw["seed"])
        out["predictions"] += head + pred
        out["extrapolation"] += head + ext
    return {"diag": (label, diag), "row": S.fit_provenance(fit, path, label)}


def build_report(
    paths,
    *,
    command: str | None = None,
    prob: float = 0.9,
    seed: int = 0,
    tolerance: float | None = None,
    risk: float | None = None,
) -> Report:
    """The report of ``paths`` (see the module docstring); ``command`` the command that made
    it (default: this process's), ``prob`` the intervals' probability, ``seed`` the
    predictions', ``tolerance`` and ``risk`` the plan's question (for the plan plot)."""
    got = sort_inputs(paths)
    out = {sid: [] for sid, _ in SECTIONS}
    if got.sweep is not None:
        out["data"].append(B.table(got.sweep, caption="the sweep's summary"))
    done = [
        _fit_blocks(
            out, load_fit(path), path, label, got, {"prob": prob, "seed": seed}, i < MAX_FITS
        )
        for i, (label, path) in enumerate(got.fits)
    ]
    if len(got.fits) > MAX_FITS:
        out["sampler"].append(B.text(f"Plots of the first {MAX_FITS} of {len(got.fits)} fits."))
    if done:
        out["parameters"] += S.parameters([d["diag"] for d in done[:MAX_FITS]])
    if got.plan is not None:
        out["plan"] += plan_section(got.plan, tolerance, risk, prob)
    out["provenance"] += S.provenance(command, [d["row"] for d in done], got.paths)
    _explain_empty(out, got)
    names = ", ".join(label for label, _ in got.fits) or got.plan.name
    title = f"bayescpt report: {names if len(names) < 80 else f'{len(got.fits)} fits'}"
    subtitle = (
        f"{len(got.fits)} fit(s)"
        + (f", predictions for {got.table}" if got.table else "")
        + (f", plan {got.plan}" if got.plan else "")
    )
    sections = [{"id": sid, "title": name, "blocks": out[sid]} for sid, name in SECTIONS]
    images = {
        f"{i:02d}_{b['name']}.png": b["png"]
        for i, b in enumerate(b for s in sections for b in s["blocks"] if b["kind"] == "image")
    }
    return Report(render(title, subtitle, sections), images, title)


def _explain_empty(out: dict, got: Inputs) -> None:
    """A line in each section that has nothing to show, saying why."""
    why = {
        "plan": "No plan table given (the table `bayescpt plan --out PLANS.csv` writes).",
        "sampler": "No fit given, so no sampler to judge.",
        "parameters": "No fit given, so no parameters.",
        "predictions": "No fit given, so no predictions.",
        "extrapolation": "No prediction, so nothing extrapolated.",
        "data": "No fit given: the data are the plan's fit's.",
        "diagnostics": "No fit given, so no diagnostics.",
    }
    for sid, words in why.items():
        if not out[sid]:
            out[sid].append(B.text(words))


def write_report(paths, out, **kw) -> Report:
    """:func:`build_report` written to ``out`` (atomically)."""
    report = build_report(paths, **kw)
    write_html(report.html, out)
    return report
