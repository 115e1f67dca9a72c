"""Benchmark: in Chromium at 1400x900, key press -> the next item's content in the DOM, one annotator.

    python -m bench.bench_browser [--items 1000,20000] [--judgements 60] [--warmup 3] [--before REF] [--after REF] [--json]
    python -m bench.bench_browser --against potato [--potato-venv DIR] [--items 1000] [--judgements 60] [--warmup 3] [--json]

For each study size, a satisfaction study of that many dialogues (``bench.corpus``, overlap 3) on an
SQLite database of its own, served by the README start command (``python -m annotate serve
--server.port P --server.headless true --server.fileWatcherType none``, ``DST_JUDGE_DB``,
``DST_JUDGE_DEMO=0``), and one annotator in headless Chromium (Playwright's sync API driving
``/usr/bin/chromium``, or ``DST_JUDGE_CHROMIUM``) who logs in and judges by keyboard only: "1"
(satisfied) and "0" (not satisfied), alternately, each press a whole judgement that brings the next item.
The first ``--warmup`` presses are not counted; then ``--judgements`` presses are.

What is timed, in the page: a capture-phase ``keydown`` listener on ``window`` (installed before
Streamlit's own) stamps ``performance.now()`` at the press; a ``MutationObserver`` stamps the first DOM
change after which the next item is there: the item shown differs from the one the key was pressed on,
and no element is left ``data-stale`` from the previous run (Streamlit marks what a running script has
not re-sent yet), so the new item's buttons and its turns are all in the DOM.  The figure is the
difference (``p50_ms`` ...).  ``wall_p50_ms`` / ``wall_p95_ms`` are ``time.perf_counter`` around
Playwright's press and its wait for that stamp: the same span plus Playwright's round trips.  Between
presses the page is left to settle (the script not running and the page quiet for 300 ms), so each press
meets a finished page, as a person's would.

Which item is shown: the satisfaction page does not print the dialogue key, so an item is known by the
widget key of its "Satisfied (1)" button, which carries the item id (``ItemContext.key``: ``sat-1-<id>``,
on the button's container as the class ``st-key-sat-1-<id>``); should a tree draw the button without
that key, by the progress line ("You have judged N items"), which changes with every judgement.  The
buttons are found by their labels and pressed by their shortcuts, so a rearranged page still works.

Side by side (``--before REF``): ``git worktree add --detach`` of REF in a temporary folder (removed at
the end with ``git worktree remove --force``); its studies are made and its server run by its own code
(cwd and ``PYTHONPATH`` = the worktree).  The code measured as "after" is the working tree as it is,
uncommitted changes included, or with ``--after REF`` a worktree of REF, made and removed the same way.
Both trees get the same corpus files (made once, by this tree's ``bench.corpus``) and make their studies
through their own ``python -m annotate study create`` / ``annotator add`` (the CLI is a contract both
trees keep) before their servers start.  Both servers run at once and the presses alternate between them
(after, before; before, after; ...), so a change in the machine's load falls on both alike; ``ratio`` is
after / before of p50 and p95.

``--json`` prints only the JSON (progress goes to stderr)::

    {"after": {"1000": {"items", "judged", "p50_ms", "p95_ms", "max_ms", "mean_ms", "wall_p50_ms", "wall_p95_ms"}, ...},
     "before": {...same...} | null, "ratio": {"1000": {"p50", "p95"}, ...} | null,
     "before_ref": REF | null, "before_commit": SHA | null, "setup": {...}}

Against Potato (``--against potato``): the same measurement of DST Judge (the working tree, or ``--after
REF``) and, side by side, of Potato (potato-annotation, installed in a venv of its own: ``--potato-venv``,
``/tmp/potato-venv`` by default; if it is not there, the bench says so in one
line and exits 2).  Potato gets the same dialogues (``bench.corpus``; ``bench.potato_peer`` writes them as
its JSON-lines items, the turns and the gold and predicted states as text, with a config of one radio
question, "1" satisfied and "0" not satisfied by Potato's own ``key_value``, and an open login) in a
project folder of its own, served by ``potato start config.yaml -p PORT``.  Both servers run at once, each
annotator in its own browser context, and the presses alternate (DST Judge, Potato; Potato, DST Judge; ...).
A press is, for each tool, what takes a person from one item to the next by keyboard:

* DST Judge: one key, "1" or "0" (alternately), which records the judgement and brings the next item;
* Potato: the option's key, "1" or "0" (alternately; it selects the radio option on ``keyup``), then
  Potato's own Next key, ``ArrowRight`` (on ``keydown`` it saves the answer, asks for the next item and
  reloads the page).  Potato advances on an option's key alone only in its ``review_mode``, which is off
  by default (and then waits ``delay_ms``, 350 ms by default), so it is not used.

The figure is the same span: from the ``keydown`` of the press's first key to the first DOM change after
which the next item is there.  For Potato that is its ``#instance_id`` changed, with the item's text in
``#instance-text`` and ``#main-content`` shown (Potato hides it while it loads an item); its page is
reloaded within the press, so the probe keeps its stamps in ``sessionStorage`` on the one clock
``performance.timeOrigin + performance.now()``.  A Potato page is settled when it is loaded, an item is
shown and the DOM has been quiet for 300 ms.  ``ratio`` is DST Judge / Potato of p50 and p95;
``p95_over_p50`` is each tool's p95 / p50.  ``--json``::

    {"dst_judge": {"1000": {...as above...}}, "potato": {"1000": {...}}, "ratio": {"1000": {"p50", "p95"}},
     "p95_over_p50": {"1000": {"dst_judge", "potato"}}, "potato_version": "2.12.1", "setup": {...}}

Percentiles are nearest-rank (as ``bench_next_item``).  Making a 20,000-item study takes about 30 s
per tree on a quiet machine (2 minutes on a loaded one); the two trees make theirs at the same time.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from contextlib import ExitStack
from pathlib import Path

from bench import potato_peer
from formats.settings import settings

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = settings().chromium
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-dev-shm-usage"]
VIEWPORT = {"width": 1400, "height": 900}
ANNOTATOR, PASSWORD = "rater", "bench-password"
ANSWER = "Satisfied (1)"  # the label of the answer button whose widget key names the item
KEYS = ("1", "0")  # satisfied, not satisfied: alternately
QUIET_MS = 300
WAIT_MS = 30_000

# Installed in every page before the app's own scripts (add_init_script).
PROBE = """(() => {
  if (window.__bench) return;
  const B = window.__bench = {armed: false, from: null, press: null, shown: null, changed: performance.now()};
  B.token = () => {
    const button = [...document.querySelectorAll('button')].find(b => (b.innerText || '').includes(__ANSWER__));
    if (!button) return null;
    const holder = button.closest('[class*="st-key-"]');
    const key = holder && [...holder.classList].find(c => c.startsWith('st-key-'));
    if (key) return key;
    const progress = document.querySelector('[data-testid="stProgress"]');
    return progress ? 'progress:' + progress.innerText : null;
  };
  B.arm = () => { B.from = B.token(); B.press = null; B.shown = null; B.armed = true; return B.from; };
  window.addEventListener('keydown', () => { if (B.armed && B.press === null) B.press = performance.now(); }, true);
  new MutationObserver(changes => {
    const now = performance.now();
    if (changes.some(c => c.attributeName === 'data-test-script-state' || c.attributeName === 'data-stale')) B.changed = now;
    if (!B.armed || B.press === null || B.shown !== null) return;
    const token = B.token();
    if (token !== null && token !== B.from && !document.querySelector('[data-stale="true"]')) {
      B.shown = now;
      B.armed = false;
    }
  }).observe(document, {subtree: true, childList: true, characterData: true, attributes: true,
                        attributeFilter: ['data-test-script-state', 'data-stale', 'class']});
})()""".replace("__ANSWER__", json.dumps(ANSWER))

SETTLED = """quiet => {
  const app = document.querySelector('[data-testid="stApp"]');
  return app && app.getAttribute('data-test-script-state') === 'notRunning'
    && !document.querySelector('[data-stale="true"]') && performance.now() - window.__bench.changed > quiet;
}"""


# --- arguments and the JSON -------------------------------------------------------------------------


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of item counts: {text!r}") from None
    if not sizes or any(n < 1 for n in sizes):
        raise argparse.ArgumentTypeError(f"item counts must be positive: {text!r}")
    return sizes


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text}")
    return value


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_browser", description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=_sizes, help="study sizes, comma-separated (1000,20000; with --against, 1000)")
    parser.add_argument("--judgements", type=_positive, default=60, help="key presses timed per study (60)")
    parser.add_argument("--warmup", type=int, default=3, help="key presses first, not timed (3)")
    parser.add_argument("--before", metavar="REF", help="also the code at this git ref, side by side (e.g. 32ad90d)")
    parser.add_argument("--after", metavar="REF", help="measure this git ref instead of the working tree")
    parser.add_argument("--against", choices=["potato"], help="measure DST Judge side by side with this other tool")
    parser.add_argument("--potato-venv", type=Path, default=Path("/tmp/potato-venv"), help="Potato's venv (/tmp/potato-venv)")
    parser.add_argument("--json", action="store_true", help="print only the JSON")
    args = parser.parse_args(argv)
    if args.warmup < 0:
        parser.error("--warmup must be 0 or more")
    if args.against and args.before:
        parser.error("--against and --before do not go together")
    if args.items is None:
        args.items = [1000] if args.against else [1000, 20000]
    too_small = [n for n in args.items if n < args.warmup + args.judgements]
    if too_small:
        parser.error(f"a study of {too_small[0]} items is smaller than --warmup + --judgements ({args.warmup + args.judgements})")
    return args


def percentile(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q / 100 * (len(values) - 1))))]


def summary(items: int, shown_ms: list[float], wall_ms: list[float]) -> dict:
    """One study size's figures (milliseconds, one decimal)."""
    shown_ms, wall_ms = [float(v) for v in shown_ms], [float(v) for v in wall_ms]  # the page may hand over whole numbers
    return {
        "items": items,
        "judged": len(shown_ms),
        "p50_ms": round(statistics.median(shown_ms), 1),
        "p95_ms": round(percentile(shown_ms, 95), 1),
        "max_ms": round(max(shown_ms), 1),
        "mean_ms": round(statistics.fmean(shown_ms), 1),
        "wall_p50_ms": round(statistics.median(wall_ms), 1),
        "wall_p95_ms": round(percentile(wall_ms, 95), 1),
    }


