"""Crowd workers through the door: joining by a study's link (bound to the browser, issue 37), their
count, quota and finish; the admin's crowd settings, link and join figures (``annotate.studies.crowd``)."""

from __future__ import annotations

from sqlalchemy import Engine
from sqlalchemy.exc import IntegrityError

from annotate import studies
from annotate.people.auth import require_admin
from annotate.people.sessions import open_session
from annotate.store.db import read_session, write_session
from annotate.store.models import Annotator, Study
from annotate.studies import assignment, crowd


def join_crowd(engine: Engine, params, *, client: str = "", device: str | None = None, now=None) -> str:
    """Sign a crowd worker in by a study's join link (its URL parameters): the session token (the
    browser's crowd cookie, which a worker who comes back by the link needs, is ``join_crowd_browser``'s)."""
    return join_crowd_browser(engine, params, client=client, device=device, now=now)[0]


def join_crowd_browser(engine: Engine, params, *, client: str = "", device: str | None = None, now=None) -> tuple[str, str]:
    """Sign a crowd worker in by a study's join link (its URL parameters): (the session token, the
    browser's new crowd cookie).  ``client``: where the request comes from (the page's client address),
    for the per-client limit; ``device``: the browser's crowd cookie (``crowd.CROWD_COOKIE_NAME``): a
    worker id that joined already signs in only the browser that shows its token (or, on Prolific,
    the SESSION_ID of the first join; annotate.studies.crowd); ``now``: a simulated clock (tests).  Raises
    crowd.JoinRefused with a plain message; a refused link changes nothing."""
    for attempt in range(2):  # the same worker joining in two tabs at once: the second finds the first
        try:
            with write_session(engine) as session:
                worker, cookie = crowd.join(session, params, client=client, device=device, now=now)
                return open_session(session, worker), cookie
        except IntegrityError:
            if attempt:
                raise
    raise AssertionError("unreachable")


def crowd_status(engine: Engine, user: Annotator, *, out_of_items: bool = False) -> dict:
    """A worker's count, quota and, once finished, completion code and redirect URL (crowd.status).
    A read; only a finish not yet recorded (``completed_at``) is written, once."""
    with read_session(engine) as session:
        status = crowd.status(session, user, out_of_items=out_of_items)
        unrecorded = bool(session.dirty)  # crowd.status stamped a finish on the worker's row: not stored yet
    if unrecorded:
        with write_session(engine) as session:
            status = crowd.status(session, user, out_of_items=out_of_items)
    return status


def crowd_settings(engine: Engine, user: Annotator, study_id: int) -> dict:
    require_admin(user)
    with read_session(engine) as session:
        return crowd.settings_of(session.get(Study, study_id))


def set_crowd(
    engine: Engine,
    user: Annotator,
    study_id: int,
    *,
    enabled: bool,
    quota: int | None,
    completion_code: str,
    redirect_url: str,
    new_secret: bool = False,
    places: int | None = None,
) -> dict:
    """Open or close a study to crowd workers, with quota, places (None: the study's need), completion
    code and redirect URL; recorded (without the secret).  Returns the new settings."""
    require_admin(user)
    with write_session(engine) as session:
        study = assignment.lock_study(session, study_id)
        before, after = crowd.configure(
            study,
            enabled=enabled,
            quota=quota,
            completion_code=completion_code,
            redirect_url=redirect_url,
            new_secret=new_secret,
            places=places,
        )
        if before != after:
            studies.record(session, study_id, user, "crowd", crowd.public(before), crowd.public(after))
        return after


def crowd_joins(engine: Engine, user: Annotator, study_id: int, *, now=None) -> crowd.JoinStats:
    """Workers joined, places, and joins per minute (crowd.join_stats) for the admin."""
    require_admin(user)
    with read_session(engine) as session:
        return crowd.join_stats(session, session.get(Study, study_id), now)


def crowd_link(engine: Engine, user: Annotator, study_id: int, base_url: str, platform: str = "prolific") -> str:
    """The study's join link for a platform, on the app's public address ``base_url``."""
    require_admin(user)
    with read_session(engine) as session:
        return base_url.rstrip("/") + "/" + crowd.join_query(session.get(Study, study_id), platform)
