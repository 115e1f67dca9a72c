"""Issue 37, item 5: an answer that waited too long in SQLite's writer line gets the page's "not saved"
notice, never a page that hangs.

Before, the answer's callback waited in the line as long as the writes ahead of it took (a long
import, 200 clients).  Now it waits ``DST_JUDGE_WRITE_QUEUE_WAIT`` seconds and is refused before
anything is sent (``annotate.store.db.Busy``): the page says the last answer was not saved and asks
for it again, and once the line is free the same press stores it.
"""

from __future__ import annotations

import threading
import time

from annotate.store.db import get_engine, write_session
from tests.app.test_app import events, item_button, login

WAIT = 1


def test_an_answer_refused_as_busy_says_not_saved_and_goes_through_afterwards(app_db, monkeypatch):
    monkeypatch.setenv("DST_JUDGE_WRITE_QUEUE_WAIT", str(WAIT))
    app = login("ann1", "demo-ann1-pw")
    engine = get_engine(app_db)
    holding, release = threading.Event(), threading.Event()

    def holder() -> None:  # a long write ahead in the line
        with write_session(engine):
            holding.set()
            release.wait(120)

    thread = threading.Thread(target=holder)
    thread.start()
    assert holding.wait(10)
    try:
        start = time.monotonic()
        item_button(app, "sat-1").click().run()  # before: the run waited as long as the write ahead
        seconds = time.monotonic() - start
    finally:
        release.set()
        thread.join(30)
    assert not app.exception, app.exception
    # The notice ("cannot be reached", "not saved") is drawn, its probe finds the database answering and
    # reruns the page at once, which says what became of the answer: the page's own words.
    notes = [w.value for w in app.warning]
    assert "The database is back. Your last answer was not saved: please answer this item again." in notes, notes
    assert seconds < WAIT + 30, seconds  # the line's wait and the page's runs
    assert events(app_db) == []
    item_button(app, "sat-1").click().run()
    assert [e[:2] for e in events(app_db)] == [("satisfied", "1")]
