"""Idempotency keys of the HTTP API's vote POST (issue 28): a retried POST never counts twice.

A client sends ``Idempotency-Key: <its own key>`` (draft-ietf-httpapi-idempotency-key-header) with a
vote.  In the vote's own write transaction the key is written first (unique per annotator), then the
vote, then the response; a retry with the same key and the same request finds the row and gets the
stored response back (nothing is stored again), the same key with another request is refused (422).
Two copies of one request at once: on SQLite they queue for the one writer, so the second finds the
first's row; on PostgreSQL the second's INSERT of the key waits for the first transaction and then
fails on the unique constraint, and the caller runs it again, now finding the row.  A request that
failed stored nothing, its key included, so a retry runs it afresh.  Keys are kept (a few bytes each,
like the votes they guard).
"""

from __future__ import annotations

import hashlib
import json

from sqlalchemy import select
from sqlalchemy.orm import Session

from annotate.store.models import ApiRequest, utcnow

MAX_KEY = 200


class KeyReused(ValueError):
    """The key was used before for another request: refused, nothing stored."""


def fingerprint(*parts) -> str:
    """A digest of what a request asks (its path's ids and its body), to tell a retry from a reuse."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True, ensure_ascii=False, default=str).encode()).hexdigest()


def replayed(session: Session, annotator_id: int, key: str, print_: str) -> dict | None:
    """The response stored for this key, or None (the key is new); KeyReused if it named another request."""
    found = session.execute(
        select(ApiRequest.fingerprint, ApiRequest.response).where(ApiRequest.annotator_id == annotator_id, ApiRequest.key == key)
    ).first()
    if found is None:
        return None
    if found[0] != print_:
        raise KeyReused(f"the Idempotency-Key {key!r} was used before for another request; use a new key for a new vote")
    return found[1]


def reserve(session: Session, annotator_id: int, key: str, print_: str) -> ApiRequest:
    """Write the key before the vote (the unique constraint makes a concurrent copy wait, then fail)."""
    row = ApiRequest(annotator_id=annotator_id, key=key, fingerprint=print_, status=200, response={}, created_at=utcnow())
    session.add(row)
    session.flush()
    return row
