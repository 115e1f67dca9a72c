"""Browser logins that survive a page reload, expire, and end on logout.

A login makes a random token; the browser keeps it in a cookie and the database keeps
only its SHA-256 with an expiry (``DST_JUDGE_SESSION_HOURS``, default 12).  Every page
run looks the token up again, so logout, expiry and a password reset (which revokes all
of that annotator's sessions) take effect on the server, on every app server at once.

Failed logins are throttled, in the database so that the limits hold across app servers.
The design (argued in docs/security.md, *Login throttling*): a stranger's failures
must slow guessing, but never keep a person out of their own account.

- **Known browsers.**  A successful login also gives the browser a *device token* for that
  name (cookie ``dst_judge_device``, ``DST_JUDGE_DEVICE_DAYS``, default 30): issue time, a
  random nonce and an HMAC keyed with the account's password hash, so only the server can
  make one, a password reset voids them all, and nothing new is stored.  An attempt that
  shows a valid device token for the name is counted under that token alone
  (``device:<nonce>``): ``FREE_FAILURES`` failures in an hour are free, then each attempt
  waits 30 s after its last failure, doubling, at most 15 min.  Nobody else's failures -
  from any address, in any number - touch it.
- **Unknown browsers** (first login here, cookies cleared, a guesser) are counted per name and
  client address (``client``, resolved by annotate.people.proxy: trusted proxies only): the same
  schedule (``FREE_FAILURES`` free in an hour, then 30 s doubling, at most 15 min); and per
  name over all unknown browsers together:
  after ``NAME_FREE_FAILURES`` (25) failures in 15 minutes every unknown browser waits 5 s
  after the name's last failure, doubling, at most 60 s.  Known browsers' failures are not
  counted there.
- Attempts made while waiting are refused without checking the password and are not counted.
  A successful login clears the failures of its own bucket; an admin's password reset (app or
  CLI) clears all failures of the name.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from datetime import datetime, timedelta

from sqlalchemy import Engine, and_, bindparam, delete, func, select, update

from annotate.people.auth import authenticate, find_annotator
from annotate.store.db import read_session, write_session
from annotate.store.models import WORKER, Annotator, LoginFailure, LoginSession, utcnow
from formats.references import number
from formats.settings import settings

COOKIE_NAME = "dst_judge_session"
DEVICE_COOKIE_NAME = "dst_judge_device"
SESSION_HOURS = settings().session_hours
DEVICE_DAYS = settings().device_days
MAX_DEVICE_TOKENS = 4  # names remembered per browser (a lab computer shared by a few annotators)
MAX_FAILURES = settings().max_login_failures
FREE_FAILURES = MAX_FAILURES  # per name and client (address or known browser), before the delays start
CLIENT_DELAY = (30.0, 15 * 60.0)  # first delay and the cap, seconds (per name and client)
NAME_FREE_FAILURES = 25  # per name, all unknown browsers together
NAME_DELAY = (5.0, 60.0)  # first delay and the cap, seconds (per name): short, so nobody is locked out
FAILURE_WINDOW = timedelta(minutes=15)  # per name
CLIENT_WINDOW = timedelta(hours=1)  # per name and client: longer than the longest delay, so a 15 min wait
# does not wipe the slate (with a 15 min window the guesser got 5 free tries again after each wait)
DEVICE_PREFIX = "device:"


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


# Device tokens: "<issued unix seconds>.<nonce>.<mac>", several joined by "~" in one cookie.
_EPOCH = datetime(1970, 1, 1)


def _seconds(moment: datetime) -> int:
    """Unix seconds of a naive UTC datetime (as the store keeps them)."""
    return int((moment.replace(tzinfo=None) - _EPOCH).total_seconds())


def _device_mac(password_hash: str, name: str, issued: int, nonce: str) -> str:
    message = f"dst-judge-device\n{name}\n{issued}\n{nonce}".encode()
    mac = hmac.new(password_hash.encode("utf-8"), message, hashlib.sha256).digest()
    return base64.urlsafe_b64encode(mac).decode("ascii").rstrip("=")


def _device_parts(token: str) -> tuple[int, str, str] | None:
    parts = token.split(".")
    issued = number(parts[0]) if len(parts) == 3 else None  # ASCII digits only ("¹" was a ValueError)
    if issued is None or not (8 <= len(parts[1]) <= 40) or len(parts[2]) > 60:
        return None
    return issued, parts[1], parts[2]


def _device_tokens(cookie: str | None) -> list[str]:
    if not isinstance(cookie, str) or len(cookie) > 1000:
        return []
    return [token for token in cookie.split("~")[: MAX_DEVICE_TOKENS * 2] if token]


def known_device(annotator: Annotator | None, cookie: str | None, now: datetime) -> str | None:
    """The nonce of a live device token in ``cookie`` made for this annotator, else None."""
    if annotator is None or not annotator.password_hash:
        return None
    oldest = _seconds(now - timedelta(days=DEVICE_DAYS))
    for token in _device_tokens(cookie):
        parts = _device_parts(token)
        if parts is None:
            continue
        issued, nonce, mac = parts
        if oldest <= issued <= _seconds(now) + 60 and hmac.compare_digest(
            mac, _device_mac(annotator.password_hash, annotator.name, issued, nonce)
        ):
            return nonce
    return None


def device_cookie(annotator: Annotator, previous: str | None, now: datetime | None = None) -> str:
    """The device cookie after a successful login: a fresh token for this name first, then the
    browser's other live tokens (other names), at most ``MAX_DEVICE_TOKENS``."""
    now = now or utcnow()
    issued = _seconds(now)
    nonce = secrets.token_urlsafe(12)
    tokens = [f"{issued}.{nonce}.{_device_mac(annotator.password_hash or '', annotator.name, issued, nonce)}"]
    oldest = _seconds(now - timedelta(days=DEVICE_DAYS))
    for token in _device_tokens(previous):
        parts = _device_parts(token)
        if parts is None or parts[0] < oldest or known_device(annotator, token, now):
            continue  # malformed, expired, or this name's old token
        tokens.append(token)
    return "~".join(tokens[:MAX_DEVICE_TOKENS])


