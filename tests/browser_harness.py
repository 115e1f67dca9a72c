"""Browser test harness: a real ``streamlit run`` on a free port, driven by Playwright
with Debian's Chromium (``/usr/bin/chromium``; Playwright cannot download browsers here).

As in Streamlit's own e2e suite: start the server, wait for ``/_stcore/health``, then for
the app's ``data-test-script-state="notRunning"``.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from formats.settings import settings
from tests.conftest import REPO

CHROMIUM = settings().chromium
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]
SCREENSHOTS = REPO / "test-output" / "screenshots"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_health(url: str, what: str, process: subprocess.Popen | None = None, timeout: float = 60) -> None:
    """Poll ``/_stcore/health`` until it answers 200 (directly or through a proxy)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"{what} exited with {process.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"{what} did not become healthy")


class StreamlitServer:
    def __init__(self, env: dict[str, str], port: int | None = None):
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = Path(env.get("DST_JUDGE_LOG", "/dev/null"))
        command = [
            sys.executable,
            "-m",
            "streamlit",
            "run",
            str(REPO / "app.py"),
            "--server.port",
            str(self.port),
            "--server.address",
            "127.0.0.1",
            "--server.headless",
            "true",
            "--browser.gatherUsageStats",
            "false",
            "--server.fileWatcherType",
            "none",
        ]
        self.output = open(self.log, "ab")  # noqa: SIM115 (closed in stop)
        self.process = subprocess.Popen(
            command, cwd=REPO, env={**os.environ, **env}, stdout=self.output, stderr=subprocess.STDOUT
        )
        self.wait_healthy()

    def wait_healthy(self, timeout: float = 60) -> None:
        wait_for_health(self.url, f"streamlit on port {self.port} (log: {self.log})", self.process, timeout)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.output.close()


# How long a page is given to do what a test waits for.  A wait is an expectation, never a speed
# assertion (speed is measured in bench/): CI ran the whole suite once at half this machine's speed, with
# a load of 10 and more on 2 cores, where an Analysis page's first run took over 30 s.  Every wait of the
# harness, every locator action (the context's default) and every ``expect`` takes this long at most.
PATIENCE_MS = 90_000
EXPECT_MS = 20_000  # an ``expect`` without a timeout of its own (Playwright's default is 5 s)


def wait_idle(page, timeout: float = PATIENCE_MS) -> None:
    """Wait until the script has finished running (Streamlit's e2e convention) and no element is
    left stale from the previous run: expectations on the page, never a fixed sleep."""
    from playwright.sync_api import expect

    app = page.get_by_test_id("stApp")
    expect(app).to_have_attribute("data-test-script-state", "notRunning", timeout=timeout)
    expect(page.locator('[data-stale="true"]')).to_have_count(0, timeout=timeout)
    # A run can start another (a vote re-runs the item fragment): settled means no run started or
    # ended for a quiet moment (the run counter below keeps the time of the last change).
    page.wait_for_function(QUIET, arg=QUIET_MS, timeout=timeout)
    expect(app).to_have_attribute("data-test-script-state", "notRunning", timeout=timeout)


QUIET_MS = 300
QUIET = """quiet => {
  const app = document.querySelector('[data-testid="stApp"]');
  const settled = app && app.getAttribute("data-test-script-state") === "notRunning";
  return settled && (window.__dstChanged === undefined || performance.now() - window.__dstChanged > quiet);
}"""


# Counts the script runs a page has seen (stApp's script state turning "running", or turning back
# from it), so a test can wait for the run its click or key press starts instead of sleeping.  Both
# edges count (a run counts once or twice: tests only ask whether the count grew): when one callback
# gets both records of a quick run, the attribute already reads "notRunning" again, and only the
# second record's old value shows the run.
RUN_COUNTER = """(() => {
  if (window.__dstRuns !== undefined) return;
  window.__dstRuns = 0;
  window.__dstChanged = performance.now();
  new MutationObserver(changes => {
    for (const change of changes) {
      window.__dstChanged = performance.now();
      const now = change.target.getAttribute && change.target.getAttribute("data-test-script-state");
      if (now === "running" || change.oldValue === "running") window.__dstRuns++;
    }
  }).observe(document, {subtree: true, attributes: true, attributeOldValue: true,
                        attributeFilter: ["data-test-script-state"]});
})()"""

