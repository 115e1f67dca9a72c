"""Annotators and passwords.  Passwords are stored only as bcrypt hashes (slow on purpose)."""

from __future__ import annotations

import functools
import unicodedata

import bcrypt
from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from annotate.store.models import ROLES, Annotator, ApiToken, LoginFailure, LoginSession, utcnow
from formats.settings import settings

# bcrypt cost; tests may lower it with DST_JUDGE_BCRYPT_ROUNDS (never below bcrypt's minimum 4).
BCRYPT_ROUNDS = settings().bcrypt_rounds
MAX_PASSWORD_BYTES = 72  # bcrypt ignores what follows; refuse instead of silently truncating
# Unicode's bidirectional formatting characters (embeddings, overrides, isolates, marks): in a name they
# reorder what is shown around it ("evil\u202egnp.exe" shows as "evilexe.png"); refused with the controls.
BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


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


def name_problem(name: str) -> str | None:
    r"""Why ``name`` cannot be a new annotator's name, else None: no control character (Unicode category
    Cc: NUL, BEL, tab, newline, DEL, the C1 controls) and no bidirectional formatting character
    (``BIDI_CONTROLS``).  The message names the character by its code point and never contains it.

    >>> name_problem("Zoë 山田") is None
    True
    >>> name_problem("evil\u202egnp.exe")
    'an annotator name cannot contain control or bidirectional formatting characters (U+202E at character 5)'
    """
    for position, char in enumerate(name, 1):
        if char in BIDI_CONTROLS or unicodedata.category(char) == "Cc":
            return (
                "an annotator name cannot contain control or bidirectional formatting characters "
                f"(U+{ord(char):04X} at character {position})"
            )
    return None


def find_annotator(session: Session, name: str) -> Annotator | None:
    return session.scalar(select(Annotator).where(Annotator.name == name))


def add_annotator(session: Session, name: str, password: str | None = None, role: str = "annotator") -> Annotator:
    name = name.strip()
    if not name or len(name) > 100:
        raise AuthError("an annotator name needs 1 to 100 characters")
    problem = name_problem(name)
    if problem:
        raise AuthError(problem)
    if role not in ROLES:
        raise AuthError(f"role must be one of {', '.join(ROLES)}")
    if find_annotator(session, name) is not None:
        raise AuthError(f"an annotator named {name!r} exists already")
    annotator = Annotator(name=name, role=role, password_hash=hash_password(password) if password else None)
    session.add(annotator)
    session.flush()
    return annotator


def set_password(session: Session, name: str, password: str) -> int:
    """A new password (an admin's reset, app or CLI): it also ends every session of that person,
    revokes their live API tokens (a reset is what an admin does when an account may be in other
    hands: a token made by those hands must end too) and clears the failed logins of the name, so
    nobody stays throttled by someone else's guesses.  Returns the number of API tokens revoked."""
    annotator = find_annotator(session, name)
    if annotator is None:
        raise AuthError(f"no annotator named {name!r}")
    annotator.password_hash = hash_password(password)
    session.execute(update(LoginSession).where(LoginSession.annotator_id == annotator.id).values(revoked=True))
    session.execute(delete(LoginFailure).where(LoginFailure.name == annotator.name))
    revoked = session.execute(
        update(ApiToken).where(ApiToken.annotator_id == annotator.id, ApiToken.revoked_at.is_(None)).values(revoked_at=utcnow())
    )
    return revoked.rowcount or 0


def authenticate(session: Session, name: str, password: str) -> Annotator | None:
    """The annotator if the password matches, else None: the same answer, after the same bcrypt work,
    for an unknown name and for an account without a password (an imported annotator, a judge) as
    for a wrong password, so the time taken does not tell which names exist (issue 37)."""
    annotator = find_annotator(session, name)
    if annotator is None or not annotator.password_hash:
        bcrypt.checkpw(b"timing", dummy_hash())  # the same work as a real check
        return None
    return annotator if password_matches(password, annotator.password_hash) else None


def dummy_hash() -> bytes:
    """A bcrypt hash of the configured cost (``BCRYPT_ROUNDS``) to check unknown names against: made on
    first use, then kept (one per cost).  Before issue 37 it had cost 4 whatever the setting, so an
    unknown name was answered 64 times sooner than a real one at cost 10 (256 times at 12)."""
    return _dummy_hash(max(4, BCRYPT_ROUNDS))


@functools.cache
def _dummy_hash(rounds: int) -> bytes:
    return bcrypt.hashpw(b"no account has this password", bcrypt.gensalt(rounds=rounds))
