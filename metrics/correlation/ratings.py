"""Human ratings aligned to the scored dialogues: one observation per dialogue (``mean``, ``majority``) or per
vote (``pairs``), and the annotators × dialogues matrix of the votes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from formats.tidy import Vote
from metrics.aggregate import majority_from_counts, unit_table

RATING_MODES = ("mean", "majority", "pairs")


@dataclass
class Ratings:
    """Human ratings aligned to dialogues: observation i rates dialogue ``dialogue[i]``."""

    dialogue_ids: list[str]
    dialogue: np.ndarray  # observation -> dialogue index
    value: np.ndarray
    mode: str
    notes: list[str]
    matrix: np.ndarray | None = None  # annotators × dialogues of the votes (NaN: none), for rater resampling

    def votes(self) -> np.ndarray:
        """The annotators × dialogues matrix of the votes; a ``majority`` rating keeps none (it is not re-drawn)."""
        if self.matrix is None:
            raise ValueError("these ratings keep no matrix of votes (a majority rating is not re-drawn)")
        return self.matrix

    @property
    def n_dialogues(self) -> int:
        return len(self.dialogue_ids)

    def sufficient(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per dialogue: number of observations, Σ y, Σ y²."""
        d = self.n_dialogues
        n = np.bincount(self.dialogue, minlength=d).astype(float)
        sy = np.bincount(self.dialogue, weights=self.value, minlength=d)
        syy = np.bincount(self.dialogue, weights=self.value**2, minlength=d)
        return n, sy, syy


def numeric_ratings(votes: Sequence[Vote]) -> np.ndarray:
    try:
        return np.array([float(v.value) for v in votes])
    except ValueError:
        bad = next(v for v in votes if not _is_number(v.value))
        raise ValueError(f"rating {bad.value!r} of {bad.annotator} on {bad.item} is not a number") from None


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def ratings_for(votes: Sequence[Vote], dialogue_ids: Sequence[str], mode: str = "mean", tie: str = "none") -> Ratings:
    """Align votes (item = dialogue id) with the scored dialogues; unmatched ones are noted.

    Raises ValueError when no rated dialogue has predictions, or one dialogue is rated
    under several conditions (pick one with ``--condition``).
    """
    if mode not in RATING_MODES:
        raise ValueError(f"rating must be one of {', '.join(RATING_MODES)}, got {mode!r}")
    conditions: dict[str, set[str]] = {}
    for vote in votes:
        conditions.setdefault(vote.item, set()).add(vote.condition)
    several = sorted(item for item, found in conditions.items() if len(found) > 1)
    if several:
        raise ValueError(f"dialogue {several[0]!r} is rated under several conditions; choose one with --condition")
    index = {d: i for i, d in enumerate(dialogue_ids)}
    known = [v for v in votes if v.item in index]
    notes = []
    unknown = sorted({v.item for v in votes} - set(index))
    if unknown:
        notes.append(f"{len(unknown)} rated item(s) have no predictions and are left out (e.g. {unknown[0]!r})")
    if not known:
        raise ValueError("no rated item matches a dialogue id in the predictions")
    values = numeric_ratings(known)
    rated = sorted({index[v.item] for v in known})
    keep = {d: i for i, d in enumerate(rated)}  # dialogues with ratings only, in prediction order
    ids = [dialogue_ids[d] for d in rated]
    if len(rated) < len(dialogue_ids):
        notes.append(f"{len(dialogue_ids) - len(rated)} dialogue(s) have no rating and are left out")
    observation = np.array([keep[index[v.item]] for v in known])
    matrix = rating_matrix(known, ids)[1]
    if mode == "pairs":
        return Ratings(ids, observation, values, mode, notes, matrix)
    if mode == "mean":
        n = np.bincount(observation, minlength=len(ids))
        means = np.bincount(observation, weights=values, minlength=len(ids)) / n
        return Ratings(ids, np.arange(len(ids)), means, mode, notes, matrix)
    table = unit_table(known)
    majority = majority_from_counts(table.counts, table.categories, tie)
    by_item = {unit[0]: label for unit, label in zip(table.units, majority.labels)}
    chosen = [(keep[index[item]], float(label)) for item, label in by_item.items() if label is not None]
    if majority.n_ties and tie == "none":
        notes.append(f"{majority.n_ties} dialogue(s) with tied votes have no majority and are left out")
    chosen.sort()
    dialogue = np.array([d for d, _ in chosen], dtype=int)
    return Ratings(ids, dialogue, np.array([v for _, v in chosen]), mode, notes)


def rating_matrix(votes: Sequence[Vote], dialogue_ids: Sequence[str]) -> tuple[list[str], np.ndarray]:
    """Annotators × dialogues of numeric ratings (NaN: not rated)."""
    index = {d: i for i, d in enumerate(dialogue_ids)}
    votes = [v for v in votes if v.item in index]
    annotators = sorted({v.annotator for v in votes})
    matrix = np.full((len(annotators), len(dialogue_ids)), np.nan)
    a_index = {a: i for i, a in enumerate(annotators)}
    for vote, value in zip(votes, numeric_ratings(votes) if votes else []):
        matrix[a_index[vote.annotator], index[vote.item]] = value
    return annotators, matrix
