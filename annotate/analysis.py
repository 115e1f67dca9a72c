"""A study's analysis for the app: votes and dialogues out of the store, numbers from ``metrics``.

Admin only (checked here, on the server).  The numbers come from the same functions as
``python -m metrics agreement | correlate | calibrate``, so the page and the CLI agree;
a satisfaction study's dialogues are rebuilt from the items' stored gold and predicted
states, one system (condition) at a time.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
from sqlalchemy import Engine, func, select

from annotate.db import read_session
from annotate.models import Annotator, Item, Study, VoteEvent
from annotate.service import require_admin
from annotate.votes import vote_rows
from formats.dialogue import Dialogue, Turn
from formats.tidy import VoteTable, votes_from_rows
from metrics.aggregate import majority_labels, unit_table
from metrics.agreement import agreement_report
from metrics.analysis import agreement_all, calibrate_study, correlate_study, majority_table
from metrics.corpus import ScoreSettings


@dataclass(frozen=True)
class AnalysisSettings:
    level: str = "nominal"
    tie: str = "none"
    rating: str = "mean"
    lambdas: tuple[float, ...] = (0.25, 0.5, 0.75, 1.0)
    grid: tuple[float, float, int] = (0.0, 10.0, 501)
    resamples: int = 1000
    folds: int = 5
    seed: int = 0


def study_votes(engine: Engine, user: Annotator, study_id: int) -> VoteTable:
    require_admin(user)
    with read_session(engine) as session:
        rows = vote_rows(session, study_id)
    return votes_from_rows(((r["item"], r["annotator"], r["question"], r["value"], r["condition"] or "") for r in rows), "votes")


def study_kind(engine: Engine, user: Annotator, study_id: int) -> str:
    require_admin(user)
    with read_session(engine) as session:
        return session.get(Study, study_id).kind


def dialogues_from_items(items) -> dict[str, list[Dialogue]]:
    """Satisfaction items (``key``, ``condition``, ``payload``) → dialogues with predictions, per condition."""
    by_condition: dict[str, list[Dialogue]] = {}
    for item in items:
        turns = [
            Turn(index=t["index"], system=t.get("system", ""), user=t.get("user", ""),
                 gold=frozenset(tuple(x) for x in t["gold"]), pred=frozenset(tuple(x) for x in t["pred"]))
            for t in item.payload["turns"]
        ]  # fmt: skip
        by_condition.setdefault(item.condition, []).append(Dialogue(item.key, turns, "study"))
    return by_condition


def study_dialogues(engine: Engine, user: Annotator, study_id: int) -> dict[str, list[Dialogue]]:
    """A satisfaction study's dialogues with predictions, per condition (system)."""
    require_admin(user)
    with read_session(engine) as session:
        items = list(session.scalars(select(Item).where(Item.study_id == study_id).order_by(Item.position)))
        return dialogues_from_items(items)


def coco_summary(votes: VoteTable, tie: str = "none", level: str = "nominal", resamples: int = 0) -> list[dict]:
    """CoCo paper Table 3 layout: per condition, % human-like and % correct by majority vote,
    over the items that have a majority, with ties counted and agreement (Krippendorff's α, Fleiss' κ)."""
    rows = []
    conditions = list(dict.fromkeys(v.condition for v in votes.votes))
    for condition in conditions:
        row: dict = {"condition": condition}
        for question, label in (("human_like", "human_like"), ("correct", "correct")):
            chosen = [v for v in votes.for_question(question) if v.condition == condition]
            if not chosen:
                row.update({f"{label}_pct": None, f"{label}_n": 0, f"{label}_ties": 0, f"{label}_alpha": None})
                continue
            table = unit_table(chosen)
            majority = majority_labels(table, tie)
            decided = [label_ for label_ in majority.labels if label_ is not None]
            report = agreement_report(chosen, level=level, resamples=resamples)
            row[f"{label}_pct"] = 100 * sum(v == "1" for v in decided) / len(decided) if decided else None
            row[f"{label}_n"] = len(decided)
            row[f"{label}_ties"] = majority.n_ties
            row[f"{label}_alpha"] = report["krippendorff_alpha"]
            row[f"{label}_kappa"] = report["fleiss_kappa"]
        rows.append(row)
    return rows


def gold_answers(items) -> dict[tuple[tuple[str, str], str], str]:
    """Attention-check answers of items (``key``, ``condition``, ``gold``): {((key, condition), question): value}."""
    return {((i.key, i.condition or ""), q): v for i in items if i.gold for q, v in i.gold.items()}


