"""Streamlit AppTest: every page and role, on a fresh demo database per test."""

from __future__ import annotations

import re

import pytest
from sqlalchemy import func, select
from streamlit.testing.v1 import AppTest

from annotate import service
from annotate.people.sessions import MAX_FAILURES, log_in
from annotate.store.db import get_engine, read_session
from annotate.store.models import Study, VoteEvent
from tests.conftest import REPO
from tests.store_helpers import zip_bytes


def start() -> AppTest:
    app = AppTest.from_file(str(REPO / "app.py"), default_timeout=60).run()
    assert not app.exception, app.exception
    return app


def login(name: str, password: str) -> AppTest:
    app = start()
    app.text_input[0].input(name)
    app.text_input[1].input(password)
    app.button[0].click().run()
    assert not app.exception, app.exception
    return start_judging(app)


def start_judging(app: AppTest) -> AppTest:
    """A first visit to a study with a guideline shows the guideline first: *Start judging*, as a person would."""
    start = [b for b in app.button if b.label == "Start judging"]
    if start:
        start[0].click().run()
        assert not app.exception, app.exception
    return app


def choose_study(app: AppTest, kind_label: str) -> AppTest:
    box = app.selectbox(key="study-choice")
    box.select_index(next(i for i, label in enumerate(box.options) if kind_label in label)).run()
    assert not app.exception, app.exception
    return start_judging(app)


def page_as(page_name: str, token: str) -> AppTest:
    """Run one admin page function alone, with the given login token."""
    module = page_name.removesuffix("_page")  # studies_page lives in annotate/pages/studies.py
    probe = AppTest.from_string(f"from annotate.pages import {module}\n{module}.{page_name}()\n", default_timeout=60)
    probe.session_state["token"] = token
    return probe.run()


def events(url: str) -> list[tuple]:
    with read_session(get_engine(url)) as session:
        return session.execute(select(VoteEvent.question, VoteEvent.value, VoteEvent.comment).order_by(VoteEvent.id)).all()


def item_button(app: AppTest, name: str):
    """An answer button of the item on screen: its key carries the item id (``ItemContext.key``)."""
    found = [b for b in app.button if b.key and b.key.rsplit("-", 1)[0] == name and b.key.rsplit("-", 1)[1].isdigit()]
    assert len(found) == 1, [b.key for b in app.button]
    return found[0]


def open_going_back(app: AppTest, study_id: int) -> AppTest:
    """Open the "Go back to an earlier item" box, as a person clicks it: its list is read only while it
    is open (issue 25)."""
    app.session_state[f"back-box-{study_id}"] = True
    return app.run()


def texts(app: AppTest) -> str:
    """What the page shows as text: st.text elements and the satisfaction item's turn table."""
    return "\n".join([t.value for t in app.text] + [h.proto.body for h in app.html if "dstj-turns" in h.proto.body])


def test_login_page_and_demo_accounts(app_db):
    app = start()
    assert app.title[0].value == "DST Judge"
    assert "admin" in app.dataframe[0].value["name"].tolist()  # demo accounts shown while they are unchanged
    assert [b.label for b in app.button] == ["Log in"]


def test_wrong_password_is_refused_then_rate_limited(app_db):
    app = login("ann1", "not-the-password")
    assert app.error[0].value == "Login refused." and "wrong name or password" in texts(app)
    for _ in range(MAX_FAILURES):
        with pytest.raises(ValueError):
            log_in(get_engine(app_db), "ann2", "wrong-password", client="127.0.0.1")  # as from this browser (AppTest: loopback)
    app = login("ann2", "demo-ann2-pw")  # the right password, but too many failures
    assert "too many failed logins" in texts(app)


def test_satisfaction_vote_is_stored_and_a_change_appends(app_db):
    app = login("ann1", "demo-ann1-pw")
    assert app.title[0].value == "Annotate"
    labels = [b.label for b in app.button]
    assert "Satisfied (1)" in labels and "Studies" not in labels
    app.text_input(key=next(k for k in (w.key for w in app.text_input) if k.startswith("comment-"))).input("looks fine")
    item_button(app, "sat-1").click().run()
    assert events(app_db) == [("satisfied", "1", "looks fine")]
    # Go back and change the vote: a new event, the old one kept.
    open_going_back(app, 1)
    app.button(key="open-1").click().run()
    assert app.info[0].value.startswith("You are changing an earlier judgement")
    item_button(app, "sat-0").click().run()
    assert [e[:2] for e in events(app_db)] == [("satisfied", "1"), ("satisfied", "0")]


