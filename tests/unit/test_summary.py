"""Issue 27, item 1: the answers first, in words (``metrics.summary``).

Every number a sentence states is parsed out of its text and compared with the analysis JSON at the
shown rounding (``metrics.present.number``), on a real study: 100 dialogues of the bench corpus (the
fixtures' SOM-DST dialogues with seeded perturbations), 3 simulated annotators whose 1/0 satisfaction
votes follow FGA(0.5).  Each degenerate case gets a sentence that says it, computed by the real
functions on data that has it."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from bench.corpus import write as write_corpus
from formats import load_dialogues
from formats.tidy import Vote, votes_from_rows
from metrics.analysis import (
    AnalysisSettings,
    agreement_all,
    calibrate_study,
    coco_summary,
    correlate_study,
    metrics_summary,
    votes_summary,
)
from metrics.calibrate import FgaTerms
from metrics.corpus import ScoreSettings
from metrics.present import interval, number, p_value
from metrics.summary import (
    KRIPPENDORFF,
    LANDIS_KOCH,
    TOPICS,
    Sentence,
    Summary,
    display,
    summarise,
    summarise_agreement,
    summarise_calibration,
    summarise_correlation,
)
from metrics.turnstats import extract

SHOWN = re.compile(r"(?<![\d.])-?\d+\.\d{3}(?![\d])")  # a value as present.number writes it: 3 decimals
SETTINGS = AnalysisSettings(resamples=100, grid=(0.0, 5.0, 51), folds=3)
SCORING = ScoreSettings((0.5, 1.0), ("0.5", "1"))


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """The corpus path, its dialogues, the votes (3 annotators, P(1) = FGA(0.5)) and their analysis."""
    path = tmp_path_factory.mktemp("summary") / "corpus.json"
    write_corpus(path, 100)
    dialogues = load_dialogues([path])
    stats = extract(dialogues)
    fga = FgaTerms.from_statistics(stats, stats.dialogue_ids).fga([0.5])[:, 0]
    rng = np.random.default_rng(3)
    rows = [
        (d, f"ann{a}", "satisfied", str(int(rng.random() < fga[i])), "")
        for i, d in enumerate(stats.dialogue_ids)
        for a in range(3)
    ]
    table = votes_from_rows(rows, "simulated")
    analysis = {"kind": "satisfaction", **votes_summary(table, SETTINGS)}
    analysis.update(metrics_summary({"": dialogues}, table, SETTINGS))
    return path, dialogues, table.votes, json.loads(json.dumps(analysis))  # as the JSON contract: plain data


def shown(sentence: Sentence) -> set[str]:
    return set(SHOWN.findall(sentence.text))


def formatted(*values) -> set[str]:
    return {number(v) for v in values if v is not None}


def one(summary: Summary, topic: str) -> Sentence:
    found = summary.topic(topic)
    assert len(found) == 1, [s.text for s in summary.sentences]
    return found[0]


def test_every_number_is_the_jsons_at_the_shown_rounding(study):
    *_, analysis = study
    summary = summarise(analysis)
    report = analysis["agreement"]["questions"]["satisfied"]
    correlation, calibration = analysis["correlation"], analysis["calibration"]
    ceiling = correlation["human_ceiling"]
    defined = [r for r in correlation["metrics"] if r["pearson"] is not None]
    best = max(defined, key=lambda r: r["pearson"])
    family = correlation["comparisons"]
    pairs = {(w["a"], w["b"]): w for w in correlation["williams"]}
    compared = pairs.get((best["metric"], family["reference"])) or pairs[(family["fga"], family["reference"])]
    expected = {
        "agreement": formatted(
            report["krippendorff_alpha"], *report["ci"]["krippendorff_alpha"], report["gwet_ac1"], *report["ci"]["gwet_ac1"]
        )
        | {"0.667"},  # Krippendorff's (2004) bar, named beside it
        "best_metric": formatted(best["pearson"], *best["pearson_ci"]),
        # the adjusted p too, when present.p_value writes it with 3 decimals (0.012; not 0.0096)
        "comparison": formatted(compared["diff"], *compared["diff_ci"])
        | set(SHOWN.findall(p_value(compared.get(f"p_{family['adjust']}", compared["p_value"])))),
        "ceiling": formatted(ceiling["r_max"], *ceiling["ci"], ceiling["reliability"]),
        "lambda": formatted(
            calibration["best_lambda"],
            *calibration["ci_lambda"],
            calibration["r_best"],
            *calibration["ci_r"],
            calibration["cv_r"],
            calibration["r_jga"],
            calibration["r_turn"],
        ),
        "note": formatted(best["pearson"], ceiling["r_max"]),  # a metric above the ceiling's estimate, if any
        "units": set(),
    }
    assert [s.topic for s in summary.sentences if s.topic != "note"] == [
        "agreement",
        "best_metric",
        "comparison",
        "ceiling",
        "lambda",
        "units",
    ]
    for sentence in summary.sentences:
        if sentence.topic == "note":
            assert shown(sentence) <= expected["note"], sentence.text
        else:
            assert shown(sentence) == expected[sentence.topic], sentence.text
    # The numbers each sentence carries are the JSON's, unrounded.
    agreement = one(summary, "agreement").numbers
    assert agreement["alpha"] == report["krippendorff_alpha"] and agreement["ac1"] == report["gwet_ac1"]
    assert [agreement["alpha_low"], agreement["alpha_high"]] == report["ci"]["krippendorff_alpha"]
    assert (agreement["n_items"], agreement["n_votes"], agreement["n_annotators"]) == (100, 300, 3)
    assert "100 items, 300 votes, 3 annotators" in one(summary, "agreement").text
    top = one(summary, "best_metric")
    assert top.numbers["r"] == best["pearson"] and [top.numbers["r_low"], top.numbers["r_high"]] == best["pearson_ci"]
    assert top.text.startswith(f"{display(best['metric'])} tracks the ratings best")
    assert "100 dialogues, 300 votes" in top.text
    lead = one(summary, "comparison")
    assert lead.numbers["diff"] == compared["diff"] and lead.numbers["p"] == compared["p_holm"]
    assert f"(p {p_value(compared['p_holm'])})" in lead.text
    assert ("is significant" in lead.text) is compared["significant"] and ("not significant" in lead.text) is not compared[
        "significant"
    ]
    assert f"after Holm over the {family['size']} declared comparisons" in lead.text
    assert f"{100 * family['interval_confidence']:.3g}% interval" in lead.text
    assert one(summary, "ceiling").numbers["r_max"] == ceiling["r_max"]
    lam = one(summary, "lambda")
    assert lam.numbers["lambda"] == calibration["best_lambda"] and lam.numbers["cv_r"] == calibration["cv_r"]
    best = f"Best λ {number(calibration['best_lambda'])} {interval(calibration['ci_lambda'])}"
    # issue 40, item 4: at 100 simulated dialogues the confidence set by test inversion keeps most of the
    # grid, and the sentence says first that λ* is not identified, then the best λ
    found = calibration["lambda_set"]
    assert not found["identified"] and found["share"] > 0.5 and found["dialogues_to_identify"] > 100
    assert lam.text.startswith("λ* is not identified with 100 dialogues: every λ in ")
    assert f"about {found['dialogues_to_identify']:,} dialogues would narrow it" in lam.text and best in lam.text
    assert lam.numbers["lambda_set_share"] == found["share"]
    units = one(summary, "units").text
    assert "jackknife SE over items" in units and "over dialogues" in units and "jackknife-t of z_A − z_B" in units


def test_the_words_follow_named_conventions(study):
    *_, analysis = study
    report = analysis["agreement"]["questions"]["satisfied"]
    text = one(summarise(analysis), "agreement").text
    assert "Krippendorff (2004)" in text and "Landis & Koch (1977)" in text
    assert f"is {LANDIS_KOCH.reading(report['gwet_ac1'])} by Landis & Koch" in text
    assert KRIPPENDORFF.reading(report["krippendorff_alpha"]) == "unreliable" and "too little to rely on" in text
    # the bands, read on the value as shown
    assert [LANDIS_KOCH.reading(v) for v in (-0.01, 0.0, 0.2, 0.2004, 0.21, 0.41, 0.61, 0.8, 0.81)] == [
        "poor",
        "slight",
        "slight",
        "slight",
        "fair",
        "moderate",
        "substantial",
        "substantial",
        "almost perfect",
    ]
    assert [KRIPPENDORFF.reading(v) for v in (0.6664, 0.6666, 0.7994, 0.7996, 0.8)] == [
        "unreliable",
        "tentative",
        "tentative",
        "reliable",
        "reliable",
    ]


def test_an_interval_across_a_bar_is_said():
    rng = np.random.default_rng(0)
    truth = rng.random(30) < 0.5
    rows = [(f"i{i}", f"a{k}", "q", str(int(truth[i] ^ (rng.random() < 0.08))), "") for i in range(30) for k in range(3)]
    report = agreement_all(votes_from_rows(rows, "x"), resamples=100)["questions"]["q"]
    low, high = report["ci"]["krippendorff_alpha"]
    assert KRIPPENDORFF.reading(report["krippendorff_alpha"]) == "tentative" and low < 0.667 and high > 0.8
    text = summarise_agreement({"questions": {"q": report}}).sentences[0].text
    assert text.startswith("On “q”, annotators agree enough for tentative conclusions only: Krippendorff's α ")
    assert "though its interval spans 0.667 and 0.8" in text


def test_no_votes():
    summary = summarise({"n_votes": 0, "questions": []})
    assert [s.topic for s in summary.sentences] == ["no_votes"]
    assert summary.text() == "No votes yet: there is nothing to summarise."


def test_one_annotator():
    rows = [(f"i{i}", "ann0", "satisfied", str(i % 2), "") for i in range(10)]
    summary = summarise_agreement(agreement_all(votes_from_rows(rows, "one"), resamples=20))
    assert summary.text() == "Only one annotator voted on “satisfied” (10 items): agreement is not defined."


def test_no_item_with_two_votes():
    rows = [(f"i{i}", f"ann{i % 3}", "q", str(i % 2), "") for i in range(9)]
    summary = summarise_agreement(agreement_all(votes_from_rows(rows, "single"), resamples=20))
    assert summary.text() == "No item of “q” has two votes yet (9 items, 9 votes, 3 annotators): agreement is not defined."


def test_agreement_undefined_when_every_vote_is_the_same():
    rows = [(f"i{i}", f"ann{a}", "q", "1", "") for i in range(10) for a in range(3)]
    report = agreement_all(votes_from_rows(rows, "same"), resamples=20)["questions"]["q"]
    assert report["krippendorff_alpha"] is None and report["gwet_ac1"] == 1.0
    (said, units) = summarise_agreement({"questions": {"q": report}}).sentences
    assert said.topic == "note" and "Krippendorff's α is undefined (every vote has the same answer" in said.text
    assert "Gwet's AC1 1.000 [1.000, 1.000] (a point, not an interval" in said.text and said.numbers["alpha"] is None
    assert units.topic == "units"


def test_no_interval_without_bootstrap(study):
    path, dialogues, votes, _ = study
    table = votes_from_rows(((v.item, v.annotator, v.question, v.value, "") for v in votes), "votes")
    said = summarise_agreement(agreement_all(table, resamples=0)).sentences[0]
    assert "α 0.148 (no interval: no bootstrap resamples)" in said.text and "alpha_low" not in said.numbers
    grid = np.linspace(0, 2, 11)
    calibration = calibrate_study(
        dialogues, votes, ScoreSettings(tuple(grid), tuple(f"{v:g}" for v in grid)), grid, resamples=0, folds=2
    )
    text = summarise_calibration(calibration).text()
    assert "No interval for λ* or its r: no bootstrap resamples." in text and "[" not in text.split(";")[0]


def test_correlation_undefined_when_the_ratings_are_constant(study):
    _, dialogues, votes, _ = study
    constant = [Vote(v.item, v.annotator, v.question, "1") for v in votes]
    correlation = correlate_study(dialogues, constant, SCORING, resamples=20)
    sentences = summarise_correlation(correlation).sentences
    assert sentences[0].text == (
        "No metric's correlation with the ratings is defined (constant values: correlation undefined; 100 dialogues)."
    )
    assert sentences[1].text.startswith("No human ceiling: all ratings identical")
    assert not any(s.topic in ("best_metric", "comparison") for s in sentences)


def test_three_dialogues_give_no_interval_and_no_test(study):
    _, dialogues, votes, _ = study
    three = {d.id for d in dialogues[:3]}
    correlation = correlate_study(dialogues[:3], [v for v in votes if v.item in three], SCORING, resamples=20)
    summary = summarise_correlation(correlation)
    best = one(summary, "best_metric")
    assert "[" not in best.text and "(3 dialogues, 9 votes;" in best.text and "r_low" not in best.numbers
    assert any(
        s.text.startswith(
            "With 3 dialogues there is no interval and no test: Fisher's interval and Williams' test need more than 3"
        )
        for s in summary.sentences
    )
    assert not summary.topic("comparison")


def test_reference_not_measured_compares_every_pair(study):
    _, dialogues, votes, _ = study
    correlation = correlate_study(dialogues, votes, SCORING, resamples=20, reference="bleu")
    summary = summarise_correlation(correlation)
    assert "The reference metric bleu was not measured: every pair of metrics is compared." in summary.text()
    lead = one(summary, "comparison")
    assert "runner-up" in lead.text and f"over the {correlation['comparisons']['size']} declared comparisons" in lead.text
    ranked = sorted((r for r in correlation["metrics"] if r["pearson"] is not None), key=lambda r: -r["pearson"])
    entry = next(w for w in correlation["williams"] if {w["a"], w["b"]} == {ranked[0]["metric"], ranked[1]["metric"]})
    sign = 1 if entry["a"] == ranked[0]["metric"] else -1
    assert lead.numbers["diff"] == pytest.approx(sign * entry["diff"]) and lead.numbers["diff"] > 0
    assert shown(lead) == formatted(sign * entry["diff"], *(sign * v for v in entry["diff_ci"]))


def test_the_reference_best_is_compared_with_its_closest_challenger(study):
    _, dialogues, votes, _ = study
    single = [v for v in votes if v.annotator == "ann0"]  # one vote per dialogue: also no ceiling
    correlation = correlate_study(dialogues, single, SCORING, resamples=20)
    best = max((r for r in correlation["metrics"] if r["pearson"] is not None), key=lambda r: r["pearson"])
    assert best["metric"] == "jga"  # these votes make the reference best
    summary = summarise_correlation(correlation)
    assert one(summary, "comparison").text.startswith("Its lead over its closest challenger")
    assert "No human ceiling: the ceiling needs at least 2 dialogues with 2 or more ratings each (found 0)." in summary.text()


def test_lambda_at_the_grid_end_and_an_open_interval(study):
    _, dialogues, votes, _ = study
    grid = np.linspace(0, 0.3, 4)
    calibration = calibrate_study(
        dialogues, votes, ScoreSettings(tuple(grid), tuple(f"{v:g}" for v in grid)), grid, resamples=50, folds=3
    )
    assert calibration["best_at_bound"] and calibration["ci_lambda"][1] is None
    text = summarise_calibration(calibration).text()
    assert f"Best λ {number(calibration['best_lambda'])} [{number(calibration['ci_lambda'][0])}, open]" in text
    assert "The best grid point is the grid's end (λ = 0.3): widen the grid up to find λ*." in text
    assert "λ*'s interval is open above" in text and "(λ = 0.3)" in text


def test_lambda_at_the_grid_start_is_jga(study):
    _, dialogues, _, _ = study
    stats = extract(dialogues)
    jga = FgaTerms.from_statistics(stats, stats.dialogue_ids).fga([0.0])[:, 0]
    rng = np.random.default_rng(1)
    votes = [
        Vote(d, f"ann{a}", "satisfied", str(int(rng.random() < jga[i])))
        for i, d in enumerate(stats.dialogue_ids)
        for a in range(5)
    ]
    grid = np.linspace(0, 2, 21)
    calibration = calibrate_study(
        dialogues, votes, ScoreSettings(tuple(grid), tuple(f"{v:g}" for v in grid)), grid, resamples=50, folds=3
    )
    assert calibration["best_at_bound"] and calibration["best_lambda"] < grid[1]
    assert "The best grid point is the grid's start, λ = 0, where FGA is JGA" in summarise_calibration(calibration).text()


def test_coco_says_agreement_per_question_and_the_majority_result():
    rows = []
    for i in range(12):
        for condition in ("original", "coco"):
            for k in range(2):
                rows.append((f"t{i}", f"ann{k}", "human_like", "1" if k == 0 or i % 2 else "0", condition))
                rows.append((f"t{i}", f"ann{k}", "correct", "1" if condition == "original" or (i + k) % 3 else "0", condition))
    table = votes_from_rows(rows, "coco")
    coco = coco_summary(table, "none")
    analysis = {"kind": "coco", **votes_summary(table, AnalysisSettings(resamples=50)), "coco": coco}
    summary = summarise(analysis)
    assert [s.topic for s in summary.sentences] == ["agreement", "agreement", "coco", "coco", "units"]
    for sentence, row in zip(summary.topic("coco"), coco):
        assert sentence.text.startswith(f"Under “{row['condition']}”:")
        for question in ("human_like", "correct"):
            assert sentence.numbers[f"{question}_pct"] == row[f"{question}_pct"]
            assert f"{number(row[f'{question}_pct'], 1)}%" in sentence.text
            assert f"{row[f'{question}_n']} turns with a majority" in sentence.text
    for sentence, (question, report) in zip(summary.topic("agreement"), analysis["agreement"]["questions"].items()):
        assert sentence.text.startswith(f"On “{question}”") and sentence.numbers["alpha"] == report["krippendorff_alpha"]


def test_many_questions_are_listed_in_one_sentence():
    """An SLU study asks one question per act: α of each in one listing, and the majority labels."""
    acts = ["act:inform", "act:affirm", "act:ack", "act:bye", "act:hello"]
    rows = [(f"call{i}", f"ann{k}", "transcription_status", "transcribed", "") for i in range(12) for k in range(3)]
    rows += [
        (f"call{i}", f"ann{k}", act, "1" if (i + k + j) % 4 else "0", "")
        for i in range(12)
        for k in range(3)
        for j, act in enumerate(acts)
        if (i + j) % 2 == 0
    ]
    table = votes_from_rows(rows, "slu")
    analysis = {"kind": "slu", **votes_summary(table, AnalysisSettings(resamples=50))}
    summary = summarise(analysis)
    listing, tally, majority, _ = summary.sentences
    assert listing.text.startswith("Krippendorff's α per question: ")
    for question, report in analysis["agreement"]["questions"].items():
        assert listing.numbers[f"{question}:alpha"] == report["krippendorff_alpha"]
        if report["krippendorff_alpha"] is None:
            assert f"“{question}” undefined (every vote has the same answer" in listing.text
        else:
            assert (
                f"“{question}” {number(report['krippendorff_alpha'])} {interval(report['ci']['krippendorff_alpha'])}"
                in listing.text
            )
    assert tally.text.startswith("By Krippendorff (2004), 0 of the 5 questions with a defined α can be relied on")
    assert majority.topic == "majority" and "“transcription_status” transcribed: 12" in majority.text
    assert majority.numbers["transcription_status:transcribed"] == 12


def test_markdown_escapes_and_topics_are_checked():
    summary = Summary((Sentence("agreement", "On “act_*x*”, [a](b) <b>.", {}),))
    assert summary.markdown() == "- On “act\\_\\*x\\*”, \\[a\\]\\(b\\) \\<b\\>\\."
    assert "units" in TOPICS
    with pytest.raises(ValueError, match="unknown topic"):
        Sentence("other", "text")


def test_correlate_text_starts_with_the_summary_and_json_carries_it(study, tmp_path, capsys):
    from metrics.__main__ import main

    path, _, votes, _ = study
    ratings = tmp_path / "votes.csv"
    ratings.write_text("item,annotator,value\n" + "".join(f"{v.item},{v.annotator},{v.value}\n" for v in votes))
    args = ["correlate", "--ratings", str(ratings), "--bootstrap", "0", "--lambdas", "0.5", str(path)]
    assert main([*args, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    said = result.pop("summary")
    assert said == summarise_correlation(result).strings() and said[0].startswith("FGA(0.5) tracks the ratings best")
    assert main(args) == 0
    text = capsys.readouterr().out
    assert text.startswith("Summary\n" + "\n".join(said) + "\n\nMetrics against human ratings\n")
    assert main(["calibrate", "--ratings", str(ratings), "--bootstrap", "0", "--grid", "0:2:11", "--folds", "2", str(path)]) == 0
    assert capsys.readouterr().out.startswith("Summary\nBest λ ")
