"""Crowd workers: a study's join link for crowd platforms.

An admin opens a study to the crowd (``configure``): the study gets a random secret, a quota of
items per worker (none: as many as the study has for them), a completion code and an optional
redirect URL.  The join link is the app's address with these parameters::

    ?join=<study id>&key=<secret>&PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}

(Prolific fills the ``{{%...%}}`` placeholders), or, for any other platform, ``&worker=<id>``
(and optionally ``&session=<id>``).  ``join`` checks the secret (constant-time compare) and signs
the worker in without a password: each (study, platform, worker id) is its own annotator (role
``worker``, no password, named ``<platform>:<worker id>@<study id>``), so the login reaches that
study only.  Anything wrong (no such study, crowd closed, wrong or missing secret) gets one plain
refusal that says nothing about which part was wrong; a missing or malformed worker id says so
(nothing secret in that).

A worker id is not a password (issue 37: a second browser opening ``...&worker=alice`` became alice,
saw her answers under "Go back" and could change them).  The first join binds the worker id:

- **to that browser**: the join gives the browser a *crowd token* (cookie ``dst_judge_crowd``, as
  long as a device cookie lasts, ``DST_JUDGE_DEVICE_DAYS``): issue time, a random nonce and an HMAC
  keyed with a random key kept in the worker's row (``device_key``), so only the server can make one
  and nothing about the browser is stored.  That browser coming back by the link (a reload, a new
  tab, a later visit, after a logout) shows the token and is the same worker;
- **to the platform's session, where the platform gives one**: Prolific's ``SESSION_ID`` of the
  first join is kept; a link with that same SESSION_ID is the same worker in any browser (Prolific
  hands it to that participant only: the worker who reopens the study from Prolific in a private
  window, or on another device, goes on), and that browser gets a token too.  The other platforms'
  ``session=`` is an id anyone can write into a link: it proves nothing.

**A second browser** claiming a worker id that joined already, without the token and without the
SESSION_ID of the first join, **is refused** (``ALREADY_JOINED``): it gets no identity, neither the
first worker's nor a new one, and nothing is made or changed.  Not a fresh identity: a second worker
under the same platform id would make two people of one in the exports, the places and the payments,
and the worker whose id it is could never tell which answers were theirs.  The refusal tells the
person what to do (go on in the browser where they started, or contact the researcher).  Two tabs of
one browser opening the link at the same instant, before the first has its token: the second is
refused, and a reload of it (the cookie is there by then) goes on.  The workers who joined before
issue 37 have no key: the link signs them in again only with Prolific's SESSION_ID (their live
logins go on).

Choices, written down:

- The secret is kept in the study's settings (the admin must be able to show the link again);
  a new secret invalidates the old link for new joins; workers who joined keep working while the
  crowd stays open.  Closing the crowd closes the study to its workers.
- The quota counts finished judgements.  A worker who reaches it, or who has judged at least one
  item when nothing is left for them, has finished: the completion code (and the redirect link) is
  shown.  Nobody gets a code without a judgement.
- Attention checks are the study's gold items (uploaded in the app or with ``--gold``); a worker
  who answers any of them wrongly is flagged on the Progress page, with the counts.
- Exports keep workers apart: ``annotator_kind`` is ``crowd``, ``platform`` and ``platform_id``
  carry the platform's worker id; the ``annotator`` column shows ``<platform>:<worker id>``.

A link is not a licence to make accounts (issue 23: varying ``worker=`` made 300 accounts in 1.2 s):

- Places: a link makes at most ``places`` workers (the admin's number; by default the study's need:
  ``ceil(judgements / quota)`` with a quota, else ``judgements`` (a worker judges at least one item),
  where ``judgements`` is the places its items have, k each for the items it judges (designed,
  else the overlap) plus any re-opened).  Workers who joined come back (a reload, another tab)
  whatever the count.  The study's row is locked while a join counts, so joins at once never pass
  the number.
- Per client: one client address (as the page sees it, ``pages.context.client_address``) brings at
  most ``JOINS_PER_CLIENT`` new workers in ``JOIN_WINDOW`` (default 5 in 10 minutes; set
  ``DST_JUDGE_JOINS_PER_CLIENT``), over every study.  The count is the ``crowd_workers`` rows
  (``client``, ``joined_at``), so it holds across app servers.  The address is kept for that only:
  it is in no export or report.
- Ids by their shape: Prolific's ``PROLIFIC_PID`` is 24 hexadecimal characters (taken in lower case,
  so one person is one worker); the other ids keep the general rule (letters, digits, ``_ . -``).
- A refused join makes nothing (no account, no session) and says why in plain words.
- The admin sees the places taken and the joins per minute (Studies → Change a study → Crowd workers).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import math
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import urlsplit

from sqlalchemy import func, select, true
from sqlalchemy.orm import Session

from annotate.store.models import WORKER, Annotator, Assignment, CrowdWorker, Item, Study, utcnow
from annotate.studies.assignment import capacity
from formats.references import id_of
from formats.settings import settings

ID_PATTERN = re.compile(r"[A-Za-z0-9_.\-]{1,64}")
PROLIFIC_PID_PATTERN = re.compile(r"[0-9a-fA-F]{24}")
PROLIFIC = ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID")
REFUSAL = "This join link is not valid, or the study is closed. Please return to the study platform."
NO_PLACES = (
    "This study has no places left for new workers: as many have joined as it needs. Please return it on the study platform."
)
TOO_MANY = (
    "Too many new workers have joined from your network address in the last {minutes} minutes. Please try again in a few minutes."
)
ALREADY_JOINED = (
    "This worker id has joined this study already, in another browser, and only that browser can go on as "
    "this worker. Please continue in the browser where you started (open the study link there again); "
    "if you cannot, contact the researcher."
)
JOINS_PER_CLIENT = settings().joins_per_client
JOIN_WINDOW = timedelta(minutes=10)
CROWD_COOKIE_NAME = "dst_judge_crowd"
MAX_CROWD_TOKENS = 8  # workers remembered per browser (several studies, several platforms)


class JoinRefused(ValueError):
    """A join link that does not sign anybody in; the message is plain and safe to show."""


def settings_of(study: Study) -> dict:
    """The study's crowd settings: enabled, secret, quota, places (None: the study's need),
    completion_code, redirect_url."""
    stored = (study.settings or {}).get("crowd") or {}
    return {"enabled": False, "secret": "", "quota": None, "places": None, "completion_code": "", "redirect_url": "", **stored}


def need(session: Session, study: Study, quota: int | None) -> int:
    """The workers the study needs: ``ceil(judgements / quota)``, or ``judgements`` without a quota
    (``judgements``: k for each item it judges, designed or the overlap, plus the places re-opened)."""
    judgements = session.scalar(
        select(func.sum(capacity(study.overlap))).where(Item.study_id == study.id, Item.included == true())
    )
    judgements = int(judgements or 0)
    return max(1, math.ceil(judgements / quota) if quota else judgements)


def places(session: Session, study: Study) -> int:
    """How many workers the study's link may make: the admin's number, else the study's need."""
    crowd = settings_of(study)
    return int(crowd["places"]) if crowd["places"] else need(session, study, crowd["quota"])


