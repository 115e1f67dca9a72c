"""Spreadsheet-safe table downloads in Chromium (issue 23, item 5).

Before: every table (Progress, the Analysis drill-down with the annotators' comments) had Streamlit's
own toolbar "Download as CSV", which wrote an annotator's comment ``=2+5`` as it was: a formula in the
admin's spreadsheet.  Now the built-in export is off (``client.disableDataExport``) and the one
download a table offers is our CSV, every risky cell with a leading apostrophe.
Screenshots: test-output/screenshots/80-*.png.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from annotate import service
from annotate.people.auth import add_annotator
from annotate.people.sessions import log_in as store_log_in
from annotate.store.db import write_session
from annotate.studies import create_study
from tests.browser.test_browser import log_in
from tests.browser_harness import (
    CHROMIUM,
    CHROMIUM_ARGS,
    after_run,
    database_server,
    new_page,
    require_chromium,
    screenshot,
    wait_idle,
)

playwright_api = pytest.importorskip("playwright.sync_api")
expect = playwright_api.expect
ITEM = "MUL0144.json.txt"
FORMULA = "=2+5"
LINK = ' =HYPERLINK("http://example.invalid/?leak","click me")'  # a leading space: some spreadsheets trim it


@pytest.fixture(scope="module")
def server(tmp_path_factory, fixtures):
    require_chromium()

    def prepare(engine):
        with write_session(engine) as session:
            add_annotator(session, "boss", "boss-password", role="admin")
            for name in (FORMULA, "rater"):
                add_annotator(session, name, f"{name}-password")
            study = create_study(session, "Hostile comments", "satisfaction", [fixtures / "fga_human_eval" / ITEM], overlap=2)
        for name, value, comment in ((FORMULA, "1", LINK), ("rater", "0", FORMULA)):
            person = store_log_in(engine, name, f"{name}-password")[0]
            item = service.next_item(engine, person, study.id)
            service.submit(engine, person, item.id, {"satisfied": value}, comment=comment)

    running = database_server(tmp_path_factory.mktemp("downloads"), prepare, {"DST_JUDGE_DEMO": "0"})
    yield running
    running.stop()
    running.engine.dispose()


@pytest.fixture(scope="module")
def browser(server):
    with playwright_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def no_built_in_download(page) -> int:
    """Hover every table on the page so its toolbar shows (its Search button proves it), then: no CSV
    download in it.  Returns how many tables were checked."""
    tables = page.get_by_test_id("stDataFrame").filter(visible=True)
    for table in tables.all():
        table.scroll_into_view_if_needed()
        table.hover()
        toolbar = table.locator("xpath=ancestor::*[.//*[@data-testid='stElementToolbar']][1]").get_by_test_id("stElementToolbar")
        expect(toolbar.get_by_role("button", name="Search")).to_be_visible()
        expect(toolbar.get_by_role("button", name="Download as CSV")).to_have_count(0)
    return tables.count()


def download(page, table) -> list[list[str]]:
    buttons = table.get_by_role("button", name="Download as CSV")
    expect(buttons).to_have_count(1)  # the one download the table offers: ours, beside it
    with page.expect_download() as info:
        buttons.click()
    return list(csv.reader(io.StringIO(Path(info.value.path()).read_text(encoding="utf-8"))))


def test_progress_table_downloads_neutralised_cells_only(server, browser):
    page = new_page(browser, server.url)
    log_in(page, "boss", "boss-password", landing="Progress")
    page.get_by_test_id("stDataFrame").first.wait_for()
    assert no_built_in_download(page) >= 2  # per annotator, per item
    table = page.locator(".st-key-table-progress-per-annotator")
    table.scroll_into_view_if_needed()
    screenshot(page, "80-progress-table-download")
    rows = download(page, table)
    assert rows[0][0] == "annotator"
    assert sorted(row[0] for row in rows[1:]) == ["'=2+5", "rater"]
    numbers = {row[0]: row[1] for row in rows[1:]}
    assert numbers == {"'=2+5": "1", "rater": "1"}  # numbers stay numbers: no apostrophe


def test_drill_down_comments_download_neutralised(server, browser):
    page = new_page(browser, server.url)
    log_in(page, "boss", "boss-password", landing="Progress")
    page.get_by_role("link", name="Analysis").click()
    page.get_by_role("heading", name="Analysis").wait_for()
    wait_idle(page)
    after_run(page, lambda: page.get_by_text("Drill down into an item and adjudicate").click())
    page.get_by_role("button", name="Record the adjudicated label").wait_for()
    assert no_built_in_download(page) >= 3  # agreement, majority, the item's votes
    table = page.locator('[class*="st-key-table-votes-on-"]')
    table.scroll_into_view_if_needed()
    screenshot(page, "81-drill-down-download")
    rows = download(page, table)
    header, body = rows[0], rows[1:]
    comments = {row[header.index("annotator")]: row[header.index("comment")] for row in body}
    assert comments == {"'=2+5": "'" + LINK, "rater": "'=2+5"}
    assert not any(cell.lstrip().startswith(("=", "+", "@")) for row in body for cell in row)
