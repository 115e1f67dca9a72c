"""A new task kind is one module and one registry call: a toy kind runs a whole study."""

from __future__ import annotations

import pytest

from annotate import service
from annotate.kinds import KINDS, register
from annotate.pages.views import KEYS, UNSURE_KEYS, VIEWS, register_view
from annotate.people.auth import add_annotator
from annotate.people.sessions import log_in
from annotate.store.db import write_session
from annotate.studies import create_study
from exports import formats as export_formats
from metrics.analysis import AnalysisSettings
from tests.app.test_app import item_button
from tests.store import toy_kind


@pytest.fixture
def toy():
    register(toy_kind.KIND)  # the kind's registry call
    register_view("toy", toy_kind.render)  # and its view's
    yield toy_kind.KIND
    KINDS.pop("toy", None)
    for views in (VIEWS, KEYS, UNSURE_KEYS):  # every registry register_view wrote, so later tests see 3 kinds
        views.pop("toy", None)
    export_formats._KINDS.pop("toy", None)


def test_a_toy_kind_runs_a_study(toy, engine, tmp_path):
    sentences = tmp_path / "sentences.txt"
    sentences.write_text("the cat sat on the mat\ncat the mat on sat the\n\na fine sentence\n")
    with write_session(engine) as session:
        study = create_study(session, "fluency", "toy", [sentences], overlap=2)
        study_id = study.id
        add_annotator(session, "boss", "boss-password", "admin")
        for name in ("r1", "r2"):
            add_annotator(session, name, f"{name}-password")
    answers = {"sentences/1": "1", "sentences/2": "0", "sentences/4": "1"}
    for name in ("r1", "r2"):
        user, _ = log_in(engine, name, f"{name}-password")
        while (item := service.next_item(engine, user, study_id)) is not None:
            service.submit(engine, user, item.id, {"fluent": answers[item.key]})
    boss, _ = log_in(engine, "boss", "boss-password")
    report = service.study_progress(engine, boss, study_id)
    assert report.items == 3 and report.items_complete == 3 and list(report.annotators) == ["r1", "r2"]
    votes_csv, _ = service.export(engine, boss, study_id, "votes-csv")
    assert votes_csv.decode().count("\r\n") == 1 + 6
    settings = AnalysisSettings(resamples=50)
    majority, _ = service.export(engine, boss, study_id, "majority-csv", settings)
    assert "sentences/2,,fluent,2,0" in majority.decode()
    markdown, _ = service.export(engine, boss, study_id, "report-md", settings)
    assert "fluency" in markdown.decode() and "Krippendorff" in markdown.decode()
    with pytest.raises(ValueError, match="fga-text is for satisfaction studies"):
        service.export(engine, boss, study_id, "fga-text")
    with pytest.raises(ValueError, match="takes 1 or 0"), write_session(engine) as session:
        from annotate.judging.votes import cast_vote

        cast_vote(session, add_annotator(session, "r3"), item_id_of(engine, study_id), "fluent", "maybe")


def item_id_of(engine, study_id: int) -> int:
    from sqlalchemy import select

    from annotate.store.db import read_session
    from annotate.store.models import Item

    with read_session(engine) as session:
        return session.scalar(select(Item.id).where(Item.study_id == study_id).order_by(Item.id))


@pytest.mark.app
def test_the_toy_kind_on_the_annotate_page(toy, app_db, tmp_path):
    from annotate.store.db import get_engine
    from tests.app.test_app import choose_study, login, start

    engine = get_engine(app_db)
    start()  # the demo database
    sentences = tmp_path / "toy.txt"
    sentences.write_text("colourless green ideas sleep furiously\n")
    with write_session(engine) as session:
        create_study(session, "Toy fluency", "toy", [sentences], overlap=1)
    app = choose_study(login("ann1", "demo-ann1-pw"), "sentence fluency")
    assert "colourless green ideas sleep furiously" in [t.value for t in app.text]
    item_button(app, "toy-0").click().run()
    assert not app.exception and app.success[0].value.startswith("No more items for you")
