"""Without the shared fixtures, collection still succeeds and every test that needs them fails with
conftest's one clear message (issue 24, item 9): no test module reads the fixtures folder at import
time (a ``next()`` over a glob, a parametrize list built from the folder) or past the ``fixtures``
fixture (a path of its own, ``tests.conftest.FIXTURES`` used directly)."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ElementTree

import pytest

from tests.conftest import REPO

MESSAGE = "shared fixtures not found at {} (set DST_JUDGE_FIXTURES)"

# Modules that once read the fixtures at import time or outside the fixture, one test or more of each
# (SQLite only: the fixture fails before any database is made).
SELECTED = [
    "tests/store/test_hostile_input.py::test_harmless_changes_give_the_same_dialogues",
    "tests/store/test_hostile_input.py::test_mutated_files_are_refused_cleanly",
    "tests/store/test_hostile_input.py::test_random_gold_files_are_refused_cleanly",
    "tests/store/test_security.py::test_sessions_expire_and_are_revoked",
    "tests/store/test_demo_proxy.py::test_the_app_makes_no_demo_behind_a_proxy",
    "tests/store/test_exports.py::test_fga_text_round_trip",
    "tests/unit/test_readers.py::test_trade_predictions",
]


@pytest.mark.slow
def test_missing_fixtures_fail_each_test_with_the_conftest_message(tmp_path):
    nowhere = tmp_path / "nonexistent"
    report = tmp_path / "report.xml"
    env = {**os.environ, "DST_JUDGE_FIXTURES": str(nowhere)}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-n",
            "0",
            "-q",
            "-p",
            "no:randomly",
            "-k",
            "not postgresql",
            f"--junitxml={report}",
            *SELECTED,
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = done.stdout + done.stderr
    assert "error collecting" not in output.lower() and "errors during collection" not in output, output
    assert done.returncode == 1, output  # tests failed (2 would be an interrupted collection)
    cases = ElementTree.parse(report).getroot().iter("testcase")
    outcomes = {
        f"{case.get('classname')}.{case.get('name')}": [e.get("message", "") for e in case if e.tag in ("failure", "error")]
        for case in cases
    }
    assert len(outcomes) >= len(SELECTED), output
    expected = MESSAGE.format(nowhere)
    for name, messages in outcomes.items():
        assert messages and all(expected in m for m in messages), f"{name}: {messages}"
