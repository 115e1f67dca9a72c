"""Demo passwords never behind a proxy (issue 23, item 6), on SQLite and PostgreSQL: with trusted
proxies configured, ``python -m annotate serve`` refuses to start the demo with its published
passwords (and says why, exit status 2), and the app does not make the demo accounts."""

from __future__ import annotations

import os
import subprocess
import sys

from sqlalchemy import func, select

from annotate.people.auth import set_password
from annotate.store.db import read_session, write_session
from annotate.store.models import Annotator
from annotate.studies.demo import DEMO_ACCOUNTS, demo_refusal, ensure_demo
from tests.conftest import REPO


def _serve(db_url: str, fixtures, **env: str) -> subprocess.CompletedProcess:
    environ = {**os.environ, "DST_JUDGE_FIXTURES": str(fixtures), "DST_JUDGE_BCRYPT_ROUNDS": "4", **env}
    environ.pop("DST_JUDGE_DEMO", None)
    # an address not on this host: were the refusal missing, streamlit would fail to bind instead of serving
    return subprocess.run(
        [sys.executable, "-m", "annotate", "--db", db_url, "serve", "--api-port", "0", "--server.address", "192.0.2.1"],
        cwd=REPO,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _people(engine) -> int:
    with read_session(engine) as session:
        return session.scalar(select(func.count()).select_from(Annotator))


def test_serve_refuses_the_demo_behind_a_proxy(fixtures, db_url, engine):
    done = _serve(db_url, fixtures, DST_JUDGE_TRUSTED_PROXIES="127.0.0.1")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "not starting: a reverse proxy is configured" in done.stderr and "DST_JUDGE_DEMO=0" in done.stderr
    assert _people(engine) == 0  # no demo accounts were made
    done = _serve(db_url, fixtures, DST_JUDGE_TRUST_PROXY="1")  # the older switch means a loopback proxy
    assert done.returncode == 2 and "not starting" in done.stderr
    done = _serve(db_url, fixtures, DST_JUDGE_TRUSTED_PROXIES="nginx.local")
    assert done.returncode == 2 and "'nginx.local' is not an IP address" in done.stderr


def test_serve_refuses_demo_accounts_that_keep_their_passwords(fixtures, db_url, engine, monkeypatch):
    monkeypatch.setenv("DST_JUDGE_FIXTURES", str(fixtures))
    monkeypatch.delenv("DST_JUDGE_DEMO", raising=False)
    monkeypatch.delenv("DST_JUDGE_TRUSTED_PROXIES", raising=False)
    monkeypatch.delenv("DST_JUDGE_TRUST_PROXY", raising=False)
    assert ensure_demo(engine, announce=False)  # made earlier, on loopback
    done = _serve(db_url, fixtures, DST_JUDGE_TRUSTED_PROXIES="127.0.0.1")
    assert done.returncode == 2
    assert "demo account(s) admin, ann1, ann2, ann3 still have their published password" in done.stderr
    monkeypatch.setenv("DST_JUDGE_TRUSTED_PROXIES", "127.0.0.1")
    with write_session(engine) as session:
        for name, _, _ in DEMO_ACCOUNTS:
            set_password(session, name, f"a-real-password-for-{name}")
    assert demo_refusal(engine) is None  # changed passwords: serving behind the proxy is fine


def test_the_app_makes_no_demo_behind_a_proxy(fixtures, engine, monkeypatch, capsys):
    monkeypatch.setenv("DST_JUDGE_FIXTURES", str(fixtures))
    monkeypatch.delenv("DST_JUDGE_DEMO", raising=False)
    monkeypatch.setenv("DST_JUDGE_TRUSTED_PROXIES", "10.0.0.0/24")
    assert not ensure_demo(engine)
    assert _people(engine) == 0 and "the demo and its published passwords are not made" in capsys.readouterr().out
