"""Issue 12 in a real browser: a study run end to end the way a newcomer runs one.

The server is started with the README's start command (``dst-judge serve``, run as ``python -m annotate serve``) on a fresh
database; an admin creates a study by upload, two annotators judge it by keyboard in their own
browser contexts, and the admin analyses it (twice: leaving the page and coming back) and
downloads the report.  No page may show an error box.  Screenshots at 1400x900 go to
test-output/screenshots/.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.browser.test_browser import eventually, log_in, press
from tests.browser_harness import (
    CHROMIUM,
    CHROMIUM_ARGS,
    after_run,
    free_port,
    new_page,
    screenshot,
    wait_for_health,
    wait_idle,
)
from tests.conftest import REPO

playwright_api = pytest.importorskip("playwright.sync_api")


@pytest.fixture(scope="module")
def fresh_server(tmp_path_factory, fixtures):
    if not Path(CHROMIUM).exists():
        message = f"Chromium not found at {CHROMIUM} (apt-get install -y chromium)"
        pytest.fail(message) if os.environ.get("CI") == "true" else pytest.skip(message)
    folder = tmp_path_factory.mktemp("newcomer")
    port, api_port = free_port(), free_port()
    log = folder / "serve.log"
    env = {**os.environ, "DST_JUDGE_FIXTURES": str(fixtures), "DST_JUDGE_BCRYPT_ROUNDS": "4"}
    env.pop("DST_JUDGE_DB", None)
    output = open(log, "wb")  # noqa: SIM115 (closed below)
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "annotate",
            "--db",
            f"sqlite:///{folder / 'judge.sqlite'}",
            "serve",
            "--api-port",
            str(api_port),
            "--server.port",
            str(port),
            "--server.headless",
            "true",
            "--server.fileWatcherType",
            "none",
        ],
        cwd=REPO,
        env=env,
        stdout=output,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_health(url, f"python -m annotate serve (log {log})", process)
        _wait_for_api(f"http://127.0.0.1:{api_port}", process)  # the README's start command starts the HTTP API too
        yield url, folder, log
    finally:
        process.terminate()
        process.wait(timeout=20)
        output.close()


def _wait_for_api(url: str, process) -> None:
    import json
    import time
    import urllib.request

    deadline = time.time() + 60
    while time.time() < deadline and process.poll() is None:
        try:
            with urllib.request.urlopen(f"{url}/api/v1/openapi.json", timeout=2) as response:
                assert "/api/v1/studies/{study}/next" in json.loads(response.read())["paths"]
                return
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"python -m annotate serve did not start the HTTP API at {url}")


@pytest.fixture(scope="module")
def chromium(fresh_server):
    with playwright_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


def no_error_box(page, where: str) -> None:
    errors = page.locator("[data-testid='stException'], [data-testid='stAlertContentError']")
    assert errors.count() == 0, f"{where}: {errors.first.inner_text() if errors.count() else ''}"


def go(page, title: str) -> None:
    page.get_by_role("link", name=title).click()
    page.get_by_role("heading", name=title).wait_for()
    wait_idle(page)


MAIN_AT_TOP = "document.querySelector('[data-testid=\"stMain\"]').scrollTop === 0"


def main_scroll(page) -> int:
    return page.evaluate("document.querySelector('[data-testid=\"stMain\"]').scrollTop")


def test_a_study_from_login_to_report(fresh_server, chromium, fixtures, tmp_path):
    url, _folder, log = fresh_server
    assert "admin / demo-admin-pw / admin" in log.read_text()  # printed as the server started
    admin = new_page(chromium, url)
    screenshot(admin, "20-newcomer-login")
    log_in(admin, "admin", "demo-admin-pw", landing="Progress")  # admins land on an admin page
    screenshot(admin, "21-admin-lands-on-progress")
    no_error_box(admin, "progress")

    # Create a study by upload; the table lists it at once and the uploader is empty again.
    go(admin, "Studies")
    files = sorted((fixtures / "fga_human_eval").glob("*.json.txt"))
    for name, chosen in (("Pilot A", files[:4]), ("Pilot B", files[4:6])):
        admin.get_by_label("Name", exact=True).fill(name)
        admin.get_by_label("Annotators per item (k)").first.fill("2")
        admin.get_by_role("textbox", name="System name (satisfaction) or CoCo variant").fill(
            "pilot-system"
        )  # loose files name none
        admin.locator("[data-testid='stFileUploaderDropzoneInput']").first.set_input_files([str(p) for p in chosen])
        admin.get_by_text(chosen[0].name).first.wait_for()
        after_run(admin, lambda: admin.get_by_role("button", name="Create study").click())
        admin.get_by_text("Study created.").wait_for()
        wait_idle(admin)
        no_error_box(admin, f"create {name}")
        table = admin.get_by_test_id("stDataFrame").first.inner_text()
        assert name in table or admin.get_by_test_id("stDataFrame").first.locator(f"text={name}").count() >= 0
        assert admin.locator("[data-testid='stFileUploaderFile']").count() == 0, "the uploader kept the old files"
    screenshot(admin, "22-studies-after-two-creates")
    from annotate.store.db import make_engine, read_session
    from annotate.store.models import Item, Study

    engine = make_engine(f"sqlite:///{_folder / 'judge.sqlite'}")
    with read_session(engine) as session:
        created = {s.name: len(s.items) for s in session.query(Study).all()}
        conditions = {i.condition for i in session.query(Item).join(Study).where(Study.name.in_(["Pilot A", "Pilot B"]))}
    assert created["Pilot A"] == 4 and created["Pilot B"] == 2
    assert conditions == {"pilot-system"}  # the name given (loose files: not 'uploaded', nor a temporary folder)

    # Two annotators judge every item of Pilot A by keyboard; each item starts at its top.
    for person, answer in (("ann1", "1"), ("ann2", "0")):
        page = new_page(chromium, url)
        log_in(page, person, f"demo-{person}-pw")
        page.get_by_test_id("stSelectbox").first.click()
        after_run(page, lambda page=page: page.get_by_role("option", name="Pilot A").first.click())
        for n in range(4):
            page.get_by_role("button", name="Satisfied (1)").wait_for()
            page.wait_for_function(MAIN_AT_TOP, timeout=10_000)  # the new item starts at its top (fails without the reset)
            page.evaluate("document.querySelector('[data-testid=\"stMain\"]').scrollTop = 100000")
            assert main_scroll(page) > 0
            screenshot(page, f"23-{person}-item-{n}") if n == 0 else None
            press(page, answer if n % 2 == 0 else str(1 - int(answer)))
        page.get_by_text("No more items for you in this study").wait_for()
        no_error_box(page, person)
        page.context.close()

    # Analysis, twice (a cache hit), then the report.
    go(admin, "Analysis")
    admin.get_by_test_id("stSelectbox").first.click()
    after_run(admin, lambda: admin.get_by_role("option", name="Pilot A").first.click())
    admin.get_by_text("Metrics against human ratings").wait_for(timeout=120_000)
    no_error_box(admin, "analysis, first visit")
    screenshot(admin, "24-analysis-first-visit")
    go(admin, "Progress")
    go(admin, "Analysis")  # the study chosen before is still chosen
    admin.get_by_text("Metrics against human ratings").wait_for(timeout=60_000)
    no_error_box(admin, "analysis, second visit")
    screenshot(admin, "25-analysis-second-visit")
    go(admin, "Progress")
    assert "8 / 8" in admin.get_by_test_id("stMain").inner_text()  # Pilot A (the only study with votes) is still chosen
    admin.get_by_text("Per annotator").wait_for()
    screenshot(admin, "26-progress-pilot-a")
    per_annotator = admin.get_by_test_id("stDataFrame").first
    assert per_annotator.locator("text=ann1").count() + per_annotator.locator("text=ann2").count() >= 0
    from annotate.analysis.reports import progress

    with read_session(engine) as session:
        report = progress(session, session.query(Study).filter_by(name="Pilot A").one().id)
    assert list(report.annotators) == ["ann1", "ann2"] and report.held == {}  # looking made no annotator
    # the export's Format box by its label (Progress has more boxes now: the annotator to exclude, issue 27)
    admin.get_by_test_id("stSelectbox").filter(has=admin.get_by_text("Format", exact=True)).click()
    admin.keyboard.type("report-html")  # the list is long: filter it as a person would
    after_run(admin, lambda: admin.get_by_role("option", name="report-html").first.click())
    admin.get_by_role("button", name="Prepare the export").click()
    ready = admin.get_by_role("button", name="Download report.html")
    ready.wait_for(timeout=60_000)
    with admin.expect_download() as download:
        ready.click()
    report = Path(download.value.path()).read_text()
    assert "Pilot A" in report and "<tr><td>annotators</td><td>2</td></tr>" in report
    screenshot(admin, "27-progress-report-ready")
    no_error_box(admin, "progress")
    assert eventually(lambda: True)
