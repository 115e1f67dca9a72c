"""Every vote lands on the item its tab showed, or is refused with a message (issue 23, item 1).

Before: the answer buttons had fixed widget keys and the run a key press started asked for the next
item again, so (a) a vote on an item whose place had timed out and gone to someone else was stored on
*another* item, silently, and (b) with two tabs on the same item, a vote in the second tab was stored
on the item the first tab had moved on to, which the second tab never showed.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import select, update

from annotate.people.auth import add_annotator
from annotate.store.db import read_session, write_session
from annotate.store.models import Annotator, Assignment, Item, VoteEvent, utcnow
from annotate.studies import create_study
from tests.browser.test_browser import eventually, log_in, press
from tests.browser_harness import CHROMIUM, CHROMIUM_ARGS, RUN_COUNTER, database_server, require_chromium, screenshot, wait_idle

playwright_api = pytest.importorskip("playwright.sync_api")
FILES = ("MUL0144.json.txt", "PMUL2000.json.txt", "SNG0095.json.txt")


@pytest.fixture
def server(tmp_path, fixtures):
    require_chromium()

    def prepare(engine):
        with write_session(engine) as session:
            for name in ("first", "second"):
                add_annotator(session, name, f"{name}-password")
            create_study(session, "Integrity", "satisfaction", [fixtures / "fga_human_eval" / f for f in FILES], overlap=1)

    running = database_server(tmp_path, prepare, {"DST_JUDGE_DEMO": "0"})
    yield running
    running.stop()
    running.engine.dispose()


@pytest.fixture
def browser(server):
    with playwright_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def open_tab(context, url: str):
    page = context.new_page()
    page.goto(url)
    wait_idle(page)
    return page


def new_context(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    context.add_init_script(RUN_COUNTER)
    return context


def held(engine, name: str) -> list[str]:
    """The keys of the items ``name`` holds now (an unexpired place, not yet judged)."""
    with read_session(engine) as session:
        return list(
            session.scalars(
                select(Item.key)
                .join(Assignment, Assignment.item_id == Item.id)
                .join(Annotator, Assignment.annotator_id == Annotator.id)
                .where(Annotator.name == name, Assignment.status == "active")
                .order_by(Assignment.id)
            )
        )


def votes_by(engine, name: str) -> list[tuple[str, str]]:
    with read_session(engine) as session:
        return [
            tuple(row)
            for row in session.execute(
                select(Item.key, VoteEvent.value)
                .join(Item, VoteEvent.item_id == Item.id)
                .join(Annotator, VoteEvent.annotator_id == Annotator.id)
                .where(Annotator.name == name)
                .order_by(VoteEvent.id)
            )
        ]


def shown_key(page, engine) -> str:
    """The dialogue the tab shows, known by its first user turn (the page does not name it)."""
    from annotate.kinds import KINDS

    with read_session(engine) as session:
        openings = {
            key: " ".join(KINDS["satisfaction"].preview(payload).split())
            for key, payload in session.execute(select(Item.key, Item.payload))
        }
    text = " ".join(page.get_by_test_id("stMain").inner_text().split())
    found = [key for key, opening in openings.items() if opening in text]
    return found[0] if len(found) == 1 else None


def test_a_vote_on_an_item_reassigned_meanwhile_is_refused_not_redirected(server, browser):
    context = new_context(browser)
    page = open_tab(context, server.url)
    log_in(page, "first", "first-password")
    page.get_by_role("button", name="Satisfied (1)").wait_for()
    seen = eventually(lambda: shown_key(page, server.engine))
    assert seen is not None and held(server.engine, "first") == [seen]
    # The place times out (the annotator went for lunch) and the item goes to someone else, who judges it.
    with write_session(server.engine) as session:
        session.execute(update(Assignment).where(Assignment.status == "active").values(assigned_at=utcnow() - timedelta(days=1)))
    from annotate.judging.votes import cast_vote

    with write_session(server.engine) as session:  # the expired place goes back and the other takes it
        second = session.scalar(select(Annotator).where(Annotator.name == "second"))
        cast_vote(session, second, session.scalar(select(Item.id).where(Item.key == seen)), "satisfied", "0")
    assert votes_by(server.engine, "second") == [(seen, "0")]
    # Back from lunch, the first annotator answers the item still on their screen.
    press(page, "1")
    assert votes_by(server.engine, "first") == []  # refused: never stored on another item
    page.get_by_text("This item was reassigned").wait_for()
    screenshot(page, "70-vote-on-reassigned-item-refused")
    next_key = eventually(lambda: shown_key(page, server.engine))
    assert next_key not in (None, seen)  # here is your next one
    assert held(server.engine, "first") == [next_key]
    press(page, "1")  # and the next answer lands where it was given
    assert eventually(lambda: votes_by(server.engine, "first")) == [(next_key, "1")]
    context.close()


def test_two_tabs_on_one_item_each_vote_lands_on_what_its_tab_showed(server, browser):
    context = new_context(browser)
    first_tab = open_tab(context, server.url)
    log_in(first_tab, "first", "first-password")
    first_tab.get_by_role("button", name="Satisfied (1)").wait_for()
    second_tab = open_tab(context, server.url)  # the same login (cookie), the same held item
    second_tab.get_by_role("button", name="Satisfied (1)").wait_for()
    seen = eventually(lambda: shown_key(first_tab, server.engine))
    assert seen is not None and shown_key(second_tab, server.engine) == seen
    press(first_tab, "1")
    assert eventually(lambda: votes_by(server.engine, "first")) == [(seen, "1")]
    assert eventually(lambda: shown_key(first_tab, server.engine) not in (None, seen))  # the first tab moved on
    # The second tab still shows the first item; its answer belongs to that item, and changes the other
    # tab's answer only as an explicit change (issue 38): its first key, pressed before it knew, stores
    # nothing and says so; the tab then shows the answer given, and its next key is the change.
    assert shown_key(second_tab, server.engine) == seen
    press(second_tab, "0")
    second_tab.get_by_text("Not stored: this item was answered in another tab meanwhile.").wait_for()
    second_tab.get_by_text("Answered in another tab: satisfied yes").wait_for()
    assert votes_by(server.engine, "first") == [(seen, "1")]
    assert shown_key(second_tab, server.engine) == seen
    press(second_tab, "0")
    assert eventually(lambda: len(votes_by(server.engine, "first")) == 2)
    assert votes_by(server.engine, "first") == [(seen, "1"), (seen, "0")]
    screenshot(second_tab, "71-second-tab-vote-on-its-own-item")
    context.close()
