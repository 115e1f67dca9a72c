"""Issue 12 in the app (AppTest): what broke when a real study was run (each test failed before its fix)."""

from __future__ import annotations

from sqlalchemy import select
from streamlit.testing.v1 import AppTest

from annotate import service
from annotate.people.sessions import log_in
from annotate.store.db import get_engine, read_session
from annotate.store.models import Assignment, VoteEvent
from tests.app.test_app import _vote_everything, analysis_as, item_button, login, open_going_back, start


def held_by(engine, name: str) -> list[tuple[int, str]]:
    from annotate.store.models import Annotator

    with read_session(engine) as session:
        return session.execute(
            select(Assignment.study_id, Assignment.status)
            .join(Annotator, Annotator.id == Assignment.annotator_id)
            .where(Annotator.name == name, Assignment.status == "active")
        ).all()


def test_analysis_page_twice_with_the_same_settings(app_db):
    """A cache hit used to replay a progress bar made outside the cached function."""
    engine = get_engine(app_db)
    start()
    _, token = log_in(engine, "admin", "demo-admin-pw")
    _vote_everything(engine, "satisfaction", lambda n, item: {"satisfied": "1" if n == 3 or len(item.key) % 2 else "0"})
    first = analysis_as(token)
    assert not first.exception, first.exception
    again = analysis_as(token)  # a new visit: same study, settings and votes
    assert not again.exception, again.exception
    assert again.dataframe[0].value.equals(first.dataframe[0].value)
    first.run()  # and a re-run of the same page
    assert not first.exception, first.exception


def test_analysis_is_computed_once_for_the_page_every_export_and_the_report(app_db, monkeypatch):
    import annotate.analysis.study_data as analysis_module  # study_data.analyse_afresh: the computation the cache keeps

    monkeypatch.setenv("DST_JUDGE_ANALYSIS_PROCESS", "0")  # in this process, where the patch below reaches
    engine = get_engine(app_db)
    start()
    admin, token = log_in(engine, "admin", "demo-admin-pw")
    _vote_everything(engine, "satisfaction", lambda n, item: {"satisfied": "1" if n == 3 or len(item.key) % 2 else "0"})
    calls = []
    original = analysis_module.analyse_afresh
    # the full analyses (the page's first answers, without resamples, come first and are cheap: not counted)
    monkeypatch.setattr(
        analysis_module, "analyse_afresh", lambda *a, **k: (a[2].resamples and calls.append(a[1])) or original(*a, **k)
    )
    assert not analysis_as(token).exception
    study = next(s for s in service.list_studies(engine) if s.kind == "satisfaction")
    outputs = {
        fmt: service.export(engine, admin, study.id, fmt)[0]
        for fmt in ("majority-csv", "agreement-csv", "correlation-csv", "calibration-json", "report-html", "report-md")
    }
    assert calls == [study.id]  # one analysis for the page and six exports
    assert b"jga" in outputs["correlation-csv"] and b"best_lambda" in outputs["calibration-json"]
    # a new vote is a new state of the study: computed again, once
    ann, _ = log_in(engine, "ann1", "demo-ann1-pw")
    item = service.item_for(engine, ann, service.my_history(engine, ann, study.id)[0][0])
    service.submit(engine, ann, item.id, {"satisfied": "0"})
    service.export(engine, admin, study.id, "report-md")
    service.export(engine, admin, study.id, "agreement-csv")
    assert calls == [study.id, study.id]


def test_admin_lands_on_an_admin_page_and_holds_nothing(app_db):
    app = login("admin", "demo-admin-pw")
    assert app.title[0].value == "Progress"
    assert held_by(get_engine(app_db), "admin") == []


def test_progress_counts_voters_and_shows_held_places_apart(app_db):
    engine = get_engine(app_db)
    login("ann1", "demo-ann1-pw")  # ann1 looks at the Annotate page: holds an item, votes nothing
    ann2, _ = log_in(engine, "ann2", "demo-ann2-pw")
    study = next(s for s in service.list_studies(engine) if s.kind == "satisfaction")
    item = service.next_item(engine, ann2, study.id)
    service.submit(engine, ann2, item.id, {"satisfied": "1"})
    admin, token = log_in(engine, "admin", "demo-admin-pw")
    report = service.study_progress(engine, admin, study.id)
    assert list(report.annotators) == ["ann2"]
    assert report.held == {"ann1": 1}
    md = service.export(engine, admin, study.id, "report-md")[0].decode()
    assert "| annotators | 1 |" in md and "| places held now | 1 |" in md
    probe = AppTest.from_string("from annotate.pages import progress\nprogress.progress_page()\n", default_timeout=60)
    probe.session_state["token"] = token
    probe.run()
    tables = [d.value for d in probe.dataframe]
    assert tables[0]["annotator"].tolist() == ["ann2"]
    assert any("held" in " ".join(map(str, t.columns)) and t["annotator"].tolist() == ["ann1"] for t in tables[1:])


def test_logout_releases_the_place(app_db):
    engine = get_engine(app_db)
    app = login("ann1", "demo-ann1-pw")
    assert len(held_by(engine, "ann1")) == 1
    app.button(key="logout").click().run()
    assert held_by(engine, "ann1") == []


