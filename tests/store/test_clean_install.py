"""A stranger's first hour: a copy of the repository with nothing beside it (no ../shared), a new venv,
the README's start command as written; then ``pip install .`` and ``dst-judge serve`` from another folder.

Both starts must come up with the three demo studies made from the sample inside the package, the default
database in the per-user data folder (never inside the package or the current folder), the app served from
the installed copy, and no NLP model stack in the venv.  Slow (a real ``pip install`` of every dependency,
from pip's cache when it has them)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys

import pytest

from tests.browser_harness import free_port, wait_for_health
from tests.conftest import REPO

pytestmark = pytest.mark.slow

DEMO = {"Demo: dialogue satisfaction": 6, "Demo: CoCo turns": 12, "Demo: DSTC2 SLU labels": 18}
NLP_STACK = ("transformers", "torch", "nltk", "tokenizers", "huggingface-hub", "crowd-kit")


def _clean_copy(target) -> None:
    """The files a clone has: tracked ones and new ones not ignored (so uncommitted work is tested too)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO, capture_output=True, check=True
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if not source.exists() and not source.is_symlink():
            continue  # deleted in the work tree
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            os.symlink(os.readlink(source), target / name)
        else:
            shutil.copy2(source, target / name)


def _readme_start_command() -> str:
    """The README's first set-up command, the one that starts the app."""
    readme = (REPO / "README.md").read_text()
    commands = [line.strip() for line in readme.splitlines() if "python3 -m venv .venv" in line and "dst-judge serve" in line]
    assert len(commands) == 1, commands
    return commands[0].strip("`")


def _environment(home) -> dict[str, str]:
    """A user's environment: no DST_JUDGE_* setting, a home of their own, no venv active."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DST_JUDGE_", "VIRTUAL_ENV", "PYTHON"))}
    env.pop("XDG_DATA_HOME", None)
    env["HOME"] = str(home)
    # python3 is this interpreter's base (a pyenv shim would look for its versions under the new home), and
    # pip keeps the real user's cache, so a second run does not download every wheel again.
    env["PATH"] = f"{os.path.dirname(os.path.realpath(sys._base_executable))}:{env.get('PATH', '')}"
    env["PIP_CACHE_DIR"] = os.environ.get("PIP_CACHE_DIR") or os.path.expanduser("~/.cache/pip")
    env["DST_JUDGE_BCRYPT_ROUNDS"] = "4"  # fast hashing; every other setting at its default
    return env


def _serve(command: str, cwd, env, log):
    return subprocess.Popen(
        ["bash", "-c", command], cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )


def _stop(process) -> None:
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=20)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        os.killpg(process.pid, signal.SIGKILL)


def _studies(dst_judge, env, cwd) -> dict[str, int]:
    listed = subprocess.run([str(dst_judge), "study", "list"], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0, listed.stderr
    return {
        fields[0]: int(fields[2].split()[0]) for fields in (line.split("\t") for line in listed.stdout.splitlines()) if fields
    }


def _login_form_shows(url: str) -> None:
    from playwright.sync_api import expect, sync_playwright

    from tests.browser_harness import CHROMIUM, CHROMIUM_ARGS

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.goto(url)
        expect(page.locator("input[type=password]")).to_be_visible(timeout=60_000)
        expect(page.get_by_role("button", name=re.compile("Log in"))).to_be_visible()
        browser.close()


def test_a_bare_clone_demos_itself_and_installs_as_a_package(tmp_path):
    clone = tmp_path / "somewhere" / "dst-judge"  # nothing beside it
    clone.mkdir(parents=True)
    _clean_copy(clone)
    assert not (clone.parent.parent / "shared").exists() and not (clone.parent / "shared").exists()
    home = tmp_path / "home"
    home.mkdir()
    env = _environment(home)

    # 1. The README's command, as written, in the clone (plus a free port and no browser to open).
    port, api_port = free_port(), free_port()
    start = f"{_readme_start_command()} --api-port {api_port} --server.port {port} --server.headless true"
    with open(tmp_path / "first.log", "wb") as log:
        server = _serve(start, clone, env, log)
        try:
            wait_for_health(f"http://127.0.0.1:{port}", "the README's start command", server, timeout=900)
            dst_judge = clone / ".venv" / "bin" / "dst-judge"
            assert _studies(dst_judge, env, tmp_path) == DEMO
            database = home / ".local" / "share" / "dst-judge" / "dst_judge.sqlite"
            assert database.is_file()
            import urllib.request

            with urllib.request.urlopen(f"http://127.0.0.1:{api_port}/api/v1/openapi.json", timeout=30) as answer:
                assert answer.status == 200
        finally:
            _stop(server)
    printed = (tmp_path / "first.log").read_text(errors="replace")
    assert "DST Judge demo created." in printed and "admin / demo-admin-pw / admin" in printed, printed[-3000:]
    assert "No demo data" not in printed

    # 2. pip install . (not editable) and dst-judge from another folder, as another user.
    venv = clone / ".venv"
    installed = subprocess.run(
        [str(venv / "bin" / "pip"), "install", "-q", "--disable-pip-version-check", str(clone)],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert installed.returncode == 0, installed.stderr[-3000:]
    elsewhere, home2 = tmp_path / "elsewhere", tmp_path / "home2"
    elsewhere.mkdir()
    home2.mkdir()
    env2 = _environment(home2)
    config = subprocess.run(
        [str(venv / "bin" / "dst-judge"), "config"], cwd=elsewhere, env=env2, capture_output=True, text=True, timeout=120
    )
    assert config.returncode == 0, config.stderr
    site = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert f"app: {site}/app.py" in config.stdout, config.stdout
    assert f"demo data: {site}/annotate/sample_data" in config.stdout, config.stdout
    port2 = free_port()
    with open(tmp_path / "second.log", "wb") as log:
        server = _serve(
            f"{venv / 'bin' / 'dst-judge'} serve --api-port 0 --server.port {port2} --server.headless true", elsewhere, env2, log
        )
        try:
            wait_for_health(f"http://127.0.0.1:{port2}", "dst-judge serve", server, timeout=300)
            _login_form_shows(f"http://127.0.0.1:{port2}")
            assert _studies(venv / "bin" / "dst-judge", env2, elsewhere) == DEMO
        finally:
            _stop(server)
    assert (home2 / ".local" / "share" / "dst-judge" / "dst_judge.sqlite").is_file()
    assert list(elsewhere.iterdir()) == []  # nothing written in the current folder
    from pathlib import Path

    assert list(Path(site).rglob("*.sqlite*")) == []  # nor inside the installed package

    # 3. No NLP model stack in the venv.
    listed = subprocess.run(
        [str(venv / "bin" / "pip"), "list", "--format=freeze", "--disable-pip-version-check"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.lower()
    names = {line.split("==")[0].replace("_", "-") for line in listed.splitlines()}
    assert not names & set(NLP_STACK), names & set(NLP_STACK)
    assert "dst-judge" in names and sys.version_info >= (3, 10)
