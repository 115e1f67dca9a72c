"""Benchmark: a soak of the app: N Chromium tabs at a person's pace for an hour; does the server's memory level off?

    python -m bench.bench_soak [--minutes 60] [--tabs 10] [--items 1500] [--sample 30] [--api-port 0]
                               [--trace] [--heap [--trim]] [--json]

A satisfaction study of ``--items`` dialogues (``bench.corpus``, overlap 3) on a fresh SQLite database in a
temporary folder, served by the README start command (``python -m annotate serve --server.port P
--server.headless true --server.fileWatcherType none``, ``DST_JUDGE_DB``, ``DST_JUDGE_DEMO=0``,
``DST_JUDGE_BCRYPT_ROUNDS=4``; ``--api-port 0`` by default: no API process; with ``--api-port N`` its
child is sampled too).  ``--tabs`` browser contexts of one headless Chromium (Playwright's async API,
``/usr/bin/chromium`` or ``DST_JUDGE_CHROMIUM``), each a tab of its own with its own cookies: one admin
and ``tabs - 1`` annotators (``soak1`` ...), each logged in through the login page.

Each annotator tab, every 10-20 s (uniformly drawn, seeded): mostly a vote by keyboard ("1" or "0"); now
and then (about 1 in 12 actions each) a go-back ("Go back to an earlier item", "Open it", a new answer by
keyboard), a reload, a log out and log in, or the tab closed and a new one opened (a new context that
logs in again: the old tab's Streamlit session must be dropped).  The admin tab, every 2-4 minutes, opens
Progress and then Analysis from the sidebar (sometimes a reload).  The tabs start staggered over the
first minute.  An action that fails (a timeout on a loaded machine) is counted and the tab is reopened.

Every ``--sample`` seconds (30): the resident memory (``VmRSS``) of the server process and of its
descendants (the analysis process of issue 38; the API process under ``--api-port N``), the votes stored,
and Streamlit's ``/_stcore/metrics``: its active sessions (a tab closed or reloaded whose session is not
dropped would show as sessions above the tabs open) and the bytes of its caches.  Reported, for the
server and its descendants together: RSS at the start (the first sample, the admin logged in), after
warm-up (the first sixth of the run, at least 1 minute) and at the end; least-squares slopes in MB per 10
minutes over the first and the last half of the run and after warm-up; the judgement "levels off" when
the last half's slope is under 1 MB per 10 minutes, else "still growing"; the vote events stored (changed
votes included), the actions done, the errors; the sessions at the end, their maximum, and 5 s after
every tab was closed.

``--heap``: a ``sitecustomize`` of the same kind records, at each sample, glibc's heap in use and free
(``mallinfo2``), Arrow's memory pool and the RSS; with ``--trim`` it then calls ``malloc_trim(0)`` and records
the RSS after it (the report gains ``heap``): growth that a trim gives back is freed memory glibc kept, not a
leak.

``--trace``: the server runs with a ``sitecustomize`` of this bench's own (on ``PYTHONPATH``, in the
temporary folder; nothing in the repository changes) that starts ``tracemalloc`` (10 frames: growth compared
by line, and by whole traceback for who called those lines) and, on
SIGUSR1 (sent after warm-up, at the middle and at the end), writes the growth since the first snapshot
by line and the object counts by type (``gc``) that grew most; the report gains ``trace``.  A snapshot
is costly (on a loaded 2-core machine minutes, and hundreds of MB for a while): use it with few tabs,
and never read its RSS as the untraced server's.

``--json`` prints only the JSON (progress goes to stderr)::

    {"rss_mb": {"start", "warm", "end", "max"}, "slope_mb_per_10min": {"first_half", "last_half", "after_warmup"},
     "judgement", "votes_stored", "actions": {...}, "errors", "sessions": {"end", "max", "tabs_open"},
     "samples": [{"t_s", "rss_mb", "children_mb", "sessions", "votes"}...], "setup": {...}}
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from formats.settings import settings

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = settings().chromium
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-dev-shm-usage"]
VIEWPORT = {"width": 1400, "height": 900}
PASSWORD, ADMIN = "soak-password", "soakadmin"
WAIT_MS = 60_000
QUIET_MS = 300

# In every page before the app's scripts: the time of the last change of the script state (or a stale mark).
PROBE = """(() => {
  if (window.__soak) return;
  const S = window.__soak = {changed: performance.now()};
  new MutationObserver(changes => {
    const names = ['data-test-script-state', 'data-stale'];
    if (changes.some(c => names.includes(c.attributeName))) S.changed = performance.now();
  }).observe(document, {subtree: true, attributes: true, attributeFilter: ['data-test-script-state', 'data-stale']});
})()"""
SETTLED = """quiet => {
  const app = document.querySelector('[data-testid="stApp"]');
  return app && app.getAttribute('data-test-script-state') === 'notRunning'
    && !document.querySelector('[data-stale="true"]') && window.__soak && performance.now() - window.__soak.changed > quiet;
}"""
CHANGED = "b => { const p = document.querySelector('[data-testid=\"stProgress\"]'); return p && p.innerText !== b; }"
PROGRESS = "(() => { const p = document.querySelector('[data-testid=\"stProgress\"]'); return p ? p.innerText : null; })()"

# The sitecustomize of --trace: tracemalloc and gc counts, written at each sample the bench asks for (SIGUSR1).
TRACER = """
import gc, os, signal, sys, threading, time, tracemalloc, json, collections
# the serving process only (``annotate serve`` execs ``python -m streamlit run``): its analysis process
# (``python -c ...``) is not traced, so its memory is not the tracer's
OUT = os.environ.get("DST_SOAK_TRACE") if "streamlit" in sys.orig_argv else None
if OUT:
    tracemalloc.start(10)
