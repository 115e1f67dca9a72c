"""Small helpers for store tests: a study with annotators."""

from __future__ import annotations

from annotate.auth import add_annotator
from annotate.db import write_session
from annotate.studies import create_study


def make_study(engine, fixtures, *, kind="satisfaction", overlap=3, annotators=5, name="study", timeout=30, seed=0):
    paths = {"satisfaction": [fixtures / "fga_human_eval"], "coco": [fixtures / "coco"], "slu": [fixtures / "dstc2"]}[kind]
    with write_session(engine) as session:
        study = create_study(session, name, kind, paths, overlap=overlap, timeout_minutes=timeout, seed=seed)
        people = [add_annotator(session, f"{name}-a{i}") for i in range(annotators)]
    return study, people
