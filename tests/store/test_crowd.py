"""Crowd workers (issue 14, item 5): a per-study join link with the platform's ids and a secret,
a quota, a completion code, attention-check flags, and workers kept apart in exports."""

from __future__ import annotations

import csv
import io

import pytest

from annotate import crowd, service
from annotate.auth import PermissionDenied, add_annotator
from annotate.db import write_session
from annotate.sessions import log_in, session_user
from tests.store_helpers import make_study


def admin(engine):
    with write_session(engine) as session:
        add_annotator(session, "boss", "boss-password", "admin")
    return log_in(engine, "boss", "boss-password")[0]


def prolific(study_id, secret, pid="5f3a9c0d1e2b3c4d5e6f7a8b", session_id="sess-1"):
    return {"join": str(study_id), "key": secret, "PROLIFIC_PID": pid, "STUDY_ID": "st-9", "SESSION_ID": session_id}


def open_crowd(engine, boss, study_id, **options):
    options = {"enabled": True, "quota": 2, "completion_code": "C1A2B3", "redirect_url": "", **options}
    return service.set_crowd(engine, boss, study_id, **options)


def judge(engine, worker, study_id, value="1"):
    item = service.next_item(engine, worker, study_id)
    if item is not None:
        service.submit(engine, worker, item.id, {q: value for q in item.questions})
    return item


def test_a_worker_joins_by_link_judges_the_quota_and_gets_the_completion_code(engine, fixtures):
    study, _ = make_study(engine, fixtures, annotators=0)
    other, _ = make_study(engine, fixtures, annotators=0, name="other")
    boss = admin(engine)
    settings = open_crowd(engine, boss, study.id)
    token = service.join_crowd(engine, prolific(study.id, settings["secret"]))
    worker = session_user(engine, token)
    assert worker is not None and worker.role == "worker"
    assert [s.id for s in service.list_studies(engine, worker)] == [study.id]  # that study only
    with pytest.raises(PermissionDenied):
        service.next_item(engine, worker, other.id)
    status = service.crowd_status(engine, worker)
    assert (status["done"], status["quota"], status["finished"], status["completion_code"]) == (0, 2, False, None)
    assert judge(engine, worker, study.id) is not None and judge(engine, worker, study.id) is not None
    assert service.next_item(engine, worker, study.id) is None  # the quota is reached: no third item
    status = service.crowd_status(engine, worker)
    assert (status["done"], status["finished"], status["completion_code"]) == (2, True, "C1A2B3")
    # The same link again (a reload, another tab) is the same worker, not a new one.
    again = session_user(engine, service.join_crowd(engine, prolific(study.id, settings["secret"])))
    assert again.id == worker.id
    workers = service.study_progress(engine, boss, study.id)["workers"]
    assert [(w["platform"], w["worker_id"], w["platform_session"], w["done"], w["finished"]) for w in workers] == [
        ("prolific", "5f3a9c0d1e2b3c4d5e6f7a8b", "sess-1", 2, True)
    ]


@pytest.mark.parametrize(
    "change",
    [
        {"key": "wrong-secret"},
        {"key": ""},
        {"join": "999"},
        {"join": "not-a-number"},
        {"PROLIFIC_PID": ""},
        {"PROLIFIC_PID": "<script>alert(1)</script>"},
    ],
)
def test_a_wrong_link_gets_a_plain_refusal_and_creates_nobody(engine, fixtures, change):
    study, _ = make_study(engine, fixtures, annotators=0)
    boss = admin(engine)
    settings = open_crowd(engine, boss, study.id)
    params = {**prolific(study.id, settings["secret"]), **change}
    if not params["PROLIFIC_PID"]:
        params.pop("PROLIFIC_PID")
    with pytest.raises(crowd.JoinRefused) as refused:
        service.join_crowd(engine, params)
    assert settings["secret"] not in str(refused.value)
    assert [a["name"] for a in service.list_annotators(engine, boss)] == ["boss"]


