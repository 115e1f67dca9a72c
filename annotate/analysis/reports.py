"""A study's reports, for the admin: progress (judgements, annotators, items, attention checks, time
per item), the study as the export writers take it (with its progress), each annotator's Dawid-Skene
quality, and where the study stands against its allocation design (in numbers and in one line of prose).

Every report is a frozen dataclass defined beside the function that makes it; ``dataclasses.asdict``
of one is its JSON (``python -m annotate status --json``, ``study design --json``).  Nothing here
writes: closing a study whose target is reached is ``annotate.studies.allocation.close_when_reached``, which
``annotate.service`` calls with what :func:`allocation_status` found.  The analysis itself is
``annotate.analysis.analysis_jobs``'s (computed) and ``annotate.analysis.analysis_cache``'s (kept and shared); the
annotators left out of it are ``annotate.analysis.study_data``'s (``exclusions``).
"""

from __future__ import annotations

import statistics
import threading
from collections import OrderedDict
from dataclasses import asdict, dataclass
from datetime import datetime

from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session

from annotate.analysis import analysis_cache, analysis_plan, study_data
from annotate.store.db import read_session
from annotate.store.models import (
    Annotator,
    Assignment,
    Item,
    Study,
    VoteEvent,
    utcnow,
)
from annotate.studies import crowd
from annotate.studies.allocation import QUESTIONS, design_of, judgements_done
from annotate.studies.assignment import ACTIVE, DONE, JUDGED, capacity, cutoff
from exports.study import StudyData
from metrics import adaptive, present
from metrics.results import Calibration, CorrelationReport, DesignAllocation, DesignSummary

# --- progress -------------------------------------------------------------------------------

FAST_SECONDS = 2.0  # a median below this, or below a quarter of the study's median, is flagged
FAST_SHARE = 0.25


@dataclass(frozen=True)
class AnnotatorCounts:
    done: int  # judgements finished
    active: int  # places held now


@dataclass(frozen=True)
class Timing:
    median_seconds: float  # on an item, to 0.1 s
    fast: bool  # implausibly quick (see :func:`time_per_item`)


@dataclass(frozen=True)
class AttentionChecks:
    checked: int  # current answers to gold questions
    failed: int  # ... that differ from the gold answer


@dataclass(frozen=True)
class ItemProgress:
    key: str
    condition: str | None
    done: int  # judgements finished
    needed: int  # the item's places: its k (designed, else the overlap) plus what was re-opened


@dataclass(frozen=True)
class StudyProgress:
    """A study's progress (:func:`progress`); ``asdict`` of it is ``python -m annotate status --json``."""

    study: str
    kind: str
    overlap: int
    items: int  # items to judge (an adaptive design's left-out items are not)
    items_left_out: int
    judgements_done: int  # finished judgements, at most each item's places
    judgements_needed: int  # the places of the items to judge
    fraction_done: float
    items_complete: int
    vote_events: int
    annotators: dict[str, AnnotatorCounts]  # people with at least one vote, by name
    held: dict[str, int]  # places held now by anyone, voters or not, by name
    time_per_item: dict[str, Timing]
    attention: dict[str, AttentionChecks]
    workers: list[crowd.Worker]
    per_item: list[ItemProgress]


def time_per_item(session: Session, study_id: int) -> dict[str, Timing]:
    """Each voter's median seconds on an item (the first vote event of each item: the time from the
    item shown to the judgement) and ``fast``: implausibly quick judging, a median under 2 s or under a
    quarter of the study's median."""
    first = (
        select(func.min(VoteEvent.id))
        .join(Item, Item.id == VoteEvent.item_id)
        .where(Item.study_id == study_id)
        .group_by(VoteEvent.item_id, VoteEvent.annotator_id)
    )
    rows = session.execute(
        select(Annotator.name, VoteEvent.seconds)
        .join(Annotator, Annotator.id == VoteEvent.annotator_id)
        .where(VoteEvent.id.in_(first), VoteEvent.seconds.is_not(None))
    ).all()
    seconds: dict[str, list[float]] = {}
    for name, value in rows:
        seconds.setdefault(name, []).append(float(value))
    overall = statistics.median([s for values in seconds.values() for s in values]) if seconds else None
    timing = {}
    for name, values in sorted(seconds.items()):
        median = statistics.median(values)
        fast = median < FAST_SECONDS or (overall is not None and median < FAST_SHARE * overall)
        timing[name] = Timing(round(median, 1), fast)
    return timing


