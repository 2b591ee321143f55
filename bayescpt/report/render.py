"""Render a report's sections to one HTML page with Jinja2 (the template
``templates/report.html.j2``, autoescaped) and write it atomically."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import jinja2

from bayescpt import __version__
from bayescpt.core.outputs import write_outputs

TEMPLATE = "report.html.j2"


def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("bayescpt.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=False,
        lstrip_blocks=False,
    )


def render(title: str, subtitle: str, sections: list[dict]) -> str:
    """The page: ``sections`` is a list of {id, title, blocks} (see
    :mod:`bayescpt.report.blocks`)."""
    written = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return (
        _environment()
        .get_template(TEMPLATE)
        .render(
            title=title, subtitle=subtitle, sections=sections, version=__version__, written=written
        )
    )


def write_html(html: str, path) -> Path:
    """Write the page to ``path`` (the old file or the whole new one, never half)."""
    path = Path(path)
    write_outputs({path: lambda tmp: Path(tmp).write_text(html, encoding="utf-8")})
    return path