def ratios(a: dict, b: dict) -> dict:
    """Per study size in both, a / b of p50 and p95."""
    return {size: {q: round(a[size][f"{q}_ms"] / b[size][f"{q}_ms"], 2) for q in ("p50", "p95")} for size in a if size in b}


def report(
    after: dict, before: dict | None, setup: dict, before_ref: str | None = None, before_commit: str | None = None
) -> dict:
    """The JSON printed: per tree, per study size (keys are the sizes as text); ratio = after / before."""
    ratio = ratios(after, before) if before is not None else None
    return {
        "after": after,
        "before": before,
        "ratio": ratio,
        "before_ref": before_ref,
        "before_commit": before_commit,
        "setup": setup,
    }


def text(result: dict) -> str:
    lines = [
        f"key press -> next item's content in the DOM, Chromium {result['setup']['viewport']}, "
        f"{result['setup']['judgements']} presses per study after {result['setup']['warmup']} not timed"
    ]
    after = result["setup"].get("after", "the working tree")
    trees = [("after", "this tree" if after == "the working tree" else f"after ({after})")]
    if result["before"] is not None:
        trees.append(("before", f"before ({result['before_ref']})"))
    for size in result["after"]:
        for name, label in trees:
            row = result[name][size]
            lines.append(
                f"  {row['items']:>6} items  {label:<22} p50 {row['p50_ms']:7.1f} ms  p95 {row['p95_ms']:7.1f} ms  "
                f"max {row['max_ms']:7.1f} ms  mean {row['mean_ms']:7.1f} ms  ({row['judged']} judged)"
            )
        if result["ratio"] and size in result["ratio"]:
            r = result["ratio"][size]
            lines.append(f"  {'':>6}        after / before          p50 x{r['p50']:.2f}   p95 x{r['p95']:.2f}")
    return "\n".join(lines)


