"""Issue 26, item 4: the answer scale comes from the question, not the data.

Gwet's AC1/AC2 divide chance agreement by the number of answers q; inferred from the votes, one extra vote
of an answer nobody else used moved AC1.  With the question's declared answers every statistic uses that
set.  Reference values: irrCAC 0.4.4 (``CAC(ratings, categories=[1, 2, 3, 4, 5])``, run outside the
project's dependencies) and ``krippendorff.alpha(..., value_domain=...)``.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from formats.tidy import Vote, votes_from_rows
from metrics.agreement import LEVELS, agreement_report

SCALE = ["1", "2", "3", "4", "5"]
# 8 items x 3 raters on a 1-5 scale; only 4 and 5 were used
ROWS = [("4", "4", "5"), ("5", "5", "4"), ("4", "5", "5"), ("5", "4", "4"), ("4", "4", "4"), ("5", "5", "5"), ("4", "5", "4")]
ROWS += [("5", "4", "5")]
BEFORE = [Vote(f"i{u}", who, "q", value) for u, row in enumerate(ROWS) for who, value in zip("xyz", row)]
AFTER = BEFORE + [Vote("new", "x", "q", "3")]  # one extra vote "3" on a new item


def report(votes, categories=None, **options):
    return agreement_report(votes, resamples=0, categories=categories, **options)


def test_one_extra_vote_moves_ac1_only_through_the_inferred_answers():
    """Inferred answers: AC1 0 -> 0.289 (q goes 2 -> 3).  Declared 1-5: 0.429 -> 0.413, the extra vote's
    own weight in the answers' prevalence (irrCAC's values with categories=1..5)."""
    assert report(BEFORE)["gwet_ac1"] == pytest.approx(0.0, abs=1e-12)
    assert report(AFTER)["gwet_ac1"] == pytest.approx(0.289473684210526, abs=1e-12)
    before, after = report(BEFORE, SCALE), report(AFTER, SCALE)
    assert before["gwet_ac1"] == pytest.approx(0.428571428571429, abs=1e-12)
    assert after["gwet_ac1"] == pytest.approx(0.41304347826087, abs=1e-12)
    assert abs(after["gwet_ac1"] - before["gwet_ac1"]) < 0.02
    assert before["categories"] == after["categories"] == SCALE
    assert any("declared answers 1, 2, 3, 4, 5 (never voted: 1, 2, 3)" in note for note in before["notes"])


@pytest.mark.parametrize("scheme, before, after", [("linear", 0.8, 0.775), ("quadratic", 0.941176470588235, 0.9296875)])
def test_ac2_weights_span_the_declared_scale(scheme, before, after):
    """irrCAC's gwet() with linear / quadratic weights over categories 1..5."""
    assert report(BEFORE, SCALE, weights=scheme)["gwet_ac2"] == pytest.approx(before, abs=1e-12)
    assert report(AFTER, SCALE, weights=scheme)["gwet_ac2"] == pytest.approx(after, abs=1e-12)


@pytest.mark.parametrize("votes", [BEFORE, AFTER], ids=["before", "after"])
def test_statistics_defined_by_the_answers_used_do_not_change(votes):
    """Percent agreement, Fleiss' κ (irrCAC: 0 before, 0.15625 after, either way), α at every level and
    Cohen's κ are the same over the declared scale; α equals krippendorff's with value_domain 1..5."""
    import krippendorff

    keys = ("percent_agreement", "fleiss_kappa", "krippendorff_alpha")
    for level in LEVELS:
        inferred, declared = report(votes, level=level), report(votes, SCALE, level=level)
        for key in keys:
            assert declared[key] == pytest.approx(inferred[key], abs=1e-12), (level, key)
        units = list(dict.fromkeys(v.item for v in votes))
        reliability = [
            [next((float(v.value) for v in votes if v.item == u and v.annotator == who), np.nan) for u in units] for who in "xyz"
        ]
        expected = krippendorff.alpha(reliability, value_domain=[1.0, 2.0, 3.0, 4.0, 5.0], level_of_measurement=level)
        assert declared["krippendorff_alpha"] == pytest.approx(expected, abs=1e-12), level
        assert [p["kappa"] for p in declared["cohen_kappa_pairwise"]] == [p["kappa"] for p in inferred["cohen_kappa_pairwise"]]
    assert report(votes, SCALE)["fleiss_kappa"] == pytest.approx(0.0 if votes is BEFORE else 0.15625, abs=1e-12)


def test_one_answer_throughout_is_full_agreement_on_a_declared_scale_as_on_0_1():
    """All "4" on a declared 1-5 scale: AC1 1.0 (pa 1, chance agreement 0), as all "1" on a 0/1 question."""
    fours = [Vote(f"i{u}", who, "q", "4") for u in range(10) for who in "xyz"]
    ones = [Vote(f"i{u}", who, "q", "1") for u in range(10) for who in "xyz"]
    assert report(fours, SCALE)["gwet_ac1"] == 1.0
    assert report(ones)["gwet_ac1"] == report(ones, ["0", "1"])["gwet_ac1"] == 1.0


