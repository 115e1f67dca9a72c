"""People through the door: logins and the demo, accounts (annotators, admins, automatic judges), the
HTTP API's tokens, and :data:`CLI`, the command lines' actor.

The admin pages and both command lines (``python -m annotate``, ``python -m exports``) act through the
service's functions: each takes the acting admin, or :data:`CLI` for the command line.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Engine, select

from annotate import studies
from annotate.people import sessions, tokens
from annotate.people.auth import add_annotator, require_admin, set_password
from annotate.store.db import get_engine, read_session, write_session
from annotate.store.models import JUDGE, KINDS_OF_ANNOTATOR, WORKER, Annotator
from annotate.studies import StudyError, demo

log_in = sessions.log_in  # name, password, client, device cookie -> (annotator, session token); throttled


log_out = sessions.log_out  # ends a session token


session_user = sessions.session_user  # the annotator of a live session token, or None


ensure_demo = demo.ensure_demo  # the demo studies and accounts, made once on an empty database


@dataclass(frozen=True)
class Actor:
    """Who acts without a login: the command line.  It has an admin's rights (the command lines run
    with the database's own credentials) and is recorded by ``name`` in a study's change log."""

    name: str
    role: str = "admin"
    id: int | None = None


CLI = Actor(studies.CLI)  # the command lines' actor: "cli" in the change log, as ever


@dataclass(frozen=True)
class AnnotatorSummary:
    name: str
    role: str  # admin, annotator, or worker (a crowd worker)
    login: bool  # has a password (crowd workers and imported voters have none)
    kind: str = "human"  # human, or judge (an automatic judge: issue 28)


def list_annotators(engine: Engine, user: Annotator, *, workers: bool = False) -> list[AnnotatorSummary]:
    """Everybody by name, crowd workers only with ``workers`` (the page lists them per study, on the
    Progress page; ``python -m annotate annotator list`` lists them all)."""
    require_admin(user)
    query = select(Annotator).order_by(Annotator.name)
    if not workers:
        query = query.where(Annotator.role != WORKER)
    with read_session(engine) as session:
        return [AnnotatorSummary(a.name, a.role, a.password_hash is not None, a.kind) for a in session.scalars(query)]


def add_person(
    engine: Engine, user: Annotator, name: str, password: str | None, role: str = "annotator", *, kind: str = "human"
) -> AnnotatorSummary:
    """A named account: an annotator or an admin; ``kind="judge"``: an automatic judge (an annotator
    without a password that votes through the HTTP API with a token, kept apart from the humans)."""
    require_admin(user)
    if kind not in KINDS_OF_ANNOTATOR:
        raise StudyError(f"kind must be one of {', '.join(KINDS_OF_ANNOTATOR)}")
    if kind == JUDGE and role != "annotator":
        raise StudyError("an automatic judge is an annotator, never an admin")
    if kind == JUDGE and password:
        raise StudyError("an automatic judge has no password: it votes through the HTTP API with a token")
    with write_session(engine) as session:
        person = add_annotator(session, name, password, role)
        person.kind = kind
        return AnnotatorSummary(person.name, person.role, person.password_hash is not None, kind)


def reset_password(engine: Engine, user: Annotator, name: str, password: str) -> int:
    """A new password for ``name``; it also ends their sessions and API tokens and clears their failed
    logins (``auth.set_password``): the number of API tokens revoked."""
    require_admin(user)
    with write_session(engine) as session:
        if session.scalar(select(Annotator.kind).where(Annotator.name == name)) == JUDGE:
            raise StudyError(f"{name!r} is an automatic judge: it has no password (it votes through the HTTP API with a token)")
        return set_password(session, name, password)  # also ends their sessions and tokens, clears failed logins


def open_engine(url: str | None = None) -> Engine:
    """The database of ``url`` (else ``DST_JUDGE_DB``, else the embedded SQLite file), migrated."""
    return get_engine(url)


def token_user(engine: Engine, token: str) -> Annotator | None:
    """The annotator a live API token acts as, else None (one indexed read; a revoked token at once)."""
    with read_session(engine) as session:
        found = tokens.user_of(session, token)
        if found is not None:
            session.expunge(found)
        return found


def add_token(engine: Engine, user: Annotator, name: str, label: str = "") -> tuple[str, tokens.TokenInfo]:
    """A new API token for the annotator ``name``: (the token, shown once; what is kept of it)."""
    require_admin(user)
    with write_session(engine) as session:
        return tokens.add_token(session, name, by=getattr(user, "name", "cli"), label=label)


def revoke_tokens(engine: Engine, user: Annotator, name: str, token_id: int | None = None) -> int:
    """Revoke the annotator's live tokens (or one): how many; they are refused from the next request."""
    require_admin(user)
    with write_session(engine) as session:
        return tokens.revoke(session, name, token_id)


def list_tokens(engine: Engine, user: Annotator) -> list:
    """Every API token made (never the token: its first characters), newest first."""
    require_admin(user)
    with read_session(engine) as session:
        return tokens.tokens(session)
