"""Issue 16 (item 2): a judgement's write transaction holds only the write.

On SQLite one writer at a time holds ``BEGIN IMMEDIATE``; what runs inside it is what limits
every annotator's throughput.  A judgement (the vote, then the next item claimed) runs a fixed,
small number of SQL statements, the same on a study of 30 items as on one of 600, and the
statements are plain indexed reads and writes (no study scan, no study lock).
"""

from __future__ import annotations

import json

from sqlalchemy import event

from annotate.judging import votes
from annotate.people.auth import add_annotator
from annotate.store.db import write_session
from annotate.studies import assignment, create_study
from bench.corpus import build, dialogue_file

MAX_STATEMENTS = 14  # vote (4) + next item (<= 10): see annotate.studies.assignment / annotate.judging.votes
SESSION_STATEMENTS = ("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE")  # the session's own, not the judgement's


def _study(engine, tmp_path, n_items):
    corpus = tmp_path / f"corpus{n_items}.json"
    corpus.write_text(json.dumps(build(n_items)))
    with write_session(engine) as session:
        study = create_study(session, f"s{n_items}", "satisfaction", [corpus, dialogue_file(corpus)], overlap=3)
        people = [add_annotator(session, f"w{n_items}-{i}") for i in range(3)]
    return study, people


def _statements_per_judgement(engine, study, people) -> list[int]:
    """The SQL statements of each judgement (the vote, then the next item claimed), as the database
    receives them: on SQLite from the driver's trace (the prepared statements of the judgement path
    run on the driver's cursor, past SQLAlchemy's events), elsewhere from SQLAlchemy's events."""
    counts = []
    statements = []
    sqlite = engine.dialect.name == "sqlite"

    def count(conn, cursor, statement, *args):
        statements.append(statement)

    with write_session(engine) as session:
        item_id = assignment.claim_next(session, study.id, people[0])
    if not sqlite:
        event.listen(engine, "before_cursor_execute", count)
    try:
        for n in range(12):
            person = people[n % 3]
            statements.clear()
            with write_session(engine) as session:
                driver = session.connection().connection.dbapi_connection
                if sqlite:
                    driver.set_trace_callback(statements.append)
                votes.cast_vote(session, person, item_id, "satisfied", "1")
                item_id = assignment.claim_next(session, study.id, person)
                if sqlite:
                    driver.set_trace_callback(None)
            counts.append(len([s for s in statements if s.split()[0].upper() not in SESSION_STATEMENTS]))
            with write_session(engine) as session:  # the next writer's item
                item_id = assignment.claim_next(session, study.id, people[(n + 1) % 3])
    finally:
        if not sqlite:
            event.remove(engine, "before_cursor_execute", count)
    return counts


def test_a_judgement_runs_a_few_statements_whatever_the_study_size(engine, tmp_path):
    small = _statements_per_judgement(engine, *_study(engine, tmp_path, 30))
    large = _statements_per_judgement(engine, *_study(engine, tmp_path, 600))
    assert max(small) <= MAX_STATEMENTS, small
    assert max(large) <= MAX_STATEMENTS, large
    assert max(large) <= max(small)


def test_the_annotators_progress_line_reads_indexes_not_the_items(engine, tmp_path):
    """The page's progress line on every judgement: on SQLite its item counts come from an index alone
    (no read of the items' rows, which hold whole dialogues: 44 ms on a 20,000-item study before)."""
    from annotate import service

    study, people = _study(engine, tmp_path, 30)
    plans = []

    def explain(conn, cursor, statement, parameters, context, executemany):
        if statement.lstrip().upper().startswith("SELECT") and "FROM items" in statement and "count" in statement:
            plans.append(conn.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, parameters).fetchall())

    if engine.dialect.name != "sqlite":
        return  # the plan is SQLite's; PostgreSQL chooses by its statistics
    event.listen(engine, "before_cursor_execute", explain)
    try:
        progress = service.my_progress(engine, people[0], study.id)
    finally:
        event.remove(engine, "before_cursor_execute", explain)
    assert progress["items"] == 30
    assert plans and all(any("COVERING INDEX" in str(step) for step in plan) for plan in plans), plans
