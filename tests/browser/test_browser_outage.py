"""The database goes away and comes back (issue 23, item 4), on a PostgreSQL server of the test's own.

Before: a stopped server left a traceback on the page (with host:port and server paths) until the
annotator reloaded by hand.  Now the page says the database cannot be reached and what became of the
last answer, retries by itself, and when the server is back tells whether that answer was stored and
carries on with the item that was on the screen.
"""

from __future__ import annotations

import pytest
from sqlalchemy import select

from annotate.people.auth import add_annotator
from annotate.store.db import make_engine, read_session, upgrade, write_session
from annotate.store.models import Annotator, Item, VoteEvent
from annotate.studies import create_study
from tests.browser.test_browser import eventually, log_in, press
from tests.browser_harness import (
    CHROMIUM,
    CHROMIUM_ARGS,
    RUN_COUNTER,
    StreamlitServer,
    require_chromium,
    screenshot,
    wait_idle,
)
from tests.pg_server import OwnPostgres

playwright_api = pytest.importorskip("playwright.sync_api")
FILES = ("MUL0144.json.txt", "PMUL2000.json.txt", "SNG0095.json.txt")


@pytest.fixture
def own_pg(tmp_path, fixtures):
    require_chromium()
    pg = OwnPostgres()
    engine = make_engine(pg.url)
    upgrade(engine)
    with write_session(engine) as session:
        add_annotator(session, "rater", "rater-password")
        create_study(session, "Outage", "satisfaction", [fixtures / "fga_human_eval" / f for f in FILES], overlap=1)
    pg.engine = engine
    yield pg
    engine.dispose()
    pg.close()


def votes(engine) -> list[tuple[str, str]]:
    with read_session(engine) as session:
        return [
            tuple(r)
            for r in session.execute(
                select(Item.key, VoteEvent.value)
                .join(Item, VoteEvent.item_id == Item.id)
                .join(Annotator, VoteEvent.annotator_id == Annotator.id)
                .order_by(VoteEvent.id)
            )
        ]


def no_error_box(page) -> None:
    assert page.get_by_test_id("stException").count() == 0
    text = page.inner_text("body")
    assert "Traceback" not in text and "psycopg" not in text


@pytest.fixture
def rater_page(own_pg, tmp_path):
    """The app on the test's own server, and the rater logged in on an item, at 1400x900."""
    server = StreamlitServer(
        {
            "DST_JUDGE_DB": own_pg.url,
            "DST_JUDGE_DEMO": "0",
            "DST_JUDGE_BCRYPT_ROUNDS": "4",
            "DST_JUDGE_DB_CONNECT_TIMEOUT": "2",
            "DST_JUDGE_LOG": str(tmp_path / "streamlit.log"),
        }
    )
    try:
        with playwright_api.sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            context = browser.new_context(viewport={"width": 1400, "height": 900})
            context.add_init_script(RUN_COUNTER)
            page = context.new_page()
            page.goto(server.url)
            wait_idle(page)
            log_in(page, "rater", "rater-password")
            page.get_by_role("button", name="Satisfied (1)").wait_for()
            yield page
            browser.close()
    finally:
        server.stop()


def test_the_page_survives_a_stopped_database_and_recovers_by_itself(own_pg, rater_page):
    page = rater_page
    press(page, "1")
    assert eventually(lambda: len(votes(own_pg.engine)) == 1)
    page.get_by_role("button", name="Satisfied (1)").wait_for()
    own_pg.stop()

    # An answer while the database is down: said not saved, no traceback, no server details.
    press(page, "0")
    page.get_by_text("The database cannot be reached right now").wait_for()
    page.get_by_text("Your last answer was not saved").wait_for()
    no_error_box(page)
    assert f":{own_pg.port}" not in page.inner_text("body")
    screenshot(page, "72-database-unreachable")
    # A reload during the outage: the same message, still no traceback.
    page.reload()
    page.get_by_text("The database cannot be reached right now").wait_for()
    no_error_box(page)

    own_pg.start()  # back: the page carries on by itself (no reload by hand)
    page.get_by_role("button", name="Satisfied (1)").wait_for(timeout=30_000)
    wait_idle(page)
    no_error_box(page)
    screenshot(page, "73-database-back")
    assert len(votes(own_pg.engine)) == 1  # the answer given during the outage was not stored
    press(page, "0")
    assert eventually(lambda: len(votes(own_pg.engine)) == 2)
    assert votes(own_pg.engine)[1][1] == "0"


def test_an_answer_cut_off_by_the_outage_is_settled_when_the_database_is_back(own_pg, rater_page):
    """The database stops under an item on the screen; the press during the outage is said not saved,
    and when the database is back the page says so again and the same item is there to answer."""
    page = rater_page
    before = page.get_by_test_id("stMain").inner_text()
    own_pg.stop()
    press(page, "1")
    page.get_by_text("Your last answer was not saved").wait_for()
    own_pg.start()
    page.get_by_text("The database is back. Your last answer was not saved").wait_for(timeout=30_000)
    wait_idle(page)
    no_error_box(page)
    screenshot(page, "74-database-back-answer-not-saved")
    # the same dialogue is still on the screen
    assert (
        page.get_by_test_id("stMain").inner_text().split("Are you satisfied")[1][:300]
        == before.split("Are you satisfied")[1][:300]
    )
    press(page, "1")
    assert eventually(lambda: len(votes(own_pg.engine)) == 1)