def test_labels_keep_the_declared_order_for_weighted_statistics():
    """Non-numeric answers: AC2's and weighted Cohen κ's ranks follow the declared order (bad < ok < good),
    not the alphabetical one the votes alone give (bad < good < ok): the same values as the answers coded
    0, 1, 2."""
    order = ["bad", "ok", "good"]
    data = [("bad", "ok", "bad"), ("ok", "good", "ok"), ("good", "good", "ok"), ("bad", "bad", "ok"), ("good", "ok", "good")]
    votes = [Vote(f"i{u}", who, "q", value) for u, row in enumerate(data) for who, value in zip("xyz", row)]
    coded = [Vote(v.item, v.annotator, "q", str(order.index(v.value))) for v in votes]
    declared, as_ranks = report(votes, order, weights="linear"), report(coded, ["0", "1", "2"], weights="linear")
    assert declared["categories"] == order
    assert declared["gwet_ac2"] == pytest.approx(as_ranks["gwet_ac2"], abs=1e-12)
    kappas = [[p["kappa"] for p in r["cohen_kappa_pairwise"]] for r in (declared, as_ranks)]
    assert kappas[0] == pytest.approx(kappas[1], abs=1e-12)
    assert report(votes, weights="linear")["gwet_ac2"] != pytest.approx(as_ranks["gwet_ac2"], abs=1e-6)


def test_declared_numbers_are_spelled_once_and_a_vote_outside_is_an_error():
    votes = [Vote("a", "x", "q", "4.0"), Vote("a", "y", "q", "4"), Vote("b", "x", "q", "2"), Vote("b", "y", "q", "2.00")]
    declared = report(votes, ["5", "4.0", "3", "2", "1"])
    assert declared["categories"] == SCALE and declared["percent_agreement"] == 1.0
    with pytest.raises(ValueError, match="not one of"):
        report(votes, ["0", "1"])


def test_agreement_all_takes_declared_answers_per_question_or_for_all():
    from metrics.analysis import DEFAULTS, agreement_all, votes_summary

    rows = [(v.item, v.annotator, v.question, v.value) for v in BEFORE]
    rows += [(v.item, v.annotator, "other", v.value) for v in BEFORE]
    table = votes_from_rows(rows)
    per_question = agreement_all(table, resamples=0, categories={"q": SCALE})["questions"]
    assert per_question["q"]["categories"] == SCALE and per_question["other"]["categories"] == ["4", "5"]
    for_all = agreement_all(table, resamples=0, categories=SCALE)["questions"]
    assert for_all["q"]["categories"] == for_all["other"]["categories"] == SCALE
    summary = votes_summary(table, DEFAULTS, categories={"other": SCALE})["agreement"]["questions"]
    assert summary["other"]["gwet_ac1"] == pytest.approx(0.428571428571429, abs=1e-12)


def test_cli_categories_and_scale(tmp_path, capsys):
    from metrics.__main__ import main

    path = tmp_path / "votes.csv"
    path.write_text("item,annotator,question,value\n" + "".join(f"{v.item},{v.annotator},q,{v.value}\n" for v in BEFORE))
    results = []
    for option in (["--scale", "1-5"], ["--categories", "1,2,3,4,5"], []):
        assert main(["agreement", str(path), "--bootstrap", "0", "--json", *option]) == 0
        results.append(json.loads(capsys.readouterr().out)["questions"]["q"])
    assert results[0]["categories"] == results[1]["categories"] == SCALE and results[2]["categories"] == ["4", "5"]
    assert results[0]["gwet_ac1"] == results[1]["gwet_ac1"] == pytest.approx(0.428571428571429, abs=1e-12)
    assert results[2]["gwet_ac1"] == pytest.approx(0.0, abs=1e-12)
    assert main(["agreement", str(path), "--categories", "0,1", "--json"]) == 2
    assert "is not one of" in capsys.readouterr().err
    assert main(["agreement", str(path), "--scale", "5-1"]) == 2
    with pytest.raises(SystemExit):
        main(["agreement", str(path), "--scale", "1-5", "--categories", "1,2"])


def test_the_app_passes_the_study_declared_answers():
    """A study's questions declare its answers: binary 0, 1 (an item's own question too), a choice its
    values, a text question none; the analysis of a kind uses them."""
    from annotate.analysis.study_data import declared_answers
    from annotate.kinds import get_kind
    from annotate.kinds.base import Kind, analyse
    from formats.dstc import TRANSCRIPTION_STATUSES
    from metrics.analysis import AnalysisSettings

    class Item:
        questions = ["inform(area=north)"]

    slu = declared_answers(get_kind("slu").questions, [Item()])
    assert slu == {"transcription_status": list(TRANSCRIPTION_STATUSES), "inform(area=north)": ["0", "1"]}
    assert declared_answers(get_kind("satisfaction").questions, []) == {"satisfied": ["0", "1"]}
    rating = {"name": "q", "type": "choice", "required": True, "label": "q", "values": SCALE}
    kind = Kind(name="rating", label="rating", inputs="", questions=(rating,), build_items=lambda files, condition: [])
    votes = votes_from_rows([(v.item, v.annotator, v.question, v.value) for v in BEFORE])
    settings = AnalysisSettings(resamples=0)
    result = analyse(kind, votes, [], settings, categories=declared_answers(kind.questions, []))
    assert result["agreement"]["questions"]["q"]["gwet_ac1"] == pytest.approx(0.428571428571429, abs=1e-12)
    statuses = votes_from_rows([(f"t{u}", who, "transcription_status", "transcribed") for u in range(6) for who in "xyz"])
    slu_result = analyse(get_kind("slu"), statuses, [], settings, categories=slu)
    assert slu_result["agreement"]["questions"]["transcription_status"]["gwet_ac1"] == 1.0
