"""``python -m metrics score``: the table and the JSON contract, as a real process."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.slow  # each test runs python -m metrics in a subprocess

CORPUS_KEYS = {"turns", "exact_matches", "turn_matches", "jga", "sa", "aga", "rsa", "f1", "fga"}


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "metrics", *args], cwd=REPO, capture_output=True, text=True, timeout=120)


def test_table_on_fga_text(fixtures):
    files = sorted(str(p) for p in (fixtures / "fga_human_eval").glob("*.txt"))
    result = run("score", *files)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == [
        "#Turns",
        "#M1",
        "#M2",
        "JGA",
        "SA",
        "AGA",
        "FGA_0.25",
        "FGA_0.5",
        "FGA_0.75",
        "FGA_1",
        "RSA",
        "F1",
    ]
    assert lines[1].split()[:5] == ["corpus", "75", "27", "57", "36.00"]
    assert lines[-1].startswith("signature: metrics:") and "lambda:0.25,0.5,0.75,1" in lines[-1]


def test_json_contract(fixtures):
    result = run("score", "--json", "--per-dialogue", "--by-domain", "--lambdas", "0.25,1", str(fixtures / "trade_predictions"))
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert set(data) == {"signature", "corpus", "dialogues", "domains"}
    assert set(data["corpus"]) == CORPUS_KEYS
    assert list(data["corpus"]["fga"]) == ["0.25", "1"]
    assert data["corpus"]["turns"] == 45 and data["corpus"]["exact_matches"] == 22
    assert [d["id"] for d in data["dialogues"]][0] == "MUL0003.json"
    assert all(set(d) == CORPUS_KEYS | {"id"} for d in data["dialogues"])
    assert sum(d["turns"] for d in data["dialogues"]) == 45
    assert set(data["domains"]) == {"hotel", "restaurant", "taxi"}
    for row in [data["corpus"], *data["dialogues"], *data["domains"].values()]:
        for key in ("jga", "sa", "aga", "rsa", "f1"):
            assert row[key] is None or 0 <= row[key] <= 1
        assert all(0 <= v <= 1 for v in row["fga"].values())
    # Without the flags the keys stay, empty.
    plain = json.loads(run("score", "--json", str(fixtures / "trade_predictions")).stdout)
    assert plain["dialogues"] == [] and plain["domains"] == {}


def test_range_labels_and_rsa_option(fixtures):
    path = str(fixtures / "fga_result_json" / "som-dst_result.sample.json")
    data = json.loads(run("score", "--json", "--lambdas", "0:2:5", "--rsa", "micro", "--slots", "37", path).stdout)
    assert list(data["corpus"]["fga"]) == ["0", "0.5", "1", "1.5", "2"]
    assert data["corpus"]["fga"]["0"] == pytest.approx(data["corpus"]["jga"])
    assert "rsa:micro" in data["signature"] and "slots:37" in data["signature"]


def test_bad_input_is_one_line(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"x": ')
    result = run("score", str(bad))
    assert result.returncode == 2
    assert result.stderr.strip().startswith("error: ") and str(bad) in result.stderr
    assert "Traceback" not in result.stderr
    result = run("score", "--lambdas", "a,b", str(bad))
    assert result.returncode == 2 and "λ" in result.stderr