def check_redirect(url: str) -> str:
    url = url.strip()
    if url and (urlsplit(url).scheme not in ("http", "https") or not urlsplit(url).netloc):
        raise ValueError("the redirect URL must be an http(s) address")
    return url


def configure(
    study: Study,
    *,
    enabled: bool,
    quota: int | None,
    completion_code: str,
    redirect_url: str,
    new_secret: bool = False,
    places: int | None = None,
) -> tuple[dict, dict]:
    """New crowd settings for the study (locked by the caller): (before, after), secrets included.
    ``places`` None: the study's need.  Raises ValueError on a bad quota, number of places, code or
    redirect URL (nothing changed)."""
    if quota is not None and quota < 1:
        raise ValueError("the quota must be at least 1 item per worker (or none)")
    if places is not None and places < 1:
        raise ValueError("the places must be at least 1 worker (or none: the study's need)")
    code = completion_code.strip()
    if len(code) > 100 or any(not ch.isprintable() for ch in code):
        raise ValueError("the completion code must be printable and at most 100 characters")
    if enabled and not code and not redirect_url.strip():
        raise ValueError("give a completion code or a redirect URL: workers need one to be paid")
    before = settings_of(study)
    after = {
        "enabled": bool(enabled),
        "secret": secrets.token_urlsafe(24) if new_secret or not before["secret"] else before["secret"],
        "quota": quota,
        "places": places,
        "completion_code": code,
        "redirect_url": check_redirect(redirect_url),
    }
    study.settings = {**(study.settings or {}), "crowd": after}
    return before, after


