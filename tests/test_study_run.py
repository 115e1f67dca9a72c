"""Issue 12: what broke when a real study was run (each test failed before its fix)."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import func, select
from streamlit.testing.v1 import AppTest

from annotate import service
from annotate.db import get_engine, read_session, write_session
from annotate.models import Assignment, VoteEvent
from annotate.sessions import log_in
from tests.test_app import _vote_everything, analysis_as, login, start


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
    import annotate.study_data as analysis_module

    engine = get_engine(app_db)
    start()
    admin, token = log_in(engine, "admin", "demo-admin-pw")
    _vote_everything(engine, "satisfaction", lambda n, item: {"satisfied": "1" if n == 3 or len(item.key) % 2 else "0"})
    calls = []
    original = analysis_module.analyse
    monkeypatch.setattr(analysis_module, "analyse", lambda *a, **k: calls.append(a[2]) or original(*a, **k))
    assert not analysis_as(token).exception
    study = next(s for s in service.list_studies(engine) if s.kind == "satisfaction")
    outputs = {fmt: service.export(engine, admin, study.id, fmt)[0]
               for fmt in ("majority-csv", "agreement-csv", "correlation-csv", "calibration-json", "report-html", "report-md")}
    assert calls == [study.id]  # one analysis for the page and six exports
    assert b"jga" in outputs["correlation-csv"] and b"best_lambda" in outputs["calibration-json"]
    # a new vote is a new state of the study: computed again, once
    ann, _ = log_in(engine, "ann1", "demo-ann1-pw")
    item = service.item_for(engine, ann, service.my_history(engine, ann, study.id)[0][0])
    service.submit(engine, ann, item.id, {"satisfied": "0"})
    service.export(engine, admin, study.id, "report-md")
    service.export(engine, admin, study.id, "agreement-csv")
    assert calls == [study.id, study.id]


def held_by(engine, name: str) -> list[tuple[int, str]]:
    from annotate.models import Annotator

    with read_session(engine) as session:
        return session.execute(
            select(Assignment.study_id, Assignment.status).join(Annotator, Annotator.id == Assignment.annotator_id)
            .where(Annotator.name == name, Assignment.status == "active")
        ).all()  # fmt: skip


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
    assert list(report["annotators"]) == ["ann2"]
    assert report["held"] == {"ann1": 1}
    md = service.export(engine, admin, study.id, "report-md")[0].decode()
    assert "| annotators | 1 |" in md and "| places held now | 1 |" in md
    probe = AppTest.from_string("from annotate.pages import admin\nadmin.progress_page()\n", default_timeout=60)
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
    from tests.test_app import choose_study

    engine = get_engine(app_db)
    app = login("ann1", "demo-ann1-pw")
    (first_study, _), = held_by(engine, "ann1")
    choose_study(app, "CoCo")
    held = held_by(engine, "ann1")
    assert len(held) == 1 and held[0][0] != first_study


def test_one_timeout_constant():
    import inspect

    from annotate import __main__ as cli
    from annotate import assignment, studies
    from annotate.models import DEFAULT_TIMEOUT_MINUTES
    from annotate.pages import admin

    assert studies.create_study.__kwdefaults__["timeout_minutes"] == DEFAULT_TIMEOUT_MINUTES
    assert cli.build_parser().parse_args(["study", "create", "x", "p", "--kind", "slu"]).timeout == DEFAULT_TIMEOUT_MINUTES
    for module in (assignment, admin, cli, studies):
        assert "30" not in inspect.getsource(module).replace("300", ""), module.__name__


def test_skip_is_not_a_trapdoor(engine, fixtures):
    """A skipped item is listed with the judged ones, can be opened and judged, and comes back last."""
    from annotate.assignment import next_item, skip_item
    from annotate.votes import cast_vote
    from tests.store_helpers import make_study

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
    from annotate.assignment import next_item, progress
    from annotate.votes import import_votes
    from tests.store_helpers import make_study

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
    assert len(report["annotators"]) == 11 and report["items_complete"] == 2
    seen = []
    while True:  # live assignment: the imported items are full, the others open
        with write_session(engine) as session:
            item = next_item(session, study.id, newcomer)
            if item is None:
                break
            seen.append(item.key)
            session.add(VoteEvent(item_id=item.id, annotator_id=newcomer.id, question="satisfied", value="1"))
            session.flush()
            from annotate.assignment import DONE

            session.scalar(select(Assignment).where(Assignment.item_id == item.id, Assignment.annotator_id == newcomer.id)).status = DONE
    assert sorted(seen) == sorted(set(seen)) and not set(keys) & set(seen) and len(seen) == 8
    bad = "item,annotator,question,value\nPMUL4648.json,rater1,satisfied,1\nNOPE.json,rater2,satisfied,1\n"
    with pytest.raises(ValueError, match="bad.csv:line 3.*NOPE.json"), write_session(engine) as session:
        import_votes(session, study, "bad.csv", bad)
    with read_session(engine) as session:
        assert session.scalar(select(func.count()).select_from(VoteEvent)) == 22 + 8  # nothing of the bad file


def test_cli_reopen(db_url, fixtures, tmp_path):
    from tests.test_annotate_cli import cli, ok

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

    from annotate.auth import add_annotator
    from annotate.db import make_engine
    from annotate.models import utcnow
    from annotate.sessions import FREE_FAILURES, LoginRefused

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
    from annotate.sessions import NAME_FREE_FAILURES

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
    from annotate.db import make_engine
    from annotate.sessions import FREE_FAILURES, LoginRefused
    from tests.test_annotate_cli import cli, ok

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


# --- a newcomer's first ten minutes -----------------------------------------------------------


def test_serve_prints_the_demo_accounts_when_the_server_starts(tmp_path, fixtures):
    """Before any page is requested, the terminal shows the accounts and the address."""
    import os
    import subprocess
    import sys
    import time

    from tests.browser import free_port, wait_for_health
    from tests.conftest import REPO

    port = free_port()
    log = tmp_path / "serve.log"
    env = {**os.environ, "DST_JUDGE_FIXTURES": str(fixtures), "DST_JUDGE_BCRYPT_ROUNDS": "4"}
    env.pop("DST_JUDGE_DB", None)
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "annotate", "--db", f"sqlite:///{tmp_path / 'fresh.sqlite'}", "serve",
             "--server.port", str(port), "--server.headless", "true"],
            cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )  # fmt: skip
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

    from annotate.servers import loopback_only

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
    assert "python -m annotate annotator add" in shown and "--admin" in shown and "DST_JUDGE_DEMO=0" in shown


def test_a_missing_fixtures_folder_is_a_clear_message(app_db, monkeypatch, tmp_path):
    monkeypatch.setenv("DST_JUDGE_FIXTURES", str(tmp_path / "nowhere"))
    app = start()
    shown = "\n".join(str(getattr(e, "value", "")) for e in app.main)
    assert f"No demo data at {tmp_path / 'nowhere'}" in shown and "DST_JUDGE_FIXTURES" in shown
    assert "python -m annotate annotator add" in shown


def test_requirements_are_split_and_the_tree_agrees_with_gitignore():
    import subprocess

    from tests.conftest import REPO

    runtime = (REPO / "requirements.txt").read_text().lower()
    for tool in ("pytest", "playwright", "hypothesis", "ruff", "jsonschema"):
        assert tool not in runtime, tool
    dev = (REPO / "requirements-dev.txt").read_text().lower()
    assert "-r requirements.txt" in dev and all(tool in dev for tool in ("pytest", "playwright", "hypothesis", "ruff"))
    assert "requirements-dev.txt" in (REPO / "scripts" / "test.sh").read_text()
    ignored = subprocess.run(["git", "ls-files", "-ci", "--exclude-standard"], cwd=REPO, capture_output=True, text=True).stdout
    assert ignored == ""  # nothing tracked that .gitignore says to ignore
    readme = (REPO / "README.md").read_text()
    assert "Python 3.10" in readme and "127.0.0.1" in readme


def test_page_scripts_are_ours_alone():
    """The login token is readable by page scripts (README: threat model), so the only scripts are
    our own fixed ones: every unsafe_allow_* use is listed here, by the function that makes it."""
    import ast

    from tests.conftest import REPO

    uses = []
    for path in [REPO / "app.py", *REPO.glob("annotate/**/*.py")]:
        tree = ast.parse(path.read_text())
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef):
                continue
            for call in ast.walk(function):
                if isinstance(call, ast.Call) and any(
                    (k.arg or "").startswith("unsafe_allow") and isinstance(k.value, ast.Constant) and k.value.value is True
                    for k in call.keywords
                ):
                    uses.append(f"{path.relative_to(REPO)}:{function.name}")
    assert sorted(uses) == ["annotate/pages/context.py:scroll_to_top", "annotate/pages/context.py:sync_cookie"], uses
    assert "HttpOnly" in (REPO / "README.md").read_text()


def test_skipped_item_is_listed_and_can_be_judged_in_the_page(app_db):
    app = login("ann1", "demo-ann1-pw")
    engine = get_engine(app_db)
    study = next(s for s in service.list_studies(engine) if s.kind == "satisfaction")
    with read_session(engine) as session:
        held = session.scalar(select(Assignment.item_id).where(Assignment.status == "active"))
    app.button(key="skip").click().run()
    with read_session(engine) as session:
        now_held = session.scalar(select(Assignment.item_id).where(Assignment.status == "active"))
    assert now_held != held  # the next item differs
    back = app.selectbox(key=f"back-{study.id}")
    assert back.value == held and "(skipped)" in back.format_func(back.value)
    app.button(key=f"open-{study.id}").click().run()
    assert "You skipped this item earlier" in app.info[0].value
    app.button(key="sat-0").click().run()
    with read_session(engine) as session:
        voted = session.execute(select(VoteEvent.item_id, VoteEvent.value)).all()
    assert voted == [(held, "0")]
