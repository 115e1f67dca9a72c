"""A study as plain data, the input of every writer: items, current votes (and every vote
event when asked for), progress, the dialogues with predictions when the study's kind has
them, and a function that gives the study's analysis for a settings object.

Loading a study from the vote store is the store's job (``annotate.analysis.reports.load_study``);
nothing here touches a database.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from formats.dialogue import Dialogue
from formats.tidy import VoteTable, votes_from_rows


@dataclass(frozen=True)
class ItemRecord:
    key: str
    condition: str
    questions: list[str]
    payload: dict
    gold: dict | None
    capacity: int
    pi: float | None = None  # inclusion probability under an adaptive design (annotate.studies.allocation); None: uniform
    extra: int = 0  # places added after the design (re-opens, max_k growth): decided from the votes (issue 26)


@dataclass
class StudyData:
    name: str
    kind: str
    guideline: str
    overlap: int
    settings: dict
    items: list[ItemRecord]
    votes: list[dict]  # current votes as export rows (item, condition, annotator, question, value, comment, ...)
    history: list[dict] = field(default_factory=list)  # every event, when loaded with history=True
    progress_report: dict = field(default_factory=dict)  # progress as the store reported it at load time
    dialogues: dict[str, list[Dialogue]] = field(default_factory=dict)  # per condition, for kinds that have them
    analyser: Callable[..., dict] | None = None  # (settings, condition) -> the study's analysis
    adjudications: dict[tuple[str, str, str], dict] = field(default_factory=dict)  # (key, condition, question) -> label
    # the analysis-settings changes logged after the first vote (at, by, old, new): the report flags them
    # (exports.analysis_plan); the frozen plan itself is in ``settings["plan"]``
    late_settings_changes: list[dict] = field(default_factory=list)

    def vote_table(self) -> VoteTable:
        rows = ((v["item"], v["annotator"], v["question"], v["value"], v["condition"] or "") for v in self.votes)
        return votes_from_rows(rows, f"study {self.name}")
