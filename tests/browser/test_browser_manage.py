"""Study management in Chromium: an admin puts a study on members only; an annotator who is not
on it no longer sees it (issue 14, item 4).  Screenshots: test-output/screenshots/40-*.png."""

from __future__ import annotations

from tests.browser.test_browser import browser, log_in, page, server  # noqa: F401  (fixtures)
from tests.browser_harness import RUN_COUNTER, after_run, screenshot, wait_idle


def test_members_only_study(page, server, browser):  # noqa: F811
    log_in(page, "admin", "demo-admin-pw", landing="Progress")
    page.get_by_role("link", name="Studies").click()
    page.get_by_role("heading", name="Studies").wait_for()
    wait_idle(page)
    after_run(page, lambda: page.get_by_role("tab", name="Change a study").click())  # the tab runs the page again
    picker = page.get_by_test_id("stSelectbox").filter(has_text="Study")
    picker.scroll_into_view_if_needed()
    picker.click()
    page.keyboard.type("CoCo")  # filter the list as a person would
    after_run(page, lambda: page.get_by_role("option", name="Demo: CoCo turns").first.click())
    page.get_by_text("Members (none: open to every annotator)").wait_for()
    page.get_by_test_id("stMultiSelect").first.click()
    page.get_by_role("option", name="ann2").click()
    page.keyboard.press("Escape")
    after_run(page, lambda: page.get_by_role("button", name="Set members").click())
    page.get_by_text("Members set.").wait_for()
    screenshot(page, "40-study-members-set")
    page.get_by_role("tab", name="Change log").click()
    page.get_by_role("tab", name="Change log").scroll_into_view_if_needed()
    screenshot(page, "40-study-change-log")
    for name, sees in (("ann1", False), ("ann2", True)):
        context = browser.new_context(viewport={"width": 1400, "height": 900})
        context.add_init_script(RUN_COUNTER)
        other = context.new_page()
        other.goto(server.url)
        wait_idle(other)
        log_in(other, name, f"demo-{name}-pw")
        other.get_by_test_id("stSelectbox").first.click()
        options = other.get_by_role("option").all_inner_texts()
        assert any("Demo: CoCo turns" in o for o in options) == sees, (name, options)
        other.keyboard.press("Escape")
        screenshot(other, f"41-annotate-studies-{name}")
        context.close()
