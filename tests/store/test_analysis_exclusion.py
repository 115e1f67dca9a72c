"""Issue 27 (6): an admin leaves an annotator out of a study's analysis, recorded and reversible; the
analysis, its exports and the report leave their votes out and say so; the Progress page's Dawid-Skene
flag.  SQLite and PostgreSQL."""

from __future__ import annotations

import pytest

from annotate import service
from annotate.analysis.analysis_jobs import study_analysis
from annotate.people.auth import PermissionDenied
from metrics.analysis import AnalysisSettings
from tests.store.test_analysis_cache import _study

SETTINGS = AnalysisSettings(resamples=20, folds=0, grid=(0.0, 2.0, 5))


def _voted(engine, tmp_path):
    """12 dialogues, 4 annotators on each: three answer alike (1 but on every third position), the
    fourth always says 1, whatever the dialogue (a spammer in Dawid-Skene's sense: score 0)."""
    study, admin, people = _study(engine, tmp_path, n=12, overlap=4, annotators=4, name="excl")
    for i, person in enumerate(people):
        while (item := service.next_item(engine, person, study.id)) is not None:
            value = "1" if i == 3 or item.position % 3 else "0"
            service.submit(engine, person, item.id, {"satisfied": value})
    return study, admin, people


def _annotators(result) -> set[str]:
    return {row["annotator"] for row in result["agreement"]["questions"]["satisfied"]["annotators"]}


def test_exclude_then_include_the_analysis_follows(engine, tmp_path):
    study, admin, people = _voted(engine, tmp_path)
    spammer = people[3].name
    before = study_analysis(engine, admin, study.id, SETTINGS)
    assert _annotators(before) == {p.name for p in people} and "excluded" not in before
    model = before["model_labels"]["satisfied"]
    assert model["fitted"] and model["spammers"] == [spammer]

    # the Progress page's flag: Dawid-Skene over every vote, lowest competence first
    quality = service.annotator_quality(engine, admin, study.id)
    assert quality[0].annotator == spammer and quality[0].near_chance is True and quality[0].spammer_score == pytest.approx(0.0)
    assert all(q.near_chance is False for q in quality[1:]) and not any(q.excluded for q in quality)

    with pytest.raises(PermissionDenied):
        service.exclude_annotator(engine, people[0], study.id, spammer, "spammer")
    assert service.exclude_annotator(engine, admin, study.id, spammer, "spammer") is True
    assert service.exclude_annotator(engine, admin, study.id, spammer, "again") is False  # idempotent, nothing recorded
    [gone] = service.analysis_exclusions(engine, admin, study.id)
    assert (gone.annotator, gone.by, gone.reason) == (spammer, admin.name, "spammer")

    without = study_analysis(engine, admin, study.id, SETTINGS)
    assert without is not before  # the cache saw the exclusion
    assert _annotators(without) == {p.name for p in people[:3]}
    assert without["n_votes"] == 36 and before["n_votes"] == 48
    note = f"excluded from the analysis: {spammer} (by {admin.name}, {gone.at[:10]}: spammer)"
    assert without["excluded"]["votes_left_out"] == 12
    assert without["excluded"]["note"].startswith(note)
    assert any(n.startswith(note) for n in without["agreement"]["notes"])
    assert any(n.startswith(note) for n in without["correlation"]["notes"])
    assert spammer not in {a["annotator"] for a in without["model_labels"]["satisfied"]["annotators"]}
    assert [q.excluded for q in service.annotator_quality(engine, admin, study.id) if q.annotator == spammer] == [True]

    # the exports of python -m exports: the analysis leaves the votes out and says so; the votes stay
    report = service.export_files(engine, admin, study.id, "report-md", SETTINGS).files[0][1].decode()
    assert f"excluded from the analysis: {spammer} (by {admin.name}" in report.replace("\\", "")  # Markdown-escaped
    votes = service.export_files(engine, admin, study.id, "votes-csv", SETTINGS).files[0][1].decode()
    assert votes.count(f",{spammer},") == 12

    assert service.include_annotator(engine, admin, study.id, spammer, "checked by hand") is True
    assert service.analysis_exclusions(engine, admin, study.id) == []
    back = study_analysis(engine, admin, study.id, SETTINGS)
    assert _annotators(back) == {p.name for p in people} and back["n_votes"] == 48 and "excluded" not in back
    assert not any("excluded from the analysis" in n for n in back["agreement"].get("notes", []))
    report = service.export_files(engine, admin, study.id, "report-md", SETTINGS).files[0][1].decode()
    assert "excluded from the analysis" not in report

    log = [(c.by, c.what, c.new) for c in service.study_changes(engine, admin, study.id)]
    assert (admin.name, "excluded from analysis", f"{spammer}: spammer") in log
    assert (admin.name, "included in analysis", f"{spammer}: checked by hand") in log
    assert sum(what == "excluded from analysis" for _, what, _ in log) == 1


def test_an_unknown_annotator_is_refused_in_words(engine, tmp_path):
    study, admin, _ = _study(engine, tmp_path, n=3, overlap=1, annotators=1, name="unknown")
    with pytest.raises(service.StudyError, match="no annotator named 'nobody'"):
        service.exclude_annotator(engine, admin, study.id, "nobody")
