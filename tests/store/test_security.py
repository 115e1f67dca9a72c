"""Security at the function level, on SQLite and PostgreSQL: slow hashing, rate limits,
expiring and revocable sessions, annotators kept to their own votes and away from admin
actions, parameterised SQL, no secrets in the repository, and the shared-SQLite warning.
(The browser side — literal rendering, admin pages refused — is in test_browser.py.)"""

from __future__ import annotations

import re
import subprocess
import sys
from datetime import timedelta

import pytest
from sqlalchemy import func, select, update

from annotate import service
from annotate.analysis.study_data import study_votes
from annotate.people.auth import add_annotator
from annotate.people.sessions import MAX_FAILURES, LoginRefused, log_in, log_out, session_user
from annotate.store import servers
from annotate.store.db import read_session, write_session
from annotate.store.models import Annotator, Item, LoginSession, VoteEvent, utcnow
from tests.conftest import REPO
from tests.store_helpers import make_study

HOSTILE_NAME = "x'); DROP TABLE vote_events;--"


@pytest.fixture
def people(fixtures, engine):
    study, _ = make_study(engine, fixtures, annotators=0, overlap=2)
    with write_session(engine) as session:
        for name, role in (("admin", "admin"), ("ann1", "annotator"), ("ann2", "annotator"), (HOSTILE_NAME, "annotator")):
            add_annotator(session, name, f"{name}-password", role=role)
    users = {name: log_in(engine, name, f"{name}-password") for name in ("admin", "ann1", "ann2", HOSTILE_NAME)}
    return study, users


def test_password_hashing_is_slow_by_default():
    code = "from annotate.people.auth import hash_password; print(hash_password('correct horse battery'))"
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)}
    printed = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, check=True)
    assert printed.stdout.startswith("$2b$12$")  # bcrypt cost 12 unless DST_JUDGE_BCRYPT_ROUNDS says otherwise


def test_login_rate_limit_holds_even_for_the_right_password(engine, people):
    for _ in range(MAX_FAILURES):
        with pytest.raises(LoginRefused, match="wrong name or password"):
            log_in(engine, "ann2", "guess")
    with pytest.raises(LoginRefused, match="too many failed logins"):
        log_in(engine, "ann2", "ann2-password")


def test_sessions_expire_and_are_revoked(engine, people):
    _, users = people
    _, token = users["ann1"]
    assert session_user(engine, token).name == "ann1"
    with write_session(engine) as session:
        session.execute(update(LoginSession).values(expires_at=utcnow() - timedelta(minutes=1)))
    assert session_user(engine, token) is None  # expired on the server, whatever the cookie says
    _, fresh = log_in(engine, "ann1", "ann1-password")
    log_out(engine, fresh)
    assert session_user(engine, fresh) is None
    _, again = log_in(engine, "ann1", "ann1-password")
    admin, _ = users["admin"]
    service.reset_password(engine, admin, "ann1", "a-new-password")
    assert session_user(engine, again) is None  # a reset ends every session of that person
    assert session_user(engine, "forged-token") is None and session_user(engine, None) is None


def test_annotators_keep_to_their_own_votes(engine, people):
    study, users = people
    ann1, _ = users["ann1"]
    ann2, _ = users["ann2"]
    item = service.next_item(engine, ann1, study.id)
    service.submit(engine, ann1, item.id, {"satisfied": "1"}, comment="mine")
    assert service.my_answers(engine, ann2, item.id) == {}
    with pytest.raises(service.PermissionDenied):
        service.item_for(engine, ann2, item.id)  # not assigned to ann2: cannot even see it
    with pytest.raises(service.PermissionDenied):
        service.submit(engine, ann2, item.id, {"satisfied": "0"})  # nor vote on it
    # ann2's own judgements are ann2's events; ann1's vote stays as it was.
    other = service.next_item(engine, ann2, study.id)
    service.submit(engine, ann2, other.id, {"satisfied": "0"})
    assert service.my_answers(engine, ann1, item.id) == {"satisfied": "1"}
    assert service.my_answers(engine, ann1, other.id) == {}
    with read_session(engine) as session:
        owners = session.execute(
            select(Annotator.name, VoteEvent.item_id, VoteEvent.value).join(Annotator).order_by(VoteEvent.id)
        ).all()
    assert owners == [("ann1", item.id, "1"), ("ann2", other.id, "0")]