def report_against(judge: dict, potato: dict, setup: dict, potato_version: str) -> dict:
    """The JSON printed with ``--against potato``: per tool, per study size; ratio = DST Judge / Potato."""
    tools = {"dst_judge": judge, "potato": potato}
    spread = {
        size: {name: round(rows[size]["p95_ms"] / rows[size]["p50_ms"], 2) for name, rows in tools.items()}
        for size in judge
        if size in potato
    }
    return {
        "dst_judge": judge,
        "potato": potato,
        "ratio": ratios(judge, potato),
        "p95_over_p50": spread,
        "potato_version": potato_version,
        "setup": setup,
    }


def text_against(result: dict) -> str:
    setup = result["setup"]
    lines = [
        f"key press -> next item's content in the DOM, Chromium {setup['viewport']}, "
        f"{setup['judgements']} presses per study and tool after {setup['warmup']} not timed",
        f"  a press: DST Judge {setup['press']['dst_judge']}; Potato {setup['press']['potato']}",
    ]
    judge = "DST Judge" if setup["after"] == "the working tree" else f"DST Judge ({setup['after']})"
    tools = [("dst_judge", judge), ("potato", f"Potato {result['potato_version']}")]
    for size in result["dst_judge"]:
        for name, label in tools:
            row = result[name][size]
            lines.append(
                f"  {row['items']:>6} items  {label:<22} p50 {row['p50_ms']:7.1f} ms  p95 {row['p95_ms']:7.1f} ms  "
                f"max {row['max_ms']:7.1f} ms  mean {row['mean_ms']:7.1f} ms  ({row['judged']} judged)"
            )
        if size in result["ratio"]:
            r, spread = result["ratio"][size], result["p95_over_p50"][size]
            lines.append(
                f"  {'':>6}        DST Judge / Potato      p50 x{r['p50']:.2f}   p95 x{r['p95']:.2f}   "
                f"p95/p50: DST Judge {spread['dst_judge']:.2f}, Potato {spread['potato']:.2f}"
            )
    return "\n".join(lines)