_base = {}
def _types():
    return collections.Counter(type(o).__qualname__ for o in gc.get_objects())
def _dump(*_):
    def work():
        snap = tracemalloc.take_snapshot().filter_traces([tracemalloc.Filter(False, tracemalloc.__file__)])
        types = _types()
        if "snap" not in _base:
            _base["snap"], _base["types"] = snap, types
        # by line, not by traceback: grouped by 10-frame traceback the growth split into many small groups
        stats = snap.compare_to(_base["snap"], "lineno")[:25]
        # and by whole traceback (10 frames), for who called the lines that grew
        chains = snap.compare_to(_base["snap"], "traceback")[:12]
        grown = sorted(((n - _base["types"].get(t, 0), t, n) for t, n in types.items()), reverse=True)[:15]
        record = {"t": time.time(), "traced_mb": tracemalloc.get_traced_memory()[0] / 2**20,
                  "lines": [{"kb": round(s.size_diff / 1024, 1), "count": s.count_diff,
                             "where": [f"{f.filename}:{f.lineno}" for f in s.traceback[-4:]]} for s in stats],
                  "chains": [{"kb": round(s.size_diff / 1024, 1), "count": s.count_diff,
                              "where": [f"{f.filename}:{f.lineno}" for f in s.traceback]} for s in chains],
                  "types": [{"type": t, "grown": d, "now": n} for d, t, n in grown]}
        with open(OUT, "a") as f:
            f.write(json.dumps(record) + "\\n")
    threading.Thread(target=work, daemon=True).start()
if OUT:
    signal.signal(signal.SIGUSR1, _dump)
