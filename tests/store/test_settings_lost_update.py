"""Issue 23, item 3: a votes export (either CLI, or the app's download) records itself in the study's
``settings`` while an admin changes them: no admin change may be undone.

The exports run through the command lines' own code (``python -m annotate votes export`` and
``python -m exports ... --format votes-csv``, called as ``main`` in threads), while annotators keep
voting (so each export has a newer vote event to record) and an admin changes the crowd settings one
change after another.  Each crowd change is in the change log with the settings it found (``old``)
and left (``new``): a change that finds anything but what the previous one left was undone in between.
"""

from __future__ import annotations

import threading

from annotate import __main__ as annotate_cli
from annotate import export_cli, service
from annotate.store.db import get_engine
from tests.store.test_crowd import admin, open_crowd
from tests.store_helpers import make_study

CHANGES = 60


def _repeat(work, stop: threading.Event, errors: list) -> threading.Thread:
    def run() -> None:
        try:
            while not stop.is_set():
                work()
        except BaseException as err:  # noqa: BLE001 - reported by the test
            import traceback

            traceback.print_exc()
            errors.append(err)

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_exports_never_undo_an_admins_concurrent_settings_changes(engine, db_url, fixtures, tmp_path):
    study, people = make_study(engine, fixtures, annotators=2, overlap=3, name="lost-update")
    boss = admin(engine)
    held = []
    for person in people:
        item = service.next_item(engine, person, study.id)
        held.append((person, item))
    flip = iter(range(10**9))

    def vote(person, item):
        return lambda: service.submit(engine, person, item.id, {q: str(next(flip) % 2) for q in item.questions})

    def cli_export():
        assert annotate_cli.main(["--db", db_url, "votes", "export", study.name, "--out", str(tmp_path / "a.csv")]) == 0

    def exports_export():
        assert export_cli.main([study.name, "--db", db_url, "--format", "votes-csv", "--out", str(tmp_path / "b.csv")]) == 0

    def app_download():
        _, through = service.votes_download(engine, boss, study.id)
        service.record_export(engine, boss, study.id, "votes csv", through)

    get_engine(db_url)  # migrated once before the threads (Alembic's upgrade is not for threads at once)
    stop, errors = threading.Event(), []
    threads = [_repeat(vote(p, i), stop, errors) for p, i in held]
    threads += [
        _repeat(work, stop, errors) for work in (cli_export, cli_export, exports_export, app_download)
    ]  # one exports CLI: it migrates each run
    secrets = []
    try:
        for quota in range(1, CHANGES + 1):  # one admin, one change after another
            secrets.append(open_crowd(engine, boss, study.id, quota=quota, new_secret=True)["secret"])
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    assert errors == []

    log = [c for c in service.study_changes(engine, boss, study.id) if c.what == "crowd"]
    assert len(log) == CHANGES
    undone = [(before.new, after.old) for before, after in zip(log, log[1:], strict=False) if after.old != before.new]
    assert undone == [], f"{len(undone)} of {CHANGES} admin changes were undone by an export; the first: {undone[0]}"
    final = service.crowd_settings(engine, boss, study.id)
    assert (final["enabled"], final["quota"], final["secret"]) == (True, CHANGES, secrets[-1])
    exports = [c for c in service.study_changes(engine, boss, study.id) if c.what == "export"]
    assert exports, "the exports ran and were recorded"
    newest = max(int(c.new.rsplit("#", 1)[1]) for c in exports)
    from annotate.store.db import read_session
    from annotate.store.models import Study

    with read_session(engine) as session:
        assert session.get(Study, study.id).settings["exported_through"] == newest
