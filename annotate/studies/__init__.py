"""Studies: creating one from files (one transaction), its questions and the values they take; a
study's change log, the record of its exports, and its deletion.

How items are built from files is the task kind's business (``annotate/kinds/``); this module
checks names, samples units, stores the study and its items, and applies gold answers.  Who may
annotate a study is ``annotate.studies.membership``'s business (access rules only).

``sample`` draws N units at random with ``seed`` (a unit is a dialogue, a CoCo turn — both
its conditions — or an SLU turn), as both papers' studies did.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from annotate.kinds import ItemDraft, StudyError, get_kind
from annotate.kinds.base import BINARY
from annotate.kinds.base import question_spec as spec_in
from annotate.store.models import DEFAULT_TIMEOUT_MINUTES, Annotator, CrowdWorker, Item, ItemAudio, Study, StudyChange, VoteEvent
from annotate.studies.assignment import lock_study
from formats import ReaderError
from formats.gold import read_gold
from formats.tidy import UNSURE, is_unsure

__all__ = [
    "CLI",
    "Change",
    "ItemDraft",
    "StudyError",
    "build_items",
    "change",
    "changes",
    "check_value",
    "create_study",
    "delete_study",
    "last_vote",
    "question_spec",
    "record",
    "record_export",
]


def question_spec(study: Study, name: str) -> dict:
    """The spec of a question: study-level, or a binary question of the item's own (an SLU act)."""
    return spec_in(study.questions, name)


def required_questions(study: Study, item: Item) -> list[str]:
    return [q for q in item.questions if question_spec(study, q).get("required", True)]


def check_value(study: Study, item: Item, question: str, value: str) -> str:
    """The value as stored; raises StudyError for an unknown question or a bad value."""
    if question not in item.questions:
        raise StudyError(f"item {item.key} has no question {question!r}")
    spec = question_spec(study, question)
    value = str(value).strip() if spec["type"] != "text" else str(value)
    if spec["type"] != "text" and is_unsure(value):
        if not spec.get("unsure"):
            raise StudyError(f"question {question!r} does not offer {UNSURE!r}")
        return UNSURE  # a declared answer: missing data in the analysis (formats.tidy.UNSURE)
    if spec["type"] == "binary" and value not in BINARY:
        raise StudyError(f"question {question!r} takes 1 or 0, not {value!r}")
    if spec["type"] == "choice" and value not in spec["values"]:
        raise StudyError(f"question {question!r} takes one of {', '.join(spec['values'])}, not {value!r}")
    return value


def build_items(kind: str, paths: list, condition: str | None = None) -> list[ItemDraft]:
    chosen = get_kind(kind)
    if condition and not chosen.takes_condition:
        raise StudyError(f"an {kind} study has no conditions")
    return chosen.build_items(paths, condition)


def sample_units(drafts: list[ItemDraft], sample: int | None, seed: int) -> list[ItemDraft]:
    if sample is None:
        return drafts
    units = sorted({d.unit for d in drafts})
    if sample <= 0 or sample > len(units):
        raise StudyError(f"cannot sample {sample} units from {len(units)}")
    chosen = set(random.Random(seed).sample(units, sample))
    return [d for d in drafts if d.unit in chosen]


def prepare_items(
    kind: str, paths: list, condition: str | None = None, sample: int | None = None, seed: int = 0
) -> list[ItemDraft]:
    """Read and sample a study's items from its files: the slow part of creating a study, done before
    the write transaction (``create_study(..., drafts=...)``) so annotators' votes do not wait on it."""
    return sample_units(build_items(kind, paths, condition), sample, seed)


# The names an upload gives its items, at most as long as the store keeps them (PostgreSQL refused a
# longer one with a DataError): an item's key (a dialogue id and turn), its condition (a system's name),
# a question's name (an SLU act).
NAME_CAPS = {"an item key": 300, "a condition (system name)": 100, "a question name": 300}