def test_satisfaction_page_shows_differences(app_db):
    app = login("ann1", "demo-ann1-pw")
    (table,) = [h.proto.body for h in app.html if "dstj-turns" in h.proto.body]
    assert "changed this turn" in table and ("− missing" in table or "✓ nothing" in table)
    assert "full states" in table and ("exact match" in table or "turn-level match" in table)
    labels = [b.label for b in app.button]
    assert labels.index("Satisfied (1)") < labels.index("Skip")  # the question and its buttons come first


def test_skip_moves_on(app_db):
    from annotate.store.models import Assignment

    app = login("ann1", "demo-ann1-pw")
    before = texts(app)
    with read_session(get_engine(app_db)) as session:
        skipped = session.scalar(select(Assignment.item_id).where(Assignment.status == "active"))
    item_button(app, "skip").click().run()
    with read_session(get_engine(app_db)) as session:
        offered = session.scalar(select(Assignment.item_id).where(Assignment.status == "active"))
        status = session.scalar(select(Assignment.status).where(Assignment.item_id == skipped))
    assert texts(app) != before and events(app_db) == []
    assert offered != skipped and status == "skipped"  # the next item differs; the skipped one is not offered now


def test_coco_page_hides_the_condition(app_db):
    app = choose_study(login("ann2", "demo-ann2-pw"), "CoCo")
    shown = texts(app) + "".join(c.value for c in app.caption)
    assert "coco" not in shown.lower().replace("demo: coco turns", "") and "original" not in shown.lower()
    item_button(app, "coco-1").click().run()
    assert events(app_db) == [("human_like", "1", "")]
    first_item = texts(app)
    item_button(app, "coco-4").click().run()  # second question: the judgement is complete, next item
    assert [e[:2] for e in events(app_db)] == [("human_like", "1"), ("correct", "0")]
    assert texts(app) != first_item


def test_slu_page_prefills_auto_labels_and_saves(app_db):
    app = choose_study(login("ann3", "demo-ann3-pw"), "SLU")
    radios = [r for r in app.radio if r.key.startswith("act-")]
    for radio in radios:
        if radio.value is None:
            radio.set_value("0")
    item_button(app, "slu-save").click().run()
    assert not app.exception
    saved = dict((q, v) for q, v, _ in events(app_db))
    assert saved["transcription_status"] == "transcribed" and "transcription" in saved
    assert len(saved) == len(radios) + 2


def test_annotator_cannot_reach_admin_pages(app_db):
    app = login("ann1", "demo-ann1-pw")
    token = app.session_state["token"]
    for page in ("studies_page", "annotators_page", "progress_page"):
        probe = page_as(page, token)
        assert probe.error[0].value == "This page needs an admin login."
        assert not probe.dataframe and not probe.get("download_button")
    user = service.require_admin  # and the service refuses on the server side too
    from annotate.people.sessions import session_user

    annotator = session_user(get_engine(app_db), token)
    with pytest.raises(service.PermissionDenied):
        service.votes_csv(get_engine(app_db), annotator, 1)
    with pytest.raises(service.PermissionDenied):
        user(annotator)


def test_admin_pages_and_download(app_db):
    app = login("admin", "demo-admin-pw")
    nav = [b.label for b in app.button]
    assert "Log out" in nav
    token = app.session_state["token"]
    probe = page_as("progress_page", token)
    assert not probe.exception and probe.title[0].value == "Progress"
    downloads = probe.get("download_button")
    tables = [d for d in downloads if d.key.startswith("table-download-")]  # every table's safe CSV (annotate/pages/tables.py)
    assert len(downloads) - len(tables) == 2 and len(tables) == len(probe.dataframe) >= 1
    # the export section: every format of the study's kind, built on request (fga-text comes zipped)
    box = probe.selectbox(key="export-format")
    names = [option.split(" — ")[0] for option in box.options]
    assert "fga-text" in names and "dstc-labels" not in names  # the first demo study is a satisfaction study
    box.select_index(names.index("fga-text")).run()
    probe.button(key="export-prepare").click().run()
    assert not probe.exception, probe.exception
    ready = probe.session_state["export-ready"]
    assert ready[1] == "fga-text" and ready[3] == "export.zip" and ready[2][:2] == b"PK"
    assert len(probe.get("download_button")) == 3 + len(tables)
    annotators = page_as("annotators_page", token)
    assert set(annotators.dataframe[0].value["name"]) == {"admin", "ann1", "ann2", "ann3"}