# Built once (as ``_USER_IN`` below): every login attempt runs it, the refused ones of a guesser too, so a
# refusal costs one prepared statement and no statement building.
_SINCE = bindparam("since", type_=LoginFailure.at.type)
_OWN = and_(LoginFailure.client == bindparam("bucket"), LoginFailure.at >= bindparam("own_since", type_=LoginFailure.at.type))
_UNKNOWN = and_(
    LoginFailure.client.not_like(DEVICE_PREFIX + "%"), LoginFailure.at >= bindparam("name_since", type_=LoginFailure.at.type)
)
_THROTTLE = select(
    func.count(LoginFailure.id).filter(_OWN),
    func.max(LoginFailure.at).filter(_OWN),
    func.count(LoginFailure.id).filter(_UNKNOWN),
    func.max(LoginFailure.at).filter(_UNKNOWN),
).where(LoginFailure.name == bindparam("name"), LoginFailure.at >= _SINCE)


def _throttle_wait(session, name: str, bucket: str, known: bool, now: datetime) -> float:
    """Seconds this bucket must still wait before its password is checked (0: go ahead); one query."""
    own_count, own_last, name_count, name_last = session.execute(
        _THROTTLE,
        {
            "name": name,
            "bucket": bucket,
            "own_since": now - CLIENT_WINDOW,
            "name_since": now - FAILURE_WINDOW,
            "since": now - max(CLIENT_WINDOW, FAILURE_WINDOW),
        },
    ).one()
    waits = [(own_count, own_last, FREE_FAILURES, CLIENT_DELAY)]
    if not known:  # an unknown browser: also the name's limit over all unknown browsers
        waits.append((name_count, name_last, NAME_FREE_FAILURES, NAME_DELAY))
    wait = 0.0
    for count, last, free, delay in waits:
        if count:
            wait = max(wait, throttle_delay(count, free, *delay) - (now - last).total_seconds())
    return wait


def _lock_name(session, name: str) -> None:
    """Serialise the write phase of logins to one name: on PostgreSQL a transaction-scoped advisory lock
    (the name may have no row to lock: a guess); SQLite's writers are one at a time already."""
    if session.get_bind().dialect.name == "postgresql":
        session.execute(select(func.pg_advisory_xact_lock(func.hashtext("dst-judge-login:" + name))))


def _refuse_wait(wait: float) -> LoginRefused:
    return LoginRefused(f"too many failed logins for this name; try again in {int(-(-wait // 1))} s")


