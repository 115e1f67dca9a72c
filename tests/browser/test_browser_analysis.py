"""Issue 27 in Chromium at 1400x900: the Analysis page answers first and its tables fit.

A server of its own on a fresh SQLite database with the three demo studies (satisfaction, CoCo, SLU),
every item of each voted by the three demo annotators through ``annotate.service`` (each answer a
hidden truth per item and question, flipped for one annotator in five: they partly agree, so agreement,
correlation and λ are all defined).  For each study the admin opens Analysis: the summary sentences (and
for satisfaction the forest plot) are on the first screen without scrolling, nothing scrolls sideways,
no table is wider than its container, every table has its CSV download, and no error box shows; the
page is visited twice and after a reload.  Screenshots: test-output/screenshots/analysis_*.png.
"""

from __future__ import annotations

import os
import random
import time

import pytest

from annotate import service
from annotate.people.auth import PermissionDenied
from annotate.people.sessions import log_in as store_log_in
from annotate.studies.demo import DEMO_STUDIES, ensure_demo
from tests.browser.test_browser import browser, log_in  # noqa: F401  (browser: a fixture)
from tests.browser.test_browser_workflows import pick
from tests.browser_harness import (
    SCREENSHOTS,
    database_server,
    in_viewport,
    new_context,
    new_page,
    open_page,
    require_chromium,
    wait_idle,
)

pytestmark = pytest.mark.browser

FLIP = 0.2  # each annotator answers against the item's hidden truth this often
STUDIES = {"satisfaction": DEMO_STUDIES[0], "coco": DEMO_STUDIES[1], "slu": DEMO_STUDIES[2]}
ANSWERS_TIMEOUT = 120_000  # the first analysis of a study computes its bootstraps


def answer(key: str, question: str, annotator: int) -> str:
    """A 0/1 answer: the item's hidden truth, flipped for this annotator one time in five (seeded)."""
    truth = random.Random(f"{key}|{question}").random() < 0.5
    flip = random.Random(f"{annotator}|{key}|{question}").random() < FLIP
    return str(int(truth ^ flip))


def vote_everything(engine) -> None:
    """The three demo annotators judge every item of every demo study, through the service."""
    admin, _ = store_log_in(engine, "admin", "demo-admin-pw")
    ids = {s.name: s.id for s in service.list_studies(engine, admin)}
    for n in (1, 2, 3):
        person, _ = store_log_in(engine, f"ann{n}", f"demo-ann{n}-pw")
        for name in DEMO_STUDIES:
            try:
                while (item := service.next_item(engine, person, ids[name])) is not None:
                    answers = {
                        q: "transcribed" if q == "transcription_status" else answer(f"{item.key}|{item.condition}", q, n)
                        for q in item.questions
                        if q != "transcription"
                    }
                    service.submit(engine, person, item.id, answers)
            except PermissionDenied:  # the study is full
                pass


@pytest.fixture(scope="module")
def server(tmp_path_factory, fixtures):
    require_chromium()
    os.environ.setdefault("DST_JUDGE_FIXTURES", str(fixtures))

    def prepare(engine):
        ensure_demo(engine, announce=False)
        vote_everything(engine)

    running = database_server(tmp_path_factory.mktemp("analysis"), prepare, {"DST_JUDGE_FIXTURES": str(fixtures)})
    yield running
    running.stop()
    running.engine.dispose()


# Every table on the page: its grid's scrolling area and the container it sits in.  A grid wider than
# its container, or one that scrolls sideways inside, is a table cut at the right edge.
TABLES_FIT = """() => [...document.querySelectorAll('[data-testid="stDataFrame"]')]
  .filter(grid => grid.offsetParent !== null && !grid.closest('details:not([open])'))  // folded away: not laid out
  .map(grid => {
    const scroller = grid.querySelector('.dvn-scroller') || grid;
    const container = grid.closest('[data-testid="stVerticalBlock"]') || grid.parentElement;
    return {
      table: (grid.closest('[class*="st-key-table-"]') || {className: '?'}).className.match(/st-key-table-[^ ]*/)?.[0],
      width: grid.getBoundingClientRect().width,
      right: grid.getBoundingClientRect().right,
      container: container.getBoundingClientRect().right,
      scroll: scroller.scrollWidth,
      client: scroller.clientWidth,
    };
  })"""

