"""The analysis results cross the layers typed (``metrics.results``): each builder's real output, made plain
as the JSON contract (the stored analysis, ``--json``), read through its frozen view by attribute holds the
same numbers as the dict; the readers (tables, sentences, CSVs) make the same text from the dict as from the
view; and a view of a view is itself."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from bench.corpus import write as write_corpus
from exports import tables
from formats import load_dialogues
from formats.tidy import votes_from_rows
from metrics import present, summary
from metrics.analysis import (
    AnalysisSettings,
    coco_summary,
    corrected_summary,
    design_summary,
    metrics_summary,
    system_level,
    votes_summary,
)
from metrics.calibrate import FgaTerms
from metrics.corpus import ScoreSettings
from metrics.judges import judge_report
from metrics.results import (
    Agreement,
    Calibration,
    CocoRow,
    CorrelationReport,
    DesignSummary,
    JudgeReport,
    MajorityRow,
    StudyAnalysis,
    SystemLevel,
)
from metrics.turnstats import extract

SETTINGS = AnalysisSettings(resamples=40, grid=(0.0, 3.0, 31), folds=2)


def plain(value):
    """As the JSON contract holds it (what the cache stores and the API sends)."""
    return json.loads(json.dumps(value))


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """60 dialogues of the bench corpus, 3 annotators whose 0/1 votes follow FGA(0.5), its analysis."""
    path = tmp_path_factory.mktemp("results") / "corpus.json"
    write_corpus(path, 60)
    dialogues = load_dialogues([path])
    stats = extract(dialogues)
    fga = FgaTerms.from_statistics(stats, stats.dialogue_ids).fga([0.5])[:, 0]
    rng = np.random.default_rng(5)
    rows = [
        (d, f"ann{a}", "satisfied", str(int(rng.random() < fga[i])), "")
        for i, d in enumerate(stats.dialogue_ids)
        for a in range(3)
    ]
    table = votes_from_rows(rows, "simulated")
    analysis = {"kind": "satisfaction", **votes_summary(table, SETTINGS)}
    analysis.update(metrics_summary({"": dialogues}, table, SETTINGS))
    return dialogues, table, plain(analysis)


def test_agreement_reads_every_coefficient_interval_and_row(study):
    _, _, analysis = study
    agreement = Agreement.from_dict(analysis["agreement"])
    assert agreement.signature == analysis["agreement"]["signature"]
    for question, report in analysis["agreement"]["questions"].items():
        view = agreement.questions[question]
        assert (view.n_items, view.n_annotators, view.n_votes) == (report["n_items"], report["n_annotators"], report["n_votes"])
        for name in ("percent_agreement", "krippendorff_alpha", "fleiss_kappa", "gwet_ac1"):
            assert view.estimate(name) == report[name]
            assert view.interval(name) == (None if report["ci"][name] is None else tuple(report["ci"][name]))
        assert not view.has_ac2 and view.notes == tuple(report["notes"])
        assert [(a.annotator, a.kappa_with_others) for a in view.annotators] == [
            (a["annotator"], a["kappa_with_others"]) for a in report["annotators"]
        ]
        assert [(p.a, p.b, p.kappa) for p in view.cohen_kappa_pairwise] == [
            (p["a"], p["b"], p["kappa"]) for p in report["cohen_kappa_pairwise"]
        ]
        assert view.bootstrap.resamples == SETTINGS.resamples and view.ci_method == report["ci_method"]


def test_majority_rows_keep_their_answers_counts_in_order(study):
    _, _, analysis = study
    table = analysis["majority"]["satisfied"]
    view = StudyAnalysis.from_dict(analysis).majority["satisfied"]
    assert (view.tie_policy, view.n_ties, len(view.rows)) == (table["tie_policy"], table["n_ties"], len(table["rows"]))
    for row, found in zip(table["rows"], view.rows):
        assert (found.item, found.majority, found.tie, found.soft) == (row["item"], row["majority"], row["tie"], row["soft"])
        assert list(found.counts.items()) == [(k[2:], v) for k, v in row.items() if k.startswith("n_") and k != "n_votes"]


def test_correlation_and_calibration_read_their_top_level_and_rows(study):
    _, _, analysis = study
    correlation, calibration = analysis["correlation"], analysis["calibration"]
    view = CorrelationReport.from_dict(correlation)
    assert (view.n_dialogues, view.n_votes, view.rating, view.signature) == (
        correlation["n_dialogues"],
        correlation["n_votes"],
        correlation["rating"],
        correlation["signature"],
    )
    assert [r.metric for r in view.metrics] == [r["metric"] for r in correlation["metrics"]]
    assert view.comparisons.reference == correlation["comparisons"]["reference"]
    assert view.comparisons.interval_confidence == correlation["comparisons"]["interval_confidence"]
    assert view.per_dialogue[0].values["jga"] == correlation["per_dialogue"][0]["jga"]
    k = Calibration.from_dict(calibration)
    assert (k.best_lambda, k.r_best, k.cv_r) == (calibration["best_lambda"], calibration["r_best"], calibration["cv_r"])
    assert k.ci_r == tuple(calibration["ci_r"]) and len(k.cv_folds) == len(calibration["cv_folds"])
    assert [(p.lam, p.r) for p in k.curve] == [(p["lambda"], p["r"]) for p in calibration["curve"]]
    assert k.n_votes is None and k.bootstrap.resample == "dialogues"


def test_the_readers_make_the_same_text_from_the_dict_and_from_its_view(study):
    _, _, analysis = study
    view = StudyAnalysis.from_dict(analysis)
    assert [t.to_text() for t in present.analysis_tables(analysis, "none")] == [
        t.to_text() for t in present.analysis_tables(view, "none")
    ]
    assert summary.summarise(analysis).strings() == summary.summarise(view).strings()
    assert tables.agreement_csv(analysis["agreement"]) == tables.agreement_csv(view.agreement)
    assert tables.correlation_csv(analysis["correlation"]) == tables.correlation_csv(view.correlation)
    assert tables.majority_csv(analysis["majority"]) == tables.majority_csv(view.majority)


def test_a_view_of_a_view_is_itself_and_views_are_frozen(study):
    _, _, analysis = study
    view = StudyAnalysis.from_dict(analysis)
    assert StudyAnalysis.of(view) is view and Agreement.of(view.agreement) is view.agreement
    assert CorrelationReport.of(view.correlation) is view.correlation and Calibration.of(view.calibration) is view.calibration
    with pytest.raises(dataclasses.FrozenInstanceError):
        view.votes = 0  # type: ignore[misc]


def test_systems_judges_and_coco_read_as_their_dicts(study):
    dialogues, table, _ = study
    systems = plain(system_level({"a": dialogues, "b": dialogues, "c": dialogues}, [], ScoreSettings((0.5,), ("0.5",))))
    assert SystemLevel.from_dict(systems).note == systems["note"] and SystemLevel.from_dict(systems).n_systems == 0
    judges = votes_from_rows([(v.item, "llm", "satisfied", v.value) for v in table.votes if v.annotator == "ann0"], "judges")
    report = plain(judge_report(table, judges, "satisfied", resamples=40))
    view = JudgeReport.from_dict(report)
    assert [(j.judge, j.n, j.cohen_kappa) for j in view.judges] == [
        (j["judge"], j["n"], j["cohen_kappa"]) for j in report["judges"]
    ]
    assert view.judges[0].confusion == report["judges"][0]["confusion"]
    rows = [
        (f"t{i}", f"a{k}", q, str((i + k) % 2), c)
        for i in range(8)
        for k in range(3)
        for q in ("human_like", "correct")
        for c in "xy"
    ]
    coco = plain(coco_summary(votes_from_rows(rows, "coco")))
    row = CocoRow.from_dict(coco[0])
    assert row.share("correct") == (coco[0]["correct_pct"], coco[0]["correct_n"], coco[0]["correct_ties"])
    assert MajorityRow.of({"item": "d", "n_votes": 2, "n_1": 2}).counts == {"1": 2}


def test_the_design_reads_its_differences_lambda_and_corrected_target(study):
    dialogues, table, _ = study
    pi = {(d.id, ""): 0.5 for d in dialogues}
    allocation = {"policy": "adaptive", "question": "lambda", "lambda": 0.5, "budget": 200}
    design = plain(design_summary({"": dialogues}, table, SETTINGS, pi, allocation=allocation))
    view = DesignSummary.from_dict(design)
    assert view.design == "adaptive" and view.allocation.lam == 0.5 and view.allocation.stored == tuple(allocation.items())
    assert [(d.a, d.b, d.diff) for d in view.differences] == [(d["a"], d["b"], d["diff"]) for d in design["differences"]]
    assert all(d.adjust == "holm" and d.p_adjusted == e.get("p_holm") for d, e in zip(view.differences, design["differences"]))
    assert view.lam.lambda_star == design["lambda"]["lambda_star"] and view.notes == tuple(design["notes"])
    designed = {"policy": "designed", "design": {"n": 60, "m": 30, "k_overlap": 3, "seed": 0}}
    corrected = plain(corrected_summary({"": dialogues}, table, SETTINGS, allocation=designed))
    found = DesignSummary.from_dict({"design": "designed", "allocation": designed, "corrected": corrected})
    assert found.allocation.design.k_overlap == 3 and found.corrected.icc == corrected["icc"]
    assert [(m.metric, m.estimate) for m in found.corrected.metrics] == [
        (m["metric"], m["estimate"]) for m in corrected["metrics"]
    ]
    assert DesignSummary.from_dict({}).design == "uniform" and DesignSummary.from_dict({}).corrected is None
