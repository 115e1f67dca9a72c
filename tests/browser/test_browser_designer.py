"""Issue 29 (item 1) in Chromium at 1400x900: the designer on Studies → Change a study → Design and
budget.  A pool of 400 dialogues (``bench.corpus``), a proposal at ICC 0.5 and 600 judgements, with
uniform k = 3 and the FGA study's 11 x 100 beside it; the table and the button that fixes the design
on the first screen once proposed.  Screenshot: test-output/screenshots/designer.png."""

from __future__ import annotations

import json
import os
import re

import pytest

from annotate import service
from annotate.studies.demo import ensure_demo
from bench.corpus import build, dialogue_file
from tests.browser.test_browser import browser, log_in  # noqa: F401  (browser: a fixture)
from tests.browser.test_browser_analysis import screenshot_top
from tests.browser.test_browser_api_pages import check_layout
from tests.browser.test_browser_workflows import admin_analysis, pick
from tests.browser_harness import after_run, database_server, in_viewport, new_page, require_chromium, wait_idle

pytestmark = pytest.mark.browser
POOL = "pool of 400"
LAMBDA_STUDY = "lambda design"


@pytest.fixture(scope="module")
def server(tmp_path_factory, fixtures):
    require_chromium()
    os.environ.setdefault("DST_JUDGE_FIXTURES", str(fixtures))
    folder = tmp_path_factory.mktemp("designer")
    corpus = folder / "pool.json"
    corpus.write_text(json.dumps(build(400)))

    def prepare(engine) -> None:
        ensure_demo(engine, announce=False)
        service.create_study_from_files(engine, service.CLI, POOL, "satisfaction", [corpus, dialogue_file(corpus)], overlap=3)
        _lambda_study_with_votes(engine, folder)

    running = database_server(folder, prepare, {"DST_JUDGE_FIXTURES": str(fixtures)})
    yield running
    running.stop()
    running.engine.dispose()


def test_the_designers_proposal_is_on_the_first_screen_beside_uniform(browser, server):  # noqa: F811
    page = _designer_tab(browser, server)
    table, fix = _propose(page, (("ICC of one rating", "0.5"), ("Budget (judgements)", "600")))
    screenshot_top(page, "designer")
    assert in_viewport(page, table) and in_viewport(page, fix), "the proposal or its button is off the screen"
    check_layout(page, "designer")
    page.context.close()


def test_the_designers_lambda_proposal_is_on_the_first_screen(browser, server):  # noqa: F811
    """The question λ*: one vote per dialogue drawn by λ score, beside uniform k = 3 and 11 x 100.
    Screenshot: test-output/screenshots/designer-lambda.png."""
    page = _designer_tab(browser, server)
    _choose(page, "Question to answer", "λ*, the FGA λ people agree with most")
    wait_idle(page)
    table, fix = _propose(page, (("Budget (judgements)", "390"), ("Prior r(FGA, rating)", "0.8"), ("ICC of one rating", "0.5")))
    screenshot_top(page, "designer-lambda")
    assert in_viewport(page, table) and in_viewport(page, fix), "the proposal or its button is off the screen"
    assert page.get_by_text("weighted 1/π").count() >= 1  # the note saying how the dialogues are drawn
    check_layout(page, "designer-lambda")
    page.context.close()


def _designer_tab(browser, server):  # noqa: F811
    """A new page: the admin on Studies → Change a study → Design and budget of the pool study."""
    page = new_page(browser, server.url)
    log_in(page, "admin", "demo-admin-pw", landing="Progress")
    page.get_by_role("link", name="Studies").click()
    after_run(page, lambda: page.get_by_role("tab", name="Change a study").click())  # the tab runs the page again
    pick(page, "Study", POOL)
    wait_idle(page)
    page.get_by_role("tab", name="Design and budget").click()
    page.get_by_label("ICC of one rating", exact=True).wait_for()
    wait_idle(page)
    return page