# How long a click or key press is given to show its run on the script-state attribute.  A short run
# on a busy page can leave no trace there at all (React renders its start and its end as one update):
# then the page is only waited for to be idle, and what the action shows is checked by the test's own
# expectations, which wait for it.
RUN_SEEN_MS = 8_000


def runs(page) -> int:
    return page.evaluate("window.__dstRuns || 0")


def after_run(page, action, timeout: float = PATIENCE_MS) -> None:
    """Do ``action`` (a click, a key press), wait for the script run it starts, then for the page to settle."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    before = runs(page)
    action()
    try:
        page.wait_for_function(f"(window.__dstRuns || 0) > {before}", timeout=min(timeout, RUN_SEEN_MS))
    except PlaywrightTimeout:
        pass  # no trace of the run (see RUN_SEEN_MS): the caller's next expectation waits for its effect
    wait_idle(page, timeout)


def choose(page, group, option: str, in_form: bool = False, tries: int = 3) -> None:
    """Pick ``option`` in the radio ``group`` as a person does: click its label and look.  A click that
    did not take is clicked again, as a person clicks again on a choice that did not show: CI once saw
    the adjudication form's radio stay unchosen for 5 s after a click, with no script run in between
    (2026-11-27; not reproduced here in 10 runs).  A radio outside a form (``in_form`` false) starts a
    run: it is waited for.  Fails when ``tries`` clicks all left it unchosen."""
    from playwright.sync_api import expect

    radio = group.get_by_role("radio", name=option, exact=True)
    for _ in range(tries):
        if in_form:
            group.get_by_text(option, exact=True).click()
        else:
            after_run(page, lambda: group.get_by_text(option, exact=True).click())
        try:
            expect(radio).to_be_checked(timeout=3_000)
            return
        except AssertionError:  # not chosen after 3 s: that click was lost
            continue
    expect(radio).to_be_checked(timeout=1_000)


def screenshot(page, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


VIEWPORT = {"width": 1400, "height": 900}


def require_chromium() -> None:
    """Fail under CI, skip elsewhere, when Debian's Chromium is missing."""
    import pytest

    if not Path(CHROMIUM).exists():
        message = f"Chromium not found at {CHROMIUM} (apt-get install -y chromium)"
        pytest.fail(message) if os.environ.get("CI") == "true" else pytest.skip(message)


def database_server(folder: Path, prepare, env: dict[str, str] | None = None) -> StreamlitServer:
    """A fresh SQLite database in ``folder``, filled by ``prepare(engine)``, served by ``streamlit run``;
    the server keeps the engine (``server.engine``) for the test's own checks."""
    from annotate.store.db import make_engine, upgrade

    url = f"sqlite:///{folder / 'judge.sqlite'}"
    engine = make_engine(url)
    upgrade(engine)
    prepare(engine)
    server = StreamlitServer(
        {"DST_JUDGE_DB": url, "DST_JUDGE_BCRYPT_ROUNDS": "4", "DST_JUDGE_LOG": str(folder / "streamlit.log"), **(env or {})}
    )
    server.engine = engine
    return server


def new_context(browser, viewport=VIEWPORT):
    """A browser context of its own (its own cookies: a person, or a device), counting script runs."""
    from playwright.sync_api import expect

    expect.set_options(timeout=EXPECT_MS)
    context = browser.new_context(viewport=viewport, accept_downloads=True)
    context.set_default_timeout(PATIENCE_MS)
    context.add_init_script(RUN_COUNTER)
    return context


def open_page(context, url: str):
    """A new tab of ``context`` at ``url``, settled."""
    page = context.new_page()
    page.goto(url)
    wait_idle(page)
    return page


def new_page(browser, url: str):
    """A page at 1400x900 in a context of its own (its own cookies), at ``url``, settled."""
    return open_page(new_context(browser), url)


def in_viewport(page, locator) -> bool:
    """Whether the element is wholly on the first screen (no scrolling needed to reach it)."""
    box = locator.bounding_box()
    size = page.viewport_size
    return (
        box is not None
        and -1 <= box["y"]
        and box["y"] + box["height"] <= size["height"]
        and box["x"] + box["width"] <= size["width"]
    )
