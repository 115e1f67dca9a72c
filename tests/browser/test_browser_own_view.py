"""Issue 38, items 4 and 5 in a real browser: two tabs told apart, and the annotator's own view.

- Two tabs of one person on the same item: the tab left behind never replaces the other tab's answer
  silently.  A key pressed there before it knew stores nothing and says "answered in another tab"; the
  tab then shows that answer, and only the next key changes it (stored as a change).  A tab brought back
  into view says so before any key is pressed.
- "N of M for you" (M: judged plus still open to this person), a saved mark after each answer, undo of the
  last answer by one key (the item reopens with the answer shown), the key overview on "?", the next
  open study offered at the end.
- Every kind's answer controls on the first screen at 400x800.

Screenshots at 1400x900 and 400x800: test-output/screenshots/38-own-*.png.
"""

from __future__ import annotations

import pytest
from sqlalchemy import select

from annotate.people.auth import add_annotator
from annotate.store.db import read_session, write_session
from annotate.store.models import Annotator, Assignment, Item, VoteEvent
from annotate.studies import create_study
from annotate.studies.membership import set_members
from tests.browser.test_browser import eventually, log_in, press
from tests.browser_harness import (
    CHROMIUM,
    CHROMIUM_ARGS,
    VIEWPORT,
    after_run,
    database_server,
    in_viewport,
    new_context,
    open_page,
    require_chromium,
    screenshot,
    wait_idle,
)

playwright_api = pytest.importorskip("playwright.sync_api")

FIRST, SECOND = "Three dialogues", "Two more dialogues"
COCO, SLU = "CoCo turns", "SLU turns"
COCO_UNSURE = "CoCo turns, unsure offered"  # only pocket's (the phone test's): no other test of the module sees it
PHONE = {"width": 400, "height": 800}


@pytest.fixture(scope="module")
def own_server(tmp_path_factory, fixtures):
    require_chromium()

    def prepare(engine):
        with write_session(engine) as session:
            for name in ("twotabs", "solo", "phone", "pocket"):
                add_annotator(session, name, f"{name}-password")
            create_study(session, FIRST, "satisfaction", [fixtures / "fga_human_eval"], overlap=5, sample=3)
            create_study(session, SECOND, "satisfaction", [fixtures / "fga_human_eval"], overlap=3, sample=2)
            create_study(session, COCO, "coco", [fixtures / "coco"], condition="coco", overlap=3, sample=2)
            create_study(session, SLU, "slu", [fixtures / "dstc2"], overlap=3, sample=3)
            unsure = create_study(
                session, COCO_UNSURE, "coco", [fixtures / "coco"], condition="coco", overlap=3, sample=2, unsure=True
            )
            set_members(session, unsure, ["pocket"], "test")

    server = database_server(tmp_path_factory.mktemp("own-view"), prepare, {"DST_JUDGE_DEMO": "0"})
    yield server
    server.stop()
    server.engine.dispose()


@pytest.fixture(scope="module")
def browser(own_server):
    with playwright_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def _held(server, name: str) -> int | None:
    with read_session(server.engine) as session:
        return session.scalar(
            select(Assignment.item_id)
            .join(Annotator, Annotator.id == Assignment.annotator_id)
            .where(Annotator.name == name, Assignment.status == "active")
        )


def _values(server, name: str, item_id: int) -> list[str]:
    """The values this person stored on the item, oldest first (every event: a change is a new one)."""
    with read_session(server.engine) as session:
        return list(
            session.scalars(
                select(VoteEvent.value)
                .join(Annotator, Annotator.id == VoteEvent.annotator_id)
                .where(Annotator.name == name, VoteEvent.item_id == item_id)
                .order_by(VoteEvent.id)
            )
        )


def _key(server, item_id: int) -> str:
    with read_session(server.engine) as session:
        return session.get(Item, item_id).key