def attention_checks(session: Session, study_id: int) -> dict[str, AttentionChecks]:
    """Each voter's attention checks: current answers to gold questions (``checked``) and how many
    differ from the gold answer (``failed``)."""
    gold_items = dict(session.execute(select(Item.id, Item.gold).where(Item.study_id == study_id, Item.gold.is_not(None))).all())
    if not gold_items:
        return {}
    latest = (
        select(func.max(VoteEvent.id))
        .where(VoteEvent.item_id.in_(list(gold_items)))
        .group_by(VoteEvent.item_id, VoteEvent.annotator_id, VoteEvent.question)
    )
    checks: dict[str, list[int]] = {}
    for name, item_id, question, value in session.execute(
        select(Annotator.name, VoteEvent.item_id, VoteEvent.question, VoteEvent.value)
        .join(Annotator, Annotator.id == VoteEvent.annotator_id)
        .where(VoteEvent.id.in_(latest))
    ):
        expected = (gold_items[item_id] or {}).get(question)
        if expected is not None:
            counts = checks.setdefault(name, [0, 0])
            counts[0] += 1
            counts[1] += value != expected
    return {name: AttentionChecks(checked, failed) for name, (checked, failed) in sorted(checks.items())}


def progress(session: Session, study_id: int, now: datetime | None = None) -> StudyProgress:
    """Items, finished judgements, and per-annotator and per-item counts.

    ``annotators`` lists only people with at least one vote in the study (``done`` judgements,
    ``active`` places they hold now; an automatic judge's items judged count as its ``done``, never in
    the study's judgements); ``held`` counts the places held now by anyone, voters or not
    (someone looking at an item), apart from the votes; ``time_per_item`` gives each voter's median
    seconds per item and ``fast`` (see :func:`time_per_item`); ``attention`` each voter's attention
    checks (:func:`attention_checks`); ``workers`` the crowd workers (``annotate.studies.crowd.workers``).
    Crowd workers are named ``<platform>:<worker id>`` (``annotate.studies.crowd``), here as in the exports.
    """
    now = now or utcnow()
    study = session.get(Study, study_id)
    every = session.execute(
        select(Item.id, Item.key, Item.condition, capacity(study.overlap), Item.included).where(Item.study_id == study_id)
    ).all()
    # (id, key, condition, places: its k, designed or the overlap, + extra); an adaptive or designed
    # draw's left-out items are not to be judged
    items = [row[:4] for row in every if row[4]]
    done = session.execute(
        select(Assignment.item_id, Annotator.name)
        .join(Annotator, Annotator.id == Assignment.annotator_id)
        .where(Assignment.study_id == study_id, Assignment.status == DONE)
    ).all()
    active = session.execute(
        select(Assignment.item_id, Annotator.name)
        .join(Annotator, Annotator.id == Assignment.annotator_id)
        .where(Assignment.study_id == study_id, Assignment.status == ACTIVE, Assignment.assigned_at >= cutoff(study, now))
    ).all()
    voters = set(
        session.scalars(
            select(Annotator.name)
            .join(VoteEvent, VoteEvent.annotator_id == Annotator.id)
            .join(Item, Item.id == VoteEvent.item_id)
            .where(Item.study_id == study_id)
            .distinct()
        )
    )
    per_item_done: dict[int, int] = {}
    per_annotator: dict[str, list[int]] = {name: [0, 0] for name in voters}  # done, active
    held: dict[str, int] = {}
    for item_id, name in done:
        per_item_done[item_id] = per_item_done.get(item_id, 0) + 1
        per_annotator.setdefault(name, [0, 0])[0] += 1
    # automatic judges: their own places (never one of the k): listed with their count, never in the study's
    judged = session.execute(
        select(Annotator.name, func.count())
        .select_from(Assignment)
        .join(Annotator, Annotator.id == Assignment.annotator_id)
        .where(Assignment.study_id == study_id, Assignment.status == JUDGED)
        .group_by(Annotator.name)
    ).all()
    for name, count in judged:
        per_annotator.setdefault(name, [0, 0])[0] += count
    for _item_id, name in active:
        held[name] = held.get(name, 0) + 1
        if name in per_annotator:
            per_annotator[name][1] += 1
    needed = sum(places for _, _, _, places in items)
    finished = sum(min(per_item_done.get(i, 0), places) for i, _, _, places in items)
    n_votes = session.scalar(select(func.count()).select_from(VoteEvent).join(Item).where(Item.study_id == study_id))
    shown = crowd.display_names(session, study_id)
    rename = lambda counts: {shown.get(name, name): value for name, value in counts.items()}  # noqa: E731
    attention = rename(attention_checks(session, study_id))
    return StudyProgress(
        study=study.name,
        kind=study.kind,
        overlap=study.overlap,
        items=len(items),
        items_left_out=len(every) - len(items),
        judgements_done=finished,
        judgements_needed=needed,
        fraction_done=finished / needed if needed else 1.0,
        items_complete=sum(1 for i, _, _, places in items if per_item_done.get(i, 0) >= places),
        vote_events=int(n_votes or 0),
        annotators={name: AnnotatorCounts(*counts) for name, counts in sorted(rename(per_annotator).items())},
        held=dict(sorted(rename(held).items())),
        time_per_item=rename(time_per_item(session, study_id)),
        attention=attention,
        workers=crowd.workers(session, study_id, attention),
        per_item=[ItemProgress(key, condition, per_item_done.get(i, 0), places) for i, key, condition, places in items],
    )


