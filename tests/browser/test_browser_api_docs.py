"""Issue 36 in Chromium: the HTTP API's browsable documentation (``/api/v1/docs``) works offline.

The API runs as ``python -m annotate api`` on a free port; Chromium may reach the loopback addresses
only (every other request is aborted and recorded).  Swagger UI must come from the API itself and draw
every operation of the OpenAPI document; one operation opened shows its "Try it out" button (the page's
script runs).  Screenshots at 1400x900 and 400x800: test-output/screenshots/api_docs_1400.png and
api_docs_400.png.
"""

from __future__ import annotations

import json
import urllib.request
from urllib.parse import urlsplit

import pytest

from annotate.store.db import make_engine, upgrade
from tests.api_harness import LiveApi
from tests.browser_harness import CHROMIUM, CHROMIUM_ARGS, require_chromium, screenshot

playwright_api = pytest.importorskip("playwright.sync_api")
pytestmark = pytest.mark.browser

LOOPBACK = {"127.0.0.1", "localhost", "::1"}
SIZES = {"1400": {"width": 1400, "height": 900}, "400": {"width": 400, "height": 800}}


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    require_chromium()
    folder = tmp_path_factory.mktemp("api-docs")
    url = f"sqlite:///{folder / 'judge.sqlite'}"
    engine = make_engine(url)
    upgrade(engine)
    engine.dispose()
    with LiveApi(url, log=folder / "api.log") as live:
        yield live


@pytest.fixture(scope="module")
def browser(api):
    with playwright_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def offline_page(browser, viewport: dict):
    """A page that reaches only this host: every other request is aborted and kept in ``page.blocked``;
    ``page.loaded`` lists the URLs it did fetch, ``page.problems`` its failed requests and script errors."""
    context = browser.new_context(viewport=viewport)
    page = context.new_page()
    page.blocked, page.loaded, page.problems = [], [], []

    def only_loopback(route) -> None:
        parts = urlsplit(route.request.url)
        if parts.scheme in ("data", "blob") or parts.hostname in LOOPBACK:
            route.continue_()
        else:
            page.blocked.append(route.request.url)
            route.abort("internetdisconnected")

    context.route("**/*", only_loopback)
    page.on("requestfinished", lambda request: page.loaded.append(request.url))
    page.on("requestfailed", lambda request: page.problems.append(f"failed: {request.url} {request.failure}"))
    page.on("pageerror", lambda error: page.problems.append(f"script error: {error}"))
    return page


@pytest.mark.parametrize("size", SIZES)
def test_the_api_docs_render_every_operation_offline(browser, api, size):
    with urllib.request.urlopen(f"{api.url}/api/v1/openapi.json", timeout=10) as response:
        document = json.load(response)
    operations = {(method.upper(), path) for path, item in document["paths"].items() for method in item}
    assert len(operations) >= 5, operations

    page = offline_page(browser, SIZES[size])
    page.goto(f"{api.url}/api/v1/docs")
    expect = playwright_api.expect
    expect(page.get_by_role("heading", name="DST Judge API")).to_be_visible(timeout=30_000)
    blocks = page.locator(".opblock")
    expect(blocks).to_have_count(len(operations), timeout=30_000)
    shown = {
        (
            block.locator(".opblock-summary-method").inner_text().strip(),
            block.locator(".opblock-summary-path").get_attribute("data-path"),
        )
        for block in blocks.all()
    }
    assert shown == operations  # every operation of the OpenAPI document, drawn by Swagger UI
    vote = page.locator(".opblock-summary-path[data-path='/api/v1/studies/{study}/items/{item}/votes']")
    expect(vote).to_be_visible()
    assert "/api/v1/studies/{study}/items/{item}/votes" in vote.inner_text().replace("\u200b", "")

    page.locator(".opblock-summary-path[data-path='/api/v1/studies']").click()  # the page's script answers
    expect(page.get_by_role("button", name="Try it out")).to_be_visible()
    path = screenshot(page, f"api_docs_{size}")
    widths = page.evaluate("({page: document.documentElement.scrollWidth, inner: window.innerWidth})")
    assert widths["page"] <= widths["inner"], f"the docs scroll sideways at {size} px: {widths}"

    api_origin = urlsplit(api.url)
    assert page.blocked == [], f"requests beyond this host: {page.blocked}"
    assert page.problems == [], page.problems
    scripts = [url for url in page.loaded if url.endswith(".js")]
    assert scripts and all(
        urlsplit(url).netloc == api_origin.netloc and urlsplit(url).path.startswith("/api/v1/") for url in scripts
    ), scripts
    assert path.stat().st_size > 10_000
    page.context.close()