def test_upload_creates_a_study_and_a_bad_upload_imports_nothing(app_db, fixtures):
    engine = get_engine(app_db)
    start()  # the demo database
    with read_session(engine) as session:
        from annotate.people.auth import find_annotator

        admin_user = find_annotator(session, "admin")
        before = session.scalar(select(func.count()).select_from(Study))
    calls = {f"calls/{p.parent.name}/{p.name}": p.read_bytes() for p in (fixtures / "dstc2").rglob("*.json")}
    created = service.create_study_from_uploads(
        engine, admin_user, "uploaded", "slu", [("calls.zip", zip_bytes(calls))], overlap=2
    )
    assert created.items == 36
    bad = [("good.json", (fixtures / "fga_result_json" / "som-dst_result.sample.json").read_bytes()), ("bad.json", b'{"x": [')]
    with pytest.raises(ValueError) as caught:
        service.create_study_from_uploads(engine, admin_user, "broken", "satisfaction", bad)
    assert str(caught.value).startswith("bad.json:line 1")  # named as uploaded, not by its temporary path
    evil = [("evil.zip", zip_bytes({"../../escape.json": b"{}"}))]
    with pytest.raises(ValueError, match="leaves the archive"):
        service.create_study_from_uploads(engine, admin_user, "evil", "slu", evil)
    with read_session(engine) as session:
        assert session.scalar(select(func.count()).select_from(Study)) == before + 1


def test_bad_upload_message_in_the_page(app_db, fixtures):
    app = login("admin", "demo-admin-pw")
    probe = page_as("studies_page", app.session_state["token"])
    probe.text_input[0].input("no files")
    probe.button[0].click().run()  # the form's submit button, with nothing uploaded
    assert probe.error[0].value == "Refused; nothing was changed." and "upload at least one file" in texts(probe)


def test_logout(app_db):
    app = login("ann1", "demo-ann1-pw")
    token = app.session_state["token"]
    app.button(key="logout").click().run()
    assert app.title[0].value == "DST Judge"
    from annotate.people.sessions import session_user

    assert session_user(get_engine(app_db), token) is None  # the session is over on the server


def _vote_everything(engine, kind: str, answer) -> int:
    """Each demo annotator judges every item of the demo study of ``kind`` through the service."""
    from annotate.people.sessions import log_in as open_session

    study = next(s for s in service.list_studies(engine) if s.kind == kind)
    cast = 0
    for n in (1, 2, 3):
        user, _ = open_session(engine, f"ann{n}", f"demo-ann{n}-pw")
        while (item := service.next_item(engine, user, study.id)) is not None:
            service.submit(engine, user, item.id, answer(n, item))
            cast += 1
    return cast


def analysis_as(token: str) -> AppTest:
    probe = AppTest.from_string("from annotate.pages import analysis\nanalysis.render()\n", default_timeout=120)
    probe.session_state["token"] = token
    return probe.run()


def test_analysis_page_for_satisfaction_and_coco(app_db):
    engine = get_engine(app_db)
    start()  # the demo database; the admin logs in without opening the Annotate page (which would hold an item)
    _, token = log_in(engine, "admin", "demo-admin-pw")
    # Annotators 1 and 2 follow the length of the dialogue id; 3 always says 1.
    satisfied = _vote_everything(
        engine, "satisfaction", lambda n, item: {"satisfied": "1" if n == 3 or len(item.key) % 2 else "0"}
    )
    assert satisfied == 30
    probe = analysis_as(token)
    assert not probe.exception, probe.exception
    assert probe.title[0].value == "Analysis"
    agreement = probe.dataframe[0].value
    # Issue 27, item 5: one row per question and coefficient (long, so the table fits the page at 1400x900).
    assert set(agreement["question"]) == {"satisfied"} and set(agreement["items"]) == {10}
    assert agreement["coefficient"].tolist() == ["% agreement", "Krippendorff's alpha", "Fleiss' kappa", "Gwet's AC1"]
    shown = texts(probe)
    assert "Human ceiling" in shown and "signature: metrics:" in shown
    correlation = next(d.value for d in probe.dataframe if "Pearson r" in d.value.columns)
    assert correlation["metric"].tolist()[:3] == ["jga", "m2", "fga_0.25"]
    assert any(m.label == "best λ" for m in probe.metric)
    # Issue 27: the answers' forest plot, agreement and per-annotator charts, then r(λ), then metric-vs-rating.
    assert len(probe.get("vega_lite_chart")) == 5
    # coco: the Table 3 layout, per condition
    _vote_everything(
        engine, "coco", lambda n, item: {"human_like": "1", "correct": "1" if item.condition == "original" or n > 1 else "0"}
    )
    probe.selectbox(key="analysis-study").select_index(
        next(i for i, s in enumerate(probe.selectbox(key="analysis-study").options) if "coco" in s)
    ).run()
    assert not probe.exception, probe.exception
    coco = next(d.value for d in probe.dataframe if "human-like %" in d.value.columns)
    assert set(coco["condition"]) == {"original", "coco"}
    assert coco.set_index("condition").loc["original", "correct %"] == "100.0"


