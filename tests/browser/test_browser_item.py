"""The compact satisfaction item on the longest shared dialogue, at 1400x900 (issue 14, item 1).

Measured before this layout (the same dialogue, the same window): the page was 4,726 px tall and
the vote buttons sat at y = 4,525, five screens down.  Now the question and its buttons are in the
first screen on arrival, the first error has a banner with a jump to its turn, and the page is far
shorter.  Screenshots: test-output/screenshots/30-*.png.
"""

from __future__ import annotations

import pytest

from annotate.people.auth import add_annotator
from annotate.store.db import write_session
from annotate.studies import create_study
from tests.browser.test_browser import log_in
from tests.browser_harness import (
    CHROMIUM,
    CHROMIUM_ARGS,
    RUN_COUNTER,
    after_run,
    database_server,
    in_viewport,
    require_chromium,
    screenshot,
    wait_idle,
)

playwright_api = pytest.importorskip("playwright.sync_api")
LONGEST = "PMUL0076.json.txt"  # 10 turns, the longest shared FGA file
BEFORE_HEIGHT = 4726


@pytest.fixture(scope="module")
def longest_server(tmp_path_factory, fixtures):
    require_chromium()
    guideline = (fixtures / "dst_evaluation_guideline.txt").read_text()

    def prepare(engine):
        with write_session(engine) as session:
            add_annotator(session, "rater", "rater-password")
            create_study(
                session,
                "Longest dialogue",
                "satisfaction",
                [fixtures / "fga_human_eval" / LONGEST],
                overlap=1,
                guideline=guideline,
            )

    server = database_server(tmp_path_factory.mktemp("longest"), prepare, {"DST_JUDGE_DEMO": "0"})
    yield server
    server.stop()
    server.engine.dispose()


def test_the_longest_dialogue_fits_the_first_screen(longest_server):
    with playwright_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1400, "height": 900})
        context.add_init_script(RUN_COUNTER)
        page = context.new_page()
        page.goto(longest_server.url)
        wait_idle(page)
        log_in(page, "rater", "rater-password", start=False)
        # the first visit: the guideline in the main column at a readable width, its button on the first screen
        start = page.get_by_role("button", name="Start judging")
        start.wait_for()
        assert page.get_by_text("What is Dialogue State Tracking", exact=False).first.is_visible()
        assert in_viewport(page, start)
        assert page.get_by_role("button", name="Satisfied (1)").count() == 0  # the item waits
        width = page.get_by_text("What is Dialogue State Tracking", exact=False).first.bounding_box()["width"]
        assert 500 < width <= 760, width
        screenshot(page, "29-guideline-on-the-first-visit")
        after_run(page, start.click)
        satisfied = page.get_by_role("button", name="Satisfied (1)")
        satisfied.wait_for()
        screenshot(page, "30-compact-item-on-arrival")
        height = page.evaluate("document.querySelector('[data-testid=\"stMain\"]').scrollHeight")
        print(
            f"longest dialogue at 1400x900: page {height} px (before: {BEFORE_HEIGHT} px), "
            f"buttons at y = {satisfied.bounding_box()['y']:.0f}"
        )
        for name in ("Satisfied (1)", "Not satisfied (0)", "Skip"):
            assert in_viewport(page, page.get_by_role("button", name=name)), f"{name} is not visible on arrival"
        assert height < BEFORE_HEIGHT / 2
        # the first error: a banner with a jump to its turn, which brings the turn into view
        banner = page.get_by_text("The first error entered at turn 2 of 10")
        assert in_viewport(page, banner)
        row = page.locator("#dstj-turn-7")
        assert not in_viewport(page, row)
        page.get_by_role("link", name="Jump to turn 2").click()
        page.wait_for_function("document.querySelector('[data-testid=\"stMain\"]').scrollTop > 0")
        assert in_viewport(page, page.locator("#dstj-turn-2"))
        screenshot(page, "31-compact-item-jumped-to-first-error")
        # symbols say what is wrong without colour; full states open on demand
        text = page.locator("table.dstj-turns").inner_text()
        assert "✗ 2" in text and "− missing restaurant-name=mahal of cambridge" in text
        page.locator("#dstj-turn-2 summary").click()
        assert page.locator("#dstj-turn-2 details[open]").count() == 1
        # afterwards the guideline is one click away (beside the title), in a dialog at a readable width
        page.get_by_role("button", name="Guideline").first.click()
        dialog = page.get_by_role("dialog")
        dialog.get_by_text("What is Dialogue State Tracking", exact=False).first.wait_for()
        assert dialog.bounding_box()["width"] >= 600
        screenshot(page, "32-guideline-in-a-dialog")
        browser.close()
