"""Issue 38, items 3 and 6 in a real browser: where you are is kept, and admins import votes in the app.

- The study is in the URL (``?study=NAME``) and every page has its own path: a reload, a new tab and a new
  login come back to the study the annotator was in (not the first one, which may be finished), with the
  item they held; ``/progress`` opened by its address works, logged in or not (login first, then Progress).
- A CoCo turn's original and counterfactual are never judged one after the other, across a reload and a
  new login too.
- The Progress page imports a votes CSV with the command line's checks and messages, all or nothing: a
  bad row changes nothing and the page names the file and the line.

Screenshots at 1400x900 and 400x800: test-output/screenshots/38-*.png.
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
from sqlalchemy import func, select

from annotate.people.auth import add_annotator
from annotate.store.db import read_session, write_session
from annotate.studies import assignment, create_study
from tests.browser.test_browser import eventually, log_in, press
from tests.browser_harness import (
    CHROMIUM,
    CHROMIUM_ARGS,
    after_run,
    database_server,
    new_context,
    open_page,
    require_chromium,
    screenshot,
    wait_idle,
)

playwright_api = pytest.importorskip("playwright.sync_api")

WARM_UP = "Warm-up dialogues"  # the first study: where a forgotten study used to land
COCO = "CoCo turns, two of them"
PEOPLE = ("rater1", "rater2", "rater3", "rater4")


@pytest.fixture(scope="module")
def where_server(tmp_path_factory, fixtures):
    require_chromium()

    def prepare(engine):
        with write_session(engine) as session:
            add_annotator(session, "boss", "boss-password", "admin")
            for name in PEOPLE:
                add_annotator(session, name, f"{name}-password")
            create_study(session, WARM_UP, "satisfaction", [fixtures / "fga_human_eval"], overlap=5, sample=3)
            # two turns, each as the original and as its counterfactual: four items
            create_study(session, COCO, "coco", [fixtures / "coco"], condition="coco", overlap=5, sample=2)

    server = database_server(tmp_path_factory.mktemp("where"), prepare, {"DST_JUDGE_DEMO": "0"})
    yield server
    server.stop()
    server.engine.dispose()


@pytest.fixture(scope="module")
def browser(where_server):
    with playwright_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def study_box(page) -> str:
    """What the Study box shows (its combobox holds the chosen option's words)."""
    return page.get_by_test_id("stSelectbox").first.get_by_role("combobox").input_value()


def choose(page, name: str) -> None:
    page.get_by_test_id("stSelectbox").first.click()
    after_run(page, lambda: page.get_by_role("option", name=name).first.click())


def study_in_url(page) -> str | None:
    found = parse_qs(urlsplit(page.url).query).get("study")
    return found[0] if found else None


def held(server, name: str) -> list[int]:
    """The items this person holds now (an active place)."""
    from annotate.store.models import Annotator, Assignment

    with read_session(server.engine) as session:
        return list(
            session.scalars(
                select(Assignment.item_id)
                .join(Annotator, Annotator.id == Assignment.annotator_id)
                .where(Annotator.name == name, Assignment.status == assignment.ACTIVE)
            )
        )


def judged_keys(server, name: str) -> list[str]:
    """The keys of the CoCo items this person judged, in the order they judged them."""
    from annotate.store.models import Annotator, Item, VoteEvent

    with read_session(server.engine) as session:
        rows = session.execute(
            select(Item.id, Item.key, func.min(VoteEvent.id))
            .join(VoteEvent, VoteEvent.item_id == Item.id)
            .join(Annotator, Annotator.id == VoteEvent.annotator_id)
            .where(Annotator.name == name)
            .group_by(Item.id, Item.key)
            .order_by(func.min(VoteEvent.id))
        ).all()
    return [key for _id, key, _first in rows]


def judge_coco_item(page) -> None:
    page.get_by_text("User turn to judge").wait_for()
    press(page, "1")
    press(page, "4")


def test_a_reload_keeps_the_study_and_the_held_item(where_server, browser):
    context = new_context(browser)
    page = open_page(context, where_server.url)
    log_in(page, "rater1", "rater1-password")
    choose(page, COCO)
    page.get_by_text("User turn to judge").wait_for()
    assert study_in_url(page) == COCO
    before = held(where_server, "rater1")
    shown = page.get_by_test_id("stMain").inner_text()
    assert len(before) == 1
    page.reload()
    wait_idle(page)
    page.get_by_text("User turn to judge").wait_for()
    assert COCO in study_box(page), "a reload went back to the first study"
    assert study_in_url(page) == COCO
    assert held(where_server, "rater1") == before, "the held item was released by the reload"
    assert page.get_by_test_id("stMain").inner_text() == shown
    screenshot(page, "38-reload-keeps-study")
    page.set_viewport_size({"width": 400, "height": 800})
    page.reload()  # a second reload, on a phone's screen
    wait_idle(page)
    page.get_by_text("User turn to judge").wait_for()
    assert held(where_server, "rater1") == before
    assert page.get_by_test_id("stMain").inner_text() == shown
    screenshot(page, "38-reload-keeps-study-400")
    context.close()


def test_a_new_tab_and_a_new_login_keep_the_study(where_server, browser):
    context = new_context(browser)
    page = open_page(context, where_server.url)
    log_in(page, "rater2", "rater2-password")
    choose(page, COCO)
    page.get_by_text("User turn to judge").wait_for()
    before = held(where_server, "rater2")
    second = open_page(context, where_server.url)  # a new tab, at the app's plain address
    second.get_by_text("User turn to judge").wait_for()
    assert COCO in study_box(second), "a new tab went back to the first study"
    assert study_in_url(second) == COCO
    assert held(where_server, "rater2") == before
    second.close()
    after_run(page, lambda: page.get_by_role("button", name="Log out").click())
    page.get_by_role("button", name="Log in").first.wait_for()
    wait_idle(page)
    log_in(page, "rater2", "rater2-password")
    page.get_by_text("User turn to judge").wait_for()
    assert COCO in study_box(page), "a new login went back to the first study"
    context.close()


def test_the_coco_rule_holds_across_a_reload_and_a_new_login(where_server, browser):
    for name, again in (("rater3", "reload"), ("rater4", "login")):
        context = new_context(browser)
        page = open_page(context, where_server.url)
        log_in(page, name, f"{name}-password")
        choose(page, COCO)
        judge_coco_item(page)  # the first item judged; the second is held now
        page.get_by_text("User turn to judge").wait_for()
        if again == "reload":
            page.reload()
            wait_idle(page)
        else:
            after_run(page, lambda page=page: page.get_by_role("button", name="Log out").click())
            page.get_by_role("button", name="Log in").first.wait_for()
            wait_idle(page)
            log_in(page, name, f"{name}-password")
        if COCO not in study_box(page):  # (before the fix: the first study; the annotator goes back)
            choose(page, COCO)
        for _ in range(3):
            judge_coco_item(page)
        page.get_by_text("No more items for you in this study").wait_for()
        keys = judged_keys(where_server, name)
        assert len(keys) == 4
        assert all(a != b for a, b in zip(keys, keys[1:], strict=False)), f"{again}: judged back to back: {keys}"
        context.close()


def test_progress_by_its_address(where_server, browser):
    context = new_context(browser)
    page = open_page(context, f"{where_server.url}/progress")  # logged out: the login form, then Progress
    body = page.get_by_test_id("stApp").inner_text()
    assert "Page not found" not in body
    page.get_by_role("button", name="Log in").first.wait_for()
    screenshot(page, "38-login-at-progress")
    log_in(page, "boss", "boss-password", landing="Progress")
    screenshot(page, "38-progress-after-login")
    context.close()
    context = new_context(browser, {"width": 400, "height": 800})
    page = open_page(context, f"{where_server.url}/studies?study={COCO}")  # not the admin's landing page
    assert "Page not found" not in page.get_by_test_id("stApp").inner_text()
    page.get_by_role("button", name="Log in").first.wait_for()
    screenshot(page, "38-login-at-studies-400")
    log_in(page, "boss", "boss-password", landing="Studies")
    assert urlsplit(page.url).path.endswith("/studies")
    assert study_in_url(page) == COCO
    screenshot(page, "38-studies-after-login-400")
    page.goto(f"{where_server.url}/progress?study={COCO}")  # logged in (the cookie): straight to it
    wait_idle(page)
    page.get_by_role("heading", name="Progress").wait_for()
    assert "Page not found" not in page.get_by_test_id("stApp").inner_text()
    assert COCO in study_box(page)
    page.goto(f"{where_server.url}/studies")
    wait_idle(page)
    page.get_by_role("heading", name="Studies").wait_for()
    context.close()


def _vote_count(server) -> int:
    from annotate.store.models import VoteEvent

    with read_session(server.engine) as session:
        return session.scalar(select(func.count()).select_from(VoteEvent))


def _warm_up_keys(server) -> list[str]:
    from annotate.store.models import Item, Study

    with read_session(server.engine) as session:
        return list(session.scalars(select(Item.key).join(Study).where(Study.name == WARM_UP).order_by(Item.id)))


def import_form(page):
    return page.get_by_test_id("stForm").filter(has_text="Votes file")


def test_admins_import_votes_on_the_progress_page(where_server, browser, tmp_path):
    keys = _warm_up_keys(where_server)
    good = tmp_path / "good-votes.csv"
    good.write_text(
        "item,annotator,question,value\n" + "".join(f"{key},imported-{n},satisfied,1\n" for key in keys for n in (1, 2))
    )
    bad = tmp_path / "bad-votes.csv"
    bad.write_text(
        "item,annotator,question,value\n"
        f"{keys[0]},late-1,satisfied,1\n"
        f"{keys[1]},late-1,satisfied,maybe\n"  # line 3: not an answer
    )
    context = new_context(browser)
    page = open_page(context, f"{where_server.url}/progress?study={WARM_UP}")
    log_in(page, "boss", "boss-password", landing="Progress")
    page.get_by_role("heading", name="Import votes").wait_for()
    before = _vote_count(where_server)

    import_form(page).get_by_test_id("stFileUploaderDropzoneInput").set_input_files(str(bad))
    wait_idle(page)
    after_run(page, lambda: page.get_by_role("button", name="Import the votes").click())
    page.get_by_text("Refused; nothing was changed.").wait_for()
    main = page.get_by_test_id("stMain").inner_text()
    assert "bad-votes.csv:line 3" in main
    assert "Traceback" not in main and "python -m" not in main
    assert _vote_count(where_server) == before, "a bad row changed the votes"
    page.get_by_text("bad-votes.csv:line 3").scroll_into_view_if_needed()
    screenshot(page, "38-import-refused")

    import_form(page).get_by_test_id("stFileUploaderDropzoneInput").set_input_files(str(good))
    wait_idle(page)
    after_run(page, lambda: page.get_by_role("button", name="Import the votes").click())
    page.get_by_text(f"Imported {2 * len(keys)} votes").wait_for()
    assert eventually(lambda: _vote_count(where_server) == before + 2 * len(keys))
    page.get_by_text(f"Imported {2 * len(keys)} votes").scroll_into_view_if_needed()
    screenshot(page, "38-import-done")
    page.set_viewport_size({"width": 400, "height": 800})
    wait_idle(page)
    page.get_by_text(f"Imported {2 * len(keys)} votes").scroll_into_view_if_needed()
    screenshot(page, "38-import-done-400")
    context.close()
