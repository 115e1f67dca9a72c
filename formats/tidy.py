"""Tidy vote tables: one row per (item, annotator, question) judgement.

Read from a CSV with the columns ``item, annotator, question, value`` (``question`` may be
missing for a ratings file; other columns are ignored) — a votes export of DST Judge works
as is.  Two choices, written down:

- When the file has a ``condition`` column, the unit of analysis is (item, condition): the
  same dialogue shown with two systems' predictions is two units.
- When an (item, annotator, question) repeats (an export with ``--history``), the last row
  counts: exports list events oldest first, so that is the current vote.

>>> table = votes_from_rows([("d1", "ann1", "satisfied", "1"), ("d1", "ann2", "satisfied", "0"),
...                          ("d1", "ann1", "satisfied", "0")])
>>> table.n_repeated, [(v.item, v.annotator, v.value) for v in table.votes]
(1, [('d1', 'ann1', '0'), ('d1', 'ann2', '0')])
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from formats.errors import ReaderError, csv_rows, read_text


def _unneutralise(value: str) -> str:
    """Undo the apostrophe our CSV exports put before a leading = + - @ (spreadsheet safety)."""
    from formats.safety import unneutralise

    return unneutralise(value)


# A declared "I cannot tell" answer.  Policy (the only one): it is missing data for agreement, majority
# labels and correlation (left out before they are computed, never a category or a number of its own), and
# the analysis reports how often each item and each annotator gave it (``metrics.analysis.unsure_summary``);
# the vote files keep it as it was given.
UNSURE = "unsure"


def is_unsure(value: str) -> bool:
    """Whether a vote's value is the declared "unsure" answer (any case, surrounding spaces ignored).

    >>> is_unsure(" Unsure "), is_unsure("0")
    (True, False)
    """
    return value.strip().lower() == UNSURE


@dataclass(frozen=True)
class Vote:
    item: str
    annotator: str
    question: str
    value: str
    condition: str = ""

    @property
    def unit(self) -> tuple[str, str]:
        return (self.item, self.condition)


@dataclass
class VoteTable:
    votes: list[Vote]
    source: str = ""
    n_repeated: int = 0
    questions: list[str] = field(default_factory=list)

    def for_question(self, question: str) -> list[Vote]:
        return [v for v in self.votes if v.question == question]

    def without_unsure(self) -> VoteTable:
        """The table with every "unsure" vote left out (missing data; see ``UNSURE``)."""
        kept = [v for v in self.votes if not is_unsure(v.value)]
        if len(kept) == len(self.votes):
            return self
        return VoteTable(kept, self.source, self.n_repeated, list(self.questions))


def votes_from_rows(rows: Iterable[tuple[Any, ...]], source: str = "") -> VoteTable:
    """Rows ``(item, annotator, question, value[, condition])`` → a table, last repeat wins."""
    latest: dict[tuple[Any, str, str], Vote] = {}
    total = 0
    for row in rows:
        vote = Vote(*(str(part) for part in row))
        latest[(vote.unit, vote.annotator, vote.question)] = vote
        total += 1
    votes = list(latest.values())
    questions = list(dict.fromkeys(v.question for v in votes))
    return VoteTable(votes, source, total - len(votes), questions)


def read_votes(path: str | os.PathLike[str], *, default_question: str | None = None, data: bytes | None = None) -> VoteTable:
    """A tidy CSV of votes (from ``path``, or from ``data`` named ``path``: an upload); a missing
    ``question`` column needs ``default_question``.

    Raises :class:`ReaderError` naming the file and line for a missing column or empty cell.
    """
    text = read_text(path, data)
    needed = {"item", "annotator", "value"} | (set() if default_question else {"question"})
    rows = []
    for line, row in csv_rows(path, text, needed, "a votes table has item, annotator, question, value"):
        cells = {}
        for name in ("item", "annotator", "question", "value", "condition"):
            raw = row.get(name)
            if name == "question" and raw is None:
                raw = default_question
            cells[name] = _unneutralise((raw or "").strip())
            if name in ("item", "annotator", "value", "question") and not cells[name]:
                raise ReaderError(path, f"line {line}", f"empty {name}")
        rows.append((cells["item"], cells["annotator"], cells["question"], cells["value"], cells["condition"]))
    if not rows:
        raise ReaderError(path, "line 2", "no votes in the file")
    return votes_from_rows(rows, str(path))