def _propose(page, values):
    """Type each (label, value) into the designer, ask for a proposal: its table and the fix button."""
    for label, value in values:
        box = page.get_by_label(label, exact=True)
        box.fill(value)
        box.press("Enter")
        wait_idle(page)
    after_run(page, lambda: page.get_by_role("button", name="Propose a design").click())
    table = page.locator(".st-key-table-designer [data-testid='stDataFrame']")
    table.wait_for()
    fix = page.get_by_role("button", name="Fix this design (before the first vote)")
    fix.scroll_into_view_if_needed()
    return table, fix


def _choose(page, label: str, option: str) -> None:
    """``pick``, with the select box opened again when a rerun closed its list before the option showed."""
    box = page.get_by_test_id("stSelectbox").filter(has_text=label).filter(visible=True).first
    choice = page.get_by_role("option", name=option).first
    for _ in range(4):
        box.click()
        try:
            choice.wait_for(timeout=5000)
            break
        except Exception:  # noqa: BLE001 - playwright's TimeoutError: the list closed; open it again
            page.keyboard.press("Escape")
            wait_idle(page)
    after_run(page, choice.click)
    from playwright.sync_api import expect

    expect(box.get_by_role("combobox")).to_have_value(option)  # the choice took


def _lambda_study_with_votes(engine, folder) -> None:
    """A study of 60 dialogues under a designer's λ design (π by λ score, 12 of them with 2 votes), every
    place voted by two demo annotators (satisfied with chance 0.15 + 0.7 × JGA, seeded)."""
    import numpy as np

    from annotate.analysis.reports import load_study
    from annotate.kinds import KINDS
    from annotate.people.sessions import log_in
    from metrics.analysis import AnalysisSettings, per_dialogue_metrics
    from metrics.corpus import ScoreSettings

    corpus = folder / "lambda.json"
    corpus.write_text(json.dumps(build(60)))
    study = service.create_study_from_files(
        engine, service.CLI, LAMBDA_STUDY, "satisfaction", [corpus, dialogue_file(corpus)], overlap=1
    )
    service.set_designed_k(engine, service.CLI, study.id, {"n": 40, "m": 12, "k_overlap": 2, "seed": 3, "weighting": "lambda"})
    systems = KINDS["satisfaction"].dialogues(load_study(engine, study.id).items)
    ids, values = per_dialogue_metrics(next(iter(systems.values())), ScoreSettings(AnalysisSettings().lambdas))
    jga = dict(zip(ids, values["jga"], strict=True))
    rng = np.random.default_rng(29)
    for name in ("ann1", "ann2"):
        person, _ = log_in(engine, name, f"demo-{name}-pw")
        while (item := service.next_item(engine, person, study.id)) is not None:
            chance = 0.15 + 0.7 * jga[item.payload["dialogue_id"]]
            service.submit(engine, person, item.id, {"satisfied": str(int(rng.random() < chance))})


def test_a_lambda_designs_analysis_shows_its_weighted_answer(browser, server):  # noqa: F811
    """The Analysis page of the λ-designed study: the design section says how the dialogues were drawn and
    gives λ* weighted 1/π with its interval.  Screenshot: test-output/screenshots/designed-lambda-analysis.png."""
    page = admin_analysis(browser, server, LAMBDA_STUDY)
    heading = page.get_by_text("The study's question: λ*")
    heading.wait_for(timeout=60_000)
    heading.scroll_into_view_if_needed()
    answer = page.get_by_text(re.compile(r"^λ\* = .*, 95% interval"))
    screenshot_top(page, "designed-lambda-analysis")
    assert in_viewport(page, answer), "the study's answer is off the screen once its section is shown"
    assert page.get_by_text("drawn with π by their λ scores, each weighted 1/π").count() >= 1
    assert page.get_by_text("Traceback").count() == 0
    page.context.close()
