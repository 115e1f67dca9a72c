"""Admin actions on the Studies page in Chromium at 1400x900 (issue 24, item 3): each shows its outcome
at once, can be repeated without undoing itself, and leaves the admin on the tab they were on.
Screenshots: test-output/screenshots/90-*.png."""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path

import pytest
from playwright.sync_api import expect
from sqlalchemy import select

from annotate.store.db import read_session
from annotate.store.models import Study
from annotate.studies.demo import DEMO_STUDIES, ensure_demo
from tests.browser.test_browser import browser, log_in  # noqa: F401  (browser: a fixture)
from tests.browser.test_browser_workflows import pick
from tests.browser_harness import after_run, choose, database_server, new_page, require_chromium, screenshot, wait_idle

COCO = DEMO_STUDIES[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory, fixtures):
    require_chromium()
    os.environ.setdefault("DST_JUDGE_FIXTURES", str(fixtures))
    running = database_server(
        tmp_path_factory.mktemp("admin-actions"),
        lambda engine: ensure_demo(engine, announce=False),
        {"DST_JUDGE_FIXTURES": str(fixtures)},
    )
    yield running
    running.stop()
    running.engine.dispose()


def studies_page(browser, server):  # noqa: F811
    page = new_page(browser, server.url)
    log_in(page, "admin", "demo-admin-pw", landing="Progress")
    page.get_by_role("link", name="Studies").click()
    page.get_by_role("heading", name="Studies").wait_for()
    wait_idle(page)
    return page


def selected(page, tab: str):
    return expect(page.get_by_role("tab", name=tab)).to_have_attribute("aria-selected", "true")


def study_row(page, name: str) -> dict:
    """The studies table's row of ``name`` as this run of the page made it: through the table's own
    CSV download, which carries the very rows the grid shows (the grid itself is drawn on a canvas)."""
    button = page.locator(".st-key-table-studies").get_by_role("button", name="Download as CSV")
    with page.expect_download() as info:
        button.click()
    rows = csv.DictReader(io.StringIO(Path(info.value.path()).read_text(encoding="utf-8")))
    return next(r for r in rows if r["name"] == name)


def archived(server, name: str) -> bool:
    with read_session(server.engine) as session:
        return session.scalar(select(Study.archived).where(Study.name == name))


def test_admin_actions_show_at_once_repeat_safely_and_keep_the_tab(browser, server, fixtures):  # noqa: F811
    admin = studies_page(browser, server)
    # Create a study by upload; then choosing a study in "Change a study" stays there.
    admin.get_by_label("Name", exact=True).fill("Uploaded pilot")
    admin.locator("[data-testid='stFileUploaderDropzoneInput']").first.set_input_files(
        str(fixtures / "fga_human_eval" / "MUL0144.json.txt")
    )
    admin.get_by_text("MUL0144.json.txt").first.wait_for()
    after_run(admin, lambda: admin.get_by_role("button", name="Create study").click())
    admin.get_by_text("Study created.").wait_for()
    after_run(admin, lambda: admin.get_by_role("tab", name="Change a study").click())  # the tab runs the page again
    pick(admin, "Study", COCO)
    wait_idle(admin)
    selected(admin, "Change a study")
    admin.get_by_text("Members (none: open to every annotator)").wait_for()

    # A second page opened before the archive: its button still offers "Archive".
    stale = studies_page(browser, server)
    after_run(stale, lambda: stale.get_by_role("tab", name="Change a study").click())  # the tab runs the page again
    pick(stale, "Study", COCO)
    stale.get_by_role("tab", name="Archive or delete").click()
    stale.get_by_role("button", name="Archive the study").wait_for()

    admin.get_by_role("tab", name="Archive or delete").click()
    after_run(admin, lambda: admin.get_by_role("button", name="Archive the study").click())
    admin.get_by_text("Archived: hidden from annotators").first.wait_for()
    selected(admin, "Change a study")
    selected(admin, "Archive or delete")
    expect(admin.get_by_role("button", name="Unarchive the study")).to_be_visible()
    expect(admin.get_by_role("button", name="Archive the study", exact=True)).to_have_count(0)
    assert study_row(admin, COCO)["archived"] == "True"  # the table at the top says so, without a reload
    assert archived(server, COCO)
    admin.get_by_role("tab", name="Archive or delete").scroll_into_view_if_needed()
    screenshot(admin, "90-studies-after-archive")

    # Archive again from the stale page: the study stays archived (an action, not a toggle).
    after_run(stale, lambda: stale.get_by_role("button", name="Archive the study").click())
    stale.get_by_text("Archived: hidden from annotators").first.wait_for()
    assert archived(server, COCO)
    expect(stale.get_by_role("button", name="Unarchive the study")).to_be_visible()
    stale.context.close()

    # Set overlap: the table shows the new k at once, and the admin stays on the tab.
    admin.get_by_role("tab", name="Overlap, re-open, gold").click()
    admin.get_by_label("Annotators per item (k)").last.fill("5")
    after_run(admin, lambda: admin.get_by_role("button", name="Set overlap").click())
    admin.get_by_text("Overlap changed").first.wait_for()
    selected(admin, "Change a study")
    selected(admin, "Overlap, re-open, gold")
    assert study_row(admin, COCO)["overlap"] == "5"

    # Unarchive: open again, said at once.
    admin.get_by_role("tab", name="Archive or delete").click()
    after_run(admin, lambda: admin.get_by_role("button", name="Unarchive the study").click())
    admin.get_by_text("Unarchived: open to annotators again").first.wait_for()
    expect(admin.get_by_role("button", name="Archive the study", exact=True)).to_be_visible()
    assert not archived(server, COCO) and study_row(admin, COCO)["archived"] == "False"