def test_annotator_cannot_reach_analysis(app_db):
    app = login("ann1", "demo-ann1-pw")
    probe = analysis_as(app.session_state["token"])
    assert probe.error[0].value == "This page needs an admin login." and not probe.dataframe
    from annotate.analysis.study_data import study_votes
    from annotate.people.sessions import session_user

    with pytest.raises(service.PermissionDenied):
        study_votes(get_engine(app_db), session_user(get_engine(app_db), app.session_state["token"]), 1)


def test_warns_when_several_servers_share_the_sqlite_file(app_db):
    import subprocess
    import sys

    from annotate.store import servers

    app = start()
    assert not app.warning  # one server process: no warning
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        servers.register(app_db, pid=other.pid)  # as a second `streamlit run` on the same file would
        app = start()
        assert "SQLite" in app.warning[0].value and "2 server processes" in app.warning[0].value
    finally:
        other.kill()
        other.wait()


def test_slu_transcription_starts_from_the_asr_not_the_gold(app_db):
    """Anchoring: the box holds the recogniser's top hypothesis, never the label file's transcription."""
    from annotate.store.models import Assignment, Item

    app = choose_study(login("ann3", "demo-ann3-pw"), "SLU")
    with read_session(get_engine(app_db)) as session:
        held = session.scalar(select(Assignment.item_id).where(Assignment.status == "active"))
        payload = session.get(Item, held).payload
    box = next(t for t in app.text_input if t.key == f"transcription-{held}")
    top_asr = payload["asr"][0][0] if payload["asr"] else ""
    assert box.value == top_asr
    assert payload["transcription"] == "" or box.value != payload["transcription"] or payload["transcription"] == top_asr


def test_going_back_shows_what_the_item_was_and_your_answer(app_db):
    app = login("ann1", "demo-ann1-pw")
    item_button(app, "sat-0").click().run()
    study = next(s for s in service.list_studies(get_engine(app_db)) if s.kind == "satisfaction")
    open_going_back(app, study.id)
    back = app.selectbox(key=f"back-{study.id}")
    label = back.format_func(back.value)
    assert label.startswith("1. ") and ".json — “" in label and label.endswith("satisfied no"), label


def test_the_annotate_page_lists_only_the_studies_you_are_on(app_db):
    engine = get_engine(app_db)
    start()
    admin, _ = log_in(engine, "admin", "demo-admin-pw")
    coco = next(s for s in service.list_studies(engine) if s.kind == "coco")
    service.set_members(engine, admin, coco.id, ["ann2"])
    shown = lambda app: app.selectbox(key="study-choice").options  # noqa: E731
    assert not any("CoCo" in option for option in shown(login("ann1", "demo-ann1-pw")))
    assert any("CoCo" in option for option in shown(login("ann2", "demo-ann2-pw")))


def test_every_slu_act_has_a_keyboard_shortcut(app_db):
    app = choose_study(login("ann3", "demo-ann3-pw"), "SLU")
    radios = [r for r in app.radio if r.key.startswith("act-")]
    keys = [b for b in app.button if b.key and b.key.startswith("act-") and b.key.endswith("-key")]
    assert radios and len(keys) == min(len(radios), 9)
    first = radios[0].key
    before = app.radio(key=first).value
    keys[0].click().run()
    assert app.radio(key=first).value == ("0" if before == "1" else "1")
    app.button(key=f"{first}-key").click().run()
    assert app.radio(key=first).value == ("1" if before == "1" else "0")


