"""A frozen analysis plan: an admin freezes a study's analysis settings before the first vote; the plan
exports as a timestamped JSON file whose SHA-256 a reader can check; the report flags every setting that
differs from the plan and every settings change recorded after votes arrived (on both backends)."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import replace

import pytest
from sqlalchemy import func, select

from annotate import __main__ as annotate_cli
from annotate import service
from annotate.analysis.reports import load_study
from annotate.judging.votes import cast_votes
from annotate.store.db import read_session, write_session
from annotate.store.models import Item, StudyChange
from exports import analysis_plan
from exports.report import to_markdown
from tests.store.test_crowd import admin
from tests.store_helpers import make_study

HOSTILE = "<img src=x onerror=alert(1)> | *plan* [x](y)"


def _vote(engine, study_id, person) -> None:
    with write_session(engine) as session:
        item = session.scalars(select(Item).where(Item.study_id == study_id).order_by(Item.id)).first()
        cast_votes(session, session.merge(person), item.id, {q: "1" for q in item.questions})


def _log(engine, study_id, what="analysis plan") -> int:
    with read_session(engine) as session:
        return session.scalar(
            select(func.count()).select_from(StudyChange).where(StudyChange.study_id == study_id, StudyChange.what == what)
        )


def test_freeze_before_the_first_vote_is_stored_and_recorded(engine, fixtures):
    study, _ = make_study(engine, fixtures, annotators=1, name="planned")
    boss = admin(engine)
    assert not service.study_plan(engine, boss, study.id).frozen
    plan = service.freeze_plan(engine, boss, study.id)
    assert plan.frozen and plan.frozen_by == "boss" and plan.deviations == ()
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", plan.frozen_at)
    assert plan.settings == service.study_settings(engine, boss, study.id).to_dict()
    assert set(plan.settings) >= {"family", "adjust", "grid"}  # the whole settings: a new key joins by itself
    assert _log(engine, study.id) == 1
    with pytest.raises(service.StudyError, match="already frozen"):
        service.freeze_plan(engine, boss, study.id)
    assert service.study_plan(engine, boss, study.id) == plan


def test_freeze_after_a_vote_is_refused_and_changes_nothing(engine, fixtures):
    study, people = make_study(engine, fixtures, annotators=1, name="late")
    boss = admin(engine)
    _vote(engine, study.id, people[0])
    with read_session(engine) as session:
        before = dict(session.get(type(study), study.id).settings or {})
    with pytest.raises(service.StudyError, match=r"only before the first vote; 1 vote"):
        service.freeze_plan(engine, boss, study.id)
    with read_session(engine) as session:
        assert dict(session.get(type(study), study.id).settings or {}) == before
    assert _log(engine, study.id) == 0
    assert not service.study_plan(engine, boss, study.id).frozen


def test_a_settings_change_after_votes_is_flagged_with_when_who_old_and_new(engine, fixtures):
    study, people = make_study(engine, fixtures, annotators=1, name="drift")
    boss = admin(engine)
    chosen = service.study_settings(engine, boss, study.id)
    service.set_study_settings(engine, boss, study.id, replace(chosen, seed=3))  # before any vote: not flagged
    service.freeze_plan(engine, boss, study.id)
    _vote(engine, study.id, people[0])
    assert service.study_plan(engine, boss, study.id).deviations == ()
    service.set_study_settings(engine, boss, study.id, replace(chosen, seed=3, adjust="none"))
    plan = service.study_plan(engine, boss, study.id)
    (differs, late) = plan.deviations
    assert (differs.kind, differs.key, differs.planned, differs.current) == ("plan", "adjust", "holm", "none")
    assert (late.kind, late.key, late.planned, late.current, late.by) == ("after votes", "adjust", "holm", "none", "boss")
    assert late.at == service.study_changes(engine, boss, study.id)[-1].at
    assert late.text() == f"changed after votes arrived: adjust holm → none on {late.at.replace('T', ' ')} UTC, by boss"
    assert differs.text() == "differs from the frozen plan: adjust holm in the plan, none now"


def test_changes_after_votes_are_flagged_without_a_plan_too(engine, fixtures):
    study, people = make_study(engine, fixtures, annotators=1, name="unplanned")
    boss = admin(engine)
    _vote(engine, study.id, people[0])
    chosen = service.study_settings(engine, boss, study.id)
    service.set_study_settings(engine, boss, study.id, replace(chosen, family="all", grid=(0.0, 5.0, 51)))
    plan = service.study_plan(engine, boss, study.id)
    assert not plan.frozen
    assert [(d.kind, d.key, d.planned, d.current) for d in plan.deviations] == [
        ("after votes", "grid", [0.0, 10.0, 1001], [0.0, 5.0, 51]),
        ("after votes", "family", "reference", "all"),
    ]


def test_the_exported_file_verifies_and_is_named_by_its_timestamp(engine, fixtures):
    study, _ = make_study(engine, fixtures, annotators=1, name="../exp/ort")
    boss = admin(engine)
    with pytest.raises(service.StudyError, match="not frozen"):
        service.plan_file(engine, boss, study.id)
    plan = service.freeze_plan(engine, boss, study.id)
    name, content = service.plan_file(engine, boss, study.id)
    stamp = plan.frozen_at.replace("-", "").replace(":", "")
    assert name == f"exp_ort-analysis-plan-{stamp}.json"
    document = json.loads(content)
    assert document["study"] == "../exp/ort" and document["frozen_at"] == plan.frozen_at and document["frozen_by"] == "boss"
    canonical = json.dumps(document["settings"], sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert document["settings_sha256"] == hashlib.sha256(canonical.encode()).hexdigest()
    assert document["version"] and analysis_plan.verify(document)
    document["settings"]["adjust"] = "none"
    assert not analysis_plan.verify(document)


def test_the_command_line_freezes_prints_and_exports(engine, db_url, fixtures, tmp_path, capsys):
    study, people = make_study(engine, fixtures, annotators=1, name="cli-plan")
    cli = lambda *args: annotate_cli.main(["--db", db_url, "study", "plan", "cli-plan", *args])  # noqa: E731
    assert cli() == 0
    assert "not frozen" in capsys.readouterr().out
    assert cli("--export", str(tmp_path)) == 2
    assert "not frozen" in capsys.readouterr().err
    assert cli("--freeze") == 0
    assert "frozen at" in capsys.readouterr().out
    assert cli("--freeze") == 2
    assert "already frozen" in capsys.readouterr().err
    assert cli("--export", str(tmp_path)) == 0
    (written,) = tmp_path.glob("cli-plan-analysis-plan-*.json")
    assert analysis_plan.verify(json.loads(written.read_text(encoding="utf-8")))
    assert cli("--export", str(tmp_path / "no" / "such" / "folder.json")) == 2
    assert "cannot write" in capsys.readouterr().err
    assert cli("--export", str(tmp_path / "mine.json")) == 0
    assert analysis_plan.verify(json.loads((tmp_path / "mine.json").read_text(encoding="utf-8")))
    _vote(engine, study.id, people[0])
    boss = admin(engine)
    service.set_study_settings(engine, boss, study.id, replace(service.study_settings(engine, boss, study.id), adjust="bh"))
    capsys.readouterr()
    assert cli() == 0
    out = capsys.readouterr().out
    assert "changed after votes arrived: adjust holm → bh" in out and "by boss" in out


def test_the_report_shows_the_plan_and_flags_changes_and_escapes_the_name(engine, fixtures):
    study, people = make_study(engine, fixtures, annotators=1, name=HOSTILE)
    boss = admin(engine)
    plan = service.freeze_plan(engine, boss, study.id)
    _vote(engine, study.id, people[0])
    changed = replace(service.study_settings(engine, boss, study.id), adjust="none", resamples=0, folds=0)
    service.set_study_settings(engine, boss, study.id, changed)
    data = load_study(engine, study.id)
    text = to_markdown(data, {"n_votes": 1, "questions": ["satisfied"]}, changed).decode()
    assert HOSTILE not in text and "\\<img src=x onerror=alert\\(1\\)\\> \\| \\*plan\\*" in text
    escaped_at = plan.frozen_at.replace("T", " ").removesuffix("Z").replace("-", "\\-")
    assert f"| analysis plan | frozen at {escaped_at}" in text
    flags = [line for line in text.splitlines() if line.startswith("| flag |")]
    assert any("changed after votes arrived: adjust holm → none" in line and "by boss" in line for line in flags), flags
    assert any("differs from the frozen plan: resamples 1000 in the plan, 0 now" in line for line in flags), flags
