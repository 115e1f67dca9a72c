"""Study-level analysis shared by ``python -m metrics`` and the app's analysis page.

Inputs are plain: dialogues with predictions (``formats.dialogue``) and votes
(``formats.tidy``).  Outputs are the CLIs' JSON contracts; every result carries a
signature string that states the settings it depends on.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from formats.dialogue import Dialogue
from formats.tidy import Vote, VoteTable
from metrics.aggregate import aggregate_rows, majority_labels, unit_table
from metrics.agreement import LEVELS, agreement_report
from metrics.calibrate import FgaTerms, calibrate
from metrics.corpus import ScoreSettings
from metrics.correlation import correlation_report, human_ceiling, ratings_for
from metrics.scores import score_table
from metrics.turnstats import extract


def analysis_signature(settings: ScoreSettings | None, **options) -> str:
    """The scoring signature plus every analysis option, e.g. ``...|rating:mean|boot:1000|seed:0``."""
    parts = [settings.signature()] if settings is not None else [f"metrics|version:{_version()}"]
    parts += [f"{key}:{value}" for key, value in options.items()]
    return "|".join(parts)


def _version() -> str:
    from metrics import __version__

    return __version__


def choose_question(table: VoteTable, question: str | None, prefer: str = "satisfied") -> str:
    """The question to analyse: the one asked for, the only one, or ``prefer`` if present."""
    if question is not None:
        if question not in table.questions:
            raise ValueError(f"{table.source}: no votes for question {question!r} (found: {', '.join(table.questions)})")
        return question
    if len(table.questions) == 1:
        return table.questions[0]
    if prefer in table.questions:
        return prefer
    raise ValueError(f"{table.source}: several questions ({', '.join(table.questions)}); choose one with --question")


def select_votes(table: VoteTable, question: str | None, condition: str | None = None) -> list[Vote]:
    chosen = choose_question(table, question)
    votes = table.for_question(chosen)
    if condition is not None:
        votes = [v for v in votes if v.condition == condition]
        if not votes:
            raise ValueError(f"{table.source}: no votes for condition {condition!r}")
    return votes


def agreement_all(
    table: VoteTable, *, question: str | None = None, level: str = "nominal", resamples: int = 1000, seed: int = 0,
    gold: dict | None = None,
) -> dict:  # fmt: skip
    """``{"signature", "questions": {q: report}}`` for one question or every question."""
    if level not in LEVELS:
        raise ValueError(f"level must be one of {', '.join(LEVELS)}, got {level!r}")
    questions = [choose_question(table, question)] if question is not None else table.questions
    reports = {}
    for q in questions:
        q_gold = None if gold is None else {unit: value for (unit, gq), value in gold.items() if gq == q}
        reports[q] = agreement_report(table.for_question(q), level=level, resamples=resamples, seed=seed, gold=q_gold)
    notes = [f"{table.n_repeated} repeated vote(s): the last one counted"] if table.n_repeated else []
    signature = analysis_signature(None, agreement=level, boot=resamples, seed=seed, ci="percentile95")
    return {"signature": signature, "questions": reports, "notes": notes}


def majority_table(votes: Sequence[Vote], question: str, tie: str = "none", seed: int = 0) -> dict:
    """Majority / soft / median per unit, and the tie count."""
    table = unit_table(votes)
    rows = aggregate_rows(table, question, tie, seed)
    return {"tie_policy": tie, "n_ties": majority_labels(table, tie, seed).n_ties, "rows": rows}


def per_dialogue_metrics(dialogues: Sequence[Dialogue], settings: ScoreSettings) -> tuple[list[str], dict[str, np.ndarray]]:
    """Every metric per dialogue: jga, m2 (turn-match rate), fga_<λ>, sa, aga, rsa, f1."""
    stats = extract(dialogues, normalise=settings.normalise)
    table = score_table(stats, settings.lambdas, slot_count=settings.slot_count, rsa=settings.rsa, per_dialogue=True)
    values = {"jga": table["jga"], "m2": table["turn_matches"] / table["turns"]}
    for i, label in enumerate(settings.lambda_labels):
        values[f"fga_{label}"] = table["fga"][:, i]
    for key in ("sa", "aga", "rsa", "f1"):
        values[key] = table[key]
    return stats.dialogue_ids, values


def correlate_study(
    dialogues: Sequence[Dialogue], votes: Sequence[Vote], settings: ScoreSettings, *, rating: str = "mean",
    tie: str = "none", resamples: int = 1000, seed: int = 0,
) -> dict:  # fmt: skip
    """The ``python -m metrics correlate --json`` contract."""
    ids, values = per_dialogue_metrics(dialogues, settings)
    ratings = ratings_for(votes, ids, rating, tie)
    position = {d: i for i, d in enumerate(ids)}
    rows = np.array([position[d] for d in ratings.dialogue_ids])
    report = correlation_report({k: v[rows] for k, v in values.items()}, ratings, resamples=resamples, seed=seed)
    n, sy, _ = ratings.sufficient()  # the per-dialogue mean rating, for plots
    return {
        "signature": analysis_signature(settings, rating=rating, tie=tie, boot=resamples, seed=seed, ci="fisher95+percentile95"),
        "n_dialogues": ratings.n_dialogues,
        "n_ratings": int(ratings.value.size),
        "rating": rating,
        **report,
        "human_ceiling": human_ceiling(votes, ratings.dialogue_ids),
        "notes": ratings.notes,
        "per_dialogue": [
            {
                "id": d,
                "rating": None if n[i] == 0 else float(sy[i] / n[i]),
                **{k: (None if not np.isfinite(v[rows][i]) else float(v[rows][i])) for k, v in values.items()},
            }
            for i, d in enumerate(ratings.dialogue_ids)
        ],  # fmt: skip
    }


def calibrate_study(
    dialogues: Sequence[Dialogue], votes: Sequence[Vote], settings: ScoreSettings, grid: np.ndarray, *,
    rating: str = "mean", tie: str = "none", resamples: int = 1000, folds: int = 5, seed: int = 0,
) -> dict:  # fmt: skip
    """The ``python -m metrics calibrate --json`` contract."""
    stats = extract(dialogues, normalise=settings.normalise)
    ratings = ratings_for(votes, stats.dialogue_ids, rating, tie)
    terms = FgaTerms.from_statistics(stats, ratings.dialogue_ids)
    result = calibrate(terms, ratings, grid, resamples=resamples, folds=folds, seed=seed)
    signature = analysis_signature(settings, rating=rating, tie=tie, boot=resamples, folds=folds, seed=seed, fit="grid+brent")
    return {"signature": signature, **result}
