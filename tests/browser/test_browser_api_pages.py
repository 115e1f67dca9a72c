"""Issue 28 in Chromium at 1400x900: the Annotators page's API tokens (a token just created, shown once
on the first screen, working) and the Analysis page's judges table (a judge that voted through the
API, against the human majority).

A server of its own on a fresh SQLite database with the demo studies; the three demo annotators judge
every item of the satisfaction study and an automatic judge ("gpt-judge") every item through
``service.api_next`` / ``service.api_vote``, as the HTTP API does.  Screenshots (the screen as the admin
sees it, not the full page): test-output/screenshots/api_tokens.png and api_analysis_judges.png.
"""

from __future__ import annotations

import os
from dataclasses import replace

import pytest

from annotate import service
from annotate.people.sessions import log_in as store_log_in
from annotate.studies.demo import DEMO_STUDIES, ensure_demo
from tests.browser.test_browser import browser, log_in  # noqa: F401  (browser: a fixture)
from tests.browser.test_browser_analysis import ANSWERS_TIMEOUT, PAGE_WIDTH, TABLES_FIT, go_to_analysis, screenshot_top
from tests.browser.test_browser_workflows import pick
from tests.browser_harness import after_run, database_server, in_viewport, new_page, require_chromium, wait_idle

pytestmark = pytest.mark.browser

SATISFACTION = DEMO_STUDIES[0]


def prepare(engine) -> None:
    """The demo; its satisfaction study judged by the three annotators and by an automatic judge."""
    ensure_demo(engine, announce=False)
    admin, _ = store_log_in(engine, "admin", "demo-admin-pw")
    study = next(s for s in service.list_studies(engine, admin) if s.name == SATISFACTION)
    stored = service.study_settings(engine, admin, study.id)
    service.set_study_settings(engine, admin, study.id, replace(stored, resamples=200))
    for n in (1, 2, 3):  # 1 and 2 follow the length of the dialogue id, 3 always says 1
        person, _ = store_log_in(engine, f"ann{n}", f"demo-ann{n}-pw")
        while (item := service.next_item(engine, person, study.id)) is not None:
            service.submit(engine, person, item.id, {"satisfied": "1" if n == 3 or len(item.key) % 2 else "0"})
    service.add_person(engine, admin, "gpt-judge", None, kind="judge")
    judge = service.token_user(engine, service.add_token(engine, admin, "gpt-judge", "first run")[0])
    seen = 0
    while (item := service.api_next(engine, judge, study.id).item) is not None:
        majority = "1" if len(item.key) % 2 else "0"
        service.api_vote(engine, judge, study.id, item.id, {"satisfied": majority if seen % 3 else str(1 - int(majority))})
        seen += 1


@pytest.fixture(scope="module")
def server(tmp_path_factory, fixtures):
    require_chromium()
    os.environ.setdefault("DST_JUDGE_FIXTURES", str(fixtures))
    running = database_server(tmp_path_factory.mktemp("api-pages"), prepare, {"DST_JUDGE_FIXTURES": str(fixtures)})
    yield running
    running.stop()
    running.engine.dispose()


def check_layout(page, where: str) -> None:
    """No error box or traceback, nothing scrolling sideways, no table wider than its container."""
    errors = page.locator("[data-testid='stException'], [data-testid='stAlertContentError']")
    assert errors.count() == 0, f"{where}: {errors.first.inner_text()}"
    assert "Traceback" not in page.get_by_test_id("stMain").inner_text(), where
    widths = page.evaluate(PAGE_WIDTH)
    assert widths["page"] <= widths["inner"], f"{where}: the page scrolls sideways {widths}"
    assert widths["main"] <= widths["mainClient"], f"{where}: the main area scrolls sideways {widths}"
    grids = page.evaluate(TABLES_FIT)
    assert grids, f"{where}: no table on the page"
    wide = [grid for grid in grids if grid["right"] > grid["container"] + 1 or grid["scroll"] > grid["client"] + 1]
    assert not wide, f"{where}: tables wider than their container: {wide}"


def test_a_token_made_on_the_annotators_page_is_on_the_first_screen_and_works(browser, server):  # noqa: F811
    page = new_page(browser, server.url)
    log_in(page, "admin", "demo-admin-pw", landing="Progress")
    page.get_by_role("link", name="Annotators").click()
    page.get_by_role("heading", name="Annotators").wait_for()
    wait_idle(page)
    people = page.locator(".st-key-table-annotators [data-testid='stDataFrame']")
    people.wait_for()
    assert in_viewport(page, people), "the people table is below the first screen"
    check_layout(page, "people")

    after_run(page, lambda: page.get_by_role("tab", name="API tokens").click())
    pick(page, "Token for", "gpt-judge (automatic judge)")
    page.get_by_label("Label (optional: what it is for)").fill("second run")
    after_run(page, lambda: page.get_by_role("button", name="Create token").click())
    shown = page.get_by_test_id("stCode").filter(has_text="dstj_")
    shown.wait_for()
    token = shown.inner_text().strip()
    assert token.startswith("dstj_") and len(token) == 48, token
    page.evaluate("document.querySelector('[data-testid=\"stMain\"]').scrollTo(0, 0)")
    screenshot_top(page, "api_tokens")
    notice = page.get_by_text("Copy it now: it is not shown again (only its hash is kept).")
    for what, element in (
        ("the token", shown),
        ("the notice", notice),
        ("the create button", page.get_by_role("button", name="Create token")),
        ("the revoke button", page.get_by_role("button", name="Revoke")),
        ("the tokens heading", page.get_by_role("heading", name="Tokens")),
    ):
        assert in_viewport(page, element), f"{what} is not on the first screen"
    check_layout(page, "api tokens")
    judge = service.token_user(server.engine, token)
    assert judge is not None and judge.name == "gpt-judge" and judge.kind == "judge"
    assert [t.label for t in service.list_tokens(server.engine, service.CLI)] == ["second run", "first run"]

    page.reload()  # shown once: gone after any new run
    wait_idle(page)
    page.get_by_role("heading", name="Annotators").wait_for()
    assert page.get_by_test_id("stCode").filter(has_text="dstj_").count() == 0
    page.context.close()


def test_the_analysis_page_shows_the_judges_table(browser, server):  # noqa: F811
    page = new_page(browser, server.url)
    log_in(page, "admin", "demo-admin-pw", landing="Progress")
    go_to_analysis(page)
    pick(page, "Study", SATISFACTION)
    page.get_by_role("heading", name="Answers").wait_for(timeout=ANSWERS_TIMEOUT)
    wait_idle(page, timeout=ANSWERS_TIMEOUT)
    page.evaluate("document.querySelector('[data-testid=\"stMain\"]').scrollTo(0, 0)")
    screenshot_top(page, "api_analysis_top")
    pointer = page.get_by_text("Automatic judges against the human majority (their table is at the end of the page)")
    pointer.wait_for()
    table = page.locator(".st-key-table-judges-satisfied [data-testid='stDataFrame']")
    table.wait_for()  # in the judges section, open by itself: no upload, no click
    page.get_by_text("Question satisfied: 10 items with a human majority.").wait_for()
    table.scroll_into_view_if_needed()
    heading = page.get_by_text("Automatic judges against the human majority", exact=True)
    heading.scroll_into_view_if_needed()
    wait_idle(page)
    screenshot_top(page, "api_analysis_judges")
    assert in_viewport(page, heading), "the judges section's title is not on the screen with its table"
    assert in_viewport(page, table), "the judges table is cut"
    check_layout(page, "analysis judges")
    page.context.close()
