"""Issue 26, items 5 and 6: every note says what is true of the data it sits beside, and every interval
header names its unit of resampling (or the n its analytic interval is computed on).

Each test here failed on the code before the fix it guards (items 5-6 of issue 26)."""

from __future__ import annotations

import numpy as np
import pytest

from bench.corpus import write as write_corpus
from formats import load_dialogues
from formats.tidy import Vote
from metrics import adaptive, present
from metrics.agreement import agreement_report
from metrics.correlation import Ratings, correlate_one, correlation_report, human_ceiling

IDENTICAL = (
    "all ratings identical: chance agreement is 1 for κ and α, so they are undefined (0/0); AC1 is 1, as its "
    "chance agreement Σπ(1−π)/(q−1) is 0 whatever the number of answers q"
)


# --- agreement -----------------------------------------------------------------------------------


def test_one_annotator_is_not_called_complete_agreement():
    votes = [Vote(f"i{k}", "a", "q", str(k % 2)) for k in range(6)]
    report = agreement_report(votes, resamples=50)
    assert "only one annotator: agreement is not defined" in report["notes"]
    assert not any("complete agreement" in note for note in report["notes"])
    assert report["ci_degenerate"] == []


def test_annotators_who_share_no_item_are_not_complete_agreement():
    votes = [Vote(f"i{k}", "ab"[k % 2], "q", str(k % 3 == 0)) for k in range(8)]
    report = agreement_report(votes, resamples=50)
    assert report["n_pairable_items"] == 0
    assert not any("complete agreement" in note for note in report["notes"])


def test_identical_votes_give_the_same_ac1_on_a_binary_and_a_five_point_scale():
    """All "1" on 0/1 gave AC1 = 1.0 while all "4" on 1-5 gave null ("only one possible answer"): AC1's
    chance agreement Σπ_k(1 − π_k)/(q − 1) is 0 when every vote has one answer, for every q ≥ 2."""
    binary = agreement_report([Vote(f"i{u}", a, "q", "1") for u in range(5) for a in "abc"], resamples=50)
    likert = agreement_report([Vote(f"i{u}", a, "q", "4") for u in range(5) for a in "abc"], resamples=50)
    for report in (binary, likert):
        assert report["gwet_ac1"] == 1.0 and report["percent_agreement"] == 1.0
        assert report["fleiss_kappa"] is None and report["krippendorff_alpha"] is None
        assert IDENTICAL in report["notes"]
        assert not any("only one possible answer" in note for note in report["notes"])
    assert binary["ci"]["gwet_ac1"] == likert["ci"]["gwet_ac1"] == [1.0, 1.0]
    weighted = agreement_report([Vote(f"i{u}", a, "q", "4") for u in range(5) for a in "abc"], resamples=0, weights="quadratic")
    assert weighted["gwet_ac2"] == 1.0 and any(note.startswith("all ratings identical") for note in weighted["notes"])


# --- the human ceiling ---------------------------------------------------------------------------


def test_identical_ratings_do_not_claim_too_few_dialogues():
    ids = [f"d{i}" for i in range(10)]
    votes = [Vote(d, a, "q", "1") for d in ids for a in "abc"]
    ceiling = human_ceiling(votes, ids, resamples=0)
    assert ceiling["r_max"] is None
    assert ceiling["note"] == (
        "all ratings identical (10 dialogues with 2 or more ratings): no variance between or within dialogues, "
        "so ICC(1,k) is 0/0 and there is no ceiling"
    )
    few = human_ceiling([Vote("d0", "a", "q", "1"), Vote("d0", "b", "q", "2")], ids, resamples=0)
    assert few["note"] == "the ceiling needs at least 2 dialogues with 2 or more ratings each (found 1)"


# --- the difference test and its interval -----------------------------------------------------------


