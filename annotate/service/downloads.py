"""Votes out and in, through the door: the votes table and its downloads (CSV, JSON lines), votes
imported from a file, a study's exports (``exports.formats``, with the cached analysis), and the record
of what was exported (a study with votes not exported cannot be deleted)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import Engine

from annotate import studies
from annotate.analysis import analysis_jobs
from annotate.judging import votes
from annotate.people.auth import require_admin
from annotate.service.studies import study_settings
from annotate.store.db import read_session, write_session
from annotate.store.models import Annotator
from annotate.studies import assignment
from exports.formats import as_download, write
from formats.errors import read_text

if TYPE_CHECKING:
    from metrics.analysis import AnalysisSettings


def vote_table(engine: Engine, user: Annotator, study_id: int, *, history: bool = False) -> list[dict]:
    require_admin(user)
    with read_session(engine) as session:
        return votes.vote_rows(session, study_id, history=history)


def votes_csv(engine: Engine, user: Annotator, study_id: int, *, history: bool = False) -> str:
    return votes.rows_to_csv(vote_table(engine, user, study_id, history=history))


def votes_download(engine: Engine, user: Annotator, study_id: int, *, history: bool = False, fmt: str = "csv") -> tuple[str, int]:
    """The votes as CSV (``fmt="csv"``) or JSON lines (``"jsonl"``), and the newest vote event they
    hold (for :func:`record_export` once downloaded or written)."""
    require_admin(user)
    with read_session(engine) as session:
        through = studies.last_vote(session, study_id)
        rows = votes.vote_rows(session, study_id, history=history)
    if fmt == "jsonl":
        return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), through
    return votes.rows_to_csv(rows), through


def import_votes(engine: Engine, user: Annotator, study_id: int, file_name: str, text: str) -> int:
    """Tidy CSV votes (item, annotator, question, value[, comment]): checked, staged apart, then
    swapped in by one short transaction (``votes.import_votes_file``); the votes imported."""
    require_admin(user)
    return votes.import_votes_file(engine, study_id, file_name, text)


def import_votes_upload(engine: Engine, user: Annotator, study_id: int, file_name: str, data: bytes) -> int:
    """:func:`import_votes` of an uploaded file (the Progress page): its bytes read as the command line
    reads a file (``formats.errors.read_text``: the size limit, UTF-8 with the line of a bad byte), then
    the same checks, all or nothing; a refusal (``ReaderError``) names the file and the line."""
    require_admin(user)
    return import_votes(engine, user, study_id, file_name, read_text(file_name, data))


def record_export(engine: Engine, user: Annotator, study_id: int, what: str, through: int) -> None:
    """The votes up to event ``through`` were exported (a download button's callback, a command line's
    file written): recorded, and counted for a later delete."""
    require_admin(user)
    with write_session(engine) as session:
        studies.record_export(session, assignment.lock_study(session, study_id), user, what, through)


def export(
    engine: Engine,
    user: Annotator,
    study_id: int,
    fmt: str,
    settings=None,
    *,
    history: bool = False,
    condition: str | None = None,
) -> tuple[bytes, str]:
    """One export format of a study as a download: (bytes, file name); several files come zipped.
    The analysis is the shared one (``analysis_jobs.study_analysis``), as the Analysis page's."""
    require_admin(user)
    from annotate.analysis import reports

    settings = settings or study_settings(engine, user, study_id)
    data = reports.load_study(engine, study_id, history=history)
    shared = lambda chosen: analysis_jobs.study_analysis(engine, user, study_id, settings, condition=chosen)  # noqa: E731
    return as_download(write(data, fmt, settings, history=history, condition=condition, analysis=shared))


@dataclass(frozen=True)
class ExportFiles:
    """A study's export as files (``python -m exports``): (relative path, bytes) each, the study's id,
    and the newest vote event the export holds (read before the votes: for :func:`record_export`)."""

    files: list[tuple[str, bytes]]
    study_id: int
    through: int


def export_files(
    engine: Engine,
    user: Annotator,
    study: str | int,
    fmt: str,
    settings: AnalysisSettings,
    *,
    history: bool = False,
    condition: str | None = None,
) -> ExportFiles:
    """One export format of a study (by name or id) as its files, analysed afresh with ``settings``;
    an unknown study is a ValueError that lists the names (``study_data.find_study``)."""
    from annotate.analysis import reports
    from annotate.analysis.study_data import find_study

    require_admin(user)
    with read_session(engine) as session:  # the newest vote the export holds, read before the votes
        study_id = find_study(session, study).id
        through = studies.last_vote(session, study_id)
    data = reports.load_study(engine, study_id, history=history)
    return ExportFiles(write(data, fmt, settings, history=history, condition=condition), study_id, through)
