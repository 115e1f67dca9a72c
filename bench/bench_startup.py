"""Benchmark: start command -> the login form in Chromium, DST Judge against a three-line Streamlit app.

    python -m bench.bench_startup [--runs 3] [--before REF] [--json]

What is timed, from just before the command starts (``time.perf_counter``):

- ``http_200_s``: the first HTTP 200 from the server's ``/_stcore/health`` (polled every 50 ms);
- ``login_s``: the login form's password field visible in headless Chromium at 1400x900 (Playwright's
  sync API driving ``/usr/bin/chromium``, or ``DST_JUDGE_CHROMIUM``): the page is opened as soon as the
  server answers, and the time is taken when ``input[type=password]`` is visible.

Three kinds of start, interleaved so that a change in the machine's load falls on all alike; each round is
``fresh``, ``baseline``, ``restart``, ``baseline``:

- ``fresh``: ``python -m annotate serve --api-port 0 --server.port P --server.headless true`` (the
  README start command; no HTTP API process) on a new SQLite database (``DST_JUDGE_DB=sqlite:///TMP/x.sqlite``):
  the first start makes the database and the demo (one-off work);
- ``restart``: the same command again on the database the round's ``fresh`` start made;
- ``baseline``: ``python -m streamlit run`` of a three-line app (a text input "Name" and a password input
  "Password") from a folder of its own.

With ``--before REF`` (a git ref, e.g. ``HEAD`` to compare uncommitted changes), the code at REF is
extracted with ``git archive`` into a temporary folder (removed at the end; the repository is only read) and
each round also starts its ``serve`` (cwd and ``PYTHONPATH`` = that folder) fresh and on restart, on a
database of its own, right after (or, every other round, right before) this tree's: ``before_fresh``,
``before_restart``.  Code older than the bundled demo data looks for it in ``../shared/fixtures`` beside
itself: that folder gets ``DST_JUDGE_FIXTURES`` = this checkout's ``../shared/fixtures`` (unless set), so
that its fresh start makes the demo too.

Every server gets ``--server.address 127.0.0.1 --server.fileWatcherType none --browser.gatherUsageStats
false``, a free port, and is stopped (and waited for) before the next start.  Chromium is started once,
before the first round; each measurement has a context (cookies) of its own.  The figures are medians over
the rounds (``--runs``, 3 by default); ``ratio`` is DST Judge / baseline of those medians (the target of
issue 36: at most 1.5 on a restart).

``--json`` prints only the JSON (progress goes to stderr)::

    {"fresh": {"http_200_s", "login_s", "samples": [{"http_200_s", "login_s"}, ...]},
     "restart": {...same...}, "baseline": {...same...},
     "ratio": {"fresh": {"http_200", "login"}, "restart": {...}},
     "before": {"fresh": {...}, "restart": {...}, "ratio": {...}, "after_over_before": {...}} | null,
     "setup": {...}}
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
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("DST_JUDGE_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-dev-shm-usage"]
VIEWPORT = {"width": 1400, "height": 900}
TIMEOUT_S = 120
PASSWORD_FIELD = 'input[type="password"]'
BASELINE_APP = 'import streamlit as st\nst.text_input("Name")\nst.text_input("Password", type="password")\n'
SERVER_ARGS = ["--server.address", "127.0.0.1", "--server.fileWatcherType", "none", "--browser.gatherUsageStats", "false"]
KINDS = ("fresh", "restart", "baseline")
SERVES = ("fresh", "restart")


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


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
    parser = argparse.ArgumentParser(prog="python -m bench.bench_startup", description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=_positive, default=3, help="rounds of fresh, baseline, restart, baseline (3)")
    parser.add_argument("--before", metavar="REF", help="also the code at this git ref, side by side (e.g. HEAD)")
    parser.add_argument("--json", action="store_true", help="print only the JSON")
    return parser.parse_args(argv)


def extract(ref: str, folder: Path) -> str:
    """The code at ``ref`` in ``folder`` (``git archive``: the repository is only read); its commit."""
    commit = subprocess.run(
        ["git", "rev-parse", "--verify", f"{ref}^{{commit}}"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    folder.mkdir()
    archive = subprocess.Popen(["git", "archive", commit], cwd=ROOT, stdout=subprocess.PIPE)
    subprocess.run(["tar", "-x", "-C", str(folder)], stdin=archive.stdout, check=True)
    archive.stdout.close()
    if archive.wait():
        raise RuntimeError(f"git archive {ref} failed")
    return commit


# --- one start ------------------------------------------------------------------------------------------


def serve_command(port: int) -> list[str]:
    """The README start command, on ``port``, without the HTTP API."""
    return [sys.executable, "-m", "annotate", "serve", "--api-port", "0", "--server.port", str(port), "--server.headless", "true"]


def baseline_command(app: Path, port: int) -> list[str]:
    return [sys.executable, "-m", "streamlit", "run", str(app), "--server.port", str(port), "--server.headless", "true"]


def start(browser, command: list[str], port: int, cwd: Path, env: dict[str, str], log_path: Path) -> dict:
    """Run ``command`` (a server on ``port``) until the login form is visible; its two times, in seconds."""
    url = f"http://127.0.0.1:{port}"
    with open(log_path, "wb") as output:
        started = time.perf_counter()
        process = subprocess.Popen(command + SERVER_ARGS, cwd=cwd, env=env, stdout=output, stderr=subprocess.STDOUT)
        try:
            http_200 = _wait_http_200(url, process, started, log_path)
            context = browser.new_context(viewport=VIEWPORT)
            try:
                page = context.new_page()
                page.goto(url, wait_until="commit")
                page.locator(PASSWORD_FIELD).first.wait_for(state="visible", timeout=TIMEOUT_S * 1000)
                login = time.perf_counter() - started
            finally:
                context.close()
        finally:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
    return {"http_200_s": round(http_200, 3), "login_s": round(login, 3)}


def _wait_http_200(url: str, process: subprocess.Popen, started: float, log_path: Path) -> float:
    deadline = started + TIMEOUT_S
    while time.perf_counter() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode}:\n{log_path.read_text(errors='replace')[-2000:]}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                if response.status == 200:
                    return time.perf_counter() - started
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"no HTTP 200 from {url} in {TIMEOUT_S} s:\n{log_path.read_text(errors='replace')[-2000:]}")


# --- the rounds and the report --------------------------------------------------------------------------


def summary(samples: list[dict]) -> dict:
    return {
        "http_200_s": round(statistics.median(s["http_200_s"] for s in samples), 3),
        "login_s": round(statistics.median(s["login_s"] for s in samples), 3),
        "samples": samples,
    }


def _ratio(a: dict, b: dict) -> dict:
    return {"http_200": round(a["http_200_s"] / b["http_200_s"], 2), "login": round(a["login_s"] / b["login_s"], 2)}


def report(samples: dict[str, list[dict]], setup: dict) -> dict:
    """The JSON printed: per kind of start its medians and samples; ratio = DST Judge / baseline."""
    result = {kind: summary(samples[kind]) for kind in KINDS}
    base = result["baseline"]
    result["ratio"] = {kind: _ratio(result[kind], base) for kind in SERVES}
    before = None
    if samples.get("before_fresh"):
        before = {kind: summary(samples[f"before_{kind}"]) for kind in SERVES}
        before["ratio"] = {kind: _ratio(before[kind], base) for kind in SERVES}
        before["after_over_before"] = {kind: _ratio(result[kind], before[kind]) for kind in SERVES}
    result["before"] = before
    result["setup"] = setup
    return result


def text(result: dict) -> str:
    setup = result["setup"]
    lines = [
        f"start command -> login form visible, Chromium {setup['viewport']}, medians of {setup['runs']} rounds "
        f"({setup['cpus']} CPUs, load {setup['load_average_at_start'][0]} at start)",
        f"  {'':<54} {'HTTP 200':>10} {'login form':>11}",
    ]
    labels = {
        "fresh": "DST Judge serve, fresh database (+ demo)",
        "restart": "DST Judge serve, restart",
        "baseline": "three-line Streamlit app",
    }
    rows = [(labels[kind], result[kind]) for kind in KINDS]
    ratios = [(f"ratio {kind} / baseline", result["ratio"][kind]) for kind in SERVES]
    if result.get("before"):
        before = result["before"]
        rows += [(f"before: {labels[kind]}", before[kind]) for kind in SERVES]
        ratios += [(f"before: ratio {kind} / baseline", before["ratio"][kind]) for kind in SERVES]
        ratios += [(f"this tree / before, {kind}", before["after_over_before"][kind]) for kind in SERVES]
    for label, row in rows:
        lines.append(f"  {label:<54} {row['http_200_s']:9.2f}s {row['login_s']:10.2f}s")
    for label, r in ratios:
        lines.append(f"  {label:<54} {'x' + format(r['http_200'], '.2f'):>10} {'x' + format(r['login'], '.2f'):>11}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    from playwright.sync_api import sync_playwright

    work = Path(tempfile.mkdtemp(prefix="dst-bench-startup-"))
    setup = {
        "viewport": f"{VIEWPORT['width']}x{VIEWPORT['height']}",
        "runs": args.runs,
        "order": "fresh, baseline, restart, baseline per round (with --before: each serve and its before's, alternately first)",
        "before_ref": args.before,
        "before_commit": None,
        "database": "SQLite, a new file per round (fresh), then the same file (restart)",
        "dst_judge": "python -m annotate serve --api-port 0 --server.port P --server.headless true",
        "baseline": "python -m streamlit run three_line_app.py --server.port P --server.headless true",
        "server_args": " ".join(SERVER_ARGS),
        "cpus": os.cpu_count(),
        "python": sys.version.split()[0],
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
    }
    baseline_dir = work / "baseline"
    baseline_dir.mkdir()
    baseline_app = baseline_dir / "three_line_app.py"
    baseline_app.write_text(BASELINE_APP)
    trees = {"": ROOT} if args.before is None else {"": ROOT, "before_": work / "before-tree"}
    samples: dict[str, list[dict]] = {prefix + kind: [] for prefix in trees for kind in KINDS if prefix == "" or kind in SERVES}
    try:
        if args.before is not None:
            setup["before_commit"] = extract(args.before, trees["before_"])
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            try:
                for round_ in range(args.runs):
                    folder = work / f"round-{round_}"
                    folder.mkdir()
                    envs = {}
                    for prefix, tree in trees.items():
                        envs[prefix] = {**os.environ, "DST_JUDGE_DB": f"sqlite:///{folder / (prefix + 'x.sqlite')}"}
                        if prefix:
                            envs[prefix]["PYTHONPATH"] = str(tree)
                            envs[prefix].setdefault("DST_JUDGE_FIXTURES", str(ROOT.parent / "shared" / "fixtures"))
                    order = list(trees) if round_ % 2 == 0 else list(trees)[::-1]
                    for kind in ("fresh", "baseline", "restart", "baseline"):
                        for prefix in [""] if kind == "baseline" else order:
                            name = prefix + kind
                            port = free_port()
                            if kind == "baseline":
                                command, cwd, run_env = baseline_command(baseline_app, port), baseline_dir, dict(os.environ)
                            else:
                                command, cwd, run_env = serve_command(port), trees[prefix], envs[prefix]
                            log_path = folder / f"{name}-{len(samples[name])}.log"
                            sample = start(browser, command, port, cwd, run_env, log_path)
                            samples[name].append(sample)
                            times = f"HTTP 200 {sample['http_200_s']:6.2f} s, login form {sample['login_s']:6.2f} s"
                            log(f"round {round_ + 1}/{args.runs} {name:<15} {times}")
            finally:
                browser.close()
        setup["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
        result = report(samples, setup)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(result, indent=2) if args.json else text(result))


if __name__ == "__main__":
    main()