def test_williams_pairs_at_three_dialogues_are_noted_not_dropped():
    ratings = Ratings(["d0", "d1", "d2"], np.arange(3), np.array([1.0, 2.0, 4.0]), "mean", [])
    report = correlation_report({"a": np.array([0.1, 0.5, 0.9]), "b": np.array([0.3, 0.2, 0.8])}, ratings, resamples=0)
    assert report["williams"] == []
    note = "not compared (difference test and interval): a vs b on 3 dialogues; both need more than 3"
    assert note in report["notes"]
    table = present.williams_table({**report, "notes": report["notes"]})
    assert note in table.notes


def test_williams_pairs_of_a_constant_metric_are_noted_not_dropped():
    ids = [f"d{i}" for i in range(10)]
    rng = np.random.default_rng(0)
    y = rng.normal(size=10)
    ratings = Ratings(ids, np.arange(10), y, "mean", [])
    values = {"a": y + rng.normal(size=10), "b": rng.normal(size=10), "flat": np.full(10, 0.5)}
    report = correlation_report(values, ratings, resamples=0)
    assert {(w["a"], w["b"]) for w in report["williams"]} == {("a", "b")}
    note = "not compared (difference test and interval): flat — its correlation is undefined (constant values)"
    assert note in report["notes"]
    assert note in present.williams_table(report).notes and note not in present.correlation_table(_shown(report)).notes


def _shown(report: dict) -> dict:
    """A correlation report with the fields correlate_study adds, for the presentation."""
    return {
        "n_dialogues": 10,
        "n_ratings": 10,
        "n_votes": 10,
        "rating": "mean",
        "human_ceiling": {"annotator_vs_rest": {"mean_pearson": None}, "note": "x"},
        "signature": "s",
        **report,
    }


# --- design_report -------------------------------------------------------------------------------


def test_design_report_says_which_metrics_it_leaves_out():
    rng = np.random.default_rng(1)
    y = rng.normal(size=12)
    aga = y + rng.normal(size=12)
    aga[[2, 5]] = np.nan  # AGA of a dialogue without non-empty gold
    values = {"jga": y + rng.normal(size=12), "aga": aga, "sa": np.full(12, 0.9)}
    report = adaptive.design_report(values, y, np.full(12, 0.5), resamples=0)
    assert [m["metric"] for m in report["metrics"]] == ["jga"]
    expected = [
        "aga: left out of the design's estimates: undefined (NaN) on 2 of 12 judged dialogues",
        "sa: left out of the design's estimates: the same value on every judged dialogue, so its correlation is undefined",
    ]
    assert report["notes"] == expected
    shown = present.design_table({"design": "adaptive", "allocation": {"policy": "adaptive"}, **report})
    assert all(note in shown.notes for note in expected)


# --- pairs mode with few dialogues ---------------------------------------------------------------


def test_pairs_with_three_dialogues_and_no_bootstrap_get_no_zero_width_conservative_interval():
    x = np.array([0.1, 0.1, 0.5, 0.5, 0.9, 0.9])
    y = np.array([1.0, 2.0, 2.0, 4.0, 4.0, 5.0])
    row = correlate_one(x, y, None, n_units=3)
    assert row["pearson"] is not None
    assert row["pearson_ci"] is None and row["p_value"] is None
    assert row["ci_method"] == "none: 3 dialogues; a Fisher interval over dialogues needs more than 3"
    ratings = Ratings(["d0", "d1", "d2"], np.repeat(np.arange(3), 2), y, "pairs", [])
    report = correlation_report({"a": np.array([0.1, 0.5, 0.9])}, ratings, resamples=0)
    assert report["metrics"][0]["pearson_ci"] is None
    assert not any("conservative" in str(v) for v in report["metrics"][0].values())
    assert "conservative" not in " ".join(report["notes"])


# --- the number of votes behind a mean rating ----------------------------------------------------


@pytest.fixture(scope="module")
def hundred(tmp_path_factory):
    path = tmp_path_factory.mktemp("corpus") / "corpus.json"
    write_corpus(path, 100)
    dialogues = load_dialogues([path])
    rng = np.random.default_rng(5)
    votes = [  # 77 dialogues with 4 votes, 23 with 5: 423 votes
        Vote(d.id, f"ann{a}", "rating", str(int(rng.integers(1, 6))))
        for i, d in enumerate(dialogues)
        for a in range(4 if i < 77 else 5)
    ]
    return path, dialogues, votes