"""

# The sitecustomize of --heap: where the serving process's native memory is, at each sample (SIGUSR2):
# glibc's heap in use and free (mallinfo2), Arrow's pool, and the RSS before and after ``malloc_trim(0)``
# (memory freed but kept by glibc is given back by the trim; memory in use is not).
HEAP = """
import ctypes, gc, json, os, signal, sys, threading, time
OUT = os.environ.get("DST_SOAK_HEAP") if "streamlit" in sys.orig_argv else None
class _Info(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                               "fsmblks", "uordblks", "fordblks", "keepcost")]
def _rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
def _smaps():
    # The process's resident memory by kind (kB -> MB): anonymous memory (heaps, pymalloc's arenas, Arrow's
    # pool, stacks) apart from file-backed pages (shared libraries), which the kernel can drop and reload.
    out = {}
    with open("/proc/self/smaps_rollup") as f:
        for line in f:
            parts = line.split()
            if parts[0] in ("Rss:", "Anonymous:", "Shared_Clean:", "Private_Clean:", "Private_Dirty:"):
                out[parts[0].rstrip(":").lower()] = int(parts[1]) / 1024
    return out
def _sample(*_):
    def work():
        libc = ctypes.CDLL("libc.so.6")
        libc.mallinfo2.restype = _Info
        info = libc.mallinfo2()
        arrow = None
        if "pyarrow" in sys.modules:
            pool = sys.modules["pyarrow"].default_memory_pool()
            arrow = {"backend": pool.backend_name, "mb": pool.bytes_allocated() / 2**20, "max_mb": pool.max_memory() / 2**20}
        before = _rss()
        trim = os.environ.get("DST_SOAK_TRIM") == "1"
        if trim:
            libc.malloc_trim(0)
        record = {"t": time.time(), "rss_mb": before, "rss_after_trim_mb": _rss() if trim else None,
                  "heap_in_use_mb": info.uordblks / 2**20, "heap_free_mb": info.fordblks / 2**20,
                  "heap_arena_mb": info.arena / 2**20, "mmapped_mb": info.hblkhd / 2**20, "arrow": arrow,
                  "threads": threading.active_count(), "smaps": _smaps(),
                  "pymalloc_blocks": sys.getallocatedblocks(), "gc_objects": len(gc.get_objects())}
        with open(OUT, "a") as f:
            f.write(json.dumps(record) + "\\n")
    threading.Thread(target=work, daemon=True).start()
if OUT:
    signal.signal(signal.SIGUSR2, _sample)
