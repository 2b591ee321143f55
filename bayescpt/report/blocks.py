"""The pieces a report section is made of, as plain dicts the template renders by ``kind``.

heading, text, verdict (a coloured line), list, table (columns and formatted rows, optionally
some rows marked), image (a matplotlib Figure as an inline base64 PNG, made in memory) and pre
(a folded block of fixed-width text). Nothing here writes HTML: the template does.
"""

from __future__ import annotations

import base64
import io
import math
import re

import numpy as np
import pandas as pd

from bayescpt.core.plotting import pyplot

#: resolution of the report's pictures (dots per inch): sharp on screen, small on disk
DPI = 72


def heading(text: str) -> dict:
    return {"kind": "heading", "text": text}


def text(words: str) -> dict:
    return {"kind": "text", "text": words}


def verdict(words: str, ok: bool) -> dict:
    return {"kind": "verdict", "text": words, "ok": bool(ok)}


def bullets(items) -> dict:
    return {"kind": "list", "items": [str(i) for i in items]}


def pre(summary: str, body: str) -> dict:
    return {"kind": "pre", "summary": summary, "text": body}


def cell(value) -> str:
    """A table cell as text: numbers to 4 significant digits, missing values empty."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return ""
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (float, np.floating)):
        return f"{float(value):.4g}"
    return str(value)


def table(df: pd.DataFrame, caption: str = "", index: bool = False, marked=()) -> dict:
    """A DataFrame as a table block (``index``: its index as the first column; ``marked``:
    positions of rows to highlight)."""
    if index:
        df = df.reset_index()
    return {
        "kind": "table",
        "caption": caption,
        "columns": [str(c) for c in df.columns],
        "rows": [[cell(v) for v in row] for row in df.itertuples(index=False)],
        "marked": list(marked),
    }


def image(fig, caption: str, dpi: int = DPI) -> dict:
    """A Figure as an image block (PNG in memory, base64 in a data URI); the figure is closed.
    The PNG bytes stay in the block (``png``, ``name``) for trackers that log the plots."""
    buf = io.BytesIO()
    try:
        fig.savefig(buf, format="png", dpi=dpi)
    finally:
        pyplot().close(fig)
    png = buf.getvalue()
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    name = re.sub(r"[^a-z0-9]+", "_", caption.lower()).strip("_")[:60] or "figure"
    return {
        "kind": "image",
        "caption": caption,
        "width": width,
        "height": height,
        "src": "data:image/png;base64," + base64.b64encode(png).decode("ascii"),
        "png": png,
        "name": name,
    }