# --- a tree: its studies and its server ---------------------------------------------------------------


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Tree:
    """A checkout whose code makes the studies and serves them (cwd and PYTHONPATH = the checkout)."""

    def __init__(self, name: str, root: Path, work: Path):
        self.name, self.root, self.work = name, root, work / name
        self.work.mkdir(parents=True)
        self.env = {
            **os.environ,
            "PYTHONPATH": str(root),
            "DST_JUDGE_DEMO": "0",
            "DST_JUDGE_BCRYPT_ROUNDS": "4",
            "DST_JUDGE_PASSWORD": PASSWORD,
            "DST_JUDGE_MAX_JSON_VALUES": str(10**9),  # a 20,000-dialogue corpus is over the upload limit
            "DST_JUDGE_MAX_FILE_MB": str(10**4),
        }

    def database(self, items: int) -> str:
        return f"sqlite:///{self.work / f'study-{items}.sqlite'}"

    def run(self, *args: str) -> None:
        done = subprocess.run(
            [sys.executable, "-m", "annotate", *args], cwd=self.root, env=self.env, capture_output=True, text=True
        )
        if done.returncode:
            raise RuntimeError(f"{self.name}: python -m annotate {' '.join(args)} failed:\n{done.stdout}{done.stderr}")

    def make_studies(self, corpora: dict[int, list[Path]]) -> None:
        for items, files in corpora.items():
            started = time.perf_counter()
            db = self.database(items)
            name = f"bench {items}"
            self.run("--db", db, "study", "create", name, "--kind", "satisfaction", "--overlap", "3", *map(str, files))
            self.run("--db", db, "annotator", "add", ANNOTATOR)
            log(f"{self.name}: a {items}-item study made in {time.perf_counter() - started:.0f} s")

    def serve(self, items: int) -> Server:
        return Server(self, items)

    def annotator(self, browser, server: Server, label: str) -> Annotator:
        return Annotator(browser, server, label)


class Server:
    """A server on a free port: ``python -m annotate serve`` of a tree (the README start command)."""

    health = "/_stcore/health"

    def __init__(self, tree: Tree, items: int):
        self.port = free_port()
        command = [
            sys.executable,
            "-m",
            "annotate",
            "serve",
            "--api-port",
            "0",
            "--server.port",
            str(self.port),
            "--server.headless",
            "true",
        ]
        command += ["--server.fileWatcherType", "none", "--browser.gatherUsageStats", "false"]
        env = {**tree.env, "DST_JUDGE_DB": tree.database(items)}
        self.start(command, tree.root, env, tree.work / f"serve-{items}.log")

    def start(self, command: list[str], cwd: Path, env: dict, log: Path) -> None:
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        self.output = open(log, "wb")  # noqa: SIM115 (closed in stop)
        self.process = subprocess.Popen(command, cwd=cwd, env=env, stdout=self.output, stderr=subprocess.STDOUT)

    def wait_healthy(self, timeout: float = 120) -> None:
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the server exited with {self.process.returncode}:\n{self.tail()}")
            try:
                with urllib.request.urlopen(self.url + self.health, timeout=2) as response:
                    if response.status == 200:
                        return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError(f"the server on port {self.port} did not become healthy:\n{self.tail()}")

    def tail(self) -> str:
        self.output.flush()
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-20:])

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.output.close()


