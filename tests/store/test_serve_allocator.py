"""``python -m annotate serve`` runs the app with glibc's allocator settings that keep its memory level over
hours (issue 37, the 1-hour soak: ``python -m bench.bench_soak --heap``) and with one BLAS thread
(``python -m bench.bench_blas_threads``), unless the environment sets its own; so does the analysis process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from annotate.analysis.analysis_jobs import NUMERIC_THREADS, _Worker
from tests.browser_harness import free_port
from tests.conftest import REPO


def _environ(pid: int) -> dict[str, str]:
    with open(f"/proc/{pid}/environ", "rb") as f:
        pairs = [item.split(b"=", 1) for item in f.read().split(b"\0") if b"=" in item]
    return {k.decode(): v.decode() for k, v in pairs}


def test_serve_sets_the_allocator_and_keeps_what_the_environment_sets(tmp_path):
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("STREAMLIT_", "MALLOC_")) and k not in NUMERIC_THREADS}
    environ.update({"DST_JUDGE_BCRYPT_ROUNDS": "4", "DST_JUDGE_DEMO": "0", "MALLOC_ARENA_MAX": "4", "MKL_NUM_THREADS": "2"})
    command = [sys.executable, "-m", "annotate", "--db", f"sqlite:///{tmp_path / 'judge.sqlite'}", "serve"]
    command += ["--api-port", "0", "--server.port", str(free_port()), "--server.headless", "true"]
    process = subprocess.Popen(
        command, cwd=REPO, env=environ, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        deadline = time.time() + 60
        while time.time() < deadline:  # until ``serve`` has become ``streamlit run`` (the same process)
            with open(f"/proc/{process.pid}/cmdline", "rb") as f:
                if b"streamlit" in f.read():
                    break
            time.sleep(0.1)
        else:
            raise AssertionError("serve never started the app")
        seen = _environ(process.pid)
        assert seen["MALLOC_MMAP_THRESHOLD_"] == "131072"  # set by serve
        assert seen["MALLOC_ARENA_MAX"] == "4"  # the environment's own, kept
        assert seen["OPENBLAS_NUM_THREADS"] == seen["OMP_NUM_THREADS"] == "1"  # set by serve
        assert seen["MKL_NUM_THREADS"] == "2"  # the environment's own, kept
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)


def test_the_analysis_process_computes_with_one_blas_thread(monkeypatch):
    for name in NUMERIC_THREADS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MKL_NUM_THREADS", "2")
    worker = _Worker()
    try:
        assert worker.call(os.getenv, "OPENBLAS_NUM_THREADS") == worker.call(os.getenv, "OMP_NUM_THREADS") == "1"
        assert worker.call(os.getenv, "MKL_NUM_THREADS") == "2"  # the environment's own, kept
    finally:
        worker.process.stdin.close()
        worker.process.wait(timeout=30)