def test_switching_study_releases_the_place(app_db):
    from tests.app.test_app import choose_study

    engine = get_engine(app_db)
    app = login("ann1", "demo-ann1-pw")
    ((first_study, _),) = held_by(engine, "ann1")
    choose_study(app, "CoCo")
    held = held_by(engine, "ann1")
    assert len(held) == 1 and held[0][0] != first_study


def test_serve_prints_the_demo_accounts_when_the_server_starts(tmp_path, fixtures):
    """Before any page is requested, the terminal shows the accounts and the address."""
    import os
    import subprocess
    import sys
    import time

    from tests.browser_harness import free_port, wait_for_health
    from tests.conftest import REPO

    port = free_port()
    log = tmp_path / "serve.log"
    env = {**os.environ, "DST_JUDGE_FIXTURES": str(fixtures), "DST_JUDGE_BCRYPT_ROUNDS": "4"}
    env.pop("DST_JUDGE_DB", None)
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "annotate",
                "--db",
                f"sqlite:///{tmp_path / 'fresh.sqlite'}",
                "serve",
                "--api-port",
                "0",
                "--server.port",
                str(port),
                "--server.headless",
                "true",
            ],
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        try:
            wait_for_health(f"http://127.0.0.1:{port}", "python -m annotate serve", process)
            time.sleep(0.5)
            printed = log.read_text()
        finally:
            process.terminate()
            process.wait(timeout=20)
    assert "admin / demo-admin-pw / admin" in printed and "ann3 / demo-ann3-pw" in printed, printed
    assert f"http://127.0.0.1:{port}" in printed or f"localhost:{port}" in printed, printed


def test_demo_passwords_only_on_loopback(app_db, monkeypatch):
    from streamlit import config

    from annotate.store.servers import loopback_only

    assert loopback_only("127.0.0.1") and loopback_only("localhost") and loopback_only("::1")
    assert not loopback_only("0.0.0.0") and not loopback_only("") and not loopback_only(None) and not loopback_only("10.1.2.3")
    assert config.get_option("server.address") == "127.0.0.1"  # the shipped .streamlit/config.toml
    app = start()
    assert "admin" in app.dataframe[0].value["name"].tolist()
    config.set_option("server.address", "0.0.0.0")  # as `--server.address 0.0.0.0` would
    try:
        app = start()
    finally:
        config.set_option("server.address", "127.0.0.1")
    assert not app.dataframe and "demo-admin-pw" not in "".join(str(e.value) for e in app.main if hasattr(e, "value"))


def test_without_the_demo_the_login_page_says_how_to_make_an_admin(app_db, monkeypatch):
    monkeypatch.setenv("DST_JUDGE_DEMO", "0")
    app = start()
    shown = "\n".join(str(getattr(e, "value", "")) for e in app.main)
    # the first admin's command, with no option flag (it was ``annotator add NAME --admin``: no page shows a flag)
    assert "dst-judge admin add NAME" in shown and "--" not in shown and "DST_JUDGE_DEMO=0" in shown


def test_a_missing_fixtures_folder_is_a_clear_message(app_db, monkeypatch, tmp_path):
    monkeypatch.setenv("DST_JUDGE_FIXTURES", str(tmp_path / "nowhere"))
    app = start()
    shown = "\n".join(str(getattr(e, "value", "")) for e in app.main)
    assert f"No demo data at {tmp_path / 'nowhere'}" in shown and "DST_JUDGE_FIXTURES" in shown
    assert "dst-judge admin add NAME" in shown


def test_skipped_item_is_listed_and_can_be_judged_in_the_page(app_db):
    app = login("ann1", "demo-ann1-pw")
    engine = get_engine(app_db)
    study = next(s for s in service.list_studies(engine) if s.kind == "satisfaction")
    with read_session(engine) as session:
        held = session.scalar(select(Assignment.item_id).where(Assignment.status == "active"))
    item_button(app, "skip").click().run()
    with read_session(engine) as session:
        now_held = session.scalar(select(Assignment.item_id).where(Assignment.status == "active"))
    assert now_held != held  # the next item differs
    open_going_back(app, study.id)
    back = app.selectbox(key=f"back-{study.id}")
    assert back.value == held and "(skipped)" in back.format_func(back.value)
    app.button(key=f"open-{study.id}").click().run()
    assert "You skipped this item earlier" in app.info[0].value
    item_button(app, "sat-0").click().run()
    with read_session(engine) as session:
        voted = session.execute(select(VoteEvent.item_id, VoteEvent.value)).all()
    assert voted == [(held, "0")]


def test_adjudicate_from_the_analysis_page(app_db):
    from annotate.store.models import Adjudication

    engine = get_engine(app_db)
    start()
    _, token = log_in(engine, "admin", "demo-admin-pw")
    _vote_everything(engine, "satisfaction", lambda n, item: {"satisfied": "1" if n == 3 or len(item.key) % 2 else "0"})
    probe = analysis_as(token)
    probe.checkbox(key="analysis-split").check().run()
    assert not probe.exception, probe.exception
    item = probe.selectbox(key="analysis-drill").value.split("\u241f")[0]
    probe.radio(key="analysis-final").set_value("0")
    submit = next(b for b in probe.get("form_submit_button") if "adjudicated" in b.label)
    submit.click().run()
    assert not probe.exception, probe.exception
    with read_session(engine) as session:
        stored = session.execute(select(Adjudication.question, Adjudication.value, Adjudication.by)).all()
    assert stored == [("satisfied", "0", "admin")] and item