def load_study(engine: Engine, study: str | int, *, history: bool = False) -> StudyData:
    """The study (by name or id) as the writers take it (``exports.study.StudyData``), read in one
    read transaction: ``annotate.analysis.study_data.read_study`` with its :func:`progress` (as a dict: the
    writers are below ``annotate``).  No permission check: the callers check (``annotate.service``)."""
    with read_session(engine) as session:
        data = study_data.read_study(session, study, history=history)
        study_id = study_data.find_study(session, study).id
        data.progress_report = asdict(progress(session, study_id))
        data.late_settings_changes = analysis_plan.late_settings_changes(session, study_id)
        study_data.leave_out_excluded(session, data, study_id)
    return data


@dataclass(frozen=True)
class AnnotatorQuality:
    """One annotator on the Progress page: Dawid-Skene's estimates (``metrics.crowd``) on the question
    where their competence is lowest, over every vote in the study (the excluded annotators' too, so
    that they can be judged and taken back in); ``near_chance`` is the spammer flag (None: too few
    items, or no question could be fitted)."""

    annotator: str
    question: str | None
    items: int
    competence: float | None
    spammer_score: float | None
    near_chance: bool | None
    excluded: bool
    competence_ci: tuple[float, float] | None = None  # 95% percentile bootstrap over items


_QUALITY: OrderedDict[tuple, list[AnnotatorQuality]] = OrderedDict()
_QUALITY_LOCK = threading.Lock()
QUALITY_RESAMPLES = 200  # bootstrap resamples of the items behind each competence interval


