"""Browser logins that survive a page reload, expire, and end on logout.

A login makes a random token; the browser keeps it in a cookie and the database keeps
only its SHA-256 with an expiry (``DST_JUDGE_SESSION_HOURS``, default 12).  Every page
run looks the token up again, so logout, expiry and a password reset (which revokes all
of that annotator's sessions) take effect on the server, on every app server at once.

Failed logins are counted in the database too, so the limit
(``DST_JUDGE_MAX_LOGIN_FAILURES`` per name in 15 minutes, default 5) holds across servers.
"""

from __future__ import annotations

import hashlib
import os
import secrets
from datetime import datetime, timedelta

from sqlalchemy import Engine, delete, func, select, update

from annotate.auth import authenticate
from annotate.db import read_session, write_session
from annotate.models import Annotator, LoginFailure, LoginSession, utcnow

COOKIE_NAME = "dst_judge_session"
SESSION_HOURS = float(os.environ.get("DST_JUDGE_SESSION_HOURS", "12"))
MAX_FAILURES = int(os.environ.get("DST_JUDGE_MAX_LOGIN_FAILURES", "5"))
FAILURE_WINDOW = timedelta(minutes=15)


class LoginRefused(ValueError):
    """Wrong name or password, or too many attempts; the message is safe to show."""


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def log_in(engine: Engine, name: str, password: str) -> tuple[Annotator, str]:
    """Check the password and open a session: (annotator, token for the cookie).

    Refused after too many recent failures; a failure is committed even though the
    login is refused.
    """
    name = name.strip()[:100]
    with write_session(engine) as session:
        since = utcnow() - FAILURE_WINDOW
        failures = session.scalar(
            select(func.count()).select_from(LoginFailure).where(LoginFailure.name == name, LoginFailure.at >= since)
        )
        if failures >= MAX_FAILURES:
            raise LoginRefused(f"too many failed logins for this name; wait {int(FAILURE_WINDOW.total_seconds() // 60)} minutes")
        annotator = authenticate(session, name, password)
        token = None
        if annotator is None:
            session.add(LoginFailure(name=name))
        else:
            session.execute(delete(LoginFailure).where(LoginFailure.name == name))
            token = secrets.token_urlsafe(32)
            session.add(
                LoginSession(id=_digest(token), annotator_id=annotator.id, expires_at=utcnow() + timedelta(hours=SESSION_HOURS))
            )
    if annotator is None:
        raise LoginRefused("wrong name or password")
    return annotator, token


def session_user(engine: Engine, token: str | None, now: datetime | None = None) -> Annotator | None:
    """The annotator of a live session token, or None (unknown, expired, revoked)."""
    if not isinstance(token, str) or not token or len(token) > 200:
        return None
    with read_session(engine) as session:
        row = session.get(LoginSession, _digest(token))
        if row is None or row.revoked or row.expires_at < (now or utcnow()):
            return None
        annotator = session.get(Annotator, row.annotator_id)
        return annotator if annotator is not None and annotator.password_hash else None


def log_out(engine: Engine, token: str | None) -> None:
    if not token:
        return
    with write_session(engine) as session:
        session.execute(update(LoginSession).where(LoginSession.id == _digest(token)).values(revoked=True))


def revoke_all(engine: Engine, annotator_name: str) -> None:
    """End every session of an annotator (after a password reset)."""
    with write_session(engine) as session:
        annotator_id = session.scalar(select(Annotator.id).where(Annotator.name == annotator_name))
        session.execute(update(LoginSession).where(LoginSession.annotator_id == annotator_id).values(revoked=True))
