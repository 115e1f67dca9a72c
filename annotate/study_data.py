"""A study out of the vote store, for the writers and the analysis; and the analysis cache.

``load_study`` reads a study once into plain data (``exports.study.StudyData``): items, votes,
progress, the kind's dialogues, and an analyser bound to the study's kind.  ``study_analysis``
keeps one analysis per study state and settings, shared by the Analysis page, every export and
the report of an app server.

No permission check in ``load_study``: the CLIs run with the database's own credentials, and the
app reaches it only through functions that check the admin role (here and in ``annotate.service``).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict

from sqlalchemy import Engine, case, func, select, true

from annotate.assignment import progress
from annotate.auth import require_admin
from annotate.kinds import analyse as analyse_kind
from annotate.kinds import get_kind
from annotate.store.db import read_session
from annotate.store.models import Annotator, Item, Study, VoteEvent
from annotate.votes import vote_rows
from exports.study import ItemRecord, StudyData
from formats.tidy import VoteTable, read_votes, votes_from_rows
from metrics.analysis import AnalysisSettings, Progress


def find_study(session, study: str | int) -> Study:
    """A study by name (or id); an unknown one is a ValueError that lists the names."""
    found = session.get(Study, study) if isinstance(study, int) else session.scalar(select(Study).where(Study.name == study))
    if found is None:
        names = ", ".join(session.scalars(select(Study.name).order_by(Study.name))) or "none yet"
        raise ValueError(f"no study named {study!r} (studies: {names})")
    return found


def load_study(engine: Engine, study: str | int, *, history: bool = False) -> StudyData:
    with read_session(engine) as session:
        row = find_study(session, study)
        items = [
            ItemRecord(i.key, i.condition, list(i.questions), i.payload, i.gold, row.overlap + i.extra_capacity, i.pi)
            for i in session.scalars(select(Item).where(Item.study_id == row.id).order_by(Item.position, Item.id))
        ]
        kind = get_kind(row.kind)
        data = StudyData(
            name=row.name,
            kind=row.kind,
            guideline=row.guideline,
            overlap=row.overlap,
            settings=dict(row.settings or {}),
            items=items,
            votes=vote_rows(session, row.id),
            history=vote_rows(session, row.id, history=True) if history else [],
            progress_report=progress(session, row.id),
            dialogues=kind.dialogues(items) if kind.dialogues is not None else {},
            adjudications=adjudications(session, row.id),
        )
    data.analyser = lambda settings, condition=None, progress=None: analyse_kind(
        kind,
        data.vote_table(),
        data.items,
        settings,
        condition=condition,
        progress=progress,
        allocation=(data.settings or {}).get("allocation"),
    )
    return data


def adjudications(session, study_id: int) -> dict[tuple[str, str, str], dict]:
    """The current (latest) adjudicated label per (item key, condition, question)."""
    from annotate.store.models import Adjudication

    rows = session.execute(
        select(Item.key, Item.condition, Adjudication.question, Adjudication.value, Adjudication.by, Adjudication.note)
        .join(Item, Item.id == Adjudication.item_id)
        .where(Item.study_id == study_id)
        .order_by(Adjudication.id)
    )
    return {
        (key, condition or "", question): {"value": value, "by": by, "note": note}
        for key, condition, question, value, by, note in rows
    }


def stored_settings(study_settings: dict | None) -> AnalysisSettings:
    """The analysis settings stored with a study (``settings["analysis"]``), else the defaults: what
    the Analysis page opens with, and what the app's exports, the report, the Progress page's design
    line and ``python -m annotate study design`` use.  A study with an allocation design always has
    the design's FGA λ among the λs analysed, so the row of its main question (r(FGA) - r(JGA)) is
    there wherever the analysis is shown.

    >>> stored_settings({"allocation": {"question": "fga_vs_jga", "lambda": 0.3}}).lambdas
    (0.25, 0.3, 0.5, 0.75, 1.0)
    """
    from dataclasses import replace

    chosen = AnalysisSettings.from_dict((study_settings or {}).get("analysis"))
    design = (study_settings or {}).get("allocation") or {}
    if design and design.get("question", "fga_vs_jga") == "fga_vs_jga":
        lam = float(design.get("lambda", 0.5))
        if lam not in chosen.lambdas:
            chosen = replace(chosen, lambdas=tuple(sorted((*chosen.lambdas, lam))))
    return chosen


def study_votes(engine: Engine, user: Annotator, study_id: int) -> VoteTable:
    require_admin(user)
    with read_session(engine) as session:
        rows = vote_rows(session, study_id)
    return votes_from_rows(((r["item"], r["annotator"], r["question"], r["value"], r["condition"] or "") for r in rows), "votes")


def judge_study(
    engine: Engine, user: Annotator, study_id: int, file_name: str, data: bytes, question: str | None = None, seed: int = 0
) -> dict:
    """An uploaded file of automatic judges' labels (tidy CSV, the judge in ``annotator``) against the
    study's human majority (``metrics.judges``); the judges are never stored as votes."""
    from metrics.analysis import choose_question
    from metrics.judges import judge_report

    human = study_votes(engine, user, study_id)
    if not human.votes:
        raise ValueError("the study has no human votes yet")
    chosen = choose_question(human, question)
    judges = read_votes(file_name, default_question=chosen, data=data)
    return judge_report(human, judges, chosen, seed=seed)


def study_conditions(engine: Engine, user: Annotator, study_id: int) -> list[str]:
    """The conditions (systems, variants) of a study's items, in item order."""
    require_admin(user)
    with read_session(engine) as session:
        conditions = session.scalars(select(Item.condition).where(Item.study_id == study_id).order_by(Item.position))
        return list(dict.fromkeys(conditions))