def public(settings: dict) -> dict:
    """The settings without the secret (for the change log)."""
    return {k: v for k, v in settings.items() if k != "secret"} | {"secret": "(new)" if settings.get("secret") else ""}


def join_query(study: Study, platform: str = "prolific") -> str:
    """The query string of the study's join link (placeholders for the platform to fill in)."""
    secret = settings_of(study)["secret"]
    if platform == "prolific":
        ids = "&".join(f"{p}={{{{%{p}%}}}}" for p in PROLIFIC)
    else:
        ids = "worker=WORKER_ID"
    return f"?join={study.id}&key={secret}&{ids}"


def _param(params, name: str) -> str:
    """One URL parameter as text (Streamlit gives the last value; a dict of lists gives the first)."""
    got = params.get(name)
    got = got[0] if isinstance(got, list) and got else got
    return got.strip() if isinstance(got, str) else ""


def _platform_ids(params) -> tuple[str, str, str, str]:
    """(platform, worker id, platform study, platform session) from the link's parameters."""
    value = lambda name: _param(params, name)  # noqa: E731

    if value("PROLIFIC_PID"):
        if not PROLIFIC_PID_PATTERN.fullmatch(value("PROLIFIC_PID")):
            raise JoinRefused(
                "This link's Prolific id (PROLIFIC_PID) is not valid: a Prolific id is 24 hexadecimal "
                "characters. Please open the study from Prolific."
            )
        platform, ids = "prolific", (value("PROLIFIC_PID").lower(), value("STUDY_ID"), value("SESSION_ID"))
    elif value("worker"):
        platform, ids = "generic", (value("worker"), "", value("session"))
    else:
        raise JoinRefused("This link carries no worker id (PROLIFIC_PID or worker). Please open it from the study platform.")
    if any(part and not ID_PATTERN.fullmatch(part) for part in ids):
        raise JoinRefused("This link's worker, study or session id is not valid (letters, digits, _ . - only).")
    return (platform, *ids)


def _locked_study(session: Session, study_id: int) -> Study | None:
    """The study row locked for the join's transaction (PostgreSQL; SQLite's writers are serialised),
    so that joins at once count the places one after another."""
    return session.scalars(
        select(Study).where(Study.id == study_id).with_for_update().execution_options(populate_existing=True)
    ).one_or_none()


# Crowd tokens: "<issued unix seconds>.<nonce>.<mac>", several joined by "~" in one cookie.
_EPOCH = datetime(1970, 1, 1)


def _seconds(moment: datetime) -> int:
    return int((moment.replace(tzinfo=None) - _EPOCH).total_seconds())


def _token_mac(row: CrowdWorker, issued: int, nonce: str) -> str:
    message = f"dst-judge-crowd\n{row.annotator_id}\n{row.study_id}\n{issued}\n{nonce}".encode()
    mac = hmac.new(row.device_key.encode("ascii"), message, hashlib.sha256).digest()
    return base64.urlsafe_b64encode(mac).decode("ascii").rstrip("=")


