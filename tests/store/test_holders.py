"""Issue 16: each item's ``holders`` counter (places done or held) stays equal to its assignments
through claims, votes, skips, logouts, archiving and expiry, on SQLite and PostgreSQL; a database of
the previous revision is carried forward with its assignments counted."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

from sqlalchemy import func, select

from annotate import service
from annotate.store.db import read_session, write_session
from annotate.store.models import Assignment, Item, VoteEvent, utcnow
from annotate.studies import assignment
from tests.store_helpers import make_study


def counters_match(engine, study_id) -> None:
    with read_session(engine) as session:
        kept = dict(session.execute(select(Item.id, Item.holders).where(Item.study_id == study_id)).all())
        counted = dict(
            session.execute(
                select(Assignment.item_id, func.count())
                .where(Assignment.study_id == study_id, Assignment.status.in_(("done", "active")))
                .group_by(Assignment.item_id)
            ).all()
        )
    assert kept == {item_id: counted.get(item_id, 0) for item_id in kept}


def test_the_counter_follows_every_transition(engine, fixtures):
    study, people = make_study(engine, fixtures, annotators=4, overlap=2)
    a, b, c, d = people
    first = service.next_item(engine, a, study.id)
    counters_match(engine, study.id)
    service.submit(engine, a, first.id, {"satisfied": "1"})  # active -> done: still one place
    held = service.next_item(engine, b, study.id)
    service.skip(engine, b, held.id)  # the place goes back
    counters_match(engine, study.id)
    service.next_item(engine, c, study.id)
    service.release_places(engine, c)  # logout
    counters_match(engine, study.id)
    service.next_item(engine, d, study.id)
    with write_session(engine) as session:  # past the timeout: reclaimed by the next choice
        later = utcnow() + timedelta(minutes=study.settings["timeout_minutes"] + 1)
        assignment.claim_next(session, study.id, a, now=later)
    counters_match(engine, study.id)
    with write_session(engine) as session:
        assignment.release_study(session, study.id)  # archive
    counters_match(engine, study.id)


def test_the_counter_holds_under_fifty_concurrent_annotators(engine, fixtures):
    study, people = make_study(engine, fixtures, annotators=30, overlap=3)

    def work(person):
        for _ in range(4):
            item = service.next_item(engine, person, study.id)
            if item is None:
                return
            service.submit(engine, person, item.id, {"satisfied": "1"})

    with ThreadPoolExecutor(max_workers=30) as pool:
        list(pool.map(work, people))
    counters_match(engine, study.id)
    with read_session(engine) as session:
        assert max(session.scalars(select(Item.holders).where(Item.study_id == study.id))) <= 3


def test_a_database_of_the_previous_revision_is_carried_forward(tmp_path, fixtures):
    """Made at revision 0007 with assignments and a vote in it, upgraded: the counters equal its assignments, the
    vote is kept, every item is judged under the uniform design."""
    from alembic import command
    from alembic.config import Config

    import annotate.store.db as db
    from annotate.store.db import make_engine, upgrade

    engine = make_engine(f"sqlite:///{tmp_path / 'old.sqlite'}")
    config = Config()
    config.set_main_option("script_location", str(db.Path(db.__file__).parent / "migrations"))
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "0007")
    with engine.begin() as connection:  # an old study: items, and assignments written by the old code
        connection.exec_driver_sql(
            "INSERT INTO studies (id, name, kind, guideline, overlap, questions, settings, created_at,"
            " archived) VALUES (1, 's', 'satisfaction', '', 3, '[]', '{}', '2026-01-01', 0)"
        )
        connection.exec_driver_sql(
            "INSERT INTO annotators (id, name, role, created_at) VALUES (1, 'x', 'annotator', "
            "'2026-01-01'), (2, 'y', 'annotator', '2026-01-01')"
        )
        for item in (1, 2, 3):
            connection.exec_driver_sql(
                "INSERT INTO items (id, study_id, key, condition, position, questions, payload, meta,"
                f" extra_capacity) VALUES ({item}, 1, 'k{item}', '', {item}, '[]', '{{}}', '{{}}', 0)"
            )
        rows = [(1, 1, "done"), (1, 2, "active"), (2, 1, "skipped"), (2, 2, "reclaimed"), (3, 1, "done")]
        for n, (item, who, status) in enumerate(rows):
            connection.exec_driver_sql(
                "INSERT INTO assignments (id, study_id, item_id, annotator_id, status, assigned_at)"
                f" VALUES ({n + 1}, 1, {item}, {who}, '{status}', '2026-01-01')"
            )
        connection.exec_driver_sql(
            "INSERT INTO vote_events (item_id, annotator_id, question, value, comment, source, "
            "created_at) VALUES (1, 1, 'satisfied', '1', '', 'human', '2026-01-01')"
        )
    upgrade(engine)  # through 0008 (holders) and 0009 (the allocation design): nothing of the study lost
    counters_match(engine, 1)
    with read_session(engine) as session:
        assert session.scalar(select(func.count()).select_from(VoteEvent)) == 1
        assert set(session.execute(select(Item.included, Item.pi)).all()) == {(True, None)}
    with read_session(engine) as session:
        assert dict(session.execute(select(Item.id, Item.holders)).all()) == {1: 2, 2: 0, 3: 1}
