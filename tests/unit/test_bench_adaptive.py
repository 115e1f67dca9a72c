"""Issue 17: ``python -m bench.bench_adaptive --json`` keeps its contract (a small, quick run)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.slow  # a subprocess running a small simulation


def test_the_adaptive_bench_prints_its_contract():
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.bench_adaptive",
            "--json",
            "--replicates",
            "4",
            "--resamples",
            "50",
            "--pool",
            "60",
            "--synthetic",
            "140",
            "--budget",
            "90",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    ).stdout
    result = json.loads(out)
    assert result["replicates"] == 4 and result["budget"] == 90 and result["pool"] == 200
    for question in ("fga_vs_jga", "lambda"):
        block = result[question]
        for design in ("uniform", "adaptive"):
            assert {"ci_width", "rmse", "bias", "coverage"} <= set(block[design])
            assert block[design]["ci_width"] > 0 and block[design]["rmse"] >= 0
        assert block["uniform"]["judgements"] == 90
        assert -1.5 < block["saving"] < 1
