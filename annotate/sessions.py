"""Browser logins that survive a page reload, expire, and end on logout.

A login makes a random token; the browser keeps it in a cookie and the database keeps
only its SHA-256 with an expiry (``DST_JUDGE_SESSION_HOURS``, default 12).  Every page
run looks the token up again, so logout, expiry and a password reset (which revokes all
of that annotator's sessions) take effect on the server, on every app server at once.

Failed logins are throttled, in the database so that the limits hold across app servers:

- per name and client (the browser's address): ``DST_JUDGE_MAX_LOGIN_FAILURES`` (default 5)
  failures in 15 minutes are free; after that, each attempt from that client waits 30 s after
  its last failure, doubling with every further failure (30 s, 60 s, 120 s, ... at most 15 min).
  Attempts made while waiting are refused without checking the password and are not counted.
- per name, from all clients together: after ``NAME_FREE_FAILURES`` (25) failures in 15 minutes,
  every client waits 5 s after the name's last failure, doubling, but never more than 60 s.  So
  guessing from many addresses is slowed to about one try a minute, while a stranger can hold a
  known user up for a minute at most: the long waits fall on the guesser's own address.
- a successful login clears that client's failures; an admin's password reset (app or CLI)
  clears all failures of the name.
"""

from __future__ import annotations

import hashlib
import os
import secrets
from datetime import datetime, timedelta

from sqlalchemy import Engine, delete, func, select, update

from annotate.auth import authenticate
from annotate.db import read_session, write_session
from annotate.models import WORKER, Annotator, LoginFailure, LoginSession, utcnow

COOKIE_NAME = "dst_judge_session"
SESSION_HOURS = float(os.environ.get("DST_JUDGE_SESSION_HOURS", "12"))
MAX_FAILURES = int(os.environ.get("DST_JUDGE_MAX_LOGIN_FAILURES", "5"))
FREE_FAILURES = MAX_FAILURES  # per name and client, before the delays start
CLIENT_DELAY = (30.0, 15 * 60.0)  # first delay and the cap, seconds (per name and client)
NAME_FREE_FAILURES = 25  # per name, all clients together
NAME_DELAY = (5.0, 60.0)  # first delay and the cap, seconds (per name): short, so nobody is locked out
FAILURE_WINDOW = timedelta(minutes=15)


class LoginRefused(ValueError):
    """Wrong name or password, or too many attempts; the message is safe to show."""


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def throttle_delay(failures: int, free: int, first: float, cap: float) -> float:
    """Seconds to wait after the last failure, given the failures in the window.

    >>> [throttle_delay(n, 5, 30, 900) for n in (4, 5, 6, 7, 12)]
    [0.0, 30.0, 60.0, 120.0, 900.0]
    """
    if failures < free:
        return 0.0
    return float(min(cap, first * 2 ** min(failures - free, 30)))


def _wait(session, condition, free: int, delay: tuple[float, float], now: datetime) -> float:
    """Seconds still to wait under one throttle (0 when free to try)."""
    count, last = session.execute(select(func.count(LoginFailure.id), func.max(LoginFailure.at)).where(*condition)).one()
    if not count:
        return 0.0
    wait = throttle_delay(count, free, *delay)
    return max(0.0, wait - (now - last).total_seconds())


def log_in(
    engine: Engine, name: str, password: str, *, client: str = "", now: datetime | None = None
) -> tuple[Annotator, str]:
    """Check the password and open a session: (annotator, token for the cookie).

    ``client`` names where the attempt comes from (the browser's address).  Refused while a
    throttle's delay runs (see the module docstring); a failure is committed even though the
    login is refused.
    """
    name = name.strip()[:100]
    client = (client or "")[:100]
    now = now or utcnow()
    with write_session(engine) as session:
        since = now - FAILURE_WINDOW
        recent = (LoginFailure.name == name, LoginFailure.at >= since)
        wait = max(
            _wait(session, (*recent, LoginFailure.client == client), FREE_FAILURES, CLIENT_DELAY, now),
            _wait(session, recent, NAME_FREE_FAILURES, NAME_DELAY, now),
        )
        if wait > 0:
            raise LoginRefused(f"too many failed logins for this name; try again in {int(-(-wait // 1))} s")
        annotator = authenticate(session, name, password)
        token = None
        if annotator is None:
            session.add(LoginFailure(name=name, client=client, at=now))
        else:
            session.execute(delete(LoginFailure).where(LoginFailure.name == name, LoginFailure.client == client))
            token = open_session(session, annotator, now)
    if annotator is None:
        raise LoginRefused("wrong name or password")
    return annotator, token


def open_session(session, annotator: Annotator, now: datetime | None = None) -> str:
    """A new login for ``annotator`` in the caller's write transaction: the token for the cookie."""
    now = now or utcnow()
    token = secrets.token_urlsafe(32)
    session.add(
        LoginSession(id=_digest(token), annotator_id=annotator.id, created_at=now,
                     expires_at=now + timedelta(hours=SESSION_HOURS))
    )  # fmt: skip
    return token


def session_user(engine: Engine, token: str | None, now: datetime | None = None) -> Annotator | None:
    """The annotator of a live session token, or None (unknown, expired, revoked)."""
    if not isinstance(token, str) or not token or len(token) > 200:
        return None
    with read_session(engine) as session:
        row = session.get(LoginSession, _digest(token))
        if row is None or row.revoked or row.expires_at < (now or utcnow()):
            return None
        annotator = session.get(Annotator, row.annotator_id)
        if annotator is None or not (annotator.password_hash or annotator.role == WORKER):
            return None  # an account without a login (imported votes) never has a live session
        return annotator


def log_out(engine: Engine, token: str | None) -> None:
    if not token:
        return
    with write_session(engine) as session:
        session.execute(update(LoginSession).where(LoginSession.id == _digest(token)).values(revoked=True))