"""


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text}")
    return value


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_soak", description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=60, help="length of the soak (60)")
    parser.add_argument("--tabs", type=_positive, default=10, help="browser tabs: one admin, the rest annotators (10)")
    parser.add_argument("--items", type=_positive, default=1500, help="dialogues in the study (1500)")
    parser.add_argument("--sample", type=float, default=30, help="seconds between memory samples (30)")
    parser.add_argument("--api-port", type=int, default=0, help="the API's port under serve (0: no API)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--trace", action="store_true", help="tracemalloc and gc counts in the server (slower)")
    parser.add_argument("--heap", action="store_true", help="glibc's heap in use and free, Arrow's pool, at each sample")
    parser.add_argument("--trim", action="store_true", help="with --heap: malloc_trim(0) at each sample (RSS after it)")
    parser.add_argument("--json", action="store_true", help="print only the JSON")
    args = parser.parse_args(argv)
    if args.tabs < 2:
        parser.error("--tabs must be at least 2 (one admin, one annotator)")
    return args


# --- figures --------------------------------------------------------------------------------------


def slope(points: list[tuple[float, float]]) -> float | None:
    """Least-squares slope of (seconds, MB) in MB per 10 minutes."""
    if len(points) < 3:
        return None
    n = len(points)
    mx = sum(t for t, _ in points) / n
    my = sum(v for _, v in points) / n
    sxx = sum((t - mx) ** 2 for t, _ in points)
    if sxx == 0:
        return None
    return round(600 * sum((t - mx) * (v - my) for t, v in points) / sxx, 2)


def figures(samples: list[dict], minutes: float) -> dict:
    total = [(s["t_s"], s["rss_mb"] + s["children_mb"]) for s in samples]
    end_t = total[-1][0]
    warm_t = max(60.0, end_t / 6)
    half_t = end_t / 2
    warm = next((v for t, v in total if t >= warm_t), total[-1][1])
    first, last = [p for p in total if p[0] <= half_t], [p for p in total if p[0] >= half_t]
    last_slope, first_slope = slope(last), slope(first)
    levels = last_slope is not None and last_slope < 1.0
    if last_slope is None:
        judgement = "too short to judge"
    elif levels:
        judgement = "levels off"
    else:
        judgement = "still growing"
    return {
        "rss_mb": {"start": total[0][1], "warm": warm, "end": total[-1][1], "max": max(v for _, v in total)},
        "slope_mb_per_10min": {
            "first_half": first_slope,
            "last_half": last_slope,
            "after_warmup": slope([p for p in total if p[0] >= warm_t]),
        },
        "judgement": judgement,
        "warmup_s": round(warm_t),
        "duration_s": round(end_t),
    }


def text(result: dict) -> str:
    r, s = result["rss_mb"], result["slope_mb_per_10min"]
    setup = result["setup"]
    fmt = lambda v: "-" if v is None else f"{v:+.2f}"  # noqa: E731
    lines = [
        f"soak: {setup['tabs']} tabs (1 admin), {result['duration_s'] / 60:.1f} min, a {setup['items']}-item study, "
        f"RSS of the server{' and its API' if setup['api_port'] else ''} every {setup['sample_s']:.0f} s",
        f"  RSS MB      start {r['start']:7.1f}   after warm-up ({result['warmup_s'] / 60:.0f} min) {r['warm']:7.1f}   "
        f"end {r['end']:7.1f}   max {r['max']:7.1f}",
        f"  MB/10 min   first half {fmt(s['first_half'])}   last half {fmt(s['last_half'])}   "
        f"after warm-up {fmt(s['after_warmup'])}",
        f"  judgement   {result['judgement']} (levels off: last half < 1 MB per 10 min)",
        f"  votes       {result['votes_stored']} vote events stored; actions {result['actions']}; errors {result['errors']}",
        f"  sessions    end {result['sessions']['end']} (tabs open {result['sessions']['tabs_open']}), "
        f"max {result['sessions']['max']}, after all tabs closed {result['sessions']['after_all_tabs_closed']}",
    ]
    if result.get("trace"):
        lines.append("  trace (growth since warm-up, last sample):")
        for row in result["trace"]["lines"][:8]:
            lines.append(f"    {row['kb']:+9.1f} KB {row['count']:+7d}  {' <- '.join(reversed(row['where']))[:160]}")
        for row in result["trace"]["types"][:8]:
            lines.append(f"    {row['grown']:+8d} {row['type']} (now {row['now']})")
    return "\n".join(lines)


# --- the server -----------------------------------------------------------------------------------


def rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        try:
            found += [int(p) for p in task.read_text().split()]
        except OSError:
            pass
    return found + [c for child in found for c in children(child)]


def metrics(url: str) -> dict:
    """Streamlit's /_stcore/metrics: active sessions, session-state and cache bytes."""
    try:
        with urllib.request.urlopen(f"{url}/_stcore/metrics", timeout=20) as response:
            body = response.read().decode()
    except OSError:
        return {}
    out: dict = {"cache_bytes": {}}
    for line in body.splitlines():
        if line.startswith("#"):
            continue
        m = re.match(r"([a-z_]+)(\{[^}]*\})?\s+([0-9.eE+-]+)", line)
        if not m:
            continue
        name, labels, value = m.group(1), m.group(2) or "", float(m.group(3))
        if name.startswith("active_sessions"):
            out["sessions"] = int(value)
        elif name.startswith("cache_memory_bytes"):
            kind = re.search(r'cache_type="([^"]*)"', labels)
            kind = kind.group(1) if kind else "?"
            out["cache_bytes"][kind] = out["cache_bytes"].get(kind, 0) + int(value)
        elif name.startswith("session_events"):
            kind = re.search(r'type="([^"]*)"', labels)
            out[f"session_{kind.group(1) if kind else '?'}s"] = int(value)
    return out