PAGE_WIDTH = """() => {
  const main = document.querySelector('[data-testid="stMain"]');
  return {page: document.scrollingElement.scrollWidth, main: main.scrollWidth, mainClient: main.clientWidth,
          inner: window.innerWidth};
}"""


def open_analysis(browser, server, study: str):  # noqa: F811
    page = new_page(browser, server.url)
    log_in(page, "admin", "demo-admin-pw", landing="Progress")
    go_to_analysis(page)
    pick(page, "Study", study)
    return page


def go_to_analysis(page) -> None:
    page.get_by_role("link", name="Analysis").click()
    page.get_by_role("heading", name="Analysis").wait_for()
    wait_idle(page)


def check_analysis(page, kind: str, where: str, *, open_expanders: bool = False, shot: str | None = None) -> None:
    """The answers on the first screen, nothing cut or scrolling sideways, a download per table, no error."""
    answers = page.get_by_role("heading", name="Answers")
    answers.wait_for(timeout=ANSWERS_TIMEOUT)
    wait_idle(page, timeout=ANSWERS_TIMEOUT)
    page.evaluate("document.querySelector('[data-testid=\"stMain\"]').scrollTo(0, 0)")
    if shot:  # the first screen as a researcher sees it (1400x900, not the full page), before any check
        screenshot_top(page, shot)
    errors = page.locator("[data-testid='stException'], [data-testid='stAlertContentError']")
    assert errors.count() == 0, f"{where}: {errors.first.inner_text()}"
    assert "Traceback" not in page.get_by_test_id("stMain").inner_text(), where

    summary = page.locator(".st-key-answers-summary")
    summary.wait_for()
    text = summary.inner_text()
    assert "Krippendorff" in text or "agree" in text, (where, text)
    assert in_viewport(page, answers), f"{where}: the Answers heading is below the first screen"
    first_sentence = summary.locator("li").first
    assert in_viewport(page, first_sentence), f"{where}: the summary's first sentence is below the first screen"
    charts = page.get_by_test_id("stVegaLiteChart")
    charts.first.wait_for()
    if kind == "satisfaction":
        assert "tracks the ratings" in text or "tracks" in text, (where, text)
        forest = page.locator(".st-key-answers-forest [data-testid='stVegaLiteChart']")
        forest.wait_for()
        assert in_viewport(page, forest), f"{where}: the forest plot is not wholly on the first screen"
    top = charts.first.bounding_box()["y"]  # a study of many questions (SLU) has a tall agreement chart: it starts here
    assert top < page.viewport_size["height"] / 2, f"{where}: the first chart starts below the first half-screen ({top})"

    if open_expanders:  # the tables folded away (per annotator, Cohen's κ, differences, votes on an item) fit too
        folded = page.locator("[data-testid='stExpander'] details:not([open]) > summary")
        for _ in range(20):  # each click opens one; the locator then finds the next folded one
            if folded.count() == 0:
                break
            folded.first.click()
        assert folded.count() == 0, f"{where}: an expander did not open"
        wait_idle(page)
    widths = page.evaluate(PAGE_WIDTH)
    assert widths["page"] <= widths["inner"], f"{where}: the page scrolls sideways {widths}"
    assert widths["main"] <= widths["mainClient"], f"{where}: the main area scrolls sideways {widths}"
    grids = page.evaluate(TABLES_FIT)
    assert grids, f"{where}: no table on the page"
    wide = [grid for grid in grids if grid["right"] > grid["container"] + 1]
    assert not wide, f"{where}: tables wider than their container: {wide}"
    cut = [grid for grid in grids if grid["scroll"] > grid["client"] + 1]
    assert not cut, f"{where}: tables cut at their right edge (they scroll sideways): {cut}"
    # Every table on the page has its own spreadsheet-safe download beside it (annotate.pages.tables).
    visible = page.locator("[data-testid='stDataFrame']").filter(visible=True)
    downloads = page.locator("[class*='st-key-table-']").filter(visible=True).get_by_role("button", name="Download as CSV")
    assert downloads.count() >= visible.count(), f"{where}: {visible.count()} tables, {downloads.count()} downloads"