def test_admin_actions_refuse_annotators(engine, people):
    study, users = people
    annotator, _ = users["ann1"]
    refused = [
        lambda: service.votes_csv(engine, annotator, study.id),
        lambda: service.vote_table(engine, annotator, study.id, history=True),
        lambda: service.export(engine, annotator, study.id, "votes-csv"),
        lambda: service.study_progress(engine, annotator, study.id),
        lambda: service.list_annotators(engine, annotator),
        lambda: service.add_person(engine, annotator, "intruder", "intruder-password", "admin"),
        lambda: service.reset_password(engine, annotator, "admin", "taken-over-password"),
        lambda: service.set_overlap(engine, annotator, study.id, 9),
        lambda: service.reopen(engine, annotator, study.id, "PMUL4648.json"),
        lambda: service.create_study_from_uploads(engine, annotator, "mine", "satisfaction", [("a.json", b"{}")]),
        lambda: study_votes(engine, annotator, study.id),
    ]
    for action in refused:
        with pytest.raises(service.PermissionDenied):
            action()
    with read_session(engine) as session:
        assert session.scalar(select(func.count()).select_from(Annotator).where(Annotator.name == "intruder")) == 0


def test_hostile_names_are_data(engine, people):
    study, users = people
    hostile, _ = users[HOSTILE_NAME]
    item = service.next_item(engine, hostile, study.id)
    service.submit(engine, hostile, item.id, {"satisfied": "1"}, comment="'; DELETE FROM items; --")
    with read_session(engine) as session:
        assert session.scalar(select(func.count()).select_from(Item)) == 10
        assert session.scalar(select(VoteEvent.comment)) == "'; DELETE FROM items; --"


# sqlalchemy.text(...) / .execute(...) / .exec_driver_sql(...) given an f-string or a string built with % + .format
SQL_BUILT_FROM_STRINGS = re.compile(
    r"((?<![\w.])text|\.execute|\.exec_driver_sql)\(\s*(f[\"']|[\"'][^\"']*[\"']\s*(%|\+|\.format))"
)


def test_sql_is_parameterised_everywhere():
    """No SQL text is built from strings: statements are SQLAlchemy expressions with bound
    parameters.  The only formatted statement is a PRAGMA with an integer constant."""
    offenders = []
    for path in [REPO / "app.py", *REPO.glob("annotate/**/*.py"), *REPO.glob("metrics/**/*.py"), *REPO.glob("exports/**/*.py")]:
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            if SQL_BUILT_FROM_STRINGS.search(line) and "PRAGMA busy_timeout" not in line:
                offenders.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert offenders == []


def test_no_secrets_in_the_repository():
    tracked = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    assert not any(name.endswith("secrets.toml") for name in tracked)
    assert ".streamlit/secrets.toml" in (REPO / ".gitignore").read_text()
    pattern = re.compile(r"postgres(ql)?(\+\w+)?://[^/\s:@]+:[^@\s]+@")  # a URL with a password in it
    for name in tracked:
        path = REPO / name
        if path.suffix in (".py", ".md", ".toml", ".txt", ".sh", ".cfg", ".ini", ".yml", ".yaml") and path.is_file():
            assert not pattern.search(path.read_text(errors="ignore")), f"{name} holds a database password"


def test_sqlite_warning_counts_live_server_processes(tmp_path):
    url = f"sqlite:///{tmp_path / 'judge.sqlite'}"
    servers.register(url)
    assert servers.sqlite_warning(url) is None  # one server: fine
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        servers.register(url, pid=other.pid)
        assert "2 server processes" in servers.sqlite_warning(url)
    finally:
        other.kill()
        other.wait()
    assert servers.sqlite_warning(url) is None  # the dead one is forgotten
    assert servers.sqlite_warning("postgresql://db.example/judge") is None