def test_an_slu_turn_with_its_recording_gets_an_audio_player(app_db, fixtures, tmp_path):
    import json

    from annotate.store.db import write_session
    from annotate.studies import create_study
    from tests.store.test_slu_audio import call_with_audio

    start()  # the demo database
    log = json.loads((fixtures / "dstc2" / "voip-00d76b791d-20130327_010906" / "log.json").read_text())
    folder, _names, data = call_with_audio(fixtures, tmp_path, turns=range(len(log["turns"])))
    with write_session(get_engine(app_db)) as session:
        create_study(session, "Calls with audio", "slu", [folder])
    app = login("ann1", "demo-ann1-pw")
    box = app.selectbox(key="study-choice")
    box.select_index(next(i for i, s in enumerate(box.options) if s.startswith("Calls with audio"))).run()
    players = app.get("audio")
    assert len(players) == 1, [e.type for e in app.main]
    assert players[0].proto.url  # served from the media file manager: the bytes we stored


FLAG = re.compile(r"(?<![\w-])--[a-z][a-z-]*|python3? -m ")


def _everything_shown(probe: AppTest) -> str:
    """Every piece of text the page shows: texts, markdown, captions, metrics, table cells and headers."""
    parts = [texts(probe)]
    for kind in ("markdown", "caption", "info", "warning", "error", "success"):
        parts += [str(element.value) for element in probe.get(kind)]
    parts += [f"{m.label} {m.value}" for m in probe.metric]
    for frame in probe.dataframe:
        parts += [str(c) for c in frame.value.columns] + [str(v) for v in frame.value.astype(str).to_numpy().ravel()]
    return "\n".join(parts)


def test_no_page_or_report_shows_a_command_line_flag(app_db):
    """Issue 39: the Analysis page and the report carried "--bootstrap 0: …", "(--level)", "(--weights)".
    Words for people name the setting, never the command line's flag: here with no resamples asked for
    (the notes that said "--bootstrap 0") and the satisfaction demo study voted through."""
    from dataclasses import replace

    from annotate.analysis.study_data import stored_settings
    from annotate.store.db import write_session

    engine = get_engine(app_db)
    start()
    _, token = log_in(engine, "admin", "demo-admin-pw")
    _vote_everything(engine, "satisfaction", lambda n, item: {"satisfied": "1" if n == 3 or len(item.key) % 2 else "0"})
    study = next(s for s in service.list_studies(engine) if s.kind == "satisfaction")
    with write_session(engine) as session:
        row = session.get(Study, study.id)
        row.settings = {**(row.settings or {}), "analysis": replace(stored_settings(row.settings), resamples=0).to_dict()}
    probe = analysis_as(token)
    assert not probe.exception, probe.exception
    shown = _everything_shown(probe)
    assert "no confidence interval" in shown or "no interval" in shown  # the notes are there, in words
    assert FLAG.findall(shown) == []
    from annotate.people.sessions import session_user

    admin = session_user(engine, token)
    report = service.export(engine, admin, study.id, "report-md")[0].decode().replace("\\", "")  # Markdown's escapes
    assert "no interval" in report or "no confidence interval" in report
    assert FLAG.findall(report) == []


def _items_alive(ids) -> list[int]:
    import gc

    from annotate.store.models import Item

    gc.collect()
    return sorted({o.id for o in gc.get_objects() if isinstance(o, Item) and o.id in ids})


@pytest.mark.parametrize("kind_label", ["satisfaction", "slu"])
def test_an_item_judged_is_not_kept_alive_by_the_session(app_db, kind_label):
    """Issue 37's soak: the server grew with every vote while a tab stayed open. Streamlit keeps every
    widget's metadata, its on_click callback and that callback's arguments included, for as long as the
    session lives (1.67: stale widgets lose their value, never their metadata), and the item's buttons
    are new widgets per item (their keys carry its id). The callbacks held the item itself (the whole
    dialogue, parsed), so every item judged in a tab stayed in memory until the tab closed. The
    callbacks now hold the item's id and key only: after six judgements none of the judged items lives."""
    app = login("ann1", "demo-ann1-pw")
    if kind_label != "satisfaction":
        app = choose_study(app, "SLU" if kind_label == "slu" else kind_label)
    judged = []
    for _ in range(6):
        shown = int(item_button(app, "sat-1" if kind_label == "satisfaction" else "slu-save").key.rsplit("-", 1)[1])
        judged.append(shown)
        if kind_label == "satisfaction":
            item_button(app, "sat-1").click().run()
        else:
            for toggle in [b for b in app.button if b.key and b.key.startswith(f"act-{shown}-") and b.key.endswith("-key")]:
                toggle.click().run()
            item_button(app, "slu-save").click().run()
        assert not app.exception, app.exception
    assert len(set(judged)) == 6 and _items_alive(set(judged[:-1])) == []
