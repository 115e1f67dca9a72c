"""Every CoCo and SLU item has its controls on the first screen at 1400x900 (issue 24, item 4).

Measured by this test before this layout: the CoCo answer buttons sat at y 931-1,292 px on all 12
items (the user turn to judge at y 898-1,032 on 5 of them, under the whole dialogue so far); the SLU
transcription box started at y 876-928 on 22 of 36 items (the 7th act of one at y 878), and scrolling
down to it took *Save and next* off the screen.  The test logs in as the one
annotator of a study made of the shared fixtures (overlap 1) and votes through EVERY item with the
keyboard, checking on arrival at each that the answer buttons, the thing judged (CoCo: the candidate
user turn; SLU: the transcription box, the act rows) and Save / Skip are wholly on the first screen.
Screenshots: test-output/screenshots/60-coco-first-screen.png, 61-slu-first-screen.png.
"""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from annotate.people.auth import set_password
from annotate.store.db import read_session, write_session
from annotate.store.models import Assignment, Item, VoteEvent
from tests.browser.test_browser import eventually, log_in, press
from tests.browser_harness import (
    CHROMIUM,
    CHROMIUM_ARGS,
    database_server,
    in_viewport,
    new_page,
    require_chromium,
    wait_idle,
)
from tests.store_helpers import make_study

playwright_api = pytest.importorskip("playwright.sync_api")
PASSWORD = "fold-password"
COCO_BUTTONS = ("Human-like: yes (1)", "Human-like: no (2)", "Correct: yes (3)", "Correct: no (4)", "Skip")
SLU_BUTTONS = ("Save and next", "Skip")
TRANSCRIPTION = "Transcription (what the caller actually said)"


@pytest.fixture(params=["coco", "slu"])
def study_server(request, tmp_path_factory, fixtures):
    """A server with one study of the kind (every fixture item, overlap 1) and its one annotator."""
    require_chromium()
    kind = request.param
    made = {}

    def prepare(engine):
        study, people = make_study(engine, fixtures, kind=kind, overlap=1, annotators=1, name=kind)
        with write_session(engine) as session:
            set_password(session, people[0].name, PASSWORD)
        made.update(study_id=study.id, annotator=people[0].name, annotator_id=people[0].id)

    server = database_server(tmp_path_factory.mktemp(f"fold-{kind}"), prepare, {"DST_JUDGE_DEMO": "0"})
    server.kind = kind
    server.__dict__.update(made)
    yield server
    server.stop()
    server.engine.dispose()


def _held(server) -> Item | None:
    """The item the annotator holds now (the one on their screen)."""
    with read_session(server.engine) as session:
        item_id = session.scalar(
            select(Assignment.item_id)
            .where(Assignment.annotator_id == server.annotator_id, Assignment.status == "active")
            .order_by(Assignment.id.desc())
        )
        return session.get(Item, item_id) if item_id is not None else None


def _n_items(server) -> int:
    with read_session(server.engine) as session:
        return session.scalar(select(func.count()).select_from(Item).where(Item.study_id == server.study_id))


def _judged(server) -> int:
    with read_session(server.engine) as session:
        return session.scalar(
            select(func.count(func.distinct(VoteEvent.item_id))).where(VoteEvent.annotator_id == server.annotator_id)
        )


def _off_screen(page, item: Item, kind: str) -> list[str]:
    """What should be on the first screen of this item and is not."""
    locators = {}
    if kind == "coco":
        for name in COCO_BUTTONS:
            locators[name] = page.get_by_role("button", name=name)
        locators["the user turn to judge"] = page.get_by_text(item.payload["user"], exact=True)
    else:
        for name in SLU_BUTTONS:
            locators[name] = page.get_by_role("button", name=name)
        locators["the transcription box"] = page.get_by_label(TRANSCRIPTION)
        radios = page.get_by_test_id("stRadio")
        assert radios.count() == len(item.payload["acts"])
        for position in range(radios.count()):
            locators[f"act {position + 1}"] = radios.nth(position)
    for what, locator in locators.items():
        assert locator.count() == 1, f"{item.key}: {what} found {locator.count()} times"
    return [
        f"{what} (y {locator.bounding_box()['y']:.0f})" for what, locator in locators.items() if not in_viewport(page, locator)
    ]


def _judge(page, item: Item, kind: str) -> None:
    """Vote on the item with the keyboard only."""
    if kind == "coco":
        press(page, "1")  # human-like: yes
        press(page, "4")  # correct: no -> complete, the next item comes
    else:
        for position, act in enumerate(item.payload["acts"]):
            if not act.get("auto"):  # unmarked -> correct; the auto-marked are correct already
                press(page, str(position + 1))
        press(page, "Control+Enter")


def test_every_item_has_its_controls_on_the_first_screen(study_server):
    server, kind = study_server, study_server.kind
    with playwright_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = new_page(browser, server.url)
        log_in(page, server.annotator, PASSWORD)
        total, failures, seen = _n_items(server), [], []
        done = page.get_by_text("No more items for you in this study")
        while True:
            # the next item once it is held (or the end of the study), never the one just judged
            assert eventually(lambda: done.is_visible() or ((held := _held(server)) is not None and held.id not in seen))
            wait_idle(page)
            if done.is_visible():
                break
            item = _held(server)
            seen.append(item.id)
            marker = page.get_by_text("User turn to judge") if kind == "coco" else page.get_by_label(TRANSCRIPTION)
            marker.wait_for()
            if kind == "slu":  # the box starts from the item's own top ASR hypothesis: this item is on screen
                asr = item.payload["asr"][0][0] if item.payload["asr"] else ""
                assert page.get_by_label(TRANSCRIPTION).input_value() == asr
            else:
                page.get_by_text(item.payload["user"], exact=True).wait_for()
            if len(seen) == 1:
                screenshot_first_screen(page, "60-coco-first-screen" if kind == "coco" else "61-slu-first-screen")
            missing = _off_screen(page, item, kind)
            if missing:
                failures.append(f"{item.key} [{item.condition}]: " + ", ".join(missing))
            _judge(page, item, kind)
            assert eventually(lambda: _judged(server) >= len(seen)), f"{item.key}: the keyboard vote was not stored"
        browser.close()
    assert len(seen) == total, f"walked {len(seen)} of {total} items"
    assert not failures, f"{len(failures)} of {total} {kind} items have controls below the fold at 1400x900:\n" + "\n".join(
        failures
    )


def screenshot_first_screen(page, name: str):
    """The first screen only (the viewport, not the full page): what the annotator sees on arrival."""
    from tests.browser_harness import SCREENSHOTS

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=False)
    return path