def _check_names(draft: ItemDraft) -> None:
    named = [("an item key", draft.key), ("a condition (system name)", draft.condition)]
    named += [("a question name", question) for question in draft.questions]
    for what, value in named:
        cap = NAME_CAPS[what]
        if len(value) > cap:
            raise StudyError(
                f"{what} has at most {cap} characters: {value[:60]!r}... has {len(value):,} (item {draft.key[:60]!r})"
            )


def create_study(
    session: Session,
    name: str,
    kind: str,
    paths: list,
    *,
    overlap: int = 3,
    condition: str | None = None,
    guideline: str = "",
    sample: int | None = None,
    seed: int = 0,
    gold_path: str | os.PathLike | None = None,
    timeout_minutes: int = DEFAULT_TIMEOUT_MINUTES,
    drafts: list[ItemDraft] | None = None,
    unsure: bool = False,
) -> Study:
    """Create a study and its items in the caller's transaction (nothing on any error).  ``drafts``:
    the items as :func:`prepare_items` read them beforehand (outside the write lock); else read here.
    ``unsure``: the kind's study-level yes/no and choice questions also offer "unsure" (a declared answer,
    missing data in the analysis: ``formats.tidy.UNSURE``); off by default, as the papers' studies asked."""
    name = name.strip()
    if not name:
        raise StudyError("a study needs a name")
    if len(name) > 200:  # the store's column (and the API's {study})
        raise StudyError("a study name has at most 200 characters")
    if overlap < 1:
        raise StudyError("overlap (annotators per item) must be at least 1")
    if session.scalar(select(Study.id).where(Study.name == name)) is not None:
        raise StudyError(f"a study named {name!r} exists already")
    if drafts is None:
        drafts = prepare_items(kind, paths, condition, sample, seed)
    keys = set()
    for draft in drafts:
        _check_names(draft)
        if (draft.key, draft.condition) in keys:
            raise StudyError(f"item {draft.key} ({draft.condition or 'no condition'}) appears twice in the input")
        keys.add((draft.key, draft.condition))
    study = Study(
        name=name,
        kind=kind,
        guideline=guideline,
        overlap=overlap,
        questions=[
            {**spec, "unsure": True} if unsure and spec["type"] in ("binary", "choice") else spec
            for spec in get_kind(kind).questions
        ],
        settings={
            "seed": seed,
            "timeout_minutes": timeout_minutes,
            "sample": sample,
            "sources": [str(p) for p in paths],
            "conditions": sorted({d.condition for d in drafts}),
        },
    )
    session.add(study)
    session.flush()
    items = [
        Item(
            study_id=study.id, key=d.key, condition=d.condition, position=i, questions=d.questions, payload=d.payload, meta=d.meta
        )
        for i, d in enumerate(drafts)
    ]
    session.add_all(items)
    session.flush()
    session.add_all(
        ItemAudio(item_id=item.id, file_name=d.audio[0], mime=d.audio[1], data=d.audio[2])
        for item, d in zip(items, drafts)
        if d.audio is not None
    )
    if gold_path is not None:
        apply_gold(study, items, read_gold(gold_path), gold_path)
    session.flush()
    return study


def apply_gold(study: Study, items: list[Item], rows: list[dict], path) -> None:
    by_key: dict[str, list[Item]] = {}
    for item in items:
        by_key.setdefault(item.key, []).append(item)
    for line, row in enumerate(rows, start=2):
        matches = by_key.get(row["item"], [])
        if row.get("condition"):
            matches = [m for m in matches if m.condition == row["condition"]]
        if not matches:
            raise ReaderError(path, f"line {line}", f"no item {row['item']!r} in the study")
        for item in matches:
            try:
                value = check_value(study, item, row["question"], row["value"])
            except StudyError as err:
                raise ReaderError(path, f"line {line}", str(err)) from None
            item.gold = {**(item.gold or {}), row["question"]: value}


