"""Small helpers for store tests: a study with annotators."""

from __future__ import annotations

import io
import zipfile

from annotate.auth import add_annotator
from annotate.store.db import write_session
from annotate.studies import create_study


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