class Server:
    def __init__(self, work: Path, db: str, env: dict, api_port: int, trace: bool, heap: bool = False, trim: bool = False):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = work / "serve.log"
        self.output = open(self.log, "wb")  # noqa: SIM115 (closed in stop)
        self.trace_file = work / "trace.jsonl" if trace else None
        env = {**env, "DST_JUDGE_DB": db}
        if trace:
            (work / "tracer").mkdir()
            (work / "tracer" / "sitecustomize.py").write_text(TRACER)
            env["PYTHONPATH"] = f"{work / 'tracer'}{os.pathsep}{env['PYTHONPATH']}"
            env["DST_SOAK_TRACE"] = str(self.trace_file)
        self.heap_file = work / "heap.jsonl" if heap else None
        if heap:
            (work / "heap").mkdir()
            (work / "heap" / "sitecustomize.py").write_text(HEAP)
            env["PYTHONPATH"] = f"{work / 'heap'}{os.pathsep}{env['PYTHONPATH']}"
            env["DST_SOAK_HEAP"] = str(self.heap_file)
            env["DST_SOAK_TRIM"] = "1" if trim else "0"
        command = [sys.executable, "-m", "annotate", "serve", "--api-port", str(api_port)]
        command += ["--server.port", str(self.port), "--server.headless", "true", "--server.fileWatcherType", "none"]
        command += ["--browser.gatherUsageStats", "false"]
        self.process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=self.output, stderr=subprocess.STDOUT)

    def wait_healthy(self, timeout: float = 180) -> None:
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the server exited with {self.process.returncode}:\n{self.tail()}")
            try:
                with urllib.request.urlopen(f"{self.url}/_stcore/health", timeout=2) as response:
                    if response.status == 200:
                        return
            except OSError:
                time.sleep(0.3)
        raise RuntimeError(f"the server did not become healthy:\n{self.tail()}")

    def tail(self) -> str:
        self.output.flush()
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-20:])

    def stop(self) -> None:
        descendants = children(self.process.pid)  # the API, the analysis process: none is left behind
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        for pid in descendants:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:  # already ended with its parent
                pass
        self.output.close()


# --- the tabs -------------------------------------------------------------------------------------


class Tab:
    """One browser context (its own cookies) with one page, logged in as ``name``."""

    def __init__(self, browser, url: str, name: str, rng: random.Random, stats: dict):
        self.browser, self.url, self.name, self.rng, self.stats = browser, url, name, rng, stats
        self.context = self.page = None
        self.key = 0

    async def settle(self) -> None:
        await self.page.wait_for_function(SETTLED, arg=QUIET_MS, timeout=WAIT_MS, polling=100)

    async def open(self) -> None:
        self.context = await self.browser.new_context(viewport=VIEWPORT)
        self.context.set_default_timeout(WAIT_MS)
        await self.context.add_init_script(PROBE)
        self.page = await self.context.new_page()
        await self.page.goto(self.url, timeout=WAIT_MS)
        await self.log_in()

    async def log_in(self) -> None:
        page = self.page
        await page.get_by_label("Name").fill(self.name, timeout=WAIT_MS)
        await page.get_by_role("textbox", name="Password").fill(PASSWORD)
        await page.get_by_role("button", name="Log in").first.click()
        await page.get_by_role("button", name="Log out").wait_for(timeout=WAIT_MS)
        await self.settle()

    async def close(self) -> None:
        if self.context is not None:
            try:
                await self.context.close()
            except Exception:  # noqa: BLE001 (already gone)
                pass
        self.context = self.page = None

    async def reopen(self) -> None:
        await self.close()
        await self.open()

    async def vote(self) -> bool:
        page = self.page
        before = await page.evaluate(PROGRESS)
        if before is None:  # no item on the screen (finished, or an odd state): a fresh look
            await self.reload()
            return False
        await page.evaluate("document.activeElement && document.activeElement.blur()")
        self.key += 1
        await page.keyboard.press("1" if self.key % 2 else "0")
        await page.wait_for_function(CHANGED, arg=before, timeout=WAIT_MS, polling=100)
        await self.settle()
        return True

    async def go_back(self) -> None:
        page = self.page
        await page.get_by_text("Go back to an earlier item").first.click()
        await self.settle()
        opener = page.get_by_role("button", name="Open it")
        if await opener.count() == 0:
            return
        await opener.first.click()
        await (
            page.get_by_text("You are changing an earlier judgement")
            .or_(page.get_by_text("You skipped this item"))
            .first.wait_for(timeout=WAIT_MS)
        )
        await self.settle()
        await page.evaluate("document.activeElement && document.activeElement.blur()")
        self.key += 1
        await page.keyboard.press("1" if self.key % 2 else "0")
        await page.get_by_text("You are changing an earlier judgement").wait_for(state="detached", timeout=WAIT_MS)
        await self.settle()

    async def reload(self) -> None:
        await self.page.reload(timeout=WAIT_MS)
        await self.page.get_by_role("button", name="Log out").wait_for(timeout=WAIT_MS)
        await self.settle()

    async def log_out_in(self) -> None:
        await self.page.get_by_role("button", name="Log out").click()
        await self.page.get_by_label("Name").wait_for(timeout=WAIT_MS)
        await self.settle()
        await self.log_in()

    async def admin_look(self) -> None:
        for title in ("Progress", "Analysis"):
            await self.page.get_by_role("link", name=title).first.click()
            await self.settle()
            await asyncio.sleep(self.rng.uniform(5, 15))  # a person reads the page


