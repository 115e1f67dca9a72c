"""Issue 38, item 6: the Progress page's votes import (``service.import_votes_upload``) is the command
line's: the same reading of the file (a bad byte named by its line), the same checks, all or nothing."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from annotate import service
from annotate.people.auth import PermissionDenied, add_annotator
from annotate.store.db import read_session, write_session
from annotate.store.models import Item, VoteEvent
from annotate.studies import create_study
from formats.errors import ReaderError


def _study(engine, fixtures):
    with write_session(engine) as session:
        study = create_study(session, "pilot", "satisfaction", [fixtures / "fga_human_eval"], overlap=3, sample=3)
        admin = add_annotator(session, "boss", "boss-password", "admin")
        person = add_annotator(session, "rater", "rater-password")
    with read_session(engine) as session:
        keys = list(session.scalars(select(Item.key).where(Item.study_id == study.id).order_by(Item.id)))
    return study.id, admin, person, keys


def _votes(engine) -> int:
    with read_session(engine) as session:
        return session.scalar(select(func.count()).select_from(VoteEvent))


def test_an_upload_imports_all_or_nothing_and_names_the_line(engine, fixtures):
    study, admin, person, keys = _study(engine, fixtures)
    header = "item,annotator,question,value\n"
    bad = header + f"{keys[0]},a,satisfied,1\n{keys[1]},a,satisfied,maybe\n"
    with pytest.raises(ReaderError, match=r"^bad\.csv:line 3: "):
        service.import_votes_upload(engine, admin, study, "bad.csv", bad.encode())
    not_utf8 = (header + f"{keys[0]},a,satisfied,1\n").encode() + b"\xff\xfe,b,satisfied,1\n"
    with pytest.raises(ReaderError, match=r"^latin\.csv:line 3"):
        service.import_votes_upload(engine, admin, study, "latin.csv", not_utf8)
    assert _votes(engine) == 0
    with pytest.raises(PermissionDenied):
        service.import_votes_upload(engine, person, study, "good.csv", (header + f"{keys[0]},a,satisfied,1\n").encode())
    good = header + "".join(f"{key},a,satisfied,1\n" for key in keys)
    assert service.import_votes_upload(engine, admin, study, "good.csv", good.encode()) == len(keys)
    assert _votes(engine) == len(keys)
