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

from tests.conftest import REPO

CHROMIUM = os.environ.get("DST_JUDGE_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
]  # fmt: skip
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
            sys.executable, "-m", "streamlit", "run", str(REPO / "app.py"), "--server.port", str(self.port),
            "--server.address", "127.0.0.1", "--server.headless", "true", "--browser.gatherUsageStats", "false",
            "--server.fileWatcherType", "none",
        ]  # fmt: skip
        self.output = open(self.log, "ab")  # noqa: SIM115 (closed in stop)
        self.process = subprocess.Popen(command, cwd=REPO, env={**os.environ, **env}, stdout=self.output, stderr=subprocess.STDOUT)
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


def wait_idle(page, timeout: float = 30_000) -> None:
    """Wait until the script has finished running (Streamlit's e2e convention) and no
    element is left stale from the previous run."""
    page.wait_for_selector('[data-testid="stApp"][data-test-script-state="notRunning"]', timeout=timeout)
    page.wait_for_function("document.querySelectorAll('[data-stale=\"true\"]').length === 0", timeout=timeout)
    page.wait_for_timeout(200)
    page.wait_for_selector('[data-testid="stApp"][data-test-script-state="notRunning"]', timeout=timeout)


def screenshot(page, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
