"""Issue 16 (item 4): ``python -m bench.bench_votes --json`` keeps its contract (a small, quick run on
SQLite and the test PostgreSQL server), with nothing lost."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import REPO
from tests.databases import PG_ADMIN_URL, require_pg


def test_the_vote_bench_prints_its_contract():
    require_pg()
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.bench_votes",
            "--json",
            "--writers",
            "6",
            "--votes",
            "6",
            "--items",
            "40",
            "--pg",
            PG_ADMIN_URL,
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    ).stdout
    result = json.loads(out)
    keys = {"p50_ms", "p99_ms", "votes_per_s", "votes_sent", "votes_stored", "lost"}
    for backend in ("sqlite", "postgresql"):
        assert set(result[backend]) == keys, backend
        figures = result[backend]
        assert figures["votes_sent"] == 6 * 6 + 6 * 2  # a vote change after every third judgement
        assert figures["votes_stored"] == figures["votes_sent"] and figures["lost"] == 0
        assert 0 < figures["p50_ms"] <= figures["p99_ms"] and figures["votes_per_s"] > 0
    assert len(result["raw_sqlite_runs"]) == 3 and result["raw_sqlite_tx_per_s"] == max(result["raw_sqlite_runs"])
    assert result["sqlite_of_raw"] == result["sqlite"]["votes_per_s"] / result["raw_sqlite_tx_per_s"]


def test_the_vote_bench_over_http_prints_its_figures_beside_the_in_process_ones():
    """Issue 28: ``bench_votes --http`` runs the same writers as API clients (POST vote + GET next)
    against ``python -m annotate api`` in its own process, nothing lost, with the ratio to in-process."""
    require_pg()
    out = subprocess.run(
        [sys.executable, "-m", "bench.bench_votes", "--json", "--http", "--writers", "4", "--votes", "4", "--items", "30"]
        + ["--pg", PG_ADMIN_URL],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    ).stdout
    result = json.loads(out)
    for backend in ("sqlite", "postgresql"):
        http = result["http"][backend]
        assert http["votes_stored"] == http["votes_sent"] == result[backend]["votes_sent"] and http["lost"] == 0
        assert 0 < http["post_p50_ms"] <= http["p50_ms"] <= http["p99_ms"]
        assert http["of_in_process"] == http["votes_per_s"] / result[backend]["votes_per_s"]