def analyse(
    engine: Engine,
    user: Annotator,
    study_id: int,
    settings: AnalysisSettings,
    *,
    condition: str | None = None,
    progress: Progress | None = None,
) -> dict:
    """Everything the analysis page shows (admin only); ``progress(fraction, text)`` is called between steps."""
    require_admin(user)
    return load_study(engine, study_id).analyser(settings, condition, progress)


# One study's analysis per (database, study, settings, condition, inputs), shared by the Analysis
# page, the Progress page's design line, every export and the report in this process: the bootstrap
# and the λ calibration take seconds, so a look that changes nothing must cost nothing, and a look
# after any change must see it (issue 24).  ``inputs_version`` reads what the analysis depends on.
_CACHE: OrderedDict[tuple, dict] = OrderedDict()
_CACHE_LOCK = threading.Lock()
CACHE_ENTRIES = 32
# Settings the analysis never reads: operational ones that change often (a votes download records
# ``exported_through``; crowd links, their secret and quota; the places' timeout).
NOT_ANALYSED = frozenset({"crowd", "exported_through", "timeout_minutes"})


def inputs_version(session, study_id: int) -> tuple:
    """A cheap fingerprint of everything a study's analysis reads, in two queries: the study row (its
    kind, overlap and settings but those in ``NOT_ANALYSED``), its vote events and adjudications
    (append-only: count and newest id), its items' capacity, draw and inclusion probabilities
    (sums), their gold answers (only the items with gold, few: read whole) and its members.  Any
    write that changes an input changes it, whichever path (app, CLI, a script) made the write."""
    from annotate.store.models import Adjudication, StudyMember

    def aggregate(*columns, join=None, where):
        query = select(*columns)
        if join is not None:
            query = query.join(Item, Item.id == join)
        return query.where(where).subquery()

    votes = aggregate(
        func.count(VoteEvent.id).label("n"),
        func.max(VoteEvent.id).label("last"),
        join=VoteEvent.item_id,
        where=Item.study_id == study_id,
    )
    judged = aggregate(
        func.count(Adjudication.id).label("n"),
        func.max(Adjudication.id).label("last"),
        join=Adjudication.item_id,
        where=Item.study_id == study_id,
    )
    items = aggregate(
        func.count(Item.id).label("n"),
        func.sum(Item.extra_capacity).label("extra"),
        func.sum(case((Item.included == true(), 1), else_=0)).label("included"),
        func.count(Item.pi).label("n_pi"),
        func.sum(Item.pi).label("pi"),
        func.max(Item.id).label("last"),
        where=Item.study_id == study_id,
    )
    members = aggregate(
        func.count(StudyMember.annotator_id).label("n"),
        func.sum(StudyMember.annotator_id).label("ids"),
        func.max(StudyMember.added_at).label("added"),
        where=StudyMember.study_id == study_id,
    )
    row = session.execute(
        select(
            Study.created_at,
            Study.kind,
            Study.overlap,
            Study.settings,
            votes.c.n,
            votes.c.last,
            judged.c.n,
            judged.c.last,
            items.c.n,
            items.c.extra,
            items.c.included,
            items.c.n_pi,
            items.c.pi,
            items.c.last,
            members.c.n,
            members.c.ids,
            members.c.added,
        )
        .select_from(Study)
        .join(votes, true())
        .join(judged, true())
        .join(items, true())
        .join(members, true())
        .where(Study.id == study_id)
    ).one_or_none()
    if row is None:
        raise ValueError(f"no study with id {study_id}")
    created, kind, overlap, settings, *counts = row
    analysed = {k: v for k, v in (settings or {}).items() if k not in NOT_ANALYSED}
    pi_sum = counts[8]
    counts[8] = None if pi_sum is None else round(float(pi_sum), 9)  # a float sum: the same to 9 decimals
    gold = session.execute(
        select(Item.id, Item.gold).where(Item.study_id == study_id, Item.gold.is_not(None)).order_by(Item.id)
    ).all()
    fingerprint = json.dumps([analysed, [[i, g] for i, g in gold if g]], sort_keys=True, default=str)
    return (created, kind, overlap, hashlib.sha256(fingerprint.encode()).hexdigest(), *counts)


def analysis_key(engine: Engine, study_id: int, settings: AnalysisSettings, condition: str | None) -> tuple:
    """The cache's key: the database, the study, the analysis settings and condition, and the
    study's :func:`inputs_version`."""
    with read_session(engine) as session:
        version = inputs_version(session, study_id)
    return (engine.url.render_as_string(hide_password=False), study_id, settings, condition, version)


def study_analysis(
    engine: Engine,
    user: Annotator,
    study_id: int,
    settings: AnalysisSettings,
    *,
    condition: str | None = None,
    progress: Progress | None = None,
) -> dict:
    """:func:`analyse`, computed once per study state and settings (admin only; checked on every call).

    The result is shared: callers must not change it."""
    require_admin(user)
    key = analysis_key(engine, study_id, settings, condition)
    with _CACHE_LOCK:
        if key in _CACHE:
            _CACHE.move_to_end(key)
            return _CACHE[key]
    result = analyse(engine, user, study_id, settings, condition=condition, progress=progress)
    with _CACHE_LOCK:
        _CACHE[key] = result
        while len(_CACHE) > CACHE_ENTRIES:
            _CACHE.popitem(last=False)
    return result


def clear_cache() -> None:
    with _CACHE_LOCK:
        _CACHE.clear()