class PotatoServer(Server):
    """``potato start config.yaml -p PORT`` of a Potato project (``bench.potato_peer.write_project``)."""

    health = "/"

    def __init__(self, potato: Path, project: Path):
        self.port = free_port()
        command = [str(potato), "start", "config.yaml", "-p", str(self.port), "--host", "127.0.0.1"]
        env = {**os.environ, "POTATO_GENERATED_TEMPLATES_DIR": str(project / "generated")}  # not into its venv
        self.start(command, project, env, project / "serve.log")


# --- the annotator --------------------------------------------------------------------------------------


class Annotator:
    """One Chromium context (its own cookies) logged in on one server, judging by keyboard."""

    probe, settled = PROBE, SETTLED

    def __init__(self, browser, server: Server, label: str):
        self.server, self.label, self.presses = server, label, 0
        self.context = browser.new_context(viewport=VIEWPORT)
        self.context.add_init_script(self.probe)
        self.page = self.context.new_page()
        self.shown_ms: list[float] = []
        self.wall_ms: list[float] = []

    def log_in(self) -> None:
        try:
            self.enter()
        except Exception as error:
            raise RuntimeError(f"{self.label}: logging in failed; {self.where()}") from error
        self.settle()

    def enter(self) -> None:
        page = self.page
        page.goto(self.server.url)
        page.get_by_label("Name").fill(ANNOTATOR, timeout=WAIT_MS)
        page.get_by_role("textbox", name="Password").fill(PASSWORD)
        page.get_by_role("button", name="Log in").first.click()
        page.get_by_role("button", name=ANSWER).first.wait_for(timeout=WAIT_MS)

    def where(self) -> str:
        """The page's text and the server's log, for an error message."""
        try:
            shown = self.page.locator("body").inner_text(timeout=5_000)[:800]
        except Exception:  # noqa: BLE001 (the page itself may be gone)
            shown = "(unreadable)"
        return f"page: {shown!r}\nserver log:\n{self.server.tail()}"

    def settle(self) -> None:
        self.page.wait_for_function(self.settled, arg=QUIET_MS, timeout=WAIT_MS, polling=50)

    def press(self, key: str) -> None:
        self.page.keyboard.press(key)

    def judge(self, timed: bool) -> None:
        """One key press; its time is kept when ``timed``."""
        page = self.page
        page.evaluate("document.activeElement && document.activeElement.blur()")  # keys go to the page, not an input
        shown_before = page.evaluate("window.__bench.arm()")
        key = KEYS[self.presses % len(KEYS)]
        self.presses += 1
        started = time.perf_counter()
        self.press(key)
        try:
            page.wait_for_function("window.__bench.shown !== null", timeout=WAIT_MS, polling=5)
        except Exception as error:
            raise RuntimeError(
                f"{self.label}: no next item {WAIT_MS / 1000:.0f} s after pressing {key!r} on {shown_before}; {self.where()}"
            ) from error
        wall = 1e3 * (time.perf_counter() - started)
        if timed:
            self.shown_ms.append(page.evaluate("window.__bench.shown - window.__bench.press"))
            self.wall_ms.append(wall)
        self.settle()

    def close(self) -> None:
        self.context.close()


class PotatoAnnotator(Annotator):
    """On Potato: its open login, and a press = the option's key, then Potato's Next key."""

    probe, settled = potato_peer.PROBE, potato_peer.SETTLED

    def enter(self) -> None:
        page = self.page
        page.goto(self.server.url)
        page.get_by_label("Username").fill(ANNOTATOR, timeout=WAIT_MS)
        page.get_by_role("button", name="Continue").click()
        page.wait_for_function("window.__bench.token() !== null", timeout=WAIT_MS)

    def press(self, key: str) -> None:
        self.page.keyboard.press(key)
        self.page.keyboard.press(potato_peer.NEXT_KEY)


class Potato:
    """Potato in its venv, as a tree: per study size a project of its own and its server."""

    name = "potato"

    def __init__(self, venv: Path, work: Path):
        self.potato, self.work = potato_peer.executable(venv), work / self.name

    def make_studies(self, corpora: dict[int, list[Path]]) -> None:
        for items, (corpus, dialogues) in corpora.items():
            potato_peer.write_project(self.work / f"project-{items}", corpus, dialogues)

    def serve(self, items: int) -> Server:
        return PotatoServer(self.potato, self.work / f"project-{items}")

    def annotator(self, browser, server: Server, label: str) -> Annotator:
        return PotatoAnnotator(browser, server, label)