def log_in(
    engine: Engine, name: str, password: str, *, client: str = "", device: str | None = None, now: datetime | None = None
) -> tuple[Annotator, str]:
    """Check the password and open a session: (annotator, token for the cookie).

    ``client`` is the address the attempt is counted under (annotate.people.proxy.client_address);
    ``device`` the browser's device cookie, if any.  Refused while a throttle's delay runs (see
    the module docstring); a failure is committed even though the login is refused.

    The throttle is read, and the (slow) password check made, outside any write transaction, so
    refused attempts write nothing and a login never holds the database's write lock during bcrypt.
    The write transaction checks the throttle again: an attempt that concurrent failures of the same
    bucket have put behind a delay is refused as waiting (its password result is not revealed), so a
    burst of parallel guesses gets no more checks than one after the other.
    """
    name = name.strip()[:100]
    client = (client or "")[:100]
    if client.startswith(DEVICE_PREFIX):  # an address never poses as a known browser
        client = "?" + client
    now = now or utcnow()
    with read_session(engine) as session:
        nonce = known_device(find_annotator(session, name), device, now) if device else None
        bucket = client if nonce is None else DEVICE_PREFIX + nonce
        wait = _throttle_wait(session, name, bucket, nonce is not None, now)
        if wait > 0:
            raise _refuse_wait(wait)
        annotator = authenticate(session, name, password)
    token = None
    with write_session(engine) as session:
        _lock_name(session, name)  # parallel attempts on one name re-check one after another
        wait = _throttle_wait(session, name, bucket, nonce is not None, now)
        if wait > 0:
            raise _refuse_wait(wait)
        if annotator is None:
            session.add(LoginFailure(name=name, client=bucket, at=now))
        else:
            session.execute(delete(LoginFailure).where(LoginFailure.name == name, LoginFailure.client == bucket))
            token = open_session(session, annotator, now)
    if annotator is None:
        raise LoginRefused("wrong name or password")
    return annotator, token


def cookie_string(name: str, value: str, max_age: int, *, secure: bool) -> str:
    """What our script writes to ``document.cookie``: path /, SameSite=Strict, and ``Secure`` when the
    page was served over HTTPS (annotate.people.proxy.is_https), so the browser never sends it in clear text.

    >>> cookie_string("dst_judge_session", "abc", 60, secure=True)
    'dst_judge_session=abc; path=/; max-age=60; samesite=strict; secure'
    >>> cookie_string("dst_judge_session", "", 0, secure=False)
    'dst_judge_session=; path=/; max-age=0; samesite=strict'
    """
    return f"{name}={value}; path=/; max-age={int(max_age)}; samesite=strict" + ("; secure" if secure else "")


def open_session(session, annotator: Annotator, now: datetime | None = None) -> str:
    """A new login for ``annotator`` in the caller's write transaction: the token for the cookie."""
    now = now or utcnow()
    token = secrets.token_urlsafe(32)
    session.add(
        LoginSession(
            id=_digest(token), annotator_id=annotator.id, created_at=now, expires_at=now + timedelta(hours=SESSION_HOURS)
        )
    )
    return token


# Built once: every screen read and every vote runs it (issue 38, as ``annotate.judging.loop``'s statements).
_USER_IN = (
    select(Annotator)
    .join(LoginSession, LoginSession.annotator_id == Annotator.id)
    .where(
        LoginSession.id == bindparam("token"),
        LoginSession.revoked == False,  # noqa: E712
        LoginSession.expires_at >= bindparam("now", type_=LoginSession.expires_at.type),
    )
)


def user_in(session, token: str | None, now: datetime | None = None) -> Annotator | None:
    """The annotator of a live session token, or None (unknown, expired, revoked), read in the caller's
    transaction with one statement: the annotator's screen and vote check the login in the same
    transaction as everything else they read or write (``annotate.judging.loop``)."""
    if not isinstance(token, str) or not token or len(token) > 200:
        return None
    annotator = session.scalars(_USER_IN, {"token": _digest(token), "now": now or utcnow()}).first()
    if annotator is None or not (annotator.password_hash or annotator.role == WORKER):
        return None  # an account without a login (imported votes) never has a live session
    return annotator


def session_user(engine: Engine, token: str | None, now: datetime | None = None) -> Annotator | None:
    """The annotator of a live session token, or None (unknown, expired, revoked)."""
    if not isinstance(token, str) or not token or len(token) > 200:
        return None
    with read_session(engine) as session:
        return user_in(session, token, now)


def log_out(engine: Engine, token: str | None) -> None:
    if not token:
        return
    with write_session(engine) as session:
        session.execute(update(LoginSession).where(LoginSession.id == _digest(token)).values(revoked=True))