# --- the change log, exports and deletion ---------------------------------------------------

CLI = "cli"  # who made a change from the command line (it has no login)


def record(session: Session, study_id: int, by: Annotator | str, what: str, old, new) -> None:
    """One line of the study's change log: who (a name; ``by`` an annotator or any actor with a
    ``name``, or the name itself), what, the old and the new value (as text)."""
    session.add(StudyChange(study_id=study_id, by=by if isinstance(by, str) else by.name, what=what, old=str(old), new=str(new)))


def change(session: Session, study: Study, by: Annotator | str, field: str, value) -> None:
    """Set one of the study's own fields (overlap, guideline, archived), recording a real change."""
    old = getattr(study, field)
    if old != value:
        record(session, study.id, by, field, old, value)
    setattr(study, field, value)


@dataclass(frozen=True)
class Change:
    """One line of a study's change log, oldest first (``python -m annotate study changes --json``
    gives these fields, in this order)."""

    at: str  # ISO time, to the second
    by: str  # the admin's name, "cli", or "allocation" (the study closed itself)
    what: str
    old: str
    new: str


def changes(session: Session, study_id: int) -> list[Change]:
    rows = session.scalars(select(StudyChange).where(StudyChange.study_id == study_id).order_by(StudyChange.id))
    return [Change(c.at.isoformat(timespec="seconds"), c.by, c.what, c.old, c.new) for c in rows]


def last_vote(session: Session, study_id: int) -> int:
    """The id of the study's newest vote event (0: none)."""
    return int(
        session.scalar(select(func.max(VoteEvent.id)).join(Item, Item.id == VoteEvent.item_id).where(Item.study_id == study_id))
        or 0
    )


def record_export(session: Session, study: Study, by: Annotator | str, what: str, through: int) -> None:
    """The votes of the study up to event ``through`` were exported (downloaded, or written by the CLI):
    recorded, and remembered for :func:`delete_study`.

    The study row is locked (and read again) here, whatever the caller read before: the settings are
    written back whole, so a copy read without the lock would undo an admin's change committed in
    between (issue 23: crowd secrets reverted by exports)."""
    study = lock_study(session, study.id)
    record(session, study.id, by, "export", "", f"{what}, vote events up to #{through}")
    settings = dict(study.settings or {})
    settings["exported_through"] = max(int(settings.get("exported_through", 0)), int(through))
    study.settings = settings


def delete_study(session: Session, study: Study, confirm: str) -> None:
    """Delete the study with its items, votes, adjudications and change log.

    Refused unless ``confirm`` is the study's name, and, while the study has votes, unless every
    vote event was exported first (:func:`record_export`): a delete cannot lose a vote nobody kept.
    """
    study = lock_study(session, study.id)  # its exports read under the lock (see record_export)
    if confirm.strip() != study.name:
        raise ValueError(f"type the study's name ({study.name!r}) to confirm the delete")
    newest = last_vote(session, study.id)
    through = int((study.settings or {}).get("exported_through", 0))
    if newest and not through:
        raise ValueError(f"study {study.name!r} has votes: export the votes first (a votes download in the app, or votes export)")
    if newest > through:
        since = session.scalar(
            select(func.count(VoteEvent.id))
            .join(Item, Item.id == VoteEvent.item_id)
            .where(Item.study_id == study.id, VoteEvent.id > through)
        )
        raise ValueError(f"{since} vote event{'s' if since != 1 else ''} since the last export: export the votes again")
    # The study's crowd workers exist for it alone; the database cascades do the rest (items, votes,
    # places, audio, adjudications, members, the change log).
    session.execute(
        delete(Annotator).where(Annotator.id.in_(select(CrowdWorker.annotator_id).where(CrowdWorker.study_id == study.id)))
    )
    session.execute(delete(Study).where(Study.id == study.id))
    session.expunge(study)
