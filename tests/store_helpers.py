"""Small helpers for store tests: a study with annotators."""

from __future__ import annotations

import io
import zipfile

from sqlalchemy import select

from annotate.people.auth import add_annotator
from annotate.store.db import write_session
from annotate.store.models import Item
from annotate.studies import create_study
from annotate.studies.assignment import claim_next


def make_study(engine, fixtures, *, kind="satisfaction", overlap=3, annotators=5, name="study", timeout=30, seed=0):
    paths = {"satisfaction": [fixtures / "fga_human_eval"], "coco": [fixtures / "coco"], "slu": [fixtures / "dstc2"]}[kind]
    with write_session(engine) as session:
        study = create_study(session, name, kind, paths, overlap=overlap, timeout_minutes=timeout, seed=seed)
        people = [add_annotator(session, f"{name}-a{i}") for i in range(annotators)]
    return study, people


def zip_bytes(files: dict[str, bytes]) -> bytes:
    """A zip archive in memory, as an upload would carry it."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def next_item(session, study_id, annotator, now=None):
    """The item this annotator judges next, claimed for them in the caller's transaction and read, or
    None when done: ``assignment.claim_next`` and the item (what ``annotate.studies.assignment.next_item`` did
    until only tests used it)."""
    item_id = claim_next(session, study_id, annotator, now)
    if item_id is None:
        return None
    return session.scalars(select(Item).where(Item.id == item_id).execution_options(populate_existing=True)).one()
