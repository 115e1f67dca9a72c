"""Spreadsheet safety (formats/safety.py): which CSV cells get the leading apostrophe, and that our
own readers give the original text back (issue 23, item 5)."""

from __future__ import annotations

import csv
import io

import pytest
from hypothesis import given
from hypothesis import strategies as st

from formats.safety import neutralise, neutralise_row, unneutralise

FORMULAS = ["=2+5", "+cmd", "-cmd", "@SUM(A1)", "\t@x", "\r=x", '=HYPERLINK("http://x","y")']
HIDDEN = [" =2+5", "  =2+5", "\t=2+5", " \t@x", '\u00a0=HYPERLINK("http://x")', "\n+cmd", "\u3000-cmd", " @x"]


@pytest.mark.parametrize("text", FORMULAS + HIDDEN)
def test_a_formula_gets_an_apostrophe_even_behind_leading_whitespace(text):
    assert neutralise(text) == "'" + text
    assert unneutralise(neutralise(text)) == text


@pytest.mark.parametrize("value", ["-0.5", "-1", "+3", "1e-3", "-.5", " -0.5", "-2E+4", -0.5, -1, 3, 0.0])
def test_numbers_stay_numbers(value):
    assert neutralise(value) == value
    assert unneutralise(value) == value if isinstance(value, str) else True


@pytest.mark.parametrize("text", ["plain", "", " plain", "2+5", "a=b", "'quoted", "-", "-x", " -x"])
def test_other_text_is_left_alone_or_only_apostrophised_when_risky(text):
    expected = "'" + text if text.lstrip().startswith(("=", "+", "-", "@")) else text
    assert neutralise(text) == expected
    assert unneutralise(neutralise(text)) == text


def test_text_that_already_starts_with_an_apostrophe_survives_the_round_trip():
    """A comment typed as ``'=x`` is not taken for a neutralised ``=x`` on the way back."""
    for text in ("'=x", "'' =x", "' =2+5", "'hello", "'"):
        assert unneutralise(neutralise(text)) == text
    assert neutralise("'=x") == "''=x"  # a spreadsheet shows '=x, as typed


@given(st.text(alphabet=st.sampled_from(list("=+-@'\t\r\n 0.5eE\u00a0ax")), max_size=8))
def test_round_trip_of_any_text(text):
    assert unneutralise(neutralise(text)) == text
    written = neutralise(text)
    # what a spreadsheet reads first (after any whitespace) is never a formula sign, unless a plain number
    core = written.lstrip()
    assert not core.startswith(("=", "+", "-", "@")) or _is_number(core.strip()), written
    assert not written.startswith(("\t", "\r"))


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return text.lower() not in {"nan", "inf", "-inf", "+inf", "infinity", "-infinity", "+infinity"}


def test_the_votes_csv_round_trip_gives_the_original_text(tmp_path):
    """A vote export (exports.tables) read back by formats.tidy and by the votes import's cell rule."""
    from exports.tables import votes_csv
    from formats.tidy import read_votes

    names = ["=2+5", " =2+5", "\t@x", " @evil", "'=x", "-0.5"]
    rows = [
        {"item": f"d{i}", "condition": "", "annotator": f"a{i}", "question": "satisfied", "value": name, "comment": name}
        for i, name in enumerate(names)
    ]
    content = votes_csv(rows)
    cells = [row["comment"] for row in csv.DictReader(io.StringIO(content.decode()))]
    assert cells == ["'=2+5", "' =2+5", "'\t@x", "' @evil", "''=x", "-0.5"]
    assert [unneutralise(cell) for cell in cells] == names  # annotate.judging.votes.import_votes reads cells so
    path = tmp_path / "votes.csv"
    path.write_bytes(content)
    table = read_votes(path)
    # formats.tidy strips the cell first (a stray space in a hand-made file), then undoes the apostrophe
    assert [v.value for v in table.votes] == ["=2+5", " =2+5", "\t@x", " @evil", "'=x", "-0.5"]


def test_neutralise_row_keeps_numbers_and_keys():
    assert neutralise_row({"=k": " =2+5", "n": -0.5, "s": "-0.5", "none": None}) == {
        "=k": "' =2+5",
        "n": -0.5,
        "s": "-0.5",
        "none": None,
    }


def test_a_page_table_downloads_as_neutralised_csv():
    """annotate/pages/tables.py: what a table's "Download as CSV" gives."""
    import pandas as pd

    from annotate.pages.tables import table_csv

    frame = pd.DataFrame(
        [
            {"annotator": "=2+5", "done": 3, "median": -0.5, "comment": " =HYPERLINK(1)", "note": None},
            {"annotator": "rater", "done": 1, "median": None, "comment": "\t@x", "note": "-"},
        ]
    )
    frame["=header"] = ["a", "b"]
    rows = list(csv.reader(io.StringIO(table_csv(frame).decode())))
    assert rows == [
        ["annotator", "done", "median", "comment", "note", "'=header"],
        ["'=2+5", "3", "-0.5", "' =HYPERLINK(1)", "", "a"],
        ["rater", "1", "", "'\t@x", "'-", "b"],
    ]