def analyse(
    engine: Engine, user: Annotator, study_id: int, settings: AnalysisSettings, *, condition: str | None = None, progress=None
) -> dict:
    """Everything the analysis page shows (admin only); ``progress(fraction, text)`` is called between steps."""
    kind = study_kind(engine, user, study_id)
    votes = study_votes(engine, user, study_id)
    dialogues = study_dialogues(engine, user, study_id) if kind == "satisfaction" else {}
    with read_session(engine) as session:
        gold = gold_answers(session.scalars(select(Item).where(Item.study_id == study_id)))
    return compute(kind, votes, dialogues, settings, condition=condition, progress=progress, gold=gold)


# One study's analysis per (database, study, settings, condition, votes), shared by the Analysis
# page, every export and the report in this process: the bootstrap and the λ calibration take
# seconds, and votes are append-only, so the count and the newest id of a study's vote events
# say whether anything changed.
_CACHE: OrderedDict[tuple, dict] = OrderedDict()
_CACHE_LOCK = threading.Lock()
CACHE_ENTRIES = 32


def analysis_key(engine: Engine, study_id: int, settings: AnalysisSettings, condition: str | None) -> tuple:
    """What a study's analysis depends on: its items never change; its votes only grow."""
    with read_session(engine) as session:
        created = session.scalar(select(Study.created_at).where(Study.id == study_id))
        if created is None:
            raise ValueError(f"no study with id {study_id}")
        n_events, last_event = session.execute(
            select(func.count(VoteEvent.id), func.max(VoteEvent.id)).join(Item, Item.id == VoteEvent.item_id)
            .where(Item.study_id == study_id)
        ).one()  # fmt: skip
    return (engine.url.render_as_string(hide_password=False), study_id, created, settings, condition, n_events, last_event)


def study_analysis(
    engine: Engine, user: Annotator, study_id: int, settings: AnalysisSettings, *, condition: str | None = None, progress=None
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


def compute(
    kind: str, votes: VoteTable, dialogues: dict[str, list[Dialogue]], settings: AnalysisSettings, *,
    condition: str | None = None, progress=None, gold: dict | None = None,
) -> dict:  # fmt: skip
    """The analysis of a study's votes (and, for satisfaction studies, its dialogues); no database.
    ``gold`` (see :func:`gold_answers`) adds each annotator's accuracy on attention-check items."""
    report = (lambda fraction, text: None) if progress is None else progress
    result: dict = {"kind": kind, "n_votes": len(votes.votes), "questions": votes.questions}
    if not votes.votes:
        return result
    report(0.1, "agreement")
    result["agreement"] = agreement_all(votes, level=settings.level, resamples=settings.resamples, seed=settings.seed, gold=gold)
    result["majority"] = {
        q: majority_table(votes.for_question(q), q, settings.tie, settings.seed) for q in votes.questions if q != "transcription"
    }
    if kind == "coco":
        result["coco"] = coco_summary(votes, settings.tie)
    if kind == "satisfaction" and dialogues:
        chosen = condition if condition is not None else next(iter(dialogues))
        rated = [v for v in votes.for_question("satisfied") if v.condition == chosen]
        result["condition"] = chosen
        result["conditions"] = list(dialogues)
        if len({v.item for v in rated}) >= 3:
            metrics_settings = ScoreSettings(settings.lambdas, tuple(f"{v:g}" for v in settings.lambdas))
            report(0.4, "correlation")
            try:
                result["correlation"] = correlate_study(
                    dialogues[chosen], rated, metrics_settings, rating=settings.rating, tie=settings.tie,
                    resamples=settings.resamples, seed=settings.seed,
                )  # fmt: skip
                report(0.7, "λ calibration")
                grid = np.linspace(*settings.grid)
                grid_settings = ScoreSettings(tuple(grid), tuple(f"{v:g}" for v in grid))
                result["calibration"] = calibrate_study(
                    dialogues[chosen], rated, grid_settings, grid, rating=settings.rating, tie=settings.tie,
                    resamples=settings.resamples, folds=settings.folds, seed=settings.seed,
                )  # fmt: skip
            except ValueError as why:
                result["correlation_note"] = str(why)
        else:
            result["correlation_note"] = "correlation needs votes on at least 3 dialogues of this system"
    report(1.0, "done")
    return result