def measure(trees: list[Tree | Potato], items: int, judgements: int, warmup: int, browser) -> dict[str, dict]:
    """Both trees' servers at once, presses alternating between them; per tree its summary."""
    with ExitStack() as stack:
        servers = [tree.serve(items) for tree in trees]
        for server in servers:
            stack.callback(server.stop)
        annotators = []
        for tree, server in zip(trees, servers):
            server.wait_healthy()
            annotator = tree.annotator(browser, server, f"{tree.name}, {items} items")
            stack.callback(annotator.close)
            annotator.log_in()
            for _ in range(warmup):
                annotator.judge(timed=False)
            annotators.append(annotator)
        for round_ in range(judgements):
            order = annotators if round_ % 2 == 0 else annotators[::-1]
            for annotator in order:
                annotator.judge(timed=True)
        for annotator in annotators:
            row = summary(items, annotator.shown_ms, annotator.wall_ms)
            log(f"{annotator.label}: p50 {row['p50_ms']} ms, p95 {row['p95_ms']} ms, max {row['max_ms']} ms")
        return {tree.name: summary(items, a.shown_ms, a.wall_ms) for tree, a in zip(trees, annotators)}


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()


def make_corpora(sizes: list[int], folder: Path) -> dict[int, list[Path]]:
    """Per size the corpus file and its dialogue file (``bench.corpus``), shared by both trees."""
    from bench.corpus import build, dialogue_file

    corpora = {}
    for items in sizes:
        path = folder / f"corpus-{items}.json"
        path.write_text(json.dumps(build(items)))
        corpora[items] = [path, dialogue_file(path)]
    return corpora


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    release = None
    if args.against:
        release = potato_peer.executable(args.potato_venv) and potato_peer.version(args.potato_venv)
        if not release:
            print(f"Potato (potato-annotation) is not installed in {args.potato_venv}; see --potato-venv", file=sys.stderr)
            sys.exit(2)
    from playwright.sync_api import sync_playwright

    work = Path(tempfile.mkdtemp(prefix="dst-bench-browser-"))
    setup = {
        "viewport": f"{VIEWPORT['width']}x{VIEWPORT['height']}",
        "judgements": args.judgements,
        "warmup": args.warmup,
        "after": args.after or "the working tree",
        "database": "SQLite, one per tree and study",
        "cpus": os.cpu_count(),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
    }
    worktrees: list[Path] = []
    commits: dict[str, str] = {}

    def checkout(name: str, ref: str) -> Path:
        commits[name] = git("rev-parse", "--verify", f"{ref}^{{commit}}")
        folder = work / f"{name}-tree"
        git("worktree", "add", "--detach", str(folder), commits[name])
        worktrees.append(folder)
        return folder

    try:
        root = checkout("after", args.after) if args.after else ROOT
        trees: list[Tree | Potato] = [Tree("dst_judge" if args.against else "after", root, work)]
        if args.before:
            trees.append(Tree("before", checkout("before", args.before), work))
        if args.against:
            trees.append(Potato(args.potato_venv, work))
            setup["press"] = {
                "dst_judge": f"one key, {' or '.join(map(repr, KEYS))}",
                "potato": f"the option's key, {' or '.join(map(repr, KEYS))}, then {potato_peer.NEXT_KEY!r} (Next)",
            }
        log(f"corpora of {', '.join(map(str, args.items))} dialogues ...")
        corpora = make_corpora(args.items, work)
        errors: list[BaseException] = []

        def make(tree: Tree) -> None:
            try:
                tree.make_studies(corpora)
            except BaseException as error:  # noqa: BLE001 (re-raised below, in the main thread)
                errors.append(error)

        threads = [threading.Thread(target=make, args=(tree,)) for tree in trees]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if errors:
            raise errors[0]
        results: dict[str, dict] = {tree.name: {} for tree in trees}
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            try:
                for items in args.items:
                    for name, row in measure(trees, items, args.judgements, args.warmup, browser).items():
                        results[name][str(items)] = row
            finally:
                browser.close()
        setup["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
        if args.after:
            setup["after_commit"] = commits["after"]
        if args.against:
            result = report_against(results["dst_judge"], results["potato"], setup, release)
        else:
            result = report(results["after"], results.get("before"), setup, args.before, commits.get("before"))
    finally:
        for folder in worktrees:
            subprocess.run(["git", "worktree", "remove", "--force", str(folder)], cwd=ROOT, capture_output=True)
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(result, indent=2) if args.json else (text_against if args.against else text)(result))


if __name__ == "__main__":
    main()
