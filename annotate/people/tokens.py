"""Bearer tokens of the HTTP API (issue 28): made and revoked by an admin, in the app or with
``python -m annotate token add|revoke NAME``.

A token is ``dstj_`` and 43 characters of ``secrets.token_urlsafe(32)`` (256 random bits).  It is
shown once, when it is made; the store keeps only its SHA-256 (a fast hash is enough for a secret of
256 random bits: nothing to guess, unlike a password) and its first characters, so that an admin can
tell tokens apart.  A request's token is looked up by its hash (one indexed row); a revoked token, or
one whose annotator is gone, is refused at once (nothing is cached).  A token acts as its annotator,
with their role: an admin's token can do what the admin can, an annotator's what they can.

A token ends when an admin revokes it (``token revoke NAME --all``, or ``--id N`` for one; no option
is ``--all``) and when the person's password is reset (``annotator password NAME`` or the admin page:
``annotate.people.auth.set_password``), so a reset after a leak leaves no token of the other hands working.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from annotate.people.auth import AuthError
from annotate.store.models import WORKER, Annotator, ApiToken, utcnow

PREFIX = "dstj_"
SHOWN = 12  # characters of a token kept to tell it apart (the prefix and 7 of the secret)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class TokenInfo:
    """A token as an admin sees it: never the token itself."""

    id: int
    annotator: str
    kind: str  # human or judge
    role: str
    prefix: str
    label: str
    created_by: str
    created_at: str
    revoked_at: str | None


def add_token(session: Session, name: str, *, by: str, label: str = "") -> tuple[str, TokenInfo]:
    """A new token for the annotator ``name`` (a crowd worker gets none: their join link is their
    login): the token (shown once) and what is kept of it."""
    annotator = session.scalar(select(Annotator).where(Annotator.name == name))
    if annotator is None:
        raise AuthError(f"no annotator named {name!r}")
    if annotator.role == WORKER:
        raise AuthError("a crowd worker gets no API token (their join link is their login)")
    token = PREFIX + secrets.token_urlsafe(32)
    row = ApiToken(
        annotator_id=annotator.id,
        token_hash=token_hash(token),
        prefix=token[:SHOWN],
        label=label.strip()[:200],
        created_by=by,
        created_at=utcnow(),
    )
    session.add(row)
    session.flush()
    return token, _info(row, annotator)


def revoke(session: Session, name: str, token_id: int | None = None) -> int:
    """Revoke every live token of the annotator ``name`` (or only ``token_id``): how many."""
    annotator = session.scalar(select(Annotator).where(Annotator.name == name))
    if annotator is None:
        raise AuthError(f"no annotator named {name!r}")
    query = update(ApiToken).where(ApiToken.annotator_id == annotator.id, ApiToken.revoked_at.is_(None))
    if token_id is not None:
        query = query.where(ApiToken.id == token_id)
    return session.execute(query.values(revoked_at=utcnow())).rowcount or 0


def tokens(session: Session) -> list[TokenInfo]:
    """Every token made, newest first (revoked ones too: when and by whom they were made stays)."""
    rows = session.execute(select(ApiToken, Annotator).join(Annotator, Annotator.id == ApiToken.annotator_id))
    return sorted((_info(t, a) for t, a in rows), key=lambda t: t.id, reverse=True)


def user_of(session: Session, token: str) -> Annotator | None:
    """The annotator a live token acts as, else None (unknown, revoked or malformed: the same None)."""
    if not token.startswith(PREFIX) or len(token) > 200:
        return None
    return session.scalar(
        select(Annotator)
        .join(ApiToken, ApiToken.annotator_id == Annotator.id)
        .where(ApiToken.token_hash == token_hash(token), ApiToken.revoked_at.is_(None))
    )


def _when(at: datetime | None) -> str | None:
    return None if at is None else at.isoformat(timespec="seconds")


def _info(row: ApiToken, annotator: Annotator) -> TokenInfo:
    return TokenInfo(
        row.id,
        annotator.name,
        annotator.kind,
        annotator.role,
        row.prefix + "…",
        row.label,
        row.created_by,
        _when(row.created_at),
        _when(row.revoked_at),
    )
