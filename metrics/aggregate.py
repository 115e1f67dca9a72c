"""From votes to per-unit labels: majority with a stated tie policy, soft labels, medians.

The unit table (units × categories counts, annotators × units codes) is built once per
question and every label and agreement coefficient is computed from it.

Tie policy (``tie``): ``"none"`` (default) gives a tie no label and counts it;
``"fixed:<label>"`` gives every tie that label; ``"random"`` picks one of the tied labels
with a generator seeded by ``seed`` (reproducible).

>>> from formats.tidy import votes_from_rows
>>> rows = [("a", "x", "q", "1"), ("a", "y", "q", "1"), ("a", "z", "q", "0"), ("b", "x", "q", "1"), ("b", "y", "q", "0")]
>>> table = unit_table(votes_from_rows(rows).votes)
>>> majority_labels(table).labels, majority_labels(table, "fixed:0").labels
(['1', None], ['1', '0'])
>>> [round(float(s), 3) for s in soft_labels(table)]
[0.667, 0.5]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from formats.tidy import Vote

BINARY = ("0", "1")


def as_number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if np.isfinite(value) else None


@dataclass
class UnitTable:
    """One question's votes as arrays.

    units        (item, condition) in first-seen order
    annotators   names in first-seen order
    categories   the answer values: numeric order when all are numbers; a 0/1 question
                 always has both categories, even when only one was used
    codes        annotators × units, the category index of each vote, NaN where none
    counts       units × categories, votes per category
    """

    units: list[tuple[str, str]]
    annotators: list[str]
    categories: list[str]
    codes: np.ndarray
    counts: np.ndarray

    @property
    def numeric_values(self) -> np.ndarray | None:
        """The categories as numbers, or None when any is not a number."""
        values = [as_number(c) for c in self.categories]
        return None if any(v is None for v in values) else np.array(values, dtype=float)

    @property
    def votes_per_unit(self) -> np.ndarray:
        return cast(np.ndarray, self.counts.sum(axis=1))

    def numeric_codes(self) -> np.ndarray:
        """annotators × units of the numeric values (NaN where no vote)."""
        values = self.numeric_values
        if values is None:
            raise ValueError("the answers are not all numbers")
        out = np.full(self.codes.shape, np.nan)
        voted = ~np.isnan(self.codes)
        out[voted] = values[self.codes[voted].astype(int)]
        return out


def canonical_number(text: str) -> str:
    """One spelling per number, so that "1" and "1.0" (or "2.50" and "2.5") are one answer.

    >>> [canonical_number(t) for t in ("1", "1.0", "2.50", "-0.0", "1e3")]
    ['1', '1', '2.5', '0', '1000']
    """
    value = float(text) + 0.0  # -0.0 -> 0.0
    spelled = repr(value)
    return spelled[:-2] if spelled.endswith(".0") else spelled


def unit_table(votes: Sequence[Vote], categories: Sequence[str] | None = None) -> UnitTable:
    """The votes of one question as arrays.  When every answer parses as a number (and no categories
    are given), answers compare as numbers: "1" and "1.0" are the same category, spelled "1"."""
    units = list(dict.fromkeys(v.unit for v in votes))
    annotators = list(dict.fromkeys(v.annotator for v in votes))
    spell = {}
    if categories is None and votes and all(as_number(v.value) is not None for v in votes):
        spell = {v.value: canonical_number(v.value) for v in votes}
    if spell:
        votes = [Vote(v.item, v.annotator, v.question, spell[v.value], v.condition) for v in votes]
    if categories is None:
        seen = set(v.value for v in votes)
        if seen <= set(BINARY):
            seen |= set(BINARY)
        numbers = {c: as_number(c) for c in seen}
        if all(n is not None for n in numbers.values()):
            categories = sorted(seen, key=lambda c: (numbers[c], c))
        else:
            categories = sorted(seen)
    category_index = {c: i for i, c in enumerate(categories)}
    unit_index = {u: i for i, u in enumerate(units)}
    annotator_index = {a: i for i, a in enumerate(annotators)}
    codes = np.full((len(annotators), len(units)), np.nan)
    for vote in votes:
        if vote.value not in category_index:
            raise ValueError(f"answer {vote.value!r} of {vote.annotator} on {vote.item} is not one of {list(categories)}")
        codes[annotator_index[vote.annotator], unit_index[vote.unit]] = category_index[vote.value]
    counts = np.zeros((len(units), len(categories)))
    voted = ~np.isnan(codes)
    np.add.at(counts, (np.nonzero(voted)[1], codes[voted].astype(int)), 1.0)
    return UnitTable(units, annotators, list(categories), codes, counts)


@dataclass
class MajorityResult:
    labels: list[str | None]
    ties: np.ndarray  # bool per unit: the top count was shared
    tie_policy: str

    @property
    def n_ties(self) -> int:
        return int(self.ties.sum())


def _fixed_label(tie: str, categories: Sequence[str]) -> str | None:
    """The label of a ``fixed:<label>`` policy as the categories spell it ("fixed:1.0" is "1" when the
    answers are numbers), or None for none / random; a label that is no category is an error."""
    if tie in ("none", "random"):
        return None
    if tie.startswith("fixed:"):
        label = tie[len("fixed:") :]
        if label in categories:
            return label
        if as_number(label) is not None and all(as_number(c) is not None for c in categories):
            spelled = canonical_number(label)
            match = next((c for c in categories if canonical_number(c) == spelled), None)
            if match is not None:
                return match
    raise ValueError(f"tie policy must be none, random or fixed:<label> with a label in {list(categories)}; got {tie!r}")


def majority_from_counts(counts: np.ndarray, categories: Sequence[str], tie: str = "none", seed: int = 0) -> MajorityResult:
    """The most voted category per row of ``counts``; units without votes get None.  ``fixed:L`` resolves
    only the ties that include L; any other tie keeps no majority (and is counted).

    >>> majority_from_counts(np.array([[1, 1, 0], [0, 1, 1], [2, 0, 0]]), ["1", "2", "3"], "fixed:1").labels
    ['1', None, '1']
    """
    fixed = _fixed_label(tie, categories)
    rng = np.random.default_rng(seed)
    top = counts.max(axis=1, initial=0)
    winners = counts == top[:, None]
    n_winners = winners.sum(axis=1)
    ties = (n_winners > 1) & (top > 0)
    labels: list[str | None] = []
    for row, (tied, count) in enumerate(zip(ties, top)):
        if count == 0:
            labels.append(None)
        elif not tied:
            labels.append(categories[int(np.argmax(winners[row]))])
        elif tie == "none":
            labels.append(None)
        elif tie == "random":
            labels.append(categories[int(rng.choice(np.flatnonzero(winners[row])))])
        else:  # fixed:L settles a tie only when L is one of the tied answers
            assert fixed is not None  # _fixed_label gives None only for none and random
            labels.append(fixed if winners[row][list(categories).index(fixed)] else None)
    return MajorityResult(labels, ties, tie)


def majority_labels(table: UnitTable, tie: str = "none", seed: int = 0) -> MajorityResult:
    return majority_from_counts(table.counts, table.categories, tie, seed)


def soft_labels(table: UnitTable) -> np.ndarray:
    """Fraction of 1 votes per unit for a 0/1 question, else the mean value (NaN if not numeric)."""
    values = table.numeric_values
    n = table.votes_per_unit
    if values is None:
        return np.full(len(table.units), np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, table.counts @ values / np.where(n > 0, n, 1), np.nan)


def median_labels(table: UnitTable) -> np.ndarray:
    """Median vote per unit for an ordinal or numeric scale (NaN if not numeric or no votes)."""
    if table.numeric_values is None:
        return np.full(len(table.units), np.nan)
    return np.array(
        [np.median(column[~np.isnan(column)]) if (~np.isnan(column)).any() else np.nan for column in table.numeric_codes().T]
    )


def aggregate_rows(table: UnitTable, question: str, tie: str = "none", seed: int = 0) -> list[dict[str, Any]]:
    """Per unit: majority label (tie policy applied), tie flag, soft label, median, vote counts."""
    majority = majority_labels(table, tie, seed)
    soft = soft_labels(table)
    median = median_labels(table)
    rows = []
    for i, (item, condition) in enumerate(table.units):
        rows.append(
            {
                "item": item,
                "condition": condition,
                "question": question,
                "n_votes": int(table.counts[i].sum()),
                "majority": majority.labels[i],
                "tie": bool(majority.ties[i]),
                "soft": None if np.isnan(soft[i]) else float(soft[i]),
                "median": None if np.isnan(median[i]) else float(median[i]),
                **{f"n_{c}": int(table.counts[i, j]) for j, c in enumerate(table.categories)},
            }
        )
    return rows
