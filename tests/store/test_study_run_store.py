"""Issue 12 in the store: skip, imported past judgements, reopen, login throttling (each failed before its fix)."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import func, select

from annotate import service
from annotate.people.sessions import log_in
from annotate.store.db import read_session, write_session
from annotate.store.models import Assignment, VoteEvent


def test_skip_is_not_a_trapdoor(engine, fixtures):
    """A skipped item is listed with the judged ones, can be opened and judged, and comes back last."""
    from annotate.judging.votes import cast_vote
    from annotate.studies.assignment import skip_item
    from tests.store_helpers import make_study, next_item

    study, (a,) = make_study(engine, fixtures, overlap=1, annotators=1)
    with write_session(engine) as session:
        skipped = next_item(session, study.id, a)
        skip_item(session, a, skipped.id)
    with write_session(engine) as session:
        first_after = next_item(session, study.id, a)
    assert first_after.key != skipped.key
    history = service.my_history(engine, a, study.id)
    assert (skipped.id, skipped.key, "skipped") in history
    assert service.item_for(engine, a, skipped.id).key == skipped.key  # can be opened
    seen = [first_after.key]
    with write_session(engine) as session:
        cast_vote(session, a, first_after.id, "satisfied", "1")
    while True:
        with write_session(engine) as session:
            item = next_item(session, study.id, a)
            if item is None:
                break
            seen.append(item.key)
            cast_vote(session, a, item.id, "satisfied", "0")
    assert len(seen) == 10 and seen[-1] == skipped.key  # offered again when nothing else is left
    assert all(state != "skipped" for *_, state in service.my_history(engine, a, study.id))


def test_historical_votes_import_past_the_overlap(engine, fixtures, tmp_path):
    """The FGA study had 11 raters per dialogue; a study with overlap 3 must take them all."""
    from annotate.analysis.reports import progress
    from annotate.judging.votes import import_votes
    from tests.store_helpers import make_study, next_item

    study, (newcomer,) = make_study(engine, fixtures, overlap=3, annotators=1)
    keys = ["PMUL4648.json", "MUL0144.json"]
    text = "item,annotator,question,value\n" + "".join(
        f"{key},rater{r},satisfied,{(r + i) % 2}\n" for i, key in enumerate(keys) for r in range(11)
    )
    with write_session(engine) as session:
        assert import_votes(session, study, "fga_ratings.csv", text) == 22
    with read_session(engine) as session:
        report = progress(session, study.id)
        assert session.scalar(select(func.count()).select_from(VoteEvent)) == 22
    assert len(report.annotators) == 11 and report.items_complete == 2
    seen = []
    while True:  # live assignment: the imported items are full, the others open
        with write_session(engine) as session:
            item = next_item(session, study.id, newcomer)
            if item is None:
                break
            seen.append(item.key)
            session.add(VoteEvent(item_id=item.id, annotator_id=newcomer.id, question="satisfied", value="1"))
            session.flush()
            from annotate.studies.assignment import DONE

            session.scalar(
                select(Assignment).where(Assignment.item_id == item.id, Assignment.annotator_id == newcomer.id)
            ).status = DONE
    assert sorted(seen) == sorted(set(seen)) and not set(keys) & set(seen) and len(seen) == 8
    bad = "item,annotator,question,value\nPMUL4648.json,rater1,satisfied,1\nNOPE.json,rater2,satisfied,1\n"
    with pytest.raises(ValueError, match="bad.csv:line 3.*NOPE.json"), write_session(engine) as session:
        import_votes(session, study, "bad.csv", bad)
    with read_session(engine) as session:
        assert session.scalar(select(func.count()).select_from(VoteEvent)) == 22 + 8  # nothing of the bad file


def test_cli_reopen(db_url, fixtures, tmp_path):
    from tests.store.test_annotate_cli import cli, ok

    ok(cli(db_url, "study", "create", "sat", "--kind", "satisfaction", "--overlap", "1", str(fixtures / "fga_human_eval")))
    out = ok(cli(db_url, "study", "reopen", "sat", "PMUL4648.json", "--extra", "2"))
    assert "re-opened 1 item" in out
    out = ok(cli(db_url, "study", "reopen", "sat", "--all"))
    assert "re-opened 10 items" in out
    status = json.loads(ok(cli(db_url, "status", "sat", "--json")))
    needed = {row["key"]: row["needed"] for row in status["per_item"]}
    assert needed["PMUL4648.json"] == 4 and needed["MUL0144.json"] == 2
    missing = cli(db_url, "study", "reopen", "sat", "NOPE.json")
    assert missing.returncode == 2 and "NOPE.json" in missing.stderr
    neither = cli(db_url, "study", "reopen", "sat")
    assert neither.returncode == 2


def test_login_throttle_slows_guessing_but_cannot_lock_a_user_out(db_url):
    """Per name and client a growing delay; per name alone a short one; a reset clears them."""
    from datetime import timedelta

    from annotate.people.auth import add_annotator
    from annotate.people.sessions import FREE_FAILURES, LoginRefused
    from annotate.store.db import make_engine
    from annotate.store.models import utcnow

    engine = make_engine(db_url)
    with write_session(engine) as session:
        add_annotator(session, "alice", "alice-password")
        add_annotator(session, "boss", "boss-password", "admin")
    t0 = utcnow()
    for n in range(FREE_FAILURES):
        with pytest.raises(LoginRefused, match="wrong name or password"):
            log_in(engine, "alice", "guess", client="10.0.0.66", now=t0 + timedelta(seconds=n))
    last = t0 + timedelta(seconds=FREE_FAILURES - 1)
    # The guesser's client now waits, even with the right password ...
    with pytest.raises(LoginRefused, match=r"try again in 29 s"):
        log_in(engine, "alice", "alice-password", client="10.0.0.66", now=last + timedelta(seconds=1))
    # ... while alice, elsewhere, logs in at once.
    log_in(engine, "alice", "alice-password", client="10.0.0.7", now=last + timedelta(seconds=1))
    # The delay grows with each further failure from that client: 30 s, then 60 s.
    with pytest.raises(LoginRefused, match="wrong name or password"):
        log_in(engine, "alice", "guess", client="10.0.0.66", now=last + timedelta(seconds=31))
    with pytest.raises(LoginRefused, match=r"try again in 59 s"):
        log_in(engine, "alice", "guess", client="10.0.0.66", now=last + timedelta(seconds=32))
    # Guessing from many clients slows the name everywhere, but by a minute at most.
    from annotate.people.sessions import NAME_FREE_FAILURES

    t1 = last + timedelta(minutes=20)
    for n in range(NAME_FREE_FAILURES + 10):
        with pytest.raises(LoginRefused):
            log_in(engine, "alice", "guess", client=f"10.1.{n}.1", now=t1)
    with pytest.raises(LoginRefused, match=r"try again in (\d|[1-5]\d|60) s"):
        log_in(engine, "alice", "alice-password", client="10.0.0.7", now=t1)
    log_in(engine, "alice", "alice-password", client="10.0.0.7", now=t1 + timedelta(seconds=61))
    # An admin's password reset clears every failure of the name.
    for n in range(FREE_FAILURES + 2):
        try:
            log_in(engine, "alice", "guess", client="10.0.0.66", now=t1 + timedelta(minutes=1, seconds=n * 100))
        except LoginRefused:
            pass
    boss, _ = log_in(engine, "boss", "boss-password")
    service.reset_password(engine, boss, "alice", "new-alice-password")
    log_in(engine, "alice", "new-alice-password", client="10.0.0.66", now=t1 + timedelta(minutes=20))
    engine.dispose()


def test_cli_password_reset_clears_failures(db_url):
    from annotate.people.sessions import FREE_FAILURES, LoginRefused
    from annotate.store.db import make_engine
    from tests.store.test_annotate_cli import cli, ok

    ok(cli(db_url, "annotator", "add", "carol", password="carol-password"))
    engine = make_engine(db_url)
    for _ in range(FREE_FAILURES):
        with pytest.raises(LoginRefused):
            log_in(engine, "carol", "guess")
    with pytest.raises(LoginRefused, match="try again"):
        log_in(engine, "carol", "carol-password")
    assert "new password for carol" in ok(cli(db_url, "annotator", "password", "carol", password="carol-new-password"))
    log_in(engine, "carol", "carol-new-password")
    engine.dispose()
