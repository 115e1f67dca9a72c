"""Two Streamlit servers on one PostgreSQL database behind nginx, and a bounded load run.

Used by tests/scaleout/test_scaleout.py (CI size) and bench/bench_scaleout.py (bigger).

nginx (Debian's package) listens on loopback only.  Stickiness without nginx Plus: a
``dst_judge_route`` cookie names the server (``a`` / ``b``); nginx sets it on every
response to the server that answered, and a request without it goes to either server by
a hash of the request id.  Each route's upstream lists the other server as ``backup``,
so when a server dies its sessions (HTTP and the WebSocket reconnect) move to the other,
and the cookie follows.  Both servers share the cookie secret and the database, and a
login lives in the database, so an annotator moved to the other server stays logged in.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.browser_harness import StreamlitServer, free_port, wait_for_health

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"

# The app pages' Content-Security-Policy, as docs/deployment.md ("Two app servers behind nginx") gives it.  Streamlit
# needs inline styles, its own inline bootstrap script (and our two fixed scripts: the cookie, the scroll
# reset), blob:/data: images, fonts and media, and its WebSocket ('self' covers ws:/wss: to the same host).
CSP = (
    "default-src 'self'; script-src 'self' 'unsafe-inline' 'wasm-unsafe-eval'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data: blob:; font-src 'self' data:; media-src 'self' data: blob:; connect-src 'self'; "
    "worker-src 'self' blob:; frame-src 'self' blob: data:; object-src 'none'; base-uri 'self'; "
    "form-action 'self'; frame-ancestors 'none'"
)

NGINX_CONF = """
worker_processes 1;
error_log {work}/nginx-error.log warn;
pid {work}/nginx.pid;
events {{ worker_connections 1024; }}
http {{
    access_log {work}/nginx-access.log;
    client_body_temp_path {work}/client_body;
    proxy_temp_path {work}/proxy;
    fastcgi_temp_path {work}/fastcgi;
    uwsgi_temp_path {work}/uwsgi;
    scgi_temp_path {work}/scgi;
    map $http_upgrade $connection_upgrade {{ default upgrade; "" close; }}
    map $cookie_dst_judge_route $route_pool {{ a app_a; b app_b; default app_any; }}
    map $upstream_addr $served_by {{ "127.0.0.1:{port_a}" a; "127.0.0.1:{port_b}" b; default ""; }}
    upstream app_a {{ server 127.0.0.1:{port_a} max_fails=1 fail_timeout=30s; server 127.0.0.1:{port_b} backup; }}
    upstream app_b {{ server 127.0.0.1:{port_b} max_fails=1 fail_timeout=30s; server 127.0.0.1:{port_a} backup; }}
    upstream app_any {{ hash $request_id; server 127.0.0.1:{port_a} max_fails=1 fail_timeout=30s;
                        server 127.0.0.1:{port_b} max_fails=1 fail_timeout=30s; }}
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://$route_pool;
            proxy_http_version 1.1;
            proxy_set_header Upgrade $http_upgrade;
            proxy_set_header Connection $connection_upgrade;
            proxy_set_header Host $host;
            proxy_set_header X-Real-IP $remote_addr;
            proxy_set_header X-Forwarded-For $remote_addr;
            proxy_set_header X-Forwarded-Proto $scheme;
            proxy_read_timeout 3600s;
            proxy_next_upstream error timeout http_502 http_503;
            proxy_connect_timeout 2s;
            add_header Set-Cookie "dst_judge_route=$served_by; Path=/; HttpOnly; SameSite=Strict" always;
            add_header X-Frame-Options DENY always;
            add_header Content-Security-Policy "{csp}" always;
            add_header X-Content-Type-Options nosniff always;
            add_header Referrer-Policy same-origin always;
            add_header X-Served-By $served_by always;
        }}
    }}
}}
"""


class Cluster:
    """Two app servers and nginx in front; ``stop()`` ends them all."""

    def __init__(self, db_url: str, work: Path, env: dict[str, str] | None = None):
        self.work = work
        work.mkdir(parents=True, exist_ok=True)
        common = {
            "DST_JUDGE_DB": db_url,
            "DST_JUDGE_DEMO": "0",
            "DST_JUDGE_BCRYPT_ROUNDS": "4",
            "STREAMLIT_SERVER_COOKIE_SECRET": "scaleout-test-secret-" + os.urandom(8).hex(),
            **(env or {}),
        }
        self.servers = {
            name: StreamlitServer({**common, "DST_JUDGE_LOG": str(work / f"streamlit-{name}.log")}) for name in ("a", "b")
        }
        self.port = free_port()
        conf = work / "nginx.conf"
        conf.write_text(
            NGINX_CONF.format(work=work, port=self.port, port_a=self.servers["a"].port, port_b=self.servers["b"].port, csp=CSP)
        )
        check = subprocess.run([NGINX, "-t", "-c", str(conf), "-p", str(work)], capture_output=True, text=True)
        if check.returncode != 0:
            raise RuntimeError(f"nginx configuration refused: {check.stderr}")
        self.nginx = subprocess.Popen([NGINX, "-c", str(conf), "-p", str(work), "-g", "daemon off;"])
        self.url = f"http://127.0.0.1:{self.port}"
        wait_for_health(self.url, "nginx", self.nginx, timeout=20)

    def kill(self, name: str) -> None:
        """SIGKILL one app server: no clean shutdown, as in a crash."""
        process = self.servers[name].process
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=10)

    def stop(self) -> None:
        if self.nginx.poll() is None:
            self.nginx.terminate()
            self.nginx.wait(timeout=10)
        for server in self.servers.values():
            if server.process.poll() is None:
                server.stop()
            else:
                server.output.close()


@dataclass
class Ledger:
    """What the load run sent and what was acknowledged, per annotator, thread-safe."""

    acknowledged: dict[str, int] = field(default_factory=dict)
    in_flight: dict[str, int] = field(default_factory=dict)
    latencies: list[float] = field(default_factory=list)
    ack_times: dict[str, list[float]] = field(default_factory=dict)
    latency_by_name: dict[str, list[float]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    ready: set[str] = field(default_factory=set)  # browser annotators logged in and voting
    lock: threading.Lock = field(default_factory=threading.Lock)

    def ack(self, name: str, seconds: float) -> None:
        with self.lock:
            self.acknowledged[name] = self.acknowledged.get(name, 0) + 1
            self.latencies.append(seconds)
            self.ack_times.setdefault(name, []).append(time.time())
            self.latency_by_name.setdefault(name, []).append(seconds)

    def lost_in_flight(self, name: str) -> None:
        with self.lock:
            self.in_flight[name] = self.in_flight.get(name, 0) + 1


def store_annotator(
    engine, user, study_id: int, ledger: Ledger, stop: threading.Event, seed: int, think: tuple[float, float] = (0.05, 0.25)
) -> None:
    """An annotator voting by direct store calls (the service layer the pages call), reading each item
    for ``think`` seconds (uniform); the latency recorded is the judgement saved and the next item
    claimed, as the page does on a key press."""
    from sqlalchemy.exc import OperationalError

    from annotate import service

    rng = random.Random(seed)
    item = None
    while not stop.is_set():
        try:
            if item is None:
                item = service.next_item(engine, user, study_id)
                if item is None:
                    return
            if stop.wait(rng.uniform(*think)):  # reading time
                return
            start = time.perf_counter()
            service.submit(engine, user, item.id, {"satisfied": rng.choice("01")}, seconds=1.0)
            item = service.next_item(engine, user, study_id)
            ledger.ack(user.name, time.perf_counter() - start)
            if item is None:
                return
        except OperationalError as err:  # a lost serialisation race: retried, never counted as sent
            ledger.errors.append(f"{user.name}: {type(err).__name__}")
            time.sleep(0.05)


JUDGED_MORE = """before => {
  const main = document.querySelector('[data-testid="stMain"]');
  const found = /You have judged (\\d+) /.exec(main ? main.innerText : "");
  return found !== null && Number(found[1]) > before;
}"""


def _judged_more(page, before: int, timeout: float = 20_000) -> bool:
    """Whether the page's own count of judged items rises above ``before`` within the timeout."""
    try:
        page.wait_for_function(JUDGED_MORE, arg=before, timeout=timeout)
        return True
    except Exception:  # a timeout, or the page reconnecting to the other server
        return False


