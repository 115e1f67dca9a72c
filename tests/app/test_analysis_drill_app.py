"""The Analysis drill-down (issue 24, item 8): superseded vote events are marked, and the
adjudicator's final label starts empty and must be chosen."""

from __future__ import annotations

from sqlalchemy import func, select

from annotate import service
from annotate.people.sessions import log_in
from annotate.store.db import get_engine, read_session
from annotate.store.models import Adjudication
from tests.app.test_app import analysis_as, start


def test_the_drill_down_marks_current_votes_and_the_final_label_must_be_chosen(app_db):
    engine = get_engine(app_db)
    start()  # the demo database
    _, token = log_in(engine, "admin", "demo-admin-pw")
    study = next(s for s in service.list_studies(engine) if s.kind == "satisfaction")
    ann1, _ = log_in(engine, "ann1", "demo-ann1-pw")
    ann2, _ = log_in(engine, "ann2", "demo-ann2-pw")
    first = service.next_item(engine, ann1, study.id)
    service.submit(engine, ann1, first.id, {"satisfied": "1"})
    service.submit(engine, ann1, first.id, {"satisfied": "0"}, comment="on second thoughts")
    while (item := service.next_item(engine, ann2, study.id)) is not None:
        service.submit(engine, ann2, item.id, {"satisfied": "1"})
    probe = analysis_as(token)
    assert not probe.exception, probe.exception
    probe.selectbox(key="analysis-drill").set_value(f"{first.key}\u241f{first.condition}").run()
    votes = next(d.value for d in probe.dataframe if "current" in d.value.columns)
    # Issue 27, item 5: the drill-down's columns are in words ("value" is the "answer") and narrower.
    assert votes[["annotator", "answer", "current"]].values.tolist() == [
        ["ann1", "1", False],
        ["ann1", "0", True],
        ["ann2", "1", True],
    ]
    # votes stored without a measured time (here through the service, as an import or the API does) say so
    # in words, not as a grey "None"
    assert votes["seconds spent"].tolist() == ["—", "—", "—"]
    final = probe.radio(key="analysis-final")
    assert final.value is None  # nothing chosen for the adjudicator
    submit = next(b for b in probe.button if b.label == "Record the adjudicated label")
    submit.click().run()
    assert any("Choose the final label" in e.value for e in probe.error), [e.value for e in probe.error]
    with read_session(engine) as session:
        assert session.scalar(select(func.count()).select_from(Adjudication)) == 0
    probe.radio(key="analysis-final").set_value("0")
    next(b for b in probe.button if b.label == "Record the adjudicated label").click().run()
    assert not probe.exception, probe.exception
    with read_session(engine) as session:
        assert session.execute(select(Adjudication.value, Adjudication.by)).all() == [("0", "admin")]
