"""Issue 27, item 5: the analysis tables are readable at 1400x900 — narrow whatever the number of
questions, numbers to 3 decimals, column names in words, the unit of resampling in interval headers.

Built on real agreement reports (``metrics.agreement.agreement_report`` on seeded votes), not on
hand-made dicts; the browser test (tests/browser/test_browser_analysis.py) checks the widths on the page."""

from __future__ import annotations

import re

import numpy as np

from formats.tidy import votes_from_rows
from metrics import present
from metrics.agreement import agreement_report
from metrics.analysis import majority_table

THREE_DECIMALS = re.compile(r"^-?\d+\.\d{3}$")


def _votes(questions: int, items: int = 12, seed: int = 0):
    """3 annotators, each answering an item's hidden 0/1 truth and flipping it one time in five."""
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(questions):
        truth = rng.random(items) < 0.5
        for a in range(3):
            flips = rng.random(items) < 0.2
            rows += [(f"i{i}", f"a{a}", f"q{q}", str(int(t ^ f)), "") for i, (t, f) in enumerate(zip(truth, flips))]
    return votes_from_rows(rows, "test")


def _agreement(questions: int) -> dict:
    votes = _votes(questions)
    reports = {
        f"q{q}": agreement_report([v for v in votes.votes if v.question == f"q{q}"], resamples=50, seed=1)
        for q in range(questions)
    }
    return {"questions": reports, "signature": "s", "notes": []}


def test_the_agreement_table_is_long_not_wide():
    """One row per question and coefficient: 8 columns for 1 question and for 10 (it was 5 + 2 per coefficient)."""
    one, ten = present.agreement_table(_agreement(1)), present.agreement_table(_agreement(10))
    assert one.columns == ten.columns and len(one.columns) == 8
    assert len(one.rows) == 4 and len(ten.rows) == 40
    header = one.columns[-1]
    assert header.startswith("95% CI (") and "over items" in header  # the unit of resampling
    for row in ten.rows:
        assert row[6] == "—" or THREE_DECIMALS.match(row[6]), row
        assert row[7] == "—" or all(THREE_DECIMALS.match(v.strip()) for v in row[7].strip("[]").split(",")), row
    alpha = next(r for r in one.rows if r[5] == "Krippendorff's alpha")
    report = _agreement(1)["questions"]["q0"]
    assert alpha[:5] == ["q0", report["n_items"], 3, report["n_votes"], report["level"]]
    assert alpha[6] == f"{report['krippendorff_alpha']:.3f}"


def test_majority_items_in_words_and_three_decimals():
    rows = majority_table(_votes(1).votes, "q0")["rows"]
    table = present.majority_item_table(rows, "q0")
    assert table.columns[:3] == ("item", "votes", "majority label") and table.columns[-2:] == ("votes for 0", "votes for 1")
    mean = table.columns.index("mean vote (share of 1 for a 0/1 question)")
    for shown, row in zip(table.rows, rows):
        assert shown[mean] == f"{row['soft']:.3f}" and THREE_DECIMALS.match(shown[mean])
        assert shown[-2] + shown[-1] == row["n_votes"] == 3


def test_annotator_and_pairwise_tables_in_words():
    agreement = _agreement(1)
    annotators = present.annotator_table(agreement)
    assert "gold accuracy" not in annotators.columns  # no gold items: the two empty columns are left out
    assert annotators.columns[2:4] == ("votes", "votes compared") and len(annotators.rows) == 3
    pairs = present.cohen_table(agreement)
    assert pairs.columns == ("question", "annotator A", "annotator B", "items both judged", "Cohen's κ", "note")
    assert all(THREE_DECIMALS.match(row[4]) for row in pairs.rows)