def _judged(page) -> int | None:
    """The page's own count of items this annotator has judged (from the database)."""
    import re

    try:
        text = page.get_by_test_id("stMain").inner_text(timeout=2000)
    except Exception:  # reconnecting to the other server
        return None
    found = re.search(r"You have judged (\d+) ", text)
    return int(found.group(1)) if found else None


def browser_annotator(
    url: str,
    route: str,
    name: str,
    password: str,
    ledger: Ledger,
    stop: threading.Event,
    screenshots: Path | None = None,
    think: tuple[float, float] = (0.0, 0.0),
) -> None:
    """An annotator in a real Chromium, pinned to a server by its route cookie, voting with the keyboard
    after reading each item ``think`` seconds (uniform); latency: key press -> next item shown."""
    from playwright.sync_api import sync_playwright

    from tests.browser_harness import CHROMIUM, CHROMIUM_ARGS, wait_idle

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1200, "height": 900})
        context.add_cookies([{"name": "dst_judge_route", "value": route, "url": url}])
        page = context.new_page()
        page.goto(url)
        wait_idle(page, timeout=60_000)
        page.get_by_label("Name").fill(name, timeout=60_000)
        page.get_by_role("textbox", name="Password").fill(password)
        page.get_by_role("button", name="Log in").first.click()
        page.get_by_role("button", name="Satisfied (1)").wait_for(timeout=60_000)
        wait_idle(page, timeout=60_000)
        ledger.ready.add(name)
        rng = random.Random(name)
        while not stop.is_set():
            if think[1] > 0 and stop.wait(rng.uniform(*think)):
                break
            before = _judged(page)
            start = time.perf_counter()
            page.evaluate("document.activeElement && document.activeElement.blur()")
            page.keyboard.press("1")
            moved = before is not None and _judged_more(page, before)
            if moved:
                ledger.ack(name, time.perf_counter() - start)
                continue
            ledger.lost_in_flight(name)  # the vote may or may not have reached a server
            page.goto(url)  # as a person would: reload and carry on
            try:
                page.get_by_role("button", name="Satisfied (1)").wait_for(timeout=45_000)
                wait_idle(page, timeout=45_000)
            except Exception:
                break
        if screenshots is not None:
            screenshots.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(screenshots / f"scaleout-{name}.png"), full_page=True)
        browser.close()