def _token_parts(token: str) -> tuple[int, str, str] | None:
    parts = token.split(".")
    if len(parts) != 3 or not parts[0].isascii() or not parts[0].isdigit() or len(parts[0]) > 12:
        return None
    if not (8 <= len(parts[1]) <= 40) or len(parts[2]) > 60:
        return None
    return int(parts[0]), parts[1], parts[2]


def _cookie_tokens(cookie: str | None) -> list[str]:
    if not isinstance(cookie, str) or len(cookie) > 2000:
        return []
    return [token for token in cookie.split("~")[: MAX_CROWD_TOKENS * 2] if token]


def _oldest(now: datetime) -> int:
    return _seconds(now - timedelta(days=settings().device_days))


def known_browser(row: CrowdWorker, cookie: str | None, now: datetime) -> bool:
    """Whether the browser's crowd cookie holds a live token made for this worker."""
    if not row.device_key:
        return False  # joined before issue 37: no token was ever made for them
    oldest = _oldest(now)
    for token in _cookie_tokens(cookie):
        parts = _token_parts(token)
        if parts is None:
            continue
        issued, nonce, mac = parts
        if oldest <= issued <= _seconds(now) + 60 and hmac.compare_digest(mac, _token_mac(row, issued, nonce)):
            return True
    return False


def browser_cookie(row: CrowdWorker, previous: str | None, now: datetime) -> str:
    """The browser's crowd cookie after a join: a fresh token for this worker first, then the
    browser's other live tokens (other studies), at most ``MAX_CROWD_TOKENS``."""
    issued, nonce = _seconds(now), secrets.token_urlsafe(12)
    tokens = [f"{issued}.{nonce}.{_token_mac(row, issued, nonce)}"]
    oldest = _oldest(now)
    for token in _cookie_tokens(previous):
        parts = _token_parts(token)
        if parts is None or parts[0] < oldest or known_browser(row, token, now):
            continue  # malformed, expired, or this worker's old token
        tokens.append(token)
    return "~".join(tokens[:MAX_CROWD_TOKENS])


def _same_worker(row: CrowdWorker, platform: str, platform_session: str, device: str | None, now: datetime) -> bool:
    """Whether this join is the worker who joined first: their browser's token, or Prolific's
    SESSION_ID of the first join (see the module docstring)."""
    if known_browser(row, device, now):
        return True
    return (
        platform == "prolific"
        and bool(row.platform_session)
        and bool(platform_session)
        and secrets.compare_digest(platform_session.encode(), row.platform_session.encode())
    )