@pytest.mark.parametrize("kind", ["satisfaction", "coco", "slu"])
def test_analysis_answers_first_and_its_tables_fit(browser, server, kind):  # noqa: F811
    page = open_analysis(browser, server, STUDIES[kind])
    check_analysis(page, kind, f"{kind}, first visit", shot=f"analysis_{kind}")

    page.get_by_role("link", name="Progress").click()
    page.get_by_role("heading", name="Progress").wait_for()
    wait_idle(page)
    go_to_analysis(page)  # the study chosen before is still chosen
    check_analysis(page, kind, f"{kind}, second visit")

    page.reload()
    wait_idle(page)
    page.get_by_role("heading", name="Progress").or_(page.get_by_role("heading", name="Analysis")).first.wait_for()
    if page.get_by_role("heading", name="Analysis").count() == 0:
        go_to_analysis(page)
    pick(page, "Study", STUDIES[kind])
    check_analysis(page, kind, f"{kind}, after a reload", open_expanders=True)
    for heading, name in (("Agreement", "agreement"), ("Which λ makes FGA agree most with people", "lambda")):
        found = page.get_by_role("heading", name=heading, exact=True)
        if found.count():  # the tables and the λ section, looked at as the top is
            found.first.scroll_into_view_if_needed()
            page.evaluate("document.querySelector('[data-testid=\"stMain\"]').scrollBy(0, 300)")
            screenshot_top(page, f"analysis_{kind}_{name}")
    page.context.close()


CHARTS_FIT = """() => [...document.querySelectorAll('[data-testid="stVegaLiteChart"]')]
  .filter(chart => chart.offsetParent !== null)
  .map(chart => ({right: chart.getBoundingClientRect().right, width: chart.scrollWidth, shown: chart.clientWidth,
                  scrolls: getComputedStyle(chart).overflowX}))"""


def test_on_a_phone_every_chart_is_whole_within_the_screen_or_scrolls_in_its_own_box(browser, server):  # noqa: F811
    """At 400x800 the charts drawn for 1400 px (the forest plot 551 px, the agreement chart 491) were cut at
    the screen's right edge: the interval labels and the axis' end out of reach.  A chart wider than the
    screen now scrolls sideways in its own box (swiped as a table is), and nothing reaches past the screen."""
    context = new_context(browser, {"width": 400, "height": 800})
    page = open_page(context, server.url)
    log_in(page, "admin", "demo-admin-pw", landing="Progress")
    page.goto(f"{server.url}/analysis?study={STUDIES['satisfaction'].replace(' ', '+')}")
    page.get_by_role("heading", name="Answers").wait_for(timeout=ANSWERS_TIMEOUT)
    page.locator(".st-key-answers-forest [data-testid='stVegaLiteChart']").wait_for()
    wait_idle(page, timeout=ANSWERS_TIMEOUT)
    charts = page.evaluate(CHARTS_FIT)
    assert len(charts) >= 3, charts
    past = [chart for chart in charts if chart["right"] > 400]
    assert past == [], f"charts reaching past the screen's edge: {past}"
    hidden = [chart for chart in charts if chart["width"] > chart["shown"] + 1 and chart["scrolls"] not in ("auto", "scroll")]
    assert hidden == [], f"charts cut without a way to reach the rest: {hidden}"
    assert any(chart["width"] > chart["shown"] for chart in charts)  # the forest plot, at least, is swiped
    page.locator(".st-key-answers-forest").scroll_into_view_if_needed()
    screenshot_top(page, "analysis_satisfaction_400")
    context.close()