def test_mean_mode_counts_votes_not_means(hundred):
    from metrics.analysis import correlate_study
    from metrics.corpus import ScoreSettings

    _, dialogues, votes = hundred
    assert len(votes) == 423
    result = correlate_study(dialogues, votes, ScoreSettings((0.5,), ("0.5",)), resamples=0)
    assert result["n_votes"] == 423 and result["n_ratings"] == 100  # n_ratings: observations, as before
    text = present.correlation_table(result).to_text()
    assert "100 ratings" not in text
    assert "100 dialogues, 423 votes; rating (mean): the mean of each dialogue's votes, 100 observations." in text


# --- item 6: correlate prints the comparison table; interval headers name their unit -------------


def test_correlate_text_prints_the_comparison_table(hundred, tmp_path, capsys):
    from metrics.__main__ import main

    path, _, votes = hundred
    ratings = tmp_path / "votes.csv"
    ratings.write_text("item,annotator,value\n" + "".join(f"{v.item},{v.annotator},{v.value}\n" for v in votes))
    assert main(["correlate", "--ratings", str(ratings), "--bootstrap", "0", "--lambdas", "0.5", str(path)]) == 0
    text = capsys.readouterr().out
    assert "Metrics against human ratings" in text and "Differences from jga" in text
    header = next(line for line in text.splitlines() if line.startswith("metric A"))
    # Issue 27, item 5: the adjustment is one word before "CI" (Bonferroni is named in the family note), so the
    # table fits the Analysis page at 1400x900 (it was "99.2% CI (Zou, jackknife over dialogues; Bonferroni, simultaneous)").
    assert "99.2% simultaneous CI (jackknife over dialogues)" in header
    assert "intervals: 99.2% (Bonferroni, simultaneous)" in text
    assert "p (Holm)" in header and "Williams t" in header
    assert "Family: each metric against jga (FGA at λ 0.5), 6 comparisons; p: Holm" in text


UNIT_WORDS = (
    "bootstrap over dialogues",
    "bootstrap over items",
    "SE over items",
    "jackknife over dialogues",
    "n = dialogues",
    "n = systems",
    "bootstrap over systems and dialogues",
)


def test_every_interval_header_names_its_unit(hundred):
    from metrics.analysis import correlate_study
    from metrics.corpus import ScoreSettings

    _, dialogues, votes = hundred
    correlation = correlate_study(dialogues, votes, ScoreSettings((0.5,), ("0.5",)), resamples=20)
    two_way = correlate_study(dialogues, votes, ScoreSettings((0.5,), ("0.5",)), resamples=20, resample="dialogues+annotators")
    agreement = {"signature": "s", "notes": [], "questions": {"rating": agreement_report(votes, resamples=20)}}
    calibration = {
        "best_lambda": 0.5,
        "ci_lambda": [0.1, 0.9],
        "r_best": 0.3,
        "ci_r": [0.1, 0.5],
        "r_jga": 0.2,
        "r_turn": 0.1,
        "cv_r": 0.2,
        "cv_folds": [0.1],
        "at_bound": 0.0,
        "n_dialogues": 100,
        "n_ratings": 100,
        "rating": "mean",
        "notes": [],
        "signature": "s",
        "bootstrap": {"resamples": 20, "seed": 0, "resample": "dialogues"},
    }
    system = {"n_systems": 0, "systems": [], "metrics": []}
    tables = [
        present.correlation_table(correlation),
        present.williams_table(correlation),
        present.agreement_table(agreement),
        present.calibration_table(calibration),
        present.system_table(system),
    ]
    for table in tables:
        headers = [c for c in table.columns if "CI" in c]
        assert headers, table.title
        for header in headers:
            assert any(word in header for word in UNIT_WORDS), (table.title, header)
    assert "95% CI (bootstrap over dialogues and annotators)" in present.correlation_table(two_way).columns
    assert "95% CI (bootstrap over dialogues)" in present.correlation_table(correlation).columns
