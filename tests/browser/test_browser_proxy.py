"""Behind the documented nginx (issue 23, items 6 and 10), in real Chromium: the app pages carry
X-Frame-Options and a Content-Security-Policy that Streamlit still runs under (no violation while an
admin and an annotator log in and use their pages), the page cannot be framed, and the demo passwords
are listed to a direct loopback visit but never through the proxy."""

from __future__ import annotations

import os
import shutil
import urllib.request
from pathlib import Path

import pytest

from annotate.people.sessions import COOKIE_NAME, DEVICE_COOKIE_NAME
from annotate.store.db import make_engine, upgrade
from annotate.studies.demo import ensure_demo
from tests.browser.test_browser import start_judging
from tests.browser_harness import CHROMIUM, CHROMIUM_ARGS, RUN_COUNTER, wait_idle
from tests.databases import create_pg_database, drop_pg_database, require_pg
from tests.scaleout_harness import CSP, NGINX, Cluster

playwright_api = pytest.importorskip("playwright.sync_api")

DEMO_NOTE = "Demo accounts (change these passwords before a real study):"
WATCH_CSP = """document.addEventListener('securitypolicyviolation', e => {
  (window.__csp = window.__csp || []).push(e.violatedDirective + ' ' + e.blockedURI); });"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, fixtures):
    if not Path(CHROMIUM).exists() or shutil.which(NGINX) is None and not Path(NGINX).exists():
        message = "Chromium or nginx missing (apt-get install -y chromium nginx)"
        pytest.fail(message) if os.environ.get("CI") == "true" else pytest.skip(message)
    require_pg()
    url = create_pg_database()
    engine = make_engine(url)
    upgrade(engine)
    os.environ.setdefault("DST_JUDGE_FIXTURES", str(fixtures))
    ensure_demo(engine, announce=False)  # made before the servers start (they would race to make it)
    env = {"DST_JUDGE_DEMO": "1", "DST_JUDGE_FIXTURES": str(fixtures)}
    running = Cluster(url, tmp_path_factory.mktemp("proxy"), env=env)
    yield running
    running.stop()
    engine.dispose()
    drop_pg_database(url)


@pytest.fixture(scope="module")
def browser(cluster):
    with playwright_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def _page(browser, url: str):
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    context.add_init_script(RUN_COUNTER)
    context.add_init_script(WATCH_CSP)
    page = context.new_page()
    page.console_errors = []
    page.on("console", lambda message: message.type == "error" and page.console_errors.append(message.text))
    page.goto(url)
    wait_idle(page, timeout=60_000)
    return page


def _violations(page) -> list[str]:
    found = page.evaluate("window.__csp || []")
    return found + [text for text in page.console_errors if "Content Security Policy" in text]


def _log_in(page, name: str, password: str, landing: str) -> None:
    page.get_by_label("Name").fill(name)
    page.get_by_role("textbox", name="Password").fill(password)
    page.get_by_role("button", name="Log in").first.click()
    page.get_by_role("heading", name=landing).wait_for(timeout=60_000)
    wait_idle(page, timeout=60_000)


def test_app_pages_carry_frame_and_content_policies(cluster):
    with urllib.request.urlopen(cluster.url + "/") as response:
        assert response.status == 200
        assert response.headers["X-Frame-Options"] == "DENY"
        assert response.headers["Content-Security-Policy"] == CSP
        assert "frame-ancestors 'none'" in CSP and "object-src 'none'" in CSP
        assert response.headers["X-Content-Type-Options"] == "nosniff"


def test_the_app_runs_under_the_policy_and_hides_demo_passwords_behind_the_proxy(cluster, browser):
    direct = _page(browser, cluster.servers["a"].url)  # loopback, no proxy header: the demo table is listed
    direct.get_by_text(DEMO_NOTE).wait_for(timeout=30_000)
    direct.get_by_text("demo-admin-pw").first.wait_for(state="attached", timeout=30_000)  # a grid cell
    direct.context.close()

    admin = _page(browser, cluster.url)
    admin.get_by_role("button", name="Log in").wait_for(timeout=30_000)
    wait_idle(admin, timeout=60_000)  # the login page's run has finished: the note would be there by now
    assert admin.get_by_text(DEMO_NOTE).count() == 0 and admin.get_by_text("demo-admin-pw").count() == 0  # never via nginx
    _log_in(admin, "admin", "demo-admin-pw", "Progress")
    cookies = {cookie["name"]: cookie for cookie in admin.context.cookies()}
    assert cookies[COOKIE_NAME]["secure"] is False  # plain http here; https adds Secure (tests/unit/test_proxy.py)
    assert DEVICE_COOKIE_NAME in cookies  # this browser is now known for the login throttle
    for name in ("Studies", "Analysis"):
        admin.get_by_role("link", name=name).first.click()
        admin.get_by_role("heading", name=name).first.wait_for(timeout=60_000)
        wait_idle(admin, timeout=60_000)
    assert _violations(admin) == []
    admin.context.close()

    annotator = _page(browser, cluster.url)
    _log_in(annotator, "ann1", "demo-ann1-pw", "Annotate")
    start_judging(annotator)  # the demo study's guideline first: a first visit
    annotator.get_by_role("button", name="Satisfied (1)").wait_for(timeout=60_000)
    assert _violations(annotator) == []
    annotator.context.close()


def test_another_site_cannot_frame_the_app(cluster, browser):
    context = browser.new_context()
    page = context.new_page()
    page.set_content(f'<iframe id="app" src="{cluster.url}/" width="800" height="600"></iframe>')
    page.wait_for_timeout(3000)
    frame = page.frame_locator("#app")
    assert frame.get_by_label("Name").count() == 0  # refused by frame-ancestors / X-Frame-Options
    context.close()
