""" "Unsure" as missing data (``formats.tidy.UNSURE``): agreement once counted it as a third category and
correlation refused it as a rating that is not a number.  Now both leave it out before they compute, the
CLIs say how many they left out, and the analysis reports the unsure rate per item and per annotator."""

from __future__ import annotations

import csv
import io
import json
from contextlib import redirect_stdout

import krippendorff
import numpy as np
import pytest

from formats.tidy import Vote, VoteTable, read_votes, votes_from_rows
from metrics import present
from metrics.__main__ import main
from metrics.analysis import AnalysisSettings, agreement_all, unsure_summary, votes_summary
from metrics.results import StudyAnalysis

ITEMS, ANNOTATORS = 12, 3


def _votes(unsure_cells: set[tuple[int, int]]) -> tuple[VoteTable, np.ndarray]:
    """Binary votes of 3 annotators on 12 items, "unsure" in the given (item, annotator) cells; and the
    reliability matrix (annotators × items) with those cells missing."""
    rng = np.random.default_rng(5)
    truth = rng.random(ITEMS) < 0.5
    matrix = np.full((ANNOTATORS, ITEMS), np.nan)
    rows = []
    for i in range(ITEMS):
        for a in range(ANNOTATORS):
            value = int(truth[i] if rng.random() < 0.8 else not truth[i])
            if (i, a) in unsure_cells:
                rows.append((f"d{i}", f"a{a}", "satisfied", "unsure"))
            else:
                rows.append((f"d{i}", f"a{a}", "satisfied", str(value)))
                matrix[a, i] = value
    return votes_from_rows(rows), matrix


UNSURE_CELLS = {(0, 0), (3, 1), (3, 2), (7, 0), (10, 2)}


def test_agreement_leaves_unsure_out_as_missing():
    table, matrix = _votes(UNSURE_CELLS)
    found = agreement_all(table, resamples=0)
    report = found["questions"]["satisfied"]
    expected = krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal")
    assert report["krippendorff_alpha"] == pytest.approx(expected, abs=1e-12)
    # the same as on the votes without them: "unsure" is no category of its own
    plain = agreement_all(table.without_unsure(), resamples=0)["questions"]["satisfied"]
    assert report["krippendorff_alpha"] == plain["krippendorff_alpha"] and report["fleiss_kappa"] == plain["fleiss_kappa"]
    assert "satisfied: 5 'unsure' vote(s) left out as missing" in found["notes"]


def test_labels_never_say_unsure_and_the_rates_are_counted():
    table, _ = _votes(UNSURE_CELLS)
    result = votes_summary(table, AnalysisSettings(resamples=0))
    labels = {row["majority"] for row in result["majority"]["satisfied"]["rows"]}
    assert "unsure" not in labels
    rates = result["unsure"]["questions"]["satisfied"]
    assert (rates["votes"], rates["unsure"], rates["rate"]) == (36, 5, 5 / 36)
    assert rates["items"][0] == {"item": "d3", "condition": "", "votes": 3, "unsure": 2, "rate": 2 / 3}
    by_annotator = {r["annotator"]: (r["unsure"], r["votes"]) for r in rates["annotators"]}
    assert by_annotator == {"a0": (2, 12), "a1": (1, 12), "a2": (2, 12)}
    table_shown = present.unsure_table(StudyAnalysis.from_dict(result))
    assert table_shown.rows[0] == ["satisfied", "all votes", "5 of 36", "13.9%"]
    assert table_shown in present.analysis_tables(result, "none")  # the page, the report and the CLI say it
    assert unsure_summary(table.without_unsure()) is None  # nothing said when nobody was unsure
    assert "unsure" not in votes_summary(table.without_unsure(), AnalysisSettings(resamples=0))


def _cli(*args: str) -> dict:
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(list(args)) == 0
    return json.loads(out.getvalue())


def test_the_clis_take_unsure_votes_and_say_how_many_they_left_out(tmp_path, fixtures):
    """Agreement and correlation from a votes file holding "unsure": the same numbers as without those rows."""
    dialogues = fixtures / "fga_human_eval"
    ids = sorted(p.name.removesuffix(".txt") for p in dialogues.iterdir() if p.suffix == ".txt")[:10]
    assert len(ids) == 10
    rng = np.random.default_rng(2)
    rows = [(d, f"a{a}", "rating", str(int(rng.integers(1, 6)))) for d in ids for a in range(3)]
    with_unsure = rows + [(ids[0], "a3", "rating", "unsure"), (ids[4], "a3", "rating", "Unsure")]
    files = {}
    for name, content in (("plain", rows), ("unsure", with_unsure)):
        path = tmp_path / f"{name}.csv"
        with path.open("w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["item", "annotator", "question", "value"])
            writer.writerows(content)
        files[name] = path
    assert len(read_votes(files["unsure"]).votes) == 32  # the file keeps them
    agreement = [_cli("agreement", str(files[n]), "--bootstrap", "0", "--json") for n in ("plain", "unsure")]
    assert agreement[1]["questions"]["rating"]["krippendorff_alpha"] == agreement[0]["questions"]["rating"]["krippendorff_alpha"]
    correlate = [
        _cli("correlate", "--ratings", str(files[n]), "--bootstrap", "0", "--json", str(dialogues)) for n in ("plain", "unsure")
    ]
    assert [m["pearson"] for m in correlate[1]["metrics"]] == [m["pearson"] for m in correlate[0]["metrics"]]
    assert "2 'unsure' vote(s) left out as missing" in correlate[1]["notes"]
    assert Vote("x", "a", "q", "unsure").value == "unsure"
