"""A study read out of the vote store once, for every writer.

No permission check here: the CLI runs with the database's own credentials, and the app
reaches this only through ``annotate.service`` (admin only).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import Engine, select

from annotate.assignment import progress
from annotate.db import read_session
from annotate.models import Item, Study
from annotate.votes import vote_rows
from formats.tidy import VoteTable, votes_from_rows


@dataclass(frozen=True)
class ItemRecord:
    key: str
    condition: str
    questions: list[str]
    payload: dict
    gold: dict | None
    capacity: int


@dataclass
class StudyData:
    name: str
    kind: str
    guideline: str
    overlap: int
    settings: dict
    items: list[ItemRecord]
    votes: list[dict]  # current votes as export rows (annotate.votes.vote_rows)
    history: list[dict] = field(default_factory=list)  # every event, when loaded with history=True
    progress_report: dict = field(default_factory=dict)  # annotate.assignment.progress, read at load time

    def vote_table(self) -> VoteTable:
        rows = ((v["item"], v["annotator"], v["question"], v["value"], v["condition"] or "") for v in self.votes)
        return votes_from_rows(rows, f"study {self.name}")


def find_study(session, name: str) -> Study:
    study = session.scalar(select(Study).where(Study.name == name))
    if study is None:
        names = ", ".join(session.scalars(select(Study.name).order_by(Study.name))) or "none yet"
        raise ValueError(f"no study named {name!r} (studies: {names})")
    return study


def load_study(engine: Engine, name: str, *, history: bool = False) -> StudyData:
    with read_session(engine) as session:
        study = find_study(session, name)
        items = [
            ItemRecord(i.key, i.condition, list(i.questions), i.payload, i.gold, study.overlap + i.extra_capacity)
            for i in session.scalars(select(Item).where(Item.study_id == study.id).order_by(Item.position, Item.id))
        ]
        return StudyData(
            name=study.name,
            kind=study.kind,
            guideline=study.guideline,
            overlap=study.overlap,
            settings=dict(study.settings or {}),
            items=items,
            votes=vote_rows(session, study.id),
            history=vote_rows(session, study.id, history=True) if history else [],
            progress_report=progress(session, study.id),
        )
