"""``python -m annotate serve`` with a port already taken (issue 36): it checks the app's port and the
HTTP API's before it says or starts anything, and stops with one line naming the busy port and the
option that moves it (exit status 2), never announcing an API that is not there."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from annotate.ports import port_free, streamlit_flag
from tests.browser_harness import free_port
from tests.conftest import REPO


@contextmanager
def taken_port(host: str = "127.0.0.1") -> Iterator[int]:
    """A port someone else listens on (as a server already running there would)."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        sock.listen()
        yield sock.getsockname()[1]


def serve(tmp_path, *args: str, **env: str) -> subprocess.CompletedProcess:
    """serve on a fresh SQLite file; should it start the app after all (the bug), stop it after 60 s."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("STREAMLIT_")}
    environ.update({"DST_JUDGE_BCRYPT_ROUNDS": "4", "DST_JUDGE_DEMO": "0", **env})
    for name in ("DST_JUDGE_TRUSTED_PROXIES", "DST_JUDGE_TRUST_PROXY"):
        environ.pop(name, None)
    command = [sys.executable, "-m", "annotate", "--db", f"sqlite:///{tmp_path / 'judge.sqlite'}", "serve", *args]
    process = subprocess.Popen(
        [*command, "--server.headless", "true", "--browser.gatherUsageStats", "false"],
        cwd=REPO,
        env=environ,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGTERM)
        stdout, stderr = process.communicate(timeout=30)
        pytest.fail(f"serve started although a port was taken:\n{stdout}\n{stderr}")
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


def refused_with(done: subprocess.CompletedProcess, line: str) -> None:
    """Exit status 2, that one line on stderr, nothing on stdout (no database line, accounts or API address)."""
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.splitlines() == [line], done.stderr
    assert done.stdout == "", done.stdout
    assert "HTTP API:" not in done.stdout + done.stderr


def test_serve_stops_when_the_api_port_is_taken(tmp_path):
    with taken_port() as busy:
        done = serve(tmp_path, "--api-port", str(busy), "--server.port", str(free_port()))
    refused_with(
        done, f"error: port {busy} is in use (the HTTP API); choose another with --api-port P, or --api-port 0 for no API"
    )


def test_serve_stops_when_the_app_port_is_taken(tmp_path):
    with taken_port() as busy:
        done = serve(tmp_path, "--api-port", str(free_port()), f"--server.port={busy}")
    refused_with(done, f"error: port {busy} is in use (the app); choose another with --server.port P")


def test_the_app_port_may_come_from_streamlit_settings(tmp_path):
    """No --server.port: the port Streamlit itself would take (here STREAMLIT_SERVER_PORT), not 8501 blindly."""
    with taken_port() as busy:
        done = serve(tmp_path, "--api-port", "0", STREAMLIT_SERVER_PORT=str(busy))
    refused_with(done, f"error: port {busy} is in use (the app); choose another with --server.port P")


def test_the_two_ports_must_differ(tmp_path):
    port = free_port()
    done = serve(tmp_path, "--api-port", str(port), "--server.port", str(port))
    refused_with(done, f"error: the app and the HTTP API cannot share port {port}; choose another with --api-port P")


def test_port_free():
    with taken_port() as busy:
        assert not port_free("127.0.0.1", busy)
        assert not port_free("", busy)  # every address includes the loopback one
        assert not port_free("localhost", busy)
    assert port_free("127.0.0.1", busy)
    assert port_free("192.0.2.1", busy)  # not an address of this host: the server says why it cannot listen


def test_streamlit_flag():
    assert streamlit_flag(["--server.port", "8502", "--server.headless", "true"], "server.port") == "8502"
    assert streamlit_flag(["--server.port=8503"], "server.port") == "8503"
    assert streamlit_flag(["--server.port", "1", "--server.port=2"], "server.port") == "2"  # the last one counts
    assert streamlit_flag(["--server.headless", "true"], "server.port") is None