def annotator_quality(engine: Engine, study_id: int) -> list[AnnotatorQuality]:
    """Each human voter's Dawid-Skene competence and spammer flag, lowest competence first; one fit per
    question and study state (kept like the analysis, by :func:`inputs_version`).  No permission check:
    the callers check (``annotate.service``)."""
    from annotate.kinds import get_kind
    from metrics.crowd import dawid_skene

    with read_session(engine) as session:
        key = (engine.url.render_as_string(hide_password=False), study_id, analysis_cache.inputs_version(session, study_id))
        with _QUALITY_LOCK:
            if key in _QUALITY:
                return _QUALITY[key]
        data = study_data.read_study(session, study_id)
        excluded = {e.annotator for e in study_data.exclusions(session, study_id)}
    # the people only: automatic judges are compared with the human majority in the judges table
    judges = {v["annotator"] for v in data.votes if v.get("annotator_kind") == "judge"}
    table = study_data.without(data.vote_table(), judges)
    categories = study_data.declared_answers(get_kind(data.kind).questions, data.items)
    worst: dict[str, AnnotatorQuality] = {}
    for question in table.questions:
        if question == "transcription":
            continue
        votes = table.for_question(question)
        declared = categories.get(question)
        if declared is not None and not {v.value for v in votes} <= set(declared):
            declared = None
        found = dawid_skene(votes, question, categories=declared, resamples=QUALITY_RESAMPLES)
        for skill in found.annotators:
            before = worst.get(skill.annotator)
            if (
                before is None
                or before.competence is None
                or (skill.competence is not None and skill.competence < before.competence)
            ):
                worst[skill.annotator] = AnnotatorQuality(
                    skill.annotator,
                    question,
                    skill.n_items,
                    skill.competence,
                    skill.spammer_score,
                    skill.spammer,
                    skill.annotator in excluded,
                    skill.competence_ci,
                )
    voters = dict.fromkeys(v.annotator for v in table.votes)
    rows = [worst.get(name, AnnotatorQuality(name, None, 0, None, None, None, name in excluded)) for name in voters]
    rows.sort(key=lambda q: (q.competence is None, q.competence or 0.0, q.annotator))
    with _QUALITY_LOCK:
        _QUALITY[key] = rows
        while len(_QUALITY) > analysis_cache.CACHE_ENTRIES:
            _QUALITY.popitem(last=False)
    return rows


# --- the allocation design: where the study stands ------------------------------------------


@dataclass(frozen=True)
class Interval:
    """An estimate with its closed 95% interval."""

    estimate: float
    low: float
    high: float


def main_question(design: DesignAllocation | dict, analysis: dict) -> Interval | None:
    """The study's main question in its analysis, as the Analysis page shows it; None until there is
    a closed interval.  An adaptive study: the 1/π-weighted estimates of the design table (r(FGA) -
    r(JGA) with its bootstrap interval, or λ*); a designed λ study: the design table's λ* (weighted 1/π,
    the interval the designer predicted); a study designed for the comparison: the design table's
    corrected difference ρ(FGA) − ρ(JGA) (k-free, the estimand whose width the designer predicted); a
    uniform one: the difference between metrics (the jackknife-t interval of z_A − z_B) or the λ
    calibration (bootstrap interval of λ*).

    The one place that reads the analysis result (``metrics.analysis``'s dict, ``design_summary``'s
    included) for the design line: through its typed views (``metrics.results``), built here."""
    chosen = design if isinstance(design, DesignAllocation) else DesignAllocation.from_dict(design)
    weighted = DesignSummary.from_dict(analysis.get("design") or {})
    calibration = Calibration.from_dict(analysis.get("calibration") or {})
    correlation = CorrelationReport.from_dict(analysis.get("correlation") or {})
    label = f"fga_{float(chosen.lam):g}"
    if chosen.question == "lambda" and weighted.design in ("adaptive", "designed"):
        # λ* weighted 1/π, as the design table answers it (and the designer predicted its width): for the pool
        found = weighted.lam
        return None if found is None else _closed(found.lambda_star, found.ci)
    if chosen.question == "comparison" and weighted.design == "designed":
        # the corrected (k-free) difference of the design table: the estimand whose width the designer predicted
        found = weighted.corrected.difference if weighted.corrected is not None else None
        if found is None or found.estimate is None or found.ci is None or {found.a, found.b} != {label, "jga"}:
            return None
        sign = 1 if found.a == label else -1  # said as ρ(FGA) - ρ(JGA)
        return _closed(sign * found.estimate, sorted(sign * v for v in found.ci))
    if weighted.design == "adaptive":
        pairs = weighted.differences
    elif chosen.question == "lambda":
        return _closed(calibration.best_lambda, calibration.ci_lambda)
    else:
        pairs = correlation.williams
    pair = next((d for d in pairs if {d.a, d.b} == {label, "jga"}), None)
    if pair is None or pair.diff is None or not pair.diff_ci:
        return None
    sign = 1 if pair.a == label else -1  # said as r(FGA) - r(JGA), whichever order it was computed in
    return _closed(sign * pair.diff, sorted(sign * v for v in pair.diff_ci))


def _closed(estimate, ci) -> Interval | None:
    if estimate is None or not ci or any(v is None for v in ci):
        return None
    return Interval(float(estimate), float(ci[0]), float(ci[1]))


