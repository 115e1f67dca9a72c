"""Crowd workers (issue 14, item 5): a per-study join link with the platform's ids and a secret,
a quota, a completion code, attention-check flags, and workers kept apart in exports."""

from __future__ import annotations

import csv
import io
import threading
from datetime import datetime, timedelta

import pytest
from sqlalchemy import func, select

from annotate import service
from annotate.people.auth import PermissionDenied, add_annotator
from annotate.people.sessions import log_in, session_user
from annotate.store.db import make_engine, read_session, write_session
from annotate.store.models import Annotator, CrowdWorker, LoginSession
from annotate.studies import crowd
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
    token, cookie = service.join_crowd_browser(engine, prolific(study.id, settings["secret"]))
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
    # The same link again from the same browser (a reload, another tab) is the same worker, not a new one.
    again = session_user(engine, service.join_crowd(engine, prolific(study.id, settings["secret"]), device=cookie))
    assert again.id == worker.id
    workers = service.study_progress(engine, boss, study.id).workers
    assert [(w.platform, w.worker_id, w.platform_session, w.done, w.finished) for w in workers] == [
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
    assert [a.name for a in service.list_annotators(engine, boss)] == ["boss"]


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
    from annotate.people.sessions import LoginRefused

    with pytest.raises(LoginRefused):
        log_in(engine, worker.name, "")
    changes = [c.what for c in service.study_changes(engine, boss, study.id)]
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
    flags = {w.worker_id: (w.gold_checked, w.gold_failed, w.flagged) for w in report.workers}
    assert flags == {"a" * 24: (3, 0, False), "b" * 24: (3, 3, True)}
    assert report.attention["prolific:" + "b" * 24].failed == 3
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
    return sorted({row.key for row in service.study_progress(engine, boss, study_id).per_item})


# --- issue 23, item 9: a link makes no more workers than the study has places for -----------------

T0 = datetime(2024, 5, 1, 12, 0, 0)


def generic(study_id, secret, worker):
    return {"join": str(study_id), "key": secret, "worker": worker}


def crowd_count(engine):
    with read_session(engine) as session:
        return (
            session.scalar(select(func.count()).select_from(CrowdWorker)),
            session.scalar(select(func.count()).select_from(Annotator).where(Annotator.role == "worker")),
            session.scalar(select(func.count()).select_from(LoginSession).join(Annotator).where(Annotator.role == "worker")),
        )


def test_the_301st_worker_is_refused_at_the_links_300_places_and_nothing_is_made(engine, fixtures):
    study, _ = make_study(engine, fixtures, annotators=0)
    boss = admin(engine)
    secret = open_crowd(engine, boss, study.id, places=300)["secret"]
    browsers = {}
    for i in range(300):  # each from its own address: the per-client limit is not what stops them
        browsers[i] = service.join_crowd_browser(
            engine, generic(study.id, secret, f"w{i}"), client=f"10.1.{i // 200}.{i % 200}", now=T0 + timedelta(seconds=i)
        )[1]
    assert crowd_count(engine) == (300, 300, 300)
    with pytest.raises(crowd.JoinRefused, match="no places left") as refused:
        service.join_crowd(engine, generic(study.id, secret, "w300"), client="10.9.9.9", now=T0 + timedelta(seconds=301))
    assert secret not in str(refused.value)
    assert crowd_count(engine) == (300, 300, 300)  # no account, no session
    # a worker who joined comes back (a reload, another tab of their browser): still their place
    again = session_user(
        engine,
        service.join_crowd(
            engine, generic(study.id, secret, "w7"), client="10.9.9.9", device=browsers[7], now=T0 + timedelta(seconds=302)
        ),
    )
    assert again.name == f"generic:w7@{study.id}"
    assert crowd_count(engine)[:2] == (300, 300)
    assert service.crowd_joins(engine, boss, study.id, now=T0 + timedelta(seconds=302)).joined == 300


def test_the_places_default_to_the_studys_need(engine, fixtures):
    study, _ = make_study(engine, fixtures, annotators=0, overlap=3)
    boss = admin(engine)
    items = service.my_progress(engine, boss, study.id)["items"]
    settings = open_crowd(engine, boss, study.id, quota=2)  # no places given: the study's need
    assert settings["places"] is None
    need = -(-items * 3 // 2)  # ceil(items * overlap / quota)
    assert service.crowd_joins(engine, boss, study.id).places == need
    open_crowd(engine, boss, study.id, quota=None)
    assert service.crowd_joins(engine, boss, study.id).places == items * 3  # no quota: a judgement each at least
    for i in range(items * 3):
        service.join_crowd(engine, generic(study.id, settings["secret"], f"w{i}"), client=f"10.2.0.{i}")
    with pytest.raises(crowd.JoinRefused, match="no places left"):
        service.join_crowd(engine, generic(study.id, settings["secret"], "one-more"), client="10.2.1.1")
    with pytest.raises(ValueError, match="places"):
        open_crowd(engine, boss, study.id, places=0)


def test_concurrent_joins_never_pass_the_places(engine, fixtures):
    study, _ = make_study(engine, fixtures, annotators=0)
    boss = admin(engine)
    secret = open_crowd(engine, boss, study.id, places=5)["secret"]
    outcomes = []

    def join(i):
        try:
            service.join_crowd(engine, generic(study.id, secret, f"w{i}"), client=f"10.3.0.{i}")
            outcomes.append("joined")
        except crowd.JoinRefused:
            outcomes.append("refused")

    threads = [threading.Thread(target=join, args=(i,)) for i in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["joined"] * 5 + ["refused"] * 15
    assert crowd_count(engine)[:2] == (5, 5)


def test_new_workers_from_one_client_are_rate_limited_across_servers(engine, db_url, fixtures):
    study, _ = make_study(engine, fixtures, annotators=0)
    boss = admin(engine)
    secret = open_crowd(engine, boss, study.id, places=100)["secret"]
    other_server = make_engine(db_url)  # a second app server: the count is in the database
    try:
        servers = [engine, other_server]
        browsers = [
            service.join_crowd_browser(
                servers[i % 2], generic(study.id, secret, f"w{i}"), client="203.0.113.5", now=T0 + timedelta(seconds=i)
            )[1]
            for i in range(crowd.JOINS_PER_CLIENT)
        ]
        late = T0 + timedelta(seconds=30)
        with pytest.raises(crowd.JoinRefused, match="Too many new workers") as refused:
            service.join_crowd(other_server, generic(study.id, secret, "w-next"), client="203.0.113.5", now=late)
        assert "try again" in str(refused.value)
        assert crowd_count(engine)[:2] == (crowd.JOINS_PER_CLIENT, crowd.JOINS_PER_CLIENT)
        # a worker who joined already comes back from that client; another client joins
        service.join_crowd(engine, generic(study.id, secret, "w0"), client="203.0.113.5", device=browsers[0], now=late)
        service.join_crowd(engine, generic(study.id, secret, "w-elsewhere"), client="198.51.100.7", now=late)
        # once the window has passed, that client may bring a new worker again
        service.join_crowd(
            engine, generic(study.id, secret, "w-next"), client="203.0.113.5", now=T0 + crowd.JOIN_WINDOW + timedelta(seconds=1)
        )
        assert crowd_count(engine)[:2] == (crowd.JOINS_PER_CLIENT + 2, crowd.JOINS_PER_CLIENT + 2)
    finally:
        other_server.dispose()


@pytest.mark.parametrize(
    "pid",
    ["5f3a9c0d1e2b3c4d5e6f7a8", "5f3a9c0d1e2b3c4d5e6f7a8b0", "5f3a9c0d1e2b3c4d5e6f7a8g", "worker-17", "5f3a9c0d1e2b-c4d5e6f7a8b"],
)
def test_a_malformed_prolific_id_is_refused_plainly_and_makes_nobody(engine, fixtures, pid):
    study, _ = make_study(engine, fixtures, annotators=0)
    boss = admin(engine)
    secret = open_crowd(engine, boss, study.id)["secret"]
    with pytest.raises(crowd.JoinRefused, match="24 hexadecimal"):
        service.join_crowd(engine, prolific(study.id, secret, pid=pid), client="10.4.0.1")
    assert crowd_count(engine)[:2] == (0, 0)
    service.join_crowd(engine, generic(study.id, secret, "worker-17"), client="10.4.0.1")  # other platforms: as before
    assert crowd_count(engine)[:2] == (1, 1)


def test_the_admin_sees_joins_per_minute(engine, fixtures):
    study, _ = make_study(engine, fixtures, annotators=0)
    boss = admin(engine)
    secret = open_crowd(engine, boss, study.id, places=50)["secret"]
    now = T0 + timedelta(hours=2)
    ages = [5, 20, 50, 90, 200, 400, 590, 1200, 3000, 4000]  # seconds before now; the last is over an hour ago
    for i, age in enumerate(ages):
        service.join_crowd(engine, generic(study.id, secret, f"w{i}"), client=f"10.5.0.{i}", now=now - timedelta(seconds=age))
    stats = service.crowd_joins(engine, boss, study.id, now=now)
    assert (stats.joined, stats.places, stats.last_minute, stats.last_10_minutes, stats.last_hour) == (
        10,
        50,
        3,
        7,
        9,
    )
    assert stats.per_minute == pytest.approx(0.7)  # over the last 10 minutes
    assert stats.per_minute_series[-1] == 3 and sum(stats.per_minute_series) == 7  # the last 10 minutes, oldest first
    assert len(stats.per_minute_series) == 10
    with pytest.raises(PermissionDenied):
        service.crowd_joins(engine, log_in_annotator(engine), study.id)


# --- issue 37, item 2: a worker id is bound to the browser of its first join (and Prolific's session) ---


def test_a_second_browser_claiming_a_worker_id_is_refused_and_changes_nothing(engine, fixtures):
    """The attack of issue 37: another browser opens the link with ``worker=alice``.  Refused, whatever
    it shows (no cookie, a forged token, another worker's token, the generic ``session=``); alice's own
    browser comes back."""
    study, _ = make_study(engine, fixtures, annotators=0)
    boss = admin(engine)
    secret = open_crowd(engine, boss, study.id, places=10)["secret"]
    link = {**generic(study.id, secret, "alice"), "session": "s-1"}
    token, alices_browser = service.join_crowd_browser(engine, link, client="10.7.0.1")
    alice = session_user(engine, token)
    item = judge(engine, alice, study.id, "1")
    _, bobs_browser = service.join_crowd_browser(engine, generic(study.id, secret, "bob"), client="10.7.0.2")
    before = (crowd_count(engine), _events(engine))
    forged = alices_browser.split(".")[0] + ".AAAAAAAAAAAA." + "A" * 43
    for device in (None, "", "garbage", forged, bobs_browser, alices_browser[:-1] + ("x" if alices_browser[-1] != "x" else "y")):
        with pytest.raises(crowd.JoinRefused, match="in another browser") as refused:
            service.join_crowd_browser(engine, link, client="10.7.0.9", device=device)
        assert secret not in str(refused.value) and "alice" not in str(refused.value)
    assert (crowd_count(engine), _events(engine)) == before  # no account, no session, no vote
    # alice's browser: a reload, a new tab, a later visit (its cookie holds bob's token too: a shared computer)
    shared = alices_browser + "~" + bobs_browser
    for device in (alices_browser, shared):
        again, cookie = service.join_crowd_browser(engine, link, client="10.7.0.1", device=device)
        assert session_user(engine, again).id == alice.id
        assert cookie.count("~") == device.count("~")  # a fresh token for alice, the others kept
    assert [e.item_id for e in service.history(engine, alice, study.id)] == [item.id]


def test_a_crowd_token_ends_with_the_device_days_and_is_bound_to_its_study(engine, fixtures):
    study, _ = make_study(engine, fixtures, annotators=0)
    other, _ = make_study(engine, fixtures, annotators=0, name="other")
    boss = admin(engine)
    secret = open_crowd(engine, boss, study.id, places=10)["secret"]
    other_secret = open_crowd(engine, boss, other.id, places=10)["secret"]
    _, browser = service.join_crowd_browser(engine, generic(study.id, secret, "carol"), now=T0)
    service.join_crowd(engine, generic(study.id, secret, "carol"), device=browser, now=T0 + timedelta(days=29))
    with pytest.raises(crowd.JoinRefused, match="in another browser"):
        service.join_crowd(engine, generic(study.id, secret, "carol"), device=browser, now=T0 + timedelta(days=31))
    # the same worker id on another study is another worker: the first study's token does not open it
    _, elsewhere = service.join_crowd_browser(engine, generic(other.id, other_secret, "carol"), now=T0)
    with pytest.raises(crowd.JoinRefused, match="in another browser"):
        service.join_crowd(engine, generic(other.id, other_secret, "carol"), device=browser, now=T0 + timedelta(days=1))
    service.join_crowd(engine, generic(other.id, other_secret, "carol"), device=elsewhere, now=T0 + timedelta(days=1))


def test_on_prolific_the_session_id_of_the_first_join_brings_the_worker_back_in_any_browser(engine, fixtures):
    study, _ = make_study(engine, fixtures, annotators=0)
    boss = admin(engine)
    secret = open_crowd(engine, boss, study.id, places=10)["secret"]
    token, browser = service.join_crowd_browser(engine, prolific(study.id, secret, session_id="sess-first"))
    worker = session_user(engine, token)
    # a private window, another device: the link Prolific gave that participant (the same SESSION_ID)
    again, other_browser = service.join_crowd_browser(engine, prolific(study.id, secret, session_id="sess-first"))
    assert session_user(engine, again).id == worker.id
    service.join_crowd(engine, prolific(study.id, secret, session_id="sess-other"), device=other_browser)  # its token now
    # someone who knows the Prolific id but not that session: refused, in any browser without a token
    for session_id in ("sess-other", ""):
        with pytest.raises(crowd.JoinRefused, match="in another browser"):
            service.join_crowd(engine, prolific(study.id, secret, session_id=session_id))
    # the first browser, with a later session of the same worker: its token is proof enough
    assert session_user(engine, service.join_crowd(engine, prolific(study.id, secret, session_id="s-3"), device=browser)).id == (
        worker.id
    )
    assert crowd_count(engine)[:2] == (1, 1)


def test_a_worker_who_joined_before_the_binding_comes_back_only_by_prolifics_session(engine, fixtures):
    """Rows made before issue 37 have no key: no browser can show a token for them, so a link without
    the first SESSION_ID is refused; Prolific's SESSION_ID binds them from then on."""
    from sqlalchemy import update

    study, _ = make_study(engine, fixtures, annotators=0)
    boss = admin(engine)
    secret = open_crowd(engine, boss, study.id, places=10)["secret"]
    _, old_generic = service.join_crowd_browser(engine, generic(study.id, secret, "dave"))
    service.join_crowd(engine, prolific(study.id, secret, session_id="sess-dan"))
    with write_session(engine) as session:
        session.execute(update(CrowdWorker).values(device_key=""))
    with pytest.raises(crowd.JoinRefused, match="in another browser"):
        service.join_crowd(engine, generic(study.id, secret, "dave"), device=old_generic)
    token, bound = service.join_crowd_browser(engine, prolific(study.id, secret, session_id="sess-dan"))
    with read_session(engine) as session:
        assert session.scalar(select(CrowdWorker.device_key).where(CrowdWorker.annotator_id == session_user(engine, token).id))
    service.join_crowd(engine, prolific(study.id, secret, session_id="later"), device=bound)


def _events(engine):
    from annotate.store.models import VoteEvent

    with read_session(engine) as session:
        return session.scalar(select(func.count()).select_from(VoteEvent))
