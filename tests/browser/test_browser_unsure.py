"""The "unsure" keys in Chromium: in studies that offer "unsure", the key n answers the satisfaction
question unsure, and n and m answer CoCo's two questions unsure (Streamlit's button shortcuts: the
browser's key press, not a click), each stored as ``unsure``; the *Unsure* button is on the first screen
at 1400x900.  Screenshot: test-output/screenshots/70-satisfaction-unsure.png."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from annotate.people.auth import add_annotator
from annotate.store.db import read_session, write_session
from annotate.store.models import VoteEvent
from annotate.studies import create_study
from tests.browser.test_browser import choose_study, eventually, log_in, press
from tests.browser_harness import CHROMIUM, CHROMIUM_ARGS, database_server, in_viewport, new_page, require_chromium, screenshot

playwright_api = pytest.importorskip("playwright.sync_api")


@pytest.fixture
def server(tmp_path, fixtures):
    require_chromium()

    def prepare(engine):
        with write_session(engine) as session:
            add_annotator(session, "ann", "ann-password")
            dialogues = [fixtures / "fga_human_eval" / f for f in ("MUL0144.json.txt", "SNG0095.json.txt")]
            create_study(session, "Sat unsure", "satisfaction", dialogues, overlap=1, unsure=True)
            create_study(session, "CoCo unsure", "coco", [fixtures / "coco"], overlap=1, unsure=True)

    running = database_server(tmp_path, prepare, {"DST_JUDGE_DEMO": "0"})
    yield running
    running.stop()
    running.engine.dispose()


def _votes(server) -> list[tuple[str, str]]:
    with read_session(server.engine) as session:
        return [tuple(row) for row in session.execute(select(VoteEvent.question, VoteEvent.value).order_by(VoteEvent.id))]


def test_the_unsure_keys_store_unsure(server):
    with playwright_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = new_page(browser, server.url)
        log_in(page, "ann", "ann-password")
        unsure = page.get_by_role("button", name="Unsure (n)")
        unsure.wait_for()
        assert in_viewport(page, unsure)
        screenshot(page, "70-satisfaction-unsure")
        press(page, "n")
        assert eventually(lambda: _votes(server) == [("satisfied", "unsure")]), _votes(server)
        page.get_by_text("✓ Saved: satisfied unsure").wait_for()
        choose_study(page, "CoCo unsure")
        page.get_by_role("button", name="Unsure (m)").wait_for()
        press(page, "n")
        assert eventually(lambda: _votes(server)[1:] == [("human_like", "unsure")]), _votes(server)
        press(page, "m")
        assert eventually(lambda: _votes(server)[2:] == [("correct", "unsure")]), _votes(server)
        browser.close()
