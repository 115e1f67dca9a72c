"""Issue 23, item 9 in the app (AppTest): the admin sets how many places a crowd link has and sees
how fast workers join (Studies → Change a study → Crowd workers)."""

from __future__ import annotations

import pytest

from annotate import service
from annotate.people.sessions import session_user
from annotate.store.db import get_engine
from annotate.studies import crowd
from tests.app.test_app import login, page_as


def test_the_admin_sets_the_places_and_sees_joins_per_minute(app_db):
    app = login("admin", "demo-admin-pw")
    token = app.session_state["token"]
    engine = get_engine(app_db)
    boss = session_user(engine, token)
    study = service.list_studies(engine)[0]
    secret = service.set_crowd(engine, boss, study.id, enabled=True, quota=2, completion_code="C0DE", redirect_url="")["secret"]
    for i in range(3):
        service.join_crowd(engine, {"join": str(study.id), "key": secret, "worker": f"w{i}"}, client=f"10.6.0.{i}")
    need = service.crowd_joins(engine, boss, study.id).places

    page = page_as("studies_page", token)
    assert not page.exception, page.exception
    places = next(w for w in page.number_input if w.label.startswith("Places for workers"))
    assert places.value == 0  # 0: the study's need
    metrics = {m.label: m.value for m in page.metric}
    assert metrics["Workers joined"] == f"3 of {need}"
    assert metrics["Joins in the last minute"] == "3"
    assert metrics["Joins per minute (last 10 minutes)"] == "0.3"

    places.set_value(3)
    next(b for b in page.button if b.label == "Save crowd settings").click().run()
    assert not page.exception, page.exception
    assert [s.value for s in page.success] == ["Crowd settings saved."]
    assert {m.label: m.value for m in page.metric}["Workers joined"] == "3 of 3"
    assert service.crowd_settings(engine, boss, study.id)["places"] == 3
    with pytest.raises(crowd.JoinRefused, match="no places left"):
        service.join_crowd(engine, {"join": str(study.id), "key": secret, "worker": "w3"}, client="10.6.0.9")