def test_a_tab_left_behind_never_replaces_the_other_tabs_answer_silently(own_server, browser):
    context = new_context(browser)
    first = open_page(context, own_server.url)
    log_in(first, "twotabs", "twotabs-password")
    second = open_page(context, f"{own_server.url}/?study={FIRST.replace(' ', '+')}")  # the same login, a second tab
    second.get_by_role("button", name="Satisfied (1)").wait_for()
    item = _held(own_server, "twotabs")
    assert item is not None
    press(first, "1")
    assert eventually(lambda: _values(own_server, "twotabs", item) == ["1"])
    # the tab left behind still shows the item; its key, pressed before it knew, stores nothing
    press(second, "0")
    second.get_by_text("Not stored: this item was answered in another tab meanwhile.").wait_for()
    second.get_by_text("Answered in another tab: satisfied yes").wait_for()
    screenshot(second, "38-own-answered-in-another-tab")
    assert _values(own_server, "twotabs", item) == ["1"]
    # now that it shows the other tab's answer, a key there is an explicit change
    press(second, "0")
    assert eventually(lambda: _values(own_server, "twotabs", item) == ["1", "0"])

    # both tabs on the next item; one answers, the other is brought back into view: it says so at once
    second.get_by_role("button", name="Satisfied (1)").wait_for()
    first.reload()
    wait_idle(first)
    now = _held(own_server, "twotabs")
    assert now is not None and now != item
    press(first, "0")
    assert eventually(lambda: _values(own_server, "twotabs", now) == ["0"])
    after_run(second, lambda: second.evaluate("document.dispatchEvent(new Event('visibilitychange'))"))
    second.get_by_text("Answered in another tab: satisfied no").wait_for()
    assert _values(own_server, "twotabs", now) == ["0"]
    context.close()


def test_the_annotators_own_view_counts_marks_undoes_explains_and_goes_on(own_server, browser):
    for viewport, tag in ((VIEWPORT, "1400"), (PHONE, "400")):
        name = "solo" if tag == "1400" else "phone"
        context = new_context(browser, viewport)
        page = open_page(context, f"{own_server.url}/?study={FIRST.replace(' ', '+')}")
        log_in(page, name, f"{name}-password")
        page.get_by_text("You have judged 0 of 3 for you").wait_for()
        first = _held(own_server, name)
        press(page, "1")
        page.get_by_text("Saved: satisfied yes").wait_for()
        page.get_by_text("You have judged 1 of 3 for you").wait_for()
        assert _held(own_server, name) != first
        screenshot(page, f"38-own-saved-mark-{tag}")
        # undo (u): the item answered last comes back, its answer shown, and a key changes it
        press(page, "u")
        page.get_by_text("You are changing an earlier judgement").wait_for()
        assert page.get_by_role("button", name="Satisfied (1)").get_attribute("kind") == "primary"
        screenshot(page, f"38-own-undo-{tag}")
        press(page, "0")
        assert eventually(lambda name=name, first=first: _values(own_server, name, first) == ["1", "0"])
        page.get_by_text("Saved: satisfied no").wait_for()
        # the key overview on "?"
        press(page, "?")
        keys = page.get_by_role("dialog")
        keys.get_by_text("Undo: reopen the item you answered last", exact=False).wait_for()
        assert keys.get_by_text("Not satisfied").count() == 1
        screenshot(page, f"38-own-keys-{tag}")
        page.keyboard.press("Escape")
        keys.wait_for(state="detached")
        # to the end of the study: the next open study is offered
        press(page, "1")
        press(page, "0")
        page.get_by_text("No more items for you in this study. Thank you!").wait_for()
        page.get_by_text("You have judged 3 of 3 for you").wait_for()
        go_on = page.get_by_role("button", name="Go on with the next open study")
        assert in_viewport(page, go_on)
        screenshot(page, f"38-own-end-{tag}")
        after_run(page, go_on.click)
        page.get_by_text("You have judged 0 of 2 for you").wait_for()
        assert "Two+more+dialogues" in page.url or "Two%20more%20dialogues" in page.url
        context.close()


@pytest.mark.parametrize("study", [FIRST, COCO, SLU, COCO_UNSURE])
def test_every_kinds_answer_controls_are_on_a_phones_first_screen(own_server, browser, study):
    context = new_context(browser, PHONE)
    page = open_page(context, f"{own_server.url}/?study={study.replace(' ', '+')}")
    log_in(page, "pocket", "pocket-password")
    controls = {
        FIRST: ("Satisfied (1)", "Not satisfied (0)", "Skip"),
        COCO: ("Human-like: yes (1)", "Human-like: no (2)", "Correct: yes (3)", "Correct: no (4)", "Skip"),
        SLU: ("Save and next", "Skip"),
        # a row per question, each with its Unsure (found below the fold once: the second row at y 775-815, Skip under it)
        COCO_UNSURE: ("Yes (1)", "No (2)", "Unsure (n)", "Yes (3)", "No (4)", "Unsure (m)", "Skip"),
    }[study]
    page.get_by_role("button", name=controls[0]).wait_for()
    for name in controls:
        assert in_viewport(page, page.get_by_role("button", name=name).first), f"{study}: {name} is below the fold"
    if study == SLU:
        assert in_viewport(page, page.get_by_label("Transcription (what the caller actually said)"))
    screenshot(page, f"38-own-phone-{study.split()[0].lower()}{'-unsure' if study == COCO_UNSURE else ''}")
    context.close()
