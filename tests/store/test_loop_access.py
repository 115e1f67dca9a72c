"""The annotator's loop checks access in one statement (``annotate.judging.loop.access``); the rule itself is
``annotate.studies.membership.require_access``.  Both must agree for every role, archived or open study, with or
without a member list, and a crowd link open or closed (issue 25 review)."""

from __future__ import annotations

import itertools

from annotate import service
from annotate.judging import loop
from annotate.people.auth import PermissionDenied, StudyClosed, add_annotator
from annotate.people.sessions import session_user
from annotate.store.db import read_session, write_session
from annotate.studies import membership
from tests.store.test_crowd import admin, open_crowd, prolific
from tests.store_helpers import make_study


def outcome(check, *args) -> str:
    try:
        check(*args)
    except StudyClosed:
        return "closed"
    except PermissionDenied:
        return "denied"
    return "allowed"


def test_the_one_statement_access_check_agrees_with_the_rule(engine, fixtures):
    study, (member, outsider) = make_study(engine, fixtures, annotators=2, name="rules")
    other, _ = make_study(engine, fixtures, annotators=0, name="elsewhere")
    boss = admin(engine)
    with write_session(engine) as session:
        reader = add_annotator(session, "reader", "a-long-enough-password")
    settings = open_crowd(engine, boss, study.id)
    worker = session_user(engine, service.join_crowd(engine, prolific(study.id, settings["secret"])))
    people = {"admin": boss, "member": member, "outsider": outsider, "reader": reader, "worker": worker}
    seen = set()
    for archived, members, crowd_open in itertools.product((False, True), (False, True), (False, True)):
        service.set_members(engine, boss, study.id, [member.name] if members else [])
        open_crowd(engine, boss, study.id, enabled=crowd_open)
        service.set_archived(engine, boss, study.id, archived)
        for (who, person), study_id in itertools.product(people.items(), (study.id, other.id)):
            with read_session(engine) as session:
                rule = outcome(membership.require_access, session, person, study_id)
                one = outcome(loop.access, session, person, study_id)
            assert one == rule, (who, study_id, archived, members, crowd_open)
            seen.add(rule)
    assert seen == {"allowed", "denied", "closed"}