def join(
    session: Session, params, *, client: str = "", device: str | None = None, now: datetime | None = None
) -> tuple[Annotator, str]:
    """The worker the link signs in (made on first use), in the caller's write transaction, and the
    browser's new crowd cookie.  ``client`` is where the request comes from (the per-client limit);
    ``device`` the browser's crowd cookie, if any (a worker who joined already is signed in only for
    their browser, or Prolific session: else ``JoinRefused(ALREADY_JOINED)``); ``now`` a simulated
    clock (tests)."""
    now = now or utcnow()
    client = (client or "")[:100]
    study_text, key = _param(params, "join"), _param(params, "key")
    study_id = id_of(study_text)  # ASCII digits only: "¹" or "١" is no study (formats.references)
    study = _locked_study(session, study_id) if study_id is not None else None
    crowd = settings_of(study) if study is not None else None
    if (
        study is None
        or study.archived
        or not crowd["enabled"]
        or not crowd["secret"]
        or not secrets.compare_digest(key.encode(), crowd["secret"].encode())
    ):
        raise JoinRefused(REFUSAL)
    platform, worker_id, platform_study, platform_session = _platform_ids(params)
    found = session.scalar(
        select(CrowdWorker).where(
            CrowdWorker.study_id == study.id, CrowdWorker.platform == platform, CrowdWorker.worker_id == worker_id
        )
    )
    if found is not None:
        if not _same_worker(found, platform, platform_session, device, now):
            raise JoinRefused(ALREADY_JOINED)
        if not found.device_key:  # joined before issue 37, back by Prolific's SESSION_ID: bound from now on
            found.device_key = secrets.token_urlsafe(32)
        return session.get(Annotator, found.annotator_id), browser_cookie(found, device, now)
    joined = session.scalar(select(func.count()).select_from(CrowdWorker).where(CrowdWorker.study_id == study.id))
    if joined >= places(session, study):
        raise JoinRefused(NO_PLACES)
    from_client = session.scalar(
        select(func.count())
        .select_from(CrowdWorker)
        .where(CrowdWorker.client == client, CrowdWorker.joined_at > now - JOIN_WINDOW)
    )
    if from_client >= JOINS_PER_CLIENT:
        raise JoinRefused(TOO_MANY.format(minutes=int(JOIN_WINDOW.total_seconds() // 60)))
    annotator = Annotator(name=f"{platform}:{worker_id}@{study.id}", role=WORKER, password_hash=None)
    session.add(annotator)
    session.flush()
    row = CrowdWorker(
        annotator_id=annotator.id,
        study_id=study.id,
        platform=platform,
        worker_id=worker_id,
        platform_study=platform_study,
        platform_session=platform_session,
        client=client,
        joined_at=now,
        device_key=secrets.token_urlsafe(32),
    )
    session.add(row)
    session.flush()
    return annotator, browser_cookie(row, device, now)


@dataclass(frozen=True)
class JoinStats:
    """How fast workers join a study's link (the admin's view, Studies → Change a study → Crowd workers)."""

    joined: int  # workers who joined, ever
    places: int  # how many the link may make (:func:`places`)
    places_default: bool  # the places are the study's need, not the admin's number
    last_minute: int
    last_10_minutes: int
    last_hour: int
    per_minute: float  # mean joins per minute over the last 10 minutes
    per_minute_series: list[int]  # the joins of each of the last 10 minutes, oldest first


def join_stats(session: Session, study: Study, now: datetime | None = None) -> JoinStats:
    """For the admin: workers joined and places; joins in the last minute, 10 minutes and hour; the
    mean joins per minute over the last 10 minutes, and the joins of each of those minutes (oldest first)."""
    now = now or utcnow()
    hour = select(CrowdWorker.joined_at).where(CrowdWorker.study_id == study.id, CrowdWorker.joined_at > now - timedelta(hours=1))
    times = list(session.scalars(hour))
    within = lambda seconds: sum(1 for t in times if t > now - timedelta(seconds=seconds))  # noqa: E731
    series = [sum(1 for t in times if now - timedelta(minutes=m + 1) < t <= now - timedelta(minutes=m)) for m in range(10)]
    total = session.scalar(select(func.count()).select_from(CrowdWorker).where(CrowdWorker.study_id == study.id))
    return JoinStats(
        joined=int(total or 0),
        places=places(session, study),
        places_default=not settings_of(study)["places"],
        last_minute=within(60),
        last_10_minutes=within(600),
        last_hour=len(times),
        per_minute=within(600) / 10,
        per_minute_series=series[::-1],
    )


def worker_row(session: Session, annotator: Annotator) -> CrowdWorker | None:
    return session.get(CrowdWorker, annotator.id) if annotator.role == WORKER else None


def open_study(session: Session, annotator: Annotator) -> set[int]:
    """The study a worker may annotate now: theirs, while it is open to the crowd and not archived."""
    row = worker_row(session, annotator)
    study = session.get(Study, row.study_id) if row is not None else None
    if study is None or study.archived or not settings_of(study)["enabled"]:
        return set()
    return {study.id}


def done_count(session: Session, annotator: Annotator, study_id: int) -> int:
    return int(
        session.scalar(
            select(func.count())
            .select_from(Assignment)
            .where(Assignment.study_id == study_id, Assignment.annotator_id == annotator.id, Assignment.status == "done")
        )
        or 0
    )


def quota_reached(session: Session, annotator: Annotator, study_id: int) -> bool:
    """A worker who has judged their quota gets no further item."""
    row = worker_row(session, annotator)
    if row is None or row.study_id != study_id:
        return False
    quota = settings_of(session.get(Study, study_id))["quota"]
    return quota is not None and done_count(session, annotator, study_id) >= quota


def status(session: Session, annotator: Annotator, *, out_of_items: bool = False) -> dict:
    """Where a worker stands; ``finished`` (with the completion code and redirect URL) once the
    quota is reached, or, with ``out_of_items``, once nothing is left after at least one judgement.
    A finish is recorded (``completed_at``)."""
    row = worker_row(session, annotator)
    if row is None:
        raise ValueError("not a crowd worker")
    crowd = settings_of(session.get(Study, row.study_id))
    done = done_count(session, annotator, row.study_id)
    finished = (
        row.completed_at is not None or (crowd["quota"] is not None and done >= crowd["quota"]) or (out_of_items and done > 0)
    )
    if finished and row.completed_at is None:
        row.completed_at = utcnow()
    return {
        "study_id": row.study_id,
        "platform": row.platform,
        "worker_id": row.worker_id,
        "done": done,
        "quota": crowd["quota"],
        "finished": finished,
        "completion_code": (crowd["completion_code"] or None) if finished else None,
        "redirect_url": (crowd["redirect_url"] or None) if finished else None,
    }


def display_names(session: Session, study_id: int) -> dict[str, str]:
    """Internal name -> what exports and reports show (``<platform>:<worker id>``) for the study's workers."""
    rows = session.execute(
        select(Annotator.name, CrowdWorker.platform, CrowdWorker.worker_id)
        .join(CrowdWorker, CrowdWorker.annotator_id == Annotator.id)
        .where(CrowdWorker.study_id == study_id)
    )
    return {name: f"{platform}:{worker_id}" for name, platform, worker_id in rows}


@dataclass(frozen=True)
class Worker:
    """A crowd worker of a study, as the Progress page lists them (one table row, these columns)."""

    platform: str
    worker_id: str
    platform_study: str
    platform_session: str
    joined: str  # ISO time, to the second
    done: int  # judgements finished
    finished: bool  # shown the completion code (or reached the quota)
    gold_checked: int  # attention checks answered
    gold_failed: int  # ... and answered wrongly
    flagged: bool  # any attention check failed


def workers(session: Session, study_id: int, attention: dict) -> list[Worker]:
    """The study's workers for the Progress page, with their attention checks (``attention``: display
    name -> ``annotate.analysis.reports.AttentionChecks``) and ``flagged`` when any check failed."""
    quota = settings_of(session.get(Study, study_id))["quota"]
    rows = session.execute(
        select(CrowdWorker, Annotator)
        .join(Annotator, Annotator.id == CrowdWorker.annotator_id)
        .where(CrowdWorker.study_id == study_id)
        .order_by(CrowdWorker.joined_at, CrowdWorker.annotator_id)
    ).all()
    report = []
    for row, annotator in rows:
        done = done_count(session, annotator, study_id)
        checks = attention.get(f"{row.platform}:{row.worker_id}")
        checked, failed = (checks.checked, checks.failed) if checks is not None else (0, 0)
        report.append(
            Worker(
                platform=row.platform,
                worker_id=row.worker_id,
                platform_study=row.platform_study,
                platform_session=row.platform_session,
                joined=row.joined_at.isoformat(timespec="seconds"),
                done=done,
                finished=row.completed_at is not None or (quota is not None and done >= quota),
                gold_checked=checked,
                gold_failed=failed,
                flagged=failed > 0,
            )
        )
    return report
