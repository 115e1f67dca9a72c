""" "Unsure" on the annotator's page and the Studies page (AppTest): a study created to offer "unsure"
shows an *Unsure* button with its key beside the question's other answers (satisfaction and CoCo), a press
stores the value ``unsure`` through the page's one write path (read back through the service), the saved
mark and the key overview say it; a study that does not offer it looks as before (no button, no key); and
the Studies page's checkbox makes a study whose yes/no and choice questions offer it."""

from __future__ import annotations

from sqlalchemy import select

from annotate import service
from annotate.people.sessions import log_in
from annotate.store.db import get_engine, read_session
from annotate.store.models import Study
from tests.app.test_app import item_button, login, page_as, start, start_judging, texts
from tests.store_helpers import zip_bytes


def _study(app_db, fixtures, name: str, kind: str, *, unsure: bool) -> int:
    """A study of the shared fixtures made through the service by the demo admin (the app's demo made first)."""
    engine = get_engine(app_db)
    start()  # the demo database (the demo studies and accounts)
    admin, _ = log_in(engine, "admin", "demo-admin-pw")
    paths = {"satisfaction": [fixtures / "fga_human_eval"], "coco": [fixtures / "coco"]}[kind]
    return service.create_study_from_files(engine, admin, name, kind, paths, overlap=2, unsure=unsure).id


def _choose(app, name: str):
    """Choose the study named ``name`` in the Annotate page's Study box, as a person does."""
    box = app.selectbox(key="study-choice")
    box.select_index(next(i for i, label in enumerate(box.options) if label.startswith(f"{name} — "))).run()
    assert not app.exception, app.exception
    return start_judging(app)


def _shown_item(app, prefix: str) -> int:
    """The id of the item on the screen, from its answer buttons' keys (``ItemContext.key``)."""
    return int(item_button(app, prefix).key.rsplit("-", 1)[1])


def _answers(app_db, item_id: int) -> dict[str, str]:
    """ann1's stored answers on the item, read back through the service (the database, not the page)."""
    engine = get_engine(app_db)
    user, _ = log_in(engine, "ann1", "demo-ann1-pw")
    return service.my_answers(engine, user, item_id)


def _unsure_buttons(app) -> list:
    return [b for b in app.button if "unsure" in b.label.lower() or (b.proto.shortcut or "").lower() in ("n", "m")]


def _key_overview(app) -> str:
    """The Keys dialog's text (the *Keys (?)* button, as a person presses it or "?")."""
    app.button(key="keys").click().run()
    assert not app.exception, app.exception
    return "\n".join(m.value for m in app.markdown)


def test_a_satisfaction_study_that_offers_unsure_shows_the_button_and_stores_unsure(app_db, fixtures):
    _study(app_db, fixtures, "sat-unsure", "satisfaction", unsure=True)
    app = _choose(login("ann1", "demo-ann1-pw"), "sat-unsure")
    unsure = item_button(app, "sat-unsure")
    assert unsure.label == "Unsure (n)" and unsure.proto.shortcut == "n" and unsure.proto.type == "secondary"
    labels = [b.label for b in app.button]
    # with the question's other answers, in their row: after "Not satisfied", before Skip
    assert labels.index("Not satisfied (0)") + 1 == labels.index("Unsure (n)") < labels.index("Skip")
    item_id = _shown_item(app, "sat-unsure")
    unsure.click().run()
    assert not app.exception, app.exception
    assert _answers(app_db, item_id) == {"satisfied": "unsure"}
    assert "✓ Saved: satisfied unsure" in texts(app)  # the saved mark names the answer
    assert _shown_item(app, "sat-unsure") != item_id  # a complete judgement: the next item
    assert "**n** Unsure" in _key_overview(app)
    # Undo reopens the item with "unsure" chosen; a key there changes it, through the same write
    app.button(key=next(b.key for b in app.button if b.key and b.key.startswith("undo-"))).click().run()
    assert _shown_item(app, "sat-unsure") == item_id
    assert item_button(app, "sat-unsure").proto.type == "primary"
    assert "Your current answer: unsure" in [c.value for c in app.caption]
    item_button(app, "sat-1").click().run()
    assert _answers(app_db, item_id) == {"satisfied": "1"}


