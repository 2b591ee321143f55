"""Property test of the loss-curve reader: a random tidy table, with or without one random
defect, either loads to exactly the values written or fails with one DataError line naming the
file and the defect's line (the command line turns a DataError into exit 2); never another
exception, never a silently changed value."""

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from bayescpt.core.tables import DataError  # noqa: E402
from bayescpt.curves.data.validate import read_curves  # noqa: E402

BAD_NUMBERS = [
    "abc",
    "3_5",
    "\u0663",
    "\uff13.5",
    "0x10",
    "1.2.3",
    "--1",
    "1e",
    "nan",
    "inf",
    "-inf",
    "1e400",
]


@st.composite
def tables(draw):
    """(columns, rows): rows of text cells, and the intended values per row."""
    n_runs = draw(st.integers(1, 3))
    with_size = draw(st.booleans())
    rows = []
    for r in range(n_runs):
        n = draw(st.integers(2, 8))
        gaps = draw(st.lists(st.integers(1, 500), min_size=n, max_size=n))
        steps = np.concatenate([[0], np.cumsum(gaps)])
        peak = draw(st.floats(1e-5, 5e-2))
        size = draw(st.sampled_from([25e6, 1.5e8, 4e8]))
        for k, s in enumerate(steps):
            lr = 0.0 if k == 0 else peak * (1 - 0.5 * k / len(steps))
            has = k > 0 and (k == 1 or draw(st.booleans()))
            loss = 2.5 + 3.0 / (1 + k) if has else None
            rows.append(
                {"run": f"run{r}", "step": int(s), "lr": lr, "loss": loss, "model_size": size}
            )
    cols = ["run", "step", "lr", "loss"] + (["model_size"] if with_size else [])
    order = draw(st.permutations(cols))
    return list(order), rows


def text_of(cols, rows):
    def cell(row, c):
        v = row[c]
        return "" if v is None else (v if isinstance(v, str) else repr(v))

    return [",".join(cols)] + [",".join(cell(r, c) for c in cols) for r in rows]


@st.composite
def cases(draw):
    cols, rows = draw(tables())
    lines = text_of(cols, rows)  # lines[0] is the header (line 1)
    kind = draw(
        st.sampled_from(
            [
                "none",
                "blank",
                "crlf",
                "bad_number",
                "negative",
                "big_loss",
                "big_step",
                "dup_header",
                "extra_field",
                "missing_field",
                "swap",
                "dup_row",
                "empty_required",
            ]
        )
    )
    bad_lines = set()
    eol = "\n"
    if kind == "blank":
        at = draw(st.integers(1, len(lines)))
        lines.insert(at, "")
    elif kind == "crlf":
        eol = "\r\n"
    elif kind == "dup_header":
        c = draw(st.sampled_from(cols))
        lines = [
            ln + "," + (c if i == 0 else ln.split(",")[cols.index(c)]) for i, ln in enumerate(lines)
        ]
        bad_lines = {1}
    elif kind in ("extra_field", "missing_field"):
        i = draw(st.integers(1, len(rows)))
        lines[i] = lines[i] + ",1" if kind == "extra_field" else lines[i].rsplit(",", 1)[0]
        bad_lines = {i + 1}
    elif kind in ("swap", "dup_row"):
        i = draw(st.integers(1, len(rows) - 1))
        if rows[i - 1]["run"] != rows[i]["run"]:
            kind = "none"
        elif kind == "swap":
            lines[i], lines[i + 1] = lines[i + 1], lines[i]
            bad_lines = {i + 1, i + 2}
        else:
            lines.insert(i + 1, lines[i])
            bad_lines = {i + 1, i + 2}
    elif kind != "none":
        i = draw(st.integers(1, len(rows)))
        numeric = [c for c in cols if c != "run"]
        if kind == "bad_number":
            c, value = draw(st.sampled_from(numeric)), draw(st.sampled_from(BAD_NUMBERS))
        elif kind == "negative":
            c, value = draw(st.sampled_from(numeric)), "-" + draw(st.sampled_from(["1", "2e-4"]))
        elif kind == "big_loss":
            c, value = "loss", draw(st.sampled_from(["250", "1e308", "20.5"]))
        elif kind == "big_step":
            c, value = (
                "step",
                draw(st.sampled_from(["99999999999999999999", "9007199254740992", "12.5"])),
            )
        else:
            c, value = draw(st.sampled_from([x for x in ("run", "step", "lr") if x in cols])), ""
        cells = lines[i].split(",")
        cells[cols.index(c)] = value
        lines[i] = ",".join(cells)
        bad_lines = {i + 1}
    return kind, cols, rows, eol.join(lines) + eol, bad_lines


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(case=cases())
def test_reader_loads_exactly_or_names_the_line(tmp_path, case):
    kind, cols, rows, text, bad_lines = case
    path = tmp_path / "table.csv"
    path.write_bytes(text.encode())
    try:
        df = read_curves(path)
    except DataError as err:
        msg = str(err)
        assert bad_lines, f"{kind}: a good table was refused: {msg}"
        assert "\n" not in msg and msg.startswith(str(path))
        assert any(f"line {n}" in msg for n in bad_lines), (kind, bad_lines, msg)
        return
    assert not bad_lines, f"{kind}: a defective table loaded"
    want = sorted(rows, key=lambda r: (r["run"], r["step"]))
    assert len(df) == len(want)
    assert list(df["run"]) == [r["run"] for r in want]
    assert list(df["step"]) == [r["step"] for r in want]
    assert list(df["lr"]) == [r["lr"] for r in want]
    got = [None if np.isnan(v) else v for v in df["loss"]]
    assert got == [r["loss"] for r in want]
    if "model_size" in cols:
        assert list(df["model_size"]) == [r["model_size"] for r in want]
