"""A study that closes under its annotators, and the Study box that swallowed the answer keys (issue 24,
items 1 and 5).

Before: an annotator (or a crowd worker) whose study was archived, or whose last vote spent the
study's budget, got ``annotate.people.auth.PermissionDenied: you are not on this study`` as an error box on
their next vote.  Now the vote they cast is kept if it was acknowledged, or said not stored; the page
says the study has closed, gives a worker their completion code, offers an annotator the next open
study; and every page for every role stays free of error boxes after an archive and a budget close.
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from sqlalchemy import select

from annotate import service
from annotate.people.auth import add_annotator
from annotate.store.db import read_session, write_session
from annotate.store.models import Annotator, Item, Study, VoteEvent
from annotate.studies import create_study
from tests.browser.test_browser import eventually, log_in, press
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
SAT = "fga_human_eval"
CLOSING = ("MUL0144.json.txt", "PMUL2000.json.txt", "SNG0095.json.txt", "MUL0379.json.txt")
OTHER = ("PMUL3107.json.txt", "PMUL4234.json.txt")
ADMIN_PAGES = ("Studies", "Annotators", "Progress", "Analysis")


@pytest.fixture
def server(tmp_path, fixtures):
    require_chromium()

    def prepare(engine):
        with write_session(engine) as session:
            add_annotator(session, "boss", "boss-password", "admin")
            for name in ("ann", "ann2"):
                add_annotator(session, name, f"{name}-password")
            create_study(session, "Closing", "satisfaction", [fixtures / SAT / f for f in CLOSING], overlap=2)
            create_study(session, "Other", "satisfaction", [fixtures / SAT / f for f in OTHER], overlap=2)

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


def person(engine, name: str):
    with read_session(engine) as session:
        return session.scalar(select(Annotator).where(Annotator.name == name))


def study_id(engine, name: str) -> int:
    with read_session(engine) as session:
        return session.scalar(select(Study.id).where(Study.name == name))


def votes_of(engine, name: str) -> list[tuple[str, str]]:
    with read_session(engine) as session:
        return [
            tuple(r)
            for r in session.execute(
                select(Study.name, VoteEvent.value)
                .join(Item, VoteEvent.item_id == Item.id)
                .join(Study, Item.study_id == Study.id)
                .join(Annotator, VoteEvent.annotator_id == Annotator.id)
                .where(Annotator.name == name)
                .order_by(VoteEvent.id)
            )
        ]


def votes_on(engine, study: str) -> int:
    with read_session(engine) as session:
        return len(
            session.execute(
                select(VoteEvent.id)
                .join(Item, VoteEvent.item_id == Item.id)
                .join(Study, Item.study_id == Study.id)
                .where(Study.name == study)
            ).all()
        )


def no_error_box(page, where: str) -> None:
    wait_idle(page)
    assert page.get_by_test_id("stException").count() == 0, f"an error box on {where}"
    assert "PermissionDenied" not in page.inner_text("body"), where


def worker_page(browser, server):
    """A Prolific worker on the Closing study by its join link (crowd open, quota 3, a completion code)."""
    boss = person(server.engine, "boss")
    sid = study_id(server.engine, "Closing")
    service.set_crowd(server.engine, boss, sid, enabled=True, quota=3, completion_code="CL0SED-0K", redirect_url="")
    link = service.crowd_link(server.engine, boss, sid, server.url)
    query = {k: v[0] for k, v in parse_qs(urlsplit(link).query).items()}
    filled = {**query, "PROLIFIC_PID": "5f3a9c0d1e2b3c4d5e6f7a8c", "STUDY_ID": "64b0c1", "SESSION_ID": "s-0002"}
    page = new_page(browser, f"{server.url}/?{urlencode(filled)}")
    page.get_by_role("button", name="Satisfied (1)").wait_for()
    return page


def walk_every_page(browser, server, pages: dict) -> None:
    """Every page of every role, visited and reloaded: no error box anywhere."""
    for name, page in pages.items():
        page.reload()
        no_error_box(page, f"{name}'s Annotate after a reload")
    admin = new_page(browser, server.url)
    log_in(admin, "boss", "boss-password", landing="Progress")
    for title in ADMIN_PAGES + ("Annotate",):
        after_run(admin, lambda title=title: admin.get_by_role("link", name=title).click())
        admin.get_by_role("heading", name=title).wait_for()
        no_error_box(admin, f"the admin's {title}")
        admin.reload()
        admin.get_by_role("heading", name=title).wait_for()
        no_error_box(admin, f"the admin's {title} after a reload")


def test_an_archive_under_annotators_keeps_or_refuses_their_vote_and_says_so(server, browser):
    ann = new_page(browser, server.url)
    log_in(ann, "ann", "ann-password")
    ann.get_by_role("button", name="Satisfied (1)").wait_for()
    worker = worker_page(browser, server)
    press(worker, "1")  # the worker's first judgement is acknowledged
    assert eventually(lambda: votes_on(server.engine, "Closing") == 1)
    worker.get_by_role("button", name="Satisfied (1)").wait_for()

    service.set_archived(server.engine, person(server.engine, "boss"), study_id(server.engine, "Closing"), True)

    press(ann, "1")  # after the archive: not stored, and said so
    ann.get_by_text("has closed").first.wait_for()
    ann.get_by_text("Your last answer was not stored").wait_for()
    no_error_box(ann, "the annotator's vote after the archive")
    assert votes_of(server.engine, "ann") == []
    screenshot(ann, "75-study-closed-under-annotator")
    after_run(ann, lambda: ann.get_by_role("button", name="Go on with the next open study").click())
    ann.get_by_role("button", name="Satisfied (1)").wait_for()
    press(ann, "0")
    assert eventually(lambda: votes_of(server.engine, "ann")) == [("Other", "0")]

    press(worker, "1")  # the worker: closed, with the completion code (one judgement made)
    worker.get_by_text("has closed").first.wait_for()
    worker.get_by_text("CL0SED-0K").wait_for()
    no_error_box(worker, "the worker's vote after the archive")
    screenshot(worker, "76-study-closed-under-worker")
    walk_every_page(browser, server, {"ann": ann, "worker": worker})


def test_the_vote_that_spends_the_budget_is_kept_and_the_study_says_it_closed(server, browser):
    boss = person(server.engine, "boss")
    service.set_allocation(server.engine, boss, study_id(server.engine, "Closing"), policy="uniform", budget=2)
    ann = new_page(browser, server.url)
    log_in(ann, "ann", "ann-password")
    ann2 = new_page(browser, server.url)
    log_in(ann2, "ann2", "ann2-password")
    ann2.get_by_role("button", name="Satisfied (1)").wait_for()
    press(ann, "1")
    assert eventually(lambda: votes_of(server.engine, "ann")) == [("Closing", "1")]
    press(ann2, "0")  # the second judgement spends the budget: acknowledged, then the study closes
    assert eventually(lambda: votes_of(server.engine, "ann2")) == [("Closing", "0")]
    ann2.get_by_text("has closed").first.wait_for()
    ann2.get_by_text("Your last answer was saved").wait_for()
    no_error_box(ann2, "the vote that spent the budget")
    screenshot(ann2, "77-budget-spent-study-closed")
    press(ann, "1")  # the other annotator's next answer: refused, said so
    ann.get_by_text("has closed").first.wait_for()
    no_error_box(ann, "a vote after the budget closed the study")
    assert votes_of(server.engine, "ann") == [("Closing", "1")]
    walk_every_page(browser, server, {"ann": ann, "ann2": ann2})


def test_the_answer_keys_vote_right_after_choosing_a_study(server, browser):
    ann = new_page(browser, server.url)
    log_in(ann, "ann", "ann-password")
    ann.get_by_role("button", name="Satisfied (1)").wait_for()
    ann.get_by_test_id("stSelectbox").first.click()
    after_run(ann, lambda: ann.get_by_role("option", name="Other").first.click())
    ann.get_by_role("button", name="Satisfied (1)").wait_for()
    wait_idle(ann)
    after_run(ann, lambda: ann.keyboard.press("1"))  # no blur by the test: the page must not keep the focus in the box
    assert eventually(lambda: votes_of(server.engine, "ann")) == [("Other", "1")]
    assert ann.get_by_text("No results").count() == 0
