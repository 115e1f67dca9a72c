"""Issue 37, item 2, in Chromium: a crowd worker id cannot be taken over by its join link.

Before: a second browser opening ``/?join=<study>&key=<secret>&worker=alice`` was signed in as
``generic:alice``, saw her answers under "Go back" and could change them.  Now the first join binds
the worker id to that browser (a crowd token in the cookie ``dst_judge_crowd``): another browser
(its own Playwright context: its own cookies) is refused with a plain message and gets no identity;
alice's own browser comes back by a reload, a new tab, and the link again after a logout.
Screenshots: test-output/screenshots/37-*.png at 1400x900 and 400x800.
"""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from sqlalchemy import func, select

from annotate import service
from annotate.people.auth import add_annotator
from annotate.people.sessions import COOKIE_NAME
from annotate.store.db import read_session, write_session
from annotate.store.models import Annotator, CrowdWorker, VoteEvent
from annotate.studies import create_study
from annotate.studies.crowd import CROWD_COOKIE_NAME
from tests.browser.test_browser import browser, eventually, press  # noqa: F401  (browser: a fixture)
from tests.browser_harness import after_run, database_server, new_page, require_chromium, screenshot, wait_idle

STUDY = "Crowd identities"
NARROW = {"width": 400, "height": 800}
WIDE = {"width": 1400, "height": 900}


@pytest.fixture(scope="module")
def server(tmp_path_factory, fixtures):
    require_chromium()
    folder = tmp_path_factory.mktemp("crowd-identity")

    def prepare(engine):
        with write_session(engine) as session:
            add_annotator(session, "boss", "boss-password", "admin")
            create_study(session, STUDY, "satisfaction", [fixtures / "fga_human_eval"], condition="trade", overlap=3)
        boss = service.log_in(engine, "boss", "boss-password")[0]
        study = service.list_studies(engine)[0].id
        settings = service.set_crowd(engine, boss, study, enabled=True, quota=5, completion_code="C0DE-37", redirect_url="")
        engine.crowd = (study, settings["secret"])

    running = database_server(folder, prepare, {"DST_JUDGE_DEMO": "0"})
    yield running
    running.stop()
    running.engine.dispose()


def link(server, worker: str) -> str:
    study, secret = server.engine.crowd
    return f"{server.url}/?{urlencode({'join': study, 'key': secret, 'worker': worker})}"


def votes_of(server, worker: str) -> list[tuple[str, str]]:
    with read_session(server.engine) as session:
        return session.execute(
            select(VoteEvent.item_id, VoteEvent.value)
            .join(Annotator)
            .where(Annotator.name == f"generic:{worker}@{server.engine.crowd[0]}")
            .order_by(VoteEvent.id)
        ).all()


def workers(server) -> int:
    with read_session(server.engine) as session:
        return session.scalar(select(func.count()).select_from(CrowdWorker))


def cookie_names(page) -> set[str]:
    return {c["name"] for c in page.context.cookies()}


# The sidebar slides out of a narrow window: wait until it is wholly out (or wholly in), not mid-slide.
SIDEBAR_SETTLED = """() => {
  const bar = document.querySelector('[data-testid="stSidebar"]');
  if (!bar) return true;
  const box = bar.getBoundingClientRect();
  return box.right <= 1 || box.left >= 0;
}"""


def both_sizes(page, name: str) -> None:
    screenshot(page, f"{name}-1400x900")
    for size in (NARROW, WIDE):
        page.set_viewport_size(size)
        wait_idle(page)
        page.wait_for_function(SIDEBAR_SETTLED)
        if size is NARROW:
            screenshot(page, f"{name}-400x800")


def joined(browser, server, worker: str):  # noqa: F811
    """A new browser (a context of its own) that joins by the link and judges one item ("1")."""
    page = new_page(browser, link(server, worker))
    page.get_by_role("button", name="Satisfied (1)").wait_for()
    assert eventually(lambda: {COOKIE_NAME, CROWD_COOKIE_NAME} <= cookie_names(page))  # written after the join
    wait_idle(page)
    press(page, "1")
    assert eventually(lambda: len(votes_of(server, worker)) == 1)
    page.get_by_text("You have judged 1 of 5 items").wait_for()
    return page


def test_a_second_browser_opening_alices_link_is_refused_and_sees_nothing_of_hers(browser, server):  # noqa: F811
    alice = joined(browser, server, "alice")
    before = (votes_of(server, "alice"), workers(server))

    intruder = new_page(browser, link(server, "alice"))  # another browser: no cookie of alice's
    intruder.get_by_text("This link cannot be used.").wait_for()
    intruder.get_by_text("joined this study already, in another browser").wait_for()
    body = intruder.inner_text("body")
    assert "Logged in as" not in body and "generic:alice" not in body and "Go back" not in body
    assert intruder.get_by_role("button", name="Satisfied (1)").count() == 0
    assert COOKIE_NAME not in cookie_names(intruder)  # no login of any kind
    both_sizes(intruder, "37-crowd-second-browser-refused")

    intruder.goto(server.url)  # the app itself: the login page, nobody signed in
    wait_idle(intruder)
    intruder.get_by_role("button", name="Log in").first.wait_for()
    assert (votes_of(server, "alice"), workers(server)) == before  # nothing made, nothing changed

    alice.reload()  # and alice is still alice
    wait_idle(alice)
    alice.get_by_text("Logged in as generic:alice (worker)").wait_for()
    alice.get_by_text("You have judged 1 of 5 items").wait_for()


def test_the_workers_own_browser_comes_back_by_reload_new_tab_and_the_link_after_a_logout(browser, server):  # noqa: F811
    first = joined(browser, server, "ruth")
    ((judged, _value),) = votes_of(server, "ruth")

    first.reload()
    wait_idle(first)
    first.get_by_text("Logged in as generic:ruth (worker)").wait_for()

    tab = first.context.new_page()  # a new tab of the same browser, by the link again
    tab.goto(link(server, "ruth"))
    wait_idle(tab)
    tab.get_by_text("Logged in as generic:ruth (worker)").wait_for()
    tab.get_by_text("You have judged 1 of 5 items").wait_for()
    assert "key=" not in tab.url  # the secret leaves the address bar

    after_run(tab, lambda: tab.get_by_role("button", name="Log out").click())  # a later visit: logged out
    tab.get_by_role("button", name="Log in").first.wait_for()
    assert CROWD_COOKIE_NAME in cookie_names(tab)  # a logout keeps the browser's crowd token
    tab.goto(link(server, "ruth"))
    wait_idle(tab)
    tab.get_by_text("Logged in as generic:ruth (worker)").wait_for()
    tab.get_by_text("Go back to an earlier item").click()
    after_run(tab, lambda: tab.get_by_role("button", name="Open it").click())
    tab.get_by_text("You are changing an earlier judgement").wait_for()  # her own answer, hers to change
    both_sizes(tab, "37-crowd-same-browser-back")
    press(tab, "0")
    assert eventually(lambda: votes_of(server, "ruth") == [(judged, "1"), (judged, "0")])
    assert workers(server) >= 1 and len({w for w, _ in votes_of(server, "ruth")}) == 1