@dataclass(frozen=True)
class AllocationStatus:
    """Where a study stands against its design (:func:`allocation_status`): the design (``lam`` is its
    FGA λ, ``"lambda"`` in the JSON), the judgements spent, the main question's estimate, interval and
    width now (None before there is an interval), the judgements projected to reach ``target_width``,
    and whether it is reached.  ``closed_now``: the service closed the study on this look (the page
    says so; not in the JSON, which is :meth:`as_json`)."""

    policy: str
    question: str
    lam: float = 0.5
    budget: int | None = None
    target_width: float | None = None
    max_k: int | None = None
    spent: int = 0
    closed: bool = False
    width: float | None = None
    estimate: float | None = None
    ci: list[float] | None = None
    projected: int | None = None
    reached: bool = False
    closed_now: bool = False

    def as_json(self) -> dict:
        """What ``python -m annotate study design NAME --json`` prints (the keys of the stored design)."""
        fields = asdict(self)
        del fields["closed_now"]
        return {("lambda" if k == "lam" else k): v for k, v in fields.items()}


def allocation_status(session: Session, study: Study, analysis: dict | None) -> AllocationStatus:
    """The design, the judgements spent, the current interval of the main question and its width, the
    judgements projected to reach ``target_width``.

    The interval is the one the Analysis page shows (issue 24: one computation): ``analysis`` is the
    study's analysis with its stored settings (``annotate.analysis.study_data.stored_settings``) and the system
    the Analysis page opens with, from the cache (``annotate.service.allocation_status``).  Only a
    satisfaction study has a main question; for the others ``analysis`` is not read (None is fine)."""
    design = DesignAllocation.from_dict(design_of(study.settings))
    spent = judgements_done(session, study.id)
    from annotate.kinds import get_kind

    estimated = get_kind(study.kind).rates_metrics  # a main question to estimate
    found = main_question(design, analysis) if estimated and analysis is not None else None
    width = None if found is None else found.high - found.low
    target = design.target_width
    return AllocationStatus(
        policy=design.policy,
        question=design.question,
        lam=design.lam,
        budget=design.budget,
        target_width=design.target_width,
        max_k=design.max_k,
        spent=spent,
        closed=bool(study.archived),
        width=width,
        estimate=None if found is None else found.estimate,
        ci=None if found is None else [found.low, found.high],
        projected=adaptive.projected_judgements(spent, width, target) if estimated else None,
        reached=bool(estimated and target and width is not None and width <= target),
    )


def allocation_line(status: AllocationStatus) -> str:
    """One line for people: the design, what was spent, where the main question stands.

    >>> line = allocation_line(AllocationStatus("adaptive", "fga_vs_jga", budget=300, spent=120, estimate=0.12,
    ...                                         ci=[0.02, 0.22], width=0.2, target_width=0.1, projected=480))
    >>> for part in line.split("; "): print(part)
    Design: adaptive, question r(FGA) - r(JGA)
    120 of 300 judgements spent
    now 0.120 [0.020, 0.220], width 0.200
    target width 0.1: about 480 judgements in all
    """
    parts = [f"Design: {status.policy}, question {QUESTIONS[status.question]}"]
    budget = f" of {status.budget}" if status.budget else ""
    parts.append(f"{status.spent}{budget} judgements spent")
    if status.width is not None:
        # 3 decimals, as every r and interval in the app, the report and the command line (metrics.present)
        parts.append(f"now {present.number(status.estimate)} {present.interval(status.ci)}, width {present.number(status.width)}")
    else:
        parts.append("no interval yet (votes on at least 3 dialogues needed)")
    if status.target_width:
        parts.append(
            f"target width {status.target_width:g}: "
            + (f"about {status.projected} judgements in all" if status.projected else "projection after the first interval")
        )
    if status.closed:
        parts.append("the study is closed")
    return "; ".join(parts)


def clear_cache(engine: Engine | None = None) -> None:
    """Forget the annotator quality and the analyses this process holds (``analysis_cache.clear``: with
    ``engine``, the database's stored analyses too)."""
    with _QUALITY_LOCK:
        _QUALITY.clear()
    analysis_cache.clear(engine)
