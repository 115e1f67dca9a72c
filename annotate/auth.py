"""Annotators and passwords.  Passwords are stored only as bcrypt hashes (slow on purpose)."""

from __future__ import annotations

import os

import bcrypt
from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from annotate.store.models import ROLES, Annotator, LoginFailure, LoginSession

# bcrypt cost; tests may lower it with DST_JUDGE_BCRYPT_ROUNDS (never below bcrypt's minimum 4).
BCRYPT_ROUNDS = int(os.environ.get("DST_JUDGE_BCRYPT_ROUNDS", "12"))
MAX_PASSWORD_BYTES = 72  # bcrypt ignores what follows; refuse instead of silently truncating


class AuthError(ValueError):
    """A login, role or permission problem; the message is safe to show."""


class PermissionDenied(PermissionError):
    """The acting user may not do this."""


class StudyClosed(PermissionDenied):
    """The study was open to this person and has closed (archived, its budget spent, its crowd link
    closed): pages say so and offer the next open study (issue 24)."""


def require_admin(user: Annotator | None) -> Annotator:
    """Every admin action starts here, on the server."""
    if user is None or user.role != "admin":
        raise PermissionDenied("this needs an admin login")
    return user


def hash_password(password: str) -> str:
    data = password.encode("utf-8")
    if len(password) < 8:
        raise AuthError("a password needs at least 8 characters")
    if len(data) > MAX_PASSWORD_BYTES:
        raise AuthError(f"a password may have at most {MAX_PASSWORD_BYTES} bytes")
    return bcrypt.hashpw(data, bcrypt.gensalt(rounds=max(4, BCRYPT_ROUNDS))).decode("ascii")


def password_matches(password: str, password_hash: str | None) -> bool:
    if not password_hash:
        return False
    try:
        return bcrypt.checkpw(password.encode("utf-8")[:MAX_PASSWORD_BYTES], password_hash.encode("ascii"))
    except ValueError:
        return False


def find_annotator(session: Session, name: str) -> Annotator | None:
    return session.scalar(select(Annotator).where(Annotator.name == name))


def add_annotator(session: Session, name: str, password: str | None = None, role: str = "annotator") -> Annotator:
    name = name.strip()
    if not name or len(name) > 100:
        raise AuthError("an annotator name needs 1 to 100 characters")
    if role not in ROLES:
        raise AuthError(f"role must be one of {', '.join(ROLES)}")
    if find_annotator(session, name) is not None:
        raise AuthError(f"an annotator named {name!r} exists already")
    annotator = Annotator(name=name, role=role, password_hash=hash_password(password) if password else None)
    session.add(annotator)
    session.flush()
    return annotator


def set_password(session: Session, name: str, password: str) -> None:
    """A new password (an admin's reset, app or CLI): it also ends every session of that person
    and clears the failed logins of the name, so nobody stays throttled by someone else's guesses."""
    annotator = find_annotator(session, name)
    if annotator is None:
        raise AuthError(f"no annotator named {name!r}")
    annotator.password_hash = hash_password(password)
    session.execute(update(LoginSession).where(LoginSession.annotator_id == annotator.id).values(revoked=True))
    session.execute(delete(LoginFailure).where(LoginFailure.name == annotator.name))


def authenticate(session: Session, name: str, password: str) -> Annotator | None:
    """The annotator if the password matches, else None (same answer for unknown names)."""
    annotator = find_annotator(session, name)
    if annotator is None:
        bcrypt.checkpw(b"timing", _DUMMY_HASH)  # same work for unknown names
        return None
    return annotator if password_matches(password, annotator.password_hash) else None


_DUMMY_HASH = bcrypt.hashpw(b"dummy-password", bcrypt.gensalt(rounds=4))
