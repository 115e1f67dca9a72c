"""Automatic judges (an LLM, a classifier, a script) against the human majority.

Both inputs are tidy votes tables: the humans' votes, and the judges' labels with the judge's name
in the ``annotator`` column.  The judges never enter the human majority: it is built from the human
table alone (ties get no majority and are left out, counted in a note).  Per judge: the items it
labelled that have a human majority (``n``), accuracy, Cohen's κ against the majority with a
percentile bootstrap CI over items, and the confusion table {human label: {judge label: count}}.
Answers compare as numbers when every answer to the question (humans and judges) is a number.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from formats.tidy import Vote, VoteTable
from metrics.aggregate import as_number, canonical_number, majority_labels, unit_table
from metrics.correlation import percentile_ci


def _spelled(votes: list[Vote], numeric: bool) -> list[Vote]:
    if not numeric:
        return votes
    return [Vote(v.item, v.annotator, v.question, canonical_number(v.value), v.condition) for v in votes]


def _kappa(human: np.ndarray, judge: np.ndarray, k: int) -> float | None:
    from metrics.agreement import Undefined, cohen_kappa

    try:
        return cohen_kappa(human.astype(float), judge.astype(float), k)[0]
    except Undefined:
        return None


def judge_report(human: VoteTable, judges: VoteTable, question: str, *, resamples: int = 1000, seed: int = 0) -> dict[str, Any]:
    """The ``python -m metrics judge --json`` contract for one question."""
    human_votes, judge_votes = human.for_question(question), judges.for_question(question)
    if not human_votes:
        raise ValueError(f"{human.source}: no human votes for question {question!r}")
    if not judge_votes:
        raise ValueError(f"{judges.source}: no judge labels for question {question!r}")
    numeric = all(as_number(v.value) is not None for v in human_votes + judge_votes)
    human_votes, judge_votes = _spelled(human_votes, numeric), _spelled(judge_votes, numeric)
    table = unit_table(human_votes)
    majority = majority_labels(table, "none")
    truth = {unit: label for unit, label in zip(table.units, majority.labels) if label is not None}
    notes = []
    if majority.n_ties:
        notes.append(f"{majority.n_ties} item(s) with tied human votes have no majority and are left out")
    both = sorted({v.annotator for v in judge_votes} & {v.annotator for v in human_votes})
    if both:
        notes.append(f"judge name(s) also among the human annotators: {', '.join(both)}; they are kept apart all the same")
    categories = sorted({*truth.values(), *(v.value for v in judge_votes)}, key=lambda c: (float(c), c) if numeric else (0, c))
    index = {c: i for i, c in enumerate(categories)}
    rng = np.random.default_rng(seed)
    # A judges' file without a condition column names items only: an item with one condition is found
    by_item: dict[str, list[tuple[str, str]]] = {}
    for unit in truth:
        by_item.setdefault(unit[0], []).append(unit)

    def unit_of(vote: Vote) -> tuple[str, str]:
        if vote.unit in truth or vote.condition or len(by_item.get(vote.item, [])) != 1:
            return vote.unit
        return by_item[vote.item][0]

    rows = []
    for name in sorted({v.annotator for v in judge_votes}):
        labels = {unit_of(v): v.value for v in judge_votes if v.annotator == name}  # the last label of an item counts
        shared = [u for u in labels if u in truth]
        h = np.array([index[truth[u]] for u in shared])
        j = np.array([index[labels[u]] for u in shared])
        row: dict[str, Any] = {
            "judge": name,
            "n": len(shared),
            "accuracy": None,
            "cohen_kappa": None,
            "kappa_ci": None,
            "confusion": {c: {d: 0 for d in categories} for c in categories},
        }
        for a, b in zip(h, j):
            row["confusion"][categories[a]][categories[b]] += 1
        if shared:
            row["accuracy"] = float(np.mean(h == j))
            row["cohen_kappa"] = _kappa(h, j, len(categories))
        if shared and resamples > 0 and row["cohen_kappa"] is not None:
            draws = rng.integers(0, len(shared), size=(resamples, len(shared)))
            boot = np.array([_kappa(h[d], j[d], len(categories)) for d in draws], dtype=float)
            finite = boot[np.isfinite(boot)]
            if finite.size >= resamples / 2:
                low, high = percentile_ci(finite)
                row["kappa_ci"] = [float(low), float(high)]
        # A point for an interval (as metrics.agreement's ci_degenerate): flagged and said why.
        row["kappa_ci_degenerate"] = row["kappa_ci"] is not None and row["kappa_ci"][0] == row["kappa_ci"][1]
        if row["kappa_ci_degenerate"]:
            if len(set(j.tolist())) == 1:
                row["note"] = (
                    f"the judge gave the same answer ({categories[j[0]]}) to all {len(shared)} items: κ is "
                    f"{row['cohen_kappa']:.3f} by construction and its bootstrap interval is degenerate (a point): "
                    "it measures no uncertainty; see accuracy"
                )
            else:
                row["note"] = (
                    "every bootstrap resample gave the same κ: the interval is degenerate (a point) and "
                    "measures no uncertainty; more items would"
                )
            notes.append(f"{name}: {row['note']}")
        if not shared:
            row["note"] = "no item labelled by this judge has a human majority"
        rows.append(row)
    if resamples <= 0:
        notes.append("no bootstrap resamples (0 asked for): no confidence interval was computed (kappa_ci is null)")
    return {
        "question": question,
        "n_items_with_majority": len(truth),
        "categories": categories,
        "judges": rows,
        "notes": notes,
        "method": "each judge against the human majority (ties left out); Cohen's kappa with a percentile bootstrap "
        "CI over items",
    }
