"""Reports of the six bundled reference fits and of a plan, opened in headless Chromium.

Per case: ``bayescpt report`` writes the page (under 5 MB); the HTML names no external resource
(every ``src`` an inline PNG, every ``href`` an anchor of the page, no stylesheet, script or
``url(`` to fetch); every image decodes (Pillow here, and Chromium: a probe script counts the
images with a natural size and the resources fetched over http); every section is present with
content; and Chromium, with networking blocked (``--proxy-server=127.0.0.1:9``), renders the
page to a screenshot that is not blank. Screenshots are kept in the test's folder, or in
``$BAYESCPT_SCREENSHOTS`` when set.
"""

import base64
import io
import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from bayescpt.cli.main import main
from bayescpt.datasets.bundled import REFERENCE_TABLES, reference_inputs
from bayescpt.report.build import SECTIONS
from tests.conftest import ROOT
from tests.report.conftest import make_plan_table

MAX_BYTES = 5_000_000
#: the probe added to a copy of the page: after load, the numbers Chromium saw, as attributes
PROBE = (
    "<script>window.addEventListener('load', function () {"
    "var im = Array.from(document.images);"
    "document.body.dataset.images = im.length;"
    "document.body.dataset.decoded = im.filter(function (i) {"
    " return i.complete && i.naturalWidth > 0; }).length;"
    "document.body.dataset.fetched = performance.getEntriesByType('resource')"
    ".filter(function (e) { return !e.name.startsWith('data:'); }).length;"
    "});</script>"
)

# module-scoped fixtures: the module's tests run on one xdist worker (--dist loadgroup)
pytestmark = pytest.mark.xdist_group("report/test_pages")
CHROMIUM = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--proxy-server=127.0.0.1:9",
    "--proxy-bypass-list=<-loopback>",
    "--no-first-run",
    "--disable-extensions",
    "--disable-background-networking",
    "--disable-component-update",
    "--virtual-time-budget=5000",
]


class Page(HTMLParser):
    """Every tag's attributes, the section ids and their block counts, the style text."""

    def __init__(self):
        super().__init__()
        self.tags, self.sections, self.style, self._in_style, self._section = (
            [],
            {},
            "",
            False,
            None,
        )

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append((tag, attrs))
        if tag == "section":
            self._section = attrs.get("id")
            self.sections[self._section] = 0
        elif self._section and tag in ("p", "ul", "table", "figure", "details", "h3"):
            self.sections[self._section] += 1
        self._in_style = tag == "style"

    def handle_endtag(self, tag):
        self._in_style = False

    def handle_data(self, data):
        if self._in_style:
            self.style += data


def _run_chromium(exe, args, timeout=120):
    run = subprocess.run([exe, *CHROMIUM, *args], capture_output=True, text=True, timeout=timeout)
    assert run.returncode == 0, run.stderr[-2000:]
    return run.stdout


@pytest.fixture(scope="module")
def plans(tmp_path_factory):
    return make_plan_table(tmp_path_factory.mktemp("plan"))


def _inputs(case, plans):
    if case == "plan":
        return [ROOT / "models" / "cpt_simulated.nc", plans]
    return reference_inputs(case)


#: the cases whose page predicts a whole bundled table (seconds each): the slow tier, which CI
#: also runs; the default tier opens one page of each kind of content (a curve fit without a
#: table, an hparams and a mixture fit, and a plan)
SLOW_CASES = {"annealing_multipowerlaw", "multipower_multipowerlaw", "cpt_simulated"}
CASES = [
    pytest.param(c, marks=pytest.mark.slow) if c in SLOW_CASES else c
    for c in [*REFERENCE_TABLES, "plan"]
]


@pytest.mark.parametrize("case", CASES)
def test_report_opens_whole_in_chromium_without_network(case, plans, chromium, tmp_path):
    out = tmp_path / f"{case}.html"
    extra = ["--tolerance", "0.05", "--risk", "0.1"] if case == "plan" else []
    assert main(["report", *map(str, _inputs(case, plans)), "--out", str(out), *extra]) == 0
    html = out.read_text(encoding="utf-8")
    assert out.stat().st_size < MAX_BYTES

    page = Page()
    page.feed(html)
    # nothing to fetch: inline images only, anchors only, no stylesheet or script to load
    srcs = [a["src"] for t, a in page.tags if "src" in a]
    hrefs = [a["href"] for t, a in page.tags if "href" in a]
    assert srcs and all(s.startswith("data:image/png;base64,") for s in srcs)
    assert all(h.startswith("#") for h in hrefs), hrefs
    assert not [t for t, a in page.tags if t in ("link", "script", "iframe", "object")]
    assert "url(" not in page.style and "@import" not in page.style
    assert not re.search(r"(src|href)\s*=\s*[\"']?\s*(https?:)?//", html)
    # every image decodes, at the size the page gives it
    sizes = {(int(a["width"]), int(a["height"])) for t, a in page.tags if t == "img"}
    for s in srcs:
        with Image.open(io.BytesIO(base64.b64decode(s.split(",", 1)[1]))) as im:
            im.load()
            assert im.size in sizes
    # every section is there, with something in it
    assert list(page.sections) == [sid for sid, _ in SECTIONS]
    assert all(n > 0 for n in page.sections.values()), page.sections
    expected = 2 if case == "annealing_olmo_c4" else 3  # sampler, forest, predictions/plan
    assert len(srcs) == expected
    if case == "plan":
        assert "Chosen" in html and "P(feasible" in html

    probe = tmp_path / f"{case}_probe.html"
    probe.write_text(html.replace("</body>", PROBE + "</body>"), encoding="utf-8")
    dom = _run_chromium(chromium, ["--dump-dom", probe.as_uri()])
    body = re.search(r"<body([^>]*)>", dom).group(1)
    got = dict(re.findall(r'data-(\w+)="(\d+)"', body))
    assert got == {"images": str(len(srcs)), "decoded": str(len(srcs)), "fetched": "0"}, got
    for sid, title in SECTIONS:
        assert f'<section id="{sid}">' in dom and f"<h2>{title}</h2>" in dom

    shot = tmp_path / f"{case}.png"
    _run_chromium(chromium, ["--window-size=1280,3600", f"--screenshot={shot}", out.as_uri()])
    with Image.open(shot) as im:
        pixels = np.asarray(im.convert("L"), dtype=float)
    assert pixels.shape == (3600, 1280) and pixels.std() > 10  # drawn, not a blank page
    if os.environ.get("BAYESCPT_SCREENSHOTS"):
        keep = Path(os.environ["BAYESCPT_SCREENSHOTS"])
        keep.mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, keep / shot.name)