def screenshot_top(page, name: str):
    """The screen as a researcher sees it (1400x900; the main area scrolls, not the page)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path))
    return path


@pytest.fixture(scope="module")
def background_server(tmp_path_factory, fixtures):
    """The app as it runs for people: the analysis in the background, the page not waiting for it."""
    require_chromium()

    def prepare(engine):
        ensure_demo(engine, announce=False)
        vote_everything(engine)

    env = {"DST_JUDGE_FIXTURES": str(fixtures), "DST_JUDGE_BACKGROUND_ANALYSIS": "1", "DST_JUDGE_ANALYSIS_WAIT": "0"}
    running = database_server(tmp_path_factory.mktemp("background"), prepare, env)
    yield running
    running.stop()
    running.engine.dispose()


def test_the_analysis_computed_in_the_background_comes_in_without_a_click(browser, background_server):  # noqa: F811
    """Issue 27, item 7, in a real browser: with no wait the page answers at once with a progress bar
    (or, if the warmer was quicker, the answers), and the answers replace it on their own (the fragment
    that follows the job re-runs the page when it is done); a reload shows them at once."""
    page = open_analysis(browser, background_server, STUDIES["satisfaction"])
    page.get_by_role("heading", name="Answers").wait_for(timeout=ANSWERS_TIMEOUT)  # no click, no reload
    page.locator(".st-key-answers-summary").wait_for()
    assert "tracks" in page.locator(".st-key-answers-summary").inner_text()
    errors = page.locator("[data-testid='stException'], [data-testid='stAlertContentError']")
    assert errors.count() == 0
    # the first answers may come first (issue 38): the whole analysis follows on its own, and the bar goes
    page.get_by_text("Analysing the study as it is now").first.wait_for(state="detached", timeout=ANSWERS_TIMEOUT)
    page.reload()
    wait_idle(page)
    page.get_by_role("heading", name="Answers").wait_for()
    assert page.get_by_text("Analysing the study as it is now").count() == 0  # current: no bar
    page.context.close()


@pytest.mark.parametrize("served", ["server", "background_server"])
def test_a_revisit_never_shows_less_than_the_last_visit(browser, served, request):  # noqa: F811
    """Issue 38: an admin opens Analysis (answers shown), goes to Studies and comes back: the answers are
    still shown, no progress bar in their place, though no vote changed."""
    page = open_analysis(browser, request.getfixturevalue(served), STUDIES["coco"])
    page.get_by_role("heading", name="Answers").wait_for(timeout=ANSWERS_TIMEOUT)
    wait_idle(page, timeout=ANSWERS_TIMEOUT)
    first = page.locator(".st-key-answers-summary").inner_text()
    for away in ("Studies", "Progress", "Studies"):
        page.get_by_role("link", name=away).click()
        page.get_by_role("heading", name=away).wait_for()
        wait_idle(page)
        go_to_analysis(page)
        main = page.get_by_test_id("stMain")
        assert page.get_by_role("heading", name="Answers").count() == 1, f"after {away}: {main.inner_text()[:400]}"
        assert page.get_by_text("Analysing the study as it is now").count() == 0, f"after {away}: a progress bar"
        assert page.locator(".st-key-answers-summary").inner_text() == first
    page.context.close()


@pytest.fixture(scope="module")
def imported_server(tmp_path_factory):
    """Issue 38: a 100-dialogue study whose votes were just imported (three annotators, every dialogue),
        its stored settings asking for 20,000 resamples, more than the page's box offers (the command line can
    store them: the page shows them, it once failed on them), so that the whole analysis takes long enough
    to be seen being computed (~20 s on a quiet machine); the app as it runs for people."""
    require_chromium()
    from dataclasses import replace

    from annotate.analysis.study_data import stored_settings
    from annotate.people.auth import add_annotator
    from annotate.store.db import write_session
    from annotate.store.models import Study
    from annotate.studies import create_study
    from tests.store.test_analysis_cache import text_corpus

    folder = tmp_path_factory.mktemp("imported")

    def prepare(engine):
        corpus = text_corpus(folder / "corpus", 100)
        with write_session(engine) as session:
            study = create_study(session, "imported", "satisfaction", [corpus], overlap=3)
            add_annotator(session, "admin", "demo-admin-pw", role="admin")
            people = [add_annotator(session, f"imp{i}", f"pw-imp-{i}-123") for i in range(3)]
            session.get(Study, study.id).settings = {
                **(study.settings or {}),
                "analysis": replace(stored_settings(study.settings), resamples=20000).to_dict(),
            }
        for n, person in enumerate(people):
            while (item := service.next_item(engine, person, study.id)) is not None:
                chance = 0.2 + 0.6 * random.Random(item.position).random()
                service.submit(
                    engine, person, item.id, {"satisfied": str(int(random.Random(item.position * 31 + n).random() < chance))}
                )

    # The app as it runs for people: the background analysis on, and the page's own wait (0.5 s), not the
    # 600 s the test session sets for AppTest (which runs no timers): a server inheriting that waited
    # for the whole analysis before it drew anything below Settings.
    running = database_server(folder, prepare, {"DST_JUDGE_BACKGROUND_ANALYSIS": "1", "DST_JUDGE_ANALYSIS_WAIT": "0.5"})
    yield running
    running.stop()
    running.engine.dispose()


def test_after_an_import_the_first_answers_come_first_and_the_rest_fills_in(browser, imported_server):  # noqa: F811
    """Issue 38: the Analysis page of a 100-dialogue study opened right after a votes import shows its
    first answers (the summary and the forest plot, r per metric) while the bootstraps are computed,
    says so and how fresh they are, and the whole analysis replaces them on its own."""
    page = new_page(browser, imported_server.url)
    log_in(page, "admin", "demo-admin-pw", landing="Progress")
    # The admin reads the progress first, on a server that was up already: its analysis process (started
    # with the server, issue 38) has imported the statistics.  Clicked within seconds of the server's
    # start, the first answers wait for that import too (about 3 s here).
    page.wait_for_timeout(6_000)
    clicked = time.perf_counter()
    page.get_by_role("link", name="Analysis").click()  # not waited idle: the progress bar re-runs twice a second
    page.get_by_role("heading", name="Analysis").wait_for()
    first = page.get_by_text("Shown: the first answers")
    first.wait_for(timeout=ANSWERS_TIMEOUT)  # before the whole analysis
    print(f"first answers {time.perf_counter() - clicked:.1f} s after the click")  # a figure, never an assertion
    page.get_by_role("heading", name="Answers").wait_for(timeout=10_000)
    page.locator(".st-key-answers-forest [data-testid='stVegaLiteChart']").wait_for()
    # still the first answers, while the rest is being computed, and how fresh they are (waited for: the
    # page re-runs every half second while the analysis is computed)
    first.wait_for(timeout=10_000)
    page.get_by_text("Analysing the study as it is now").wait_for(timeout=10_000)
    page.get_by_text("Analysis of 300 votes").wait_for(timeout=10_000)
    first.wait_for(state="detached", timeout=ANSWERS_TIMEOUT * 5)  # replaced without a click
    page.get_by_text("Analysis of 300 votes").wait_for()
    assert "the study as it is now" in page.get_by_text("Analysis of 300 votes").inner_text()
    assert page.get_by_text("Analysing the study as it is now").count() == 0
    page.context.close()