def why(error: BaseException) -> str:
    """An error's first line and Playwright's last word on it (e.g. which element intercepts a click)."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return " / ".join(dict.fromkeys([lines[0][:200], *[line[:200] for line in lines[-2:]]])) if lines else repr(error)


async def pause(seconds: float, stop_at: float) -> None:
    """A person's pause, cut short at the end of the soak."""
    await asyncio.sleep(max(0.0, min(seconds, stop_at - time.monotonic())))


async def annotator_loop(tab: Tab, stop_at: float, start_delay: float) -> None:
    await asyncio.sleep(start_delay)
    stats = tab.stats
    try:
        await tab.open()
    except Exception as error:  # noqa: BLE001
        stats["errors"] += 1
        log(f"{tab.name}: opening failed: {str(error).splitlines()[0]}")
    while time.monotonic() < stop_at:
        await pause(tab.rng.uniform(10, 20), stop_at)
        if time.monotonic() >= stop_at:
            break
        roll = tab.rng.random()
        action = "vote"
        if roll < 0.03:
            action = "new tab"
        elif roll < 0.06:
            action = "log out and in"
        elif roll < 0.10:
            action = "reload"
        elif roll < 0.16 and tab.key > 0:
            action = "go back"
        try:
            if tab.page is None:
                action = "new tab"
                await tab.reopen()
            elif action == "vote":
                if not await tab.vote():
                    action = "reload"
            elif action == "go back":
                await tab.go_back()
            elif action == "reload":
                await tab.reload()
            elif action == "log out and in":
                await tab.log_out_in()
            else:
                await tab.reopen()
            stats["actions"][action] = stats["actions"].get(action, 0) + 1
        except Exception as error:  # noqa: BLE001 (a loaded machine; the tab is reopened)
            stats["errors"] += 1
            log(f"{tab.name}: {action} failed: {why(error)}")
            try:
                await tab.reopen()
            except Exception as again:  # noqa: BLE001
                log(f"{tab.name}: reopening failed: {str(again).splitlines()[0][:200]}")
                await tab.close()
    await tab.close()