def test_a_closed_crowd_link_and_an_archived_study_refuse(engine, fixtures):
    study, _ = make_study(engine, fixtures, annotators=0)
    boss = admin(engine)
    settings = open_crowd(engine, boss, study.id)
    token = service.join_crowd(engine, {"join": str(study.id), "key": settings["secret"], "worker": "w-17"})
    worker = session_user(engine, token)
    assert service.crowd_status(engine, worker)["platform"] == "generic"
    open_crowd(engine, boss, study.id, enabled=False)
    with pytest.raises(crowd.JoinRefused):
        service.join_crowd(engine, {"join": str(study.id), "key": settings["secret"], "worker": "w-18"})
    assert service.list_studies(engine, worker) == []  # a closed link closes the study to its workers
    open_crowd(engine, boss, study.id, enabled=True, new_secret=True)
    with pytest.raises(crowd.JoinRefused):  # the old secret no longer works
        service.join_crowd(engine, {"join": str(study.id), "key": settings["secret"], "worker": "w-18"})


def test_a_worker_cannot_log_in_with_a_password_and_admins_settings_are_checked(engine, fixtures):
    study, _ = make_study(engine, fixtures, annotators=0)
    boss = admin(engine)
    with pytest.raises(PermissionDenied):
        open_crowd(engine, log_in_annotator(engine), study.id)
    with pytest.raises(ValueError, match="redirect"):
        open_crowd(engine, boss, study.id, redirect_url="javascript:alert(1)")
    with pytest.raises(ValueError, match="quota"):
        open_crowd(engine, boss, study.id, quota=-1)
    settings = open_crowd(engine, boss, study.id, redirect_url="https://app.prolific.com/submissions/complete?cc=C1A2B3")
    assert "PROLIFIC_PID={{%PROLIFIC_PID%}}" in service.crowd_link(engine, boss, study.id, "http://judge.example")
    worker = session_user(engine, service.join_crowd(engine, prolific(study.id, settings["secret"])))
    from annotate.sessions import LoginRefused

    with pytest.raises(LoginRefused):
        log_in(engine, worker.name, "")
    changes = [c["what"] for c in service.study_changes(engine, boss, study.id)]
    assert changes.count("crowd") == 1  # the refused settings changed nothing


def log_in_annotator(engine):
    with write_session(engine) as session:
        add_annotator(session, "ann", "ann-password")
    return log_in(engine, "ann", "ann-password")[0]


def test_attention_check_failures_are_flagged_and_workers_are_apart_in_exports(engine, fixtures):
    study, _ = make_study(engine, fixtures, annotators=0, overlap=5)
    boss = admin(engine)
    gold = "item,question,value\n" + "".join(f"{key},satisfied,1\n" for key in all_keys(engine, boss, study.id))
    service.set_gold(engine, boss, study.id, "gold.csv", gold.encode())
    settings = open_crowd(engine, boss, study.id, quota=3)
    careful = session_user(engine, service.join_crowd(engine, prolific(study.id, settings["secret"], pid="a" * 24)))
    careless = session_user(engine, service.join_crowd(engine, prolific(study.id, settings["secret"], pid="b" * 24)))
    for _ in range(3):
        judge(engine, careful, study.id, "1")
        judge(engine, careless, study.id, "0")
    report = service.study_progress(engine, boss, study.id)
    flags = {w["worker_id"]: (w["gold_checked"], w["gold_failed"], w["flagged"]) for w in report["workers"]}
    assert flags == {"a" * 24: (3, 0, False), "b" * 24: (3, 3, True)}
    assert report["attention"]["prolific:" + "b" * 24]["failed"] == 3
    rows = list(csv.DictReader(io.StringIO(service.votes_csv(engine, boss, study.id))))
    assert {(r["annotator"], r["annotator_kind"], r["platform"], r["platform_id"]) for r in rows} == {
        ("prolific:" + "a" * 24, "crowd", "prolific", "a" * 24),
        ("prolific:" + "b" * 24, "crowd", "prolific", "b" * 24),
    }


def test_named_accounts_are_marked_as_accounts_in_exports(engine, fixtures):
    study, people = make_study(engine, fixtures, annotators=1)
    boss = admin(engine)
    judge(engine, people[0], study.id)
    rows = list(csv.DictReader(io.StringIO(service.votes_csv(engine, boss, study.id))))
    assert {(r["annotator"], r["annotator_kind"], r["platform"], r["platform_id"]) for r in rows} == {
        ("study-a0", "account", "", "")
    }


def all_keys(engine, boss, study_id):
    return sorted({row["key"] for row in service.study_progress(engine, boss, study_id)["per_item"]})