def test_a_coco_study_that_offers_unsure_shows_a_button_per_question_and_stores_unsure(app_db, fixtures):
    _study(app_db, fixtures, "coco-unsure", "coco", unsure=True)
    app = _choose(login("ann1", "demo-ann1-pw"), "coco-unsure")
    human_like, correct = item_button(app, "coco-n"), item_button(app, "coco-m")
    assert (human_like.label, human_like.proto.shortcut) == ("Unsure (n)", "n")
    assert (correct.label, correct.proto.shortcut) == ("Unsure (m)", "m")
    # a row per question under its words: its yes, no and unsure together, Skip after the second's
    labels = [b.label for b in app.button]
    start = labels.index("Yes (1)")
    assert labels[start : start + 7] == ["Yes (1)", "No (2)", "Unsure (n)", "Yes (3)", "No (4)", "Unsure (m)", "Skip"]
    assert [b.proto.shortcut for b in app.button][start : start + 7] == ["1", "2", "n", "3", "4", "m", "s"]
    item_id = _shown_item(app, "coco-n")
    human_like.click().run()
    assert not app.exception, app.exception
    assert _answers(app_db, item_id) == {"human_like": "unsure"}
    assert _shown_item(app, "coco-n") == item_id  # one question of two: the item stays
    assert any("Your answer: unsure" in c.value for c in app.caption)
    item_button(app, "coco-3").click().run()  # the second question: complete, the next item
    assert _answers(app_db, item_id) == {"human_like": "unsure", "correct": "1"}
    assert _shown_item(app, "coco-n") != item_id
    overview = _key_overview(app)
    assert "**n** Human-like: unsure" in overview and "**m** Correct: unsure" in overview


def test_a_study_that_does_not_offer_unsure_looks_as_before(app_db, fixtures):
    _study(app_db, fixtures, "sat-plain", "satisfaction", unsure=False)
    app = _choose(login("ann1", "demo-ann1-pw"), "sat-plain")
    assert not _unsure_buttons(app), [b.label for b in _unsure_buttons(app)]
    labels = [b.label for b in app.button]
    start = labels.index("Satisfied (1)")
    assert labels[start : start + 3] == ["Satisfied (1)", "Not satisfied (0)", "Skip"]
    overview = _key_overview(app)
    assert "**1**" in overview and "nsure" not in overview and "**n**" not in overview
    coco = next(s for s in service.list_studies(get_engine(app_db)) if s.kind == "coco")  # the demo's, without unsure
    app = _choose(app, coco.name)
    assert not _unsure_buttons(app)
    labels = [b.label for b in app.button]
    start = labels.index("Human-like: yes (1)")
    assert labels[start : start + 5] == [
        "Human-like: yes (1)",
        "Human-like: no (2)",
        "Correct: yes (3)",
        "Correct: no (4)",
        "Skip",
    ]
    assert "nsure" not in _key_overview(app)


def _studies_page_create(app_db, fixtures, name: str, *, offer: bool | None):
    """The Studies page's create form, filled as an admin does: a name, the satisfaction kind, a zip of the
    FGA files; the "unsure" checkbox ticked when ``offer`` (left alone when None)."""
    app = login("admin", "demo-admin-pw")
    probe = page_as("studies_page", app.session_state["token"])
    probe.text_input[0].input(name)
    files = {f"som-dst/{p.name}": p.read_bytes() for p in sorted((fixtures / "fga_human_eval").glob("*.txt"))}
    probe.file_uploader[0].set_value(("som-dst.zip", zip_bytes(files), "application/zip"))
    (box,) = [c for c in probe.checkbox if c.label == "Offer 'unsure' on yes/no and choice questions"]
    assert box.value is False  # off by default
    if offer is not None:
        box.set_value(offer)
    next(b for b in probe.button if b.label == "Create study").click().run()
    assert not probe.exception, probe.exception
    with read_session(get_engine(app_db)) as session:
        return session.scalars(select(Study).where(Study.name == name)).one().questions


def test_the_studies_page_checkbox_makes_a_study_that_offers_unsure(app_db, fixtures):
    offered = _studies_page_create(app_db, fixtures, "made-unsure", offer=True)
    assert [(q["name"], q.get("unsure")) for q in offered] == [("satisfied", True)]
    plain = _studies_page_create(app_db, fixtures, "made-plain", offer=None)
    assert [(q["name"], q.get("unsure")) for q in plain] == [("satisfied", None)]
    # and the annotator's page offers it on the first study only
    app = _choose(login("ann1", "demo-ann1-pw"), "made-unsure")
    assert item_button(app, "sat-unsure").label == "Unsure (n)"
    app = _choose(app, "made-plain")
    assert not _unsure_buttons(app)