def test_the_drill_down_marks_the_current_vote_and_the_final_label_starts_empty(browser, server):  # noqa: F811
    """Issue 24, item 8, as the admin sees it; screenshot 91-analysis-drill-down."""
    from annotate import service
    from annotate.judging.votes import cast_votes
    from annotate.people.sessions import log_in as store_log_in
    from annotate.store.db import write_session

    engine = server.engine
    with read_session(engine) as session:
        study = session.scalar(select(Study).where(Study.name == COCO))
    ann1, ann2 = (store_log_in(engine, f"ann{i}", f"demo-ann{i}-pw")[0] for i in (1, 2))
    item = service.next_item(engine, ann1, study.id)
    service.submit(engine, ann1, item.id, {"human_like": "1", "correct": "1"})
    service.submit(engine, ann1, item.id, {"human_like": "0", "correct": "1"}, comment="on second thoughts")
    with write_session(engine) as session:
        cast_votes(session, ann2, item.id, {"human_like": "1", "correct": "1"})
    page = new_page(browser, server.url)
    log_in(page, "admin", "demo-admin-pw", landing="Progress")
    page.get_by_role("link", name="Analysis").click()
    page.get_by_role("heading", name="Analysis").wait_for()
    wait_idle(page)
    pick(page, "Study", COCO)
    drill = page.get_by_test_id("stExpander").filter(has_text="Drill down into an item and adjudicate")
    drill.get_by_text("Drill down into an item and adjudicate").click()
    record = page.get_by_role("button", name="Record the adjudicated label")
    record.wait_for()
    final = page.get_by_test_id("stRadio").filter(has_text="Final label")
    expect(final.locator("input:checked")).to_have_count(0)  # nothing chosen for the adjudicator
    with page.expect_download() as info:
        drill.get_by_role("button", name="Download as CSV").click()
    rows = list(csv.DictReader(io.StringIO(Path(info.value.path()).read_text(encoding="utf-8"))))
    human_like = [
        (r["annotator"], r["answer"], r["current"]) for r in rows if r["question"] == "human_like"
    ]  # "answer": issue 27
    assert human_like == [("ann1", "1", "False"), ("ann1", "0", "True"), ("ann2", "1", "True")]
    assert list(rows[0])[0] == "current"  # the first column: in view without scrolling the table
    drill.scroll_into_view_if_needed()
    screenshot(page, "91-analysis-drill-down")
    after_run(page, record.click)
    page.get_by_text("Choose the final label first: nothing was recorded.").wait_for()
    screenshot(page, "92-final-label-must-be-chosen")
    choose(page, final, "0", in_form=True)
    after_run(page, record.click)
    page.get_by_text("Recorded; the majority export gives it as the final label.").wait_for()
