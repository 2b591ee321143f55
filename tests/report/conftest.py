"""Shared by the report tests: the bundled reference fits with the tables that report them, a
plan table made once per module, and headless Chromium (skipped with its reason when missing)."""

import shutil

import pytest

from tests.conftest import ROOT


@pytest.fixture(scope="session")
def chromium():
    """The headless browser's executable (Debian's ``chromium``)."""
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        pytest.skip(
            "chromium is not installed (apt-get install -y chromium; .ci/run installs "
            "it): the reports cannot be opened in a browser"
        )
    return exe


def make_plan_table(folder):
    """A plan table of the reference CPT fit (the demo's question on fewer plans)."""
    from bayescpt.cli.main import main

    out = folder / "plans.csv"
    rc = main(
        [
            "plan",
            str(ROOT / "models" / "cpt_simulated.nc"),
            "--pt",
            str(ROOT / "data" / "cpt_simulated.csv"),
            "--pt-run",
            "pt@10000/cosine",
            "--tolerance",
            "0.05",
            "--risk",
            "0.1",
            "--transfers",
            "8000,10000",
            "--peak-lrs",
            "5e-5,1e-4,2e-4",
            "--steps",
            "1000,4000",
            "--out",
            str(out),
        ]
    )
    assert rc == 0
    return out
