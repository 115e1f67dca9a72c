"""A study out of the vote store, for the writers and the analysis.

``read_study`` reads a study once into plain data (``exports.study.StudyData``): items, votes, the
kind's dialogues, adjudications, and an analyser bound to the study's kind; ``analyse`` is its
analysis; ``analyse_afresh`` is the analysis the pages, the exports and the report show: without the
annotators an admin left out of it (``exclusions``, recorded and reversible).  The study as the writers
take it, with its progress report, is ``annotate.analysis.reports.load_study``; the analysis cache that keeps one
analysis per study state and settings is ``annotate.analysis.analysis_cache``, filled by ``annotate.analysis.analysis_jobs``:
they sit above this module.

No permission check in ``read_study``: the CLIs run with the database's own credentials, and the
app reaches it only through functions that check the admin role (here and in ``annotate.service``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

from sqlalchemy import Engine, func, select, true
from sqlalchemy.orm import Session

from annotate.judging.votes import vote_rows
from annotate.kinds import analyse as analyse_kind
from annotate.kinds import get_kind
from annotate.people.auth import require_admin
from annotate.store.db import read_session
from annotate.store.models import AnalysisExclusion, Annotator, CrowdWorker, Item, Study, VoteEvent
from annotate.studies import crowd
from exports.study import ItemRecord, StudyData
from formats.tidy import VoteTable, read_votes, votes_from_rows
from metrics.adaptive import fixed_part
from metrics.analysis import AnalysisSettings, Progress


def find_study(session, study: str | int) -> Study:
    """A study by name (or id); an unknown one is a ValueError that lists the names."""
    found = session.get(Study, study) if isinstance(study, int) else session.scalar(select(Study).where(Study.name == study))
    if found is None:
        names = ", ".join(session.scalars(select(Study.name).order_by(Study.name))) or "none yet"
        raise ValueError(f"no study named {study!r} (studies: {names})")
    return found


def read_study(session, study: str | int, *, history: bool = False) -> StudyData:
    """The study (by name or id) as plain data, read in the caller's (read) transaction; its
    ``progress_report`` is left empty (``annotate.analysis.reports.load_study`` fills it)."""
    row = find_study(session, study)
    items = [
        ItemRecord(
            i.key,
            i.condition,
            list(i.questions),
            i.payload,
            i.gold,
            (i.k or row.overlap) + i.extra_capacity,  # its designed k (issue 29), else the overlap, + added places
            i.pi,
            i.extra_capacity,
        )
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
        dialogues=kind.dialogues(items) if kind.dialogues is not None else {},
        adjudications=adjudications(session, row.id),
    )
    extra = {(i.key, i.condition or ""): i.extra for i in items if i.extra}
    first_seen = first_vote_order(session, row.id) if extra and kind.dialogues is not None else None
    data.analyser = bind_analyser(data, kind, first_seen)
    return data


def bind_analyser(data: StudyData, kind, first_seen: dict | None):
    """The study's analysis, ``(settings, condition, progress) -> dict`` (``annotate.kinds.analyse``).

    Optional stopping (issue 26): an item with extra places (the ``max_k`` rule, an admin's re-open:
    both decided from the votes so far) rates its dialogue in the correlations, differences and λ*
    from its fixed part, the votes of its first ``overlap`` annotators by their first vote event
    (``first_seen``: (unit, annotator) -> that event's id; ``metrics.adaptive.fixed_part``), so no
    stopping decision moves the estimate; every vote still counts in agreement and majority labels,
    and the tables say so in a note.  With no extra places (or ``first_seen`` None) nothing changes."""
    # places added from the votes (max_k growth, re-opens), never a designed k (issue 29)
    extra = {(i.key, i.condition or ""): i.extra for i in data.items if i.extra}

    judges = sorted({v["annotator"] for v in data.votes if v.get("annotator_kind") == "judge"})

    def analyser(settings, condition=None, progress=None):
        table = data.vote_table()
        humans = without(table, set(judges))
        if not settings.include_judges:
            table = humans
        rated = None
        if first_seen is not None and extra:
            base = {(i.key, i.condition or ""): i.capacity - i.extra for i in data.items}  # designed k, else overlap
            kept = fixed_part(table.votes, data.overlap, extra, first_seen, base=base)
            if len(kept) < len(table.votes):
                rated = VoteTable(kept, table.source, table.n_repeated, list(dict.fromkeys(v.question for v in kept)))
        result = analyse_kind(
            kind,
            table,
            data.items,
            settings,
            condition=condition,
            progress=progress,
            allocation=(data.settings or {}).get("allocation"),
            categories=declared_answers(kind.questions, data.items),
            rating_votes=rated,
        )
        if judges:
            result["judges"] = judges_against_humans(humans, data.vote_table(), judges, settings)
            note = (
                f"automatic judges ({', '.join(judges)}) are counted with the humans here (analysis setting)"
                if settings.include_judges
                else f"automatic judges ({', '.join(judges)}) are kept apart from the humans: see the judges table"
            )
            for section in ("agreement", "correlation"):
                if isinstance(result.get(section), dict):
                    result[section]["notes"] = [*result[section].get("notes", []), note]
        if rated is not None:
            dropped = len(table.votes) - len(rated.votes)
            designed = any(i.capacity - i.extra != data.overlap for i in data.items)
            first = "k (its designed k)" if designed else str(data.overlap)
            kept = {(v.unit, v.annotator) for v in rated.votes}
            units = len({v.unit for v in table.votes if (v.unit, v.annotator) not in kept})
            note = (
                f"optional stopping: {dropped} vote(s) on {units} dialogue(s) came through extra places (max_k, re-opens), "
                "decided from the votes "
                f"so far; each dialogue's rating in the correlations, differences and λ* is the mean of its first "
                f"{first} annotators' votes, so the stopping rule cannot bias it; the extra votes count in agreement "
                "and majority labels only"
            )
            for section in ("correlation", "design"):
                if isinstance(result.get(section), dict):
                    result[section]["notes"] = [*result[section].get("notes", []), note]
        return result

    return analyser


def without(table: VoteTable, names: set[str]) -> VoteTable:
    """The votes table without the votes of ``names`` (the same table when there are none)."""
    if not names:
        return table
    kept = [v for v in table.votes if v.annotator not in names]
    return VoteTable(kept, table.source, table.n_repeated, list(dict.fromkeys(v.question for v in kept)))


def judges_against_humans(humans: VoteTable, everyone: VoteTable, judges: list[str], settings) -> dict:
    """The judges table of a study (issue 28): each automatic judge that voted in the study against the
    human majority (``metrics.judges.judge_report``; humans only, whatever ``include_judges`` says), one
    report per question the judges answered and the humans have votes on."""
    from metrics.judges import judge_report

    theirs = VoteTable([v for v in everyone.votes if v.annotator in set(judges)], "judges", 0, [])
    questions = [q for q in dict.fromkeys(v.question for v in theirs.votes) if humans.for_question(q)]
    return {
        "judges": judges,
        "questions": {q: judge_report(humans, theirs, q, resamples=settings.resamples, seed=settings.seed) for q in questions},
    }


def first_vote_order(session, study_id: int) -> dict[tuple[tuple[str, str], str], int]:
    """(unit (item key, condition), annotator) -> the id of the annotator's first vote event on the
    item: the order in which a dialogue's annotators came.  Annotators are named as in
    ``annotate.judging.votes.vote_rows`` (a crowd worker ``<platform>:<worker id>``)."""
    first = (
        select(VoteEvent.item_id, VoteEvent.annotator_id, func.min(VoteEvent.id).label("first"))
        .join(Item, Item.id == VoteEvent.item_id)
        .where(Item.study_id == study_id)
        .group_by(VoteEvent.item_id, VoteEvent.annotator_id)
        .subquery()
    )
    rows = session.execute(
        select(Item.key, Item.condition, Annotator.name, CrowdWorker.platform, CrowdWorker.worker_id, first.c.first)
        .join(Item, Item.id == first.c.item_id)
        .join(Annotator, Annotator.id == first.c.annotator_id)
        .outerjoin(CrowdWorker, CrowdWorker.annotator_id == Annotator.id)
    )
    return {
        ((key, condition or ""), f"{platform}:{worker}" if platform else name): event
        for key, condition, name, platform, worker, event in rows
    }


def declared_answers(questions, items) -> dict[str, list[str]]:
    """The answers each question allows, from its spec, for every agreement statistic (not the answers
    that happen to have been voted): a binary question 0, 1 (also an item's own question, an SLU act),
    a choice its ``values``; a text question has none (its agreement uses the answers given).

    >>> from annotate.kinds import get_kind
    >>> declared_answers(get_kind("slu").questions, [])["transcription_status"][:2]
    ['transcribed', 'audio-not-available']
    """
    from annotate.kinds.base import question_spec

    names = dict.fromkeys([*(spec["name"] for spec in questions), *(q for item in items for q in item.questions)])
    declared = {}
    for name in names:
        spec = question_spec(questions, name)
        if spec["type"] == "binary":
            declared[name] = ["0", "1"]
        elif spec.get("values"):
            declared[name] = [str(v) for v in spec["values"]]
    return declared


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
    """Everything the analysis page shows (admin only); ``progress(fraction, text)`` is called between steps.
    Computed afresh, every annotator's votes counted (the pages show :func:`analyse_afresh`)."""
    require_admin(user)
    with read_session(engine) as session:
        data = read_study(session, study_id)
    return data.analyser(settings, condition, progress)


# --- annotators left out of the analysis ------------------------------------------------------


@dataclass(frozen=True)
class Exclusion:
    """An annotator an admin left out of a study's analysis (the latest event of theirs is an
    exclusion): their name as the exports show it, who excluded them, when (ISO, to the second), why."""

    annotator: str
    by: str
    at: str
    reason: str


def exclusions(session: Session, study_id: int) -> list[Exclusion]:
    """The annotators left out of the study's analysis now, in the order they were excluded."""
    latest = (
        select(func.max(AnalysisExclusion.id))
        .where(AnalysisExclusion.study_id == study_id)
        .group_by(AnalysisExclusion.annotator_id)
    )
    rows = session.execute(
        select(Annotator.name, AnalysisExclusion.by, AnalysisExclusion.at, AnalysisExclusion.reason)
        .join(Annotator, Annotator.id == AnalysisExclusion.annotator_id)
        .where(AnalysisExclusion.id.in_(latest), AnalysisExclusion.excluded == true())
        .order_by(AnalysisExclusion.id)
    ).all()
    shown = crowd.display_names(session, study_id)
    return [Exclusion(shown.get(name, name), by, at.isoformat(timespec="seconds"), reason or "") for name, by, at, reason in rows]


def exclusion_note(excluded: list[Exclusion]) -> str:
    """The sentence the analysis, its exports and the report carry.

    >>> exclusion_note([Exclusion("ann7", "admin", "2026-11-24T06:10:00", "spammer")])
    'excluded from the analysis: ann7 (by admin, 2026-11-24: spammer); their votes stay in the store and in the votes exports'
    """
    parts = [f"{e.annotator} (by {e.by}, {e.at[:10]}{': ' + e.reason if e.reason else ''})" for e in excluded]
    return "excluded from the analysis: " + ", ".join(parts) + "; their votes stay in the store and in the votes exports"


def leave_out_excluded(session: Session, data: StudyData, study_id: int) -> list[Exclusion]:
    """Bind the study's analyser to the votes of the annotators not excluded, and make it say who was
    left out (a note in the agreement, model labels and correlation sections, and ``excluded`` in the
    result).  ``data.votes`` and ``data.history`` stay whole: the votes exports are the store's data."""
    excluded = exclusions(session, study_id)
    if not excluded or data.analyser is None:
        return excluded
    names = {e.annotator for e in excluded}
    kept = replace(data, votes=[v for v in data.votes if v["annotator"] not in names], history=[])
    kind = get_kind(data.kind)
    extra = any(i.extra for i in data.items)
    first_seen = first_vote_order(session, study_id) if extra and kind.dialogues is not None else None
    inner = bind_analyser(kept, kind, first_seen)
    note = exclusion_note(excluded)
    listed = [asdict(e) for e in excluded]
    n_left_out = len(data.votes) - len(kept.votes)

    def analyser(settings, condition=None, progress=None):
        result = inner(settings, condition, progress)
        result["excluded"] = {"annotators": listed, "votes_left_out": n_left_out, "note": note}
        for section in ("agreement", "correlation", "design"):
            if isinstance(result.get(section), dict):
                result[section]["notes"] = [*result[section].get("notes", []), note]
        for found in (result.get("model_labels") or {}).values():
            found["notes"] = [*found.get("notes", []), note]
        return result

    data.analyser = analyser
    return excluded


def analyse_afresh(engine: Engine, study_id: int, settings: AnalysisSettings, condition: str | None, progress) -> dict:
    """The study's analysis without the annotators left out of it (:func:`leave_out_excluded`), computed
    afresh (no access check: ``annotate.analysis.analysis_jobs`` computes it for the pages, the exports and the
    report, and keeps it in ``annotate.analysis.analysis_cache``)."""
    with read_session(engine) as session:
        data = read_study(session, study_id)
        leave_out_excluded(session, data, study_id)
    return data.analyser(settings, condition, progress)
