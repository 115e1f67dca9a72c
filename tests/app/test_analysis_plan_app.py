"""The frozen analysis plan on the Analysis page (Settings): the admin sees "Freeze the analysis plan"
before the study's first vote (and then the plan's download), and not after it."""

from __future__ import annotations

import json

from sqlalchemy import select

from annotate import service
from annotate.judging.votes import cast_votes
from annotate.people.auth import add_annotator
from annotate.people.sessions import log_in
from annotate.store.db import get_engine, write_session
from annotate.store.models import Item
from exports import analysis_plan
from tests.app.test_app import analysis_as

FREEZE = "Freeze the analysis plan"


def _labels(probe) -> list[str]:
    return [b.label for b in probe.button]


def test_the_admin_freezes_the_plan_before_the_first_vote_and_not_after(app_db, fixtures, monkeypatch):
    monkeypatch.setenv("DST_JUDGE_ANALYSIS_PROCESS", "0")
    engine = get_engine(app_db)
    with write_session(engine) as session:
        add_annotator(session, "boss", "boss-password", "admin")
        voter = add_annotator(session, "voter")
    boss, token = log_in(engine, "boss", "boss-password")
    voted = service.create_study_from_files(engine, boss, "voted <b>", "satisfaction", [fixtures / "fga_human_eval"])
    fresh = service.create_study_from_files(engine, boss, "fresh", "satisfaction", [fixtures / "fga_human_eval"])
    item = service.study_items(engine, boss, voted.id)[0]
    with write_session(engine) as session:
        item_id = session.scalar(select(Item.id).where(Item.study_id == voted.id, Item.key == item.key))
        cast_votes(session, session.merge(voter), item_id, {"satisfied": "1"})

    probe = analysis_as(token)
    probe.selectbox(key="analysis-study").set_value(
        next(s for s in probe.selectbox(key="analysis-study").options if "fresh" in s)
    )
    probe.run()
    assert not probe.exception, probe.exception
    assert FREEZE in _labels(probe)
    next(b for b in probe.button if b.label == FREEZE).click().run()
    assert not probe.exception, probe.exception
    assert FREEZE not in _labels(probe)
    plan = service.study_plan(engine, boss, fresh.id)
    assert plan.frozen and plan.frozen_by == "boss"
    (download,) = [d for d in probe.get("download_button") if "analysis plan" in d.proto.label]
    assert any(t.value.startswith(f"Analysis plan frozen at {plan.frozen_at.replace('T', ' ')[:16]}") for t in probe.text)

    probe.selectbox(key="analysis-study").set_value(
        next(s for s in probe.selectbox(key="analysis-study").options if "voted" in s)
    )
    probe.run()
    assert not probe.exception, probe.exception
    assert FREEZE not in _labels(probe)
    assert any("No analysis plan was frozen before the first vote" in c.value for c in probe.caption)
    assert not service.study_plan(engine, boss, voted.id).frozen
    _, content = service.plan_file(engine, boss, fresh.id)
    assert analysis_plan.verify(json.loads(content))