async def admin_loop(tab: Tab, stop_at: float) -> None:
    stats = tab.stats
    try:
        await tab.open()
    except Exception as error:  # noqa: BLE001
        stats["errors"] += 1
        log(f"admin: opening failed: {str(error).splitlines()[0]}")
    while time.monotonic() < stop_at:
        await pause(tab.rng.uniform(120, 240), stop_at)
        if time.monotonic() >= stop_at:
            break
        action = "admin reload" if tab.rng.random() < 0.2 else "admin pages"
        try:
            if tab.page is None:
                await tab.reopen()
            if action == "admin reload":
                await tab.reload()
            await tab.admin_look()
            stats["actions"][action] = stats["actions"].get(action, 0) + 1
        except Exception as error:  # noqa: BLE001
            stats["errors"] += 1
            log(f"admin: {action} failed: {why(error)}")
            try:
                await tab.reopen()
            except Exception:  # noqa: BLE001
                await tab.close()
    await tab.close()


def votes_stored(db_path: Path) -> int:
    with sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=30) as conn:
        return conn.execute("SELECT count(*) FROM vote_events").fetchone()[0]


TRACE_MARKS = 3  # tracemalloc snapshots: after warm-up (the baseline), at the middle and at the end


def wait_for_snapshots(path: Path, count: int, timeout: float = 600) -> None:
    """The end snapshot is written by a thread of the server and takes a while (a traced heap of a million
    blocks): the server is stopped only once it is on disk, or after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and len([line for line in path.read_text().splitlines() if line.strip()]) >= count:
            return
        time.sleep(2)
    log(f"the tracer wrote fewer than {count} snapshots in {timeout:.0f} s")


async def sampler(server: Server, db_path: Path, t0: float, stop_at: float, interval: float, samples: list, tabs: list) -> None:
    loop = asyncio.get_running_loop()
    traced = 0
    while True:
        pid = server.process.pid
        kids = children(pid)
        if server.trace_file is not None:
            elapsed, span = time.monotonic() - t0, stop_at - t0
            marks = [max(60.0, span / 6), span / 2, span - interval]  # warm-up (the baseline), the middle, the end
            if traced < min(len(marks), TRACE_MARKS) and elapsed >= marks[traced]:
                traced += 1
                os.kill(pid, signal.SIGUSR1)  # a snapshot is costly (hundreds of MB for a moment): three in all
        if server.heap_file is not None:
            os.kill(pid, signal.SIGUSR2)
        found = await loop.run_in_executor(None, metrics, server.url)
        try:
            votes = await loop.run_in_executor(None, votes_stored, db_path)
        except sqlite3.Error:
            votes = None
        row = {
            "t_s": round(time.monotonic() - t0, 1),
            "rss_mb": round(rss_mb(pid), 1),
            "children_mb": round(sum(rss_mb(k) for k in kids), 1),
            "sessions": found.get("sessions"),
            "cache_bytes": found.get("cache_bytes"),
            "tabs_open": sum(1 for tab in tabs if tab.page is not None),
            "votes": votes,
        }
        samples.append(row)
        log(
            f"t={row['t_s'] / 60:5.1f} min  RSS {row['rss_mb']:.1f} MB (+{row['children_mb']:.1f})  "
            f"sessions {row['sessions']}  tabs {row['tabs_open']}  votes {votes}"
        )
        if time.monotonic() + interval > stop_at + 1:
            return
        await asyncio.sleep(interval - (time.monotonic() - t0) % interval)


async def soak(args: argparse.Namespace, server: Server, db_path: Path, names: list[str]) -> tuple[list, dict]:
    from playwright.async_api import async_playwright

    stats = {"actions": {}, "errors": 0}
    samples: list[dict] = []
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            rng = random.Random(args.seed)
            admin = Tab(browser, server.url, ADMIN, random.Random(rng.random()), stats)
            tabs = [Tab(browser, server.url, name, random.Random(rng.random()), stats) for name in names]
            await admin.open()
            t0 = time.monotonic()
            stop_at = t0 + 60 * args.minutes
            tasks = [asyncio.create_task(admin_loop(admin, stop_at))]
            tasks += [asyncio.create_task(annotator_loop(tab, stop_at, 60 * i / len(tabs))) for i, tab in enumerate(tabs)]
            await sampler(server, db_path, t0, stop_at, args.sample, samples, [admin, *tabs])
            await asyncio.wait_for(asyncio.gather(*tasks), timeout=300)
            await asyncio.sleep(5)
            final = await asyncio.get_running_loop().run_in_executor(None, metrics, server.url)
            stats["sessions_after_close"] = final.get("sessions")
        finally:
            await browser.close()
    return samples, stats


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    from bench.corpus import build, dialogue_file

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a kill still stops the server and Chromium (finally)

    work = Path(tempfile.mkdtemp(prefix="dst-bench-soak-"))
    db_path = work / "soak.sqlite"
    db = f"sqlite:///{db_path}"
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "DST_JUDGE_DEMO": "0",
        "DST_JUDGE_BCRYPT_ROUNDS": "4",
        "DST_JUDGE_PASSWORD": PASSWORD,
        "DST_JUDGE_MAX_JSON_VALUES": str(10**9),
        "DST_JUDGE_MAX_FILE_MB": str(10**4),
    }
    names = [f"soak{i}" for i in range(1, args.tabs)]
    setup = {
        "tabs": args.tabs,
        "annotators": len(names),
        "items": args.items,
        "minutes": args.minutes,
        "sample_s": args.sample,
        "api_port": args.api_port,
        "trace": args.trace,
        "heap": args.heap,
        "trim": args.trim,
        "database": "SQLite, fresh",
        "cpus": os.cpu_count(),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
    }
    server = None
    try:
        corpus = work / "corpus.json"
        corpus.write_text(json.dumps(build(args.items)))

        def cli(*parts: str) -> None:
            done = subprocess.run(
                [sys.executable, "-m", "annotate", "--db", db, *parts], cwd=ROOT, env=env, capture_output=True, text=True
            )
            if done.returncode:
                raise RuntimeError(f"python -m annotate {' '.join(parts)} failed:\n{done.stdout}{done.stderr}")

        log(f"a {args.items}-dialogue study in {work} ...")
        cli("study", "create", "soak", "--kind", "satisfaction", "--overlap", "3", str(corpus), str(dialogue_file(corpus)))
        cli("annotator", "add", "--admin", ADMIN)
        for name in names:
            cli("annotator", "add", name)
        server = Server(work, db, env, args.api_port, args.trace, args.heap, args.trim)
        server.wait_healthy()
        log(f"server on {server.url} (pid {server.process.pid}); {args.tabs} tabs for {args.minutes} min")
        samples, stats = asyncio.run(soak(args, server, db_path, names))
        result = figures(samples, args.minutes)
        result["votes_stored"] = votes_stored(db_path)
        result["actions"] = stats["actions"]
        result["errors"] = stats["errors"]
        sessions = [s["sessions"] for s in samples if s["sessions"] is not None]
        result["sessions"] = {
            "end": sessions[-1] if sessions else None,
            "max": max(sessions) if sessions else None,
            "tabs_open": samples[-1]["tabs_open"],
            "after_all_tabs_closed": stats.get("sessions_after_close"),
        }
        if server.trace_file is not None:
            wait_for_snapshots(server.trace_file, TRACE_MARKS)
        if server.trace_file is not None and server.trace_file.exists():
            records = [json.loads(line) for line in server.trace_file.read_text().splitlines() if line.strip()]
            if records:
                result["trace"] = records[-1]
                result["trace"]["traced_mb_series"] = [round(r["traced_mb"], 1) for r in records]
        if server.heap_file is not None and server.heap_file.exists():
            result["heap"] = [json.loads(line) for line in server.heap_file.read_text().splitlines() if line.strip()]
        result["samples"] = samples
        setup["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
        result["setup"] = setup
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(result, indent=2) if args.json else text(result))


if __name__ == "__main__":
    main()
