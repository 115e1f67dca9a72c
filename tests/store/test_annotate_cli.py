"""``python -m annotate`` end to end, as real processes, on both backends."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys

from tests.conftest import REPO


def cli(db_url: str, *args: str, password: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "DST_JUDGE_BCRYPT_ROUNDS": "4"}
    env.pop("DST_JUDGE_PASSWORD", None)
    if password:
        env["DST_JUDGE_PASSWORD"] = password
    return subprocess.run(
        [sys.executable, "-m", "annotate", "--db", db_url, *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )


def ok(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_scripted_study(db_url, fixtures, tmp_path):
    ok(cli(db_url, "init"))
    assert "added admin boss" in ok(cli(db_url, "annotator", "add", "boss", "--admin", password="long-enough-pw"))
    no_password = cli(db_url, "annotator", "add", "nopw")
    assert no_password.returncode == 2 and "DST_JUDGE_PASSWORD" in no_password.stderr
    out = ok(
        cli(
            db_url,
            "study",
            "create",
            "sat",
            "--kind",
            "satisfaction",
            "--overlap",
            "2",
            "--sample",
            "5",
            "--seed",
            "3",
            "--guideline",
            str(fixtures / "dst_evaluation_guideline.txt"),
            str(fixtures / "fga_human_eval"),
        )
    )
    assert "with 5 items (overlap 2)" in out
    ok(cli(db_url, "study", "create", "cf", "--kind", "coco", "--condition", "coco-rare", str(fixtures / "coco")))
    ok(cli(db_url, "study", "create", "slu", "--kind", "slu", str(fixtures / "dstc2")))
    listing = ok(cli(db_url, "study", "list")).splitlines()
    assert [line.split("\t")[:2] for line in listing] == [["sat", "satisfaction"], ["cf", "coco"], ["slu", "slu"]]

    items = json.loads(ok(cli(db_url, "study", "items", "cf", "--json")))
    assert items[0] == {"key": "MUL0144.json/1", "condition": "original", "questions": ["human_like", "correct"]}
    slu_items = json.loads(ok(cli(db_url, "study", "items", "slu", "--json")))
    assert slu_items[0]["questions"][-2:] == ["transcription", "transcription_status"]
    sat_keys = [i["key"] for i in json.loads(ok(cli(db_url, "study", "items", "sat", "--json")))]

    votes = tmp_path / "votes.csv"
    votes.write_text(
        "item,annotator,question,value,comment\n"
        + "".join(
            f"{key},{who},satisfied,{(i + j) % 2},\n" for i, key in enumerate(sat_keys) for j, who in enumerate(["ann", "bea"])
        )
    )
    assert "imported 10 votes" in ok(cli(db_url, "votes", "import", "sat", str(votes)))
    status = json.loads(ok(cli(db_url, "status", "sat", "--json")))
    assert status["judgements_done"] == 10 and status["fraction_done"] == 1.0
    assert status["annotators"] == {"ann": {"done": 5, "active": 0}, "bea": {"done": 5, "active": 0}}
    assert "10/10 judgements (100.0%)" in ok(cli(db_url, "status", "sat"))

    exported = list(csv.DictReader(io.StringIO(ok(cli(db_url, "votes", "export", "sat")))))
    assert len(exported) == 10
    # The first eight columns as they always were; crowd workers are told apart by the last three (issue 14).
    assert list(exported[0]) == [
        "item",
        "condition",
        "annotator",
        "question",
        "value",
        "comment",
        "created_at",
        "seconds",
        "annotator_kind",
        "platform",
        "platform_id",
    ]
    assert {row["annotator_kind"] for row in exported} == {"account"}
    assert exported[0]["condition"] == "fga_human_eval"
    out = tmp_path / "votes.jsonl"
    ok(cli(db_url, "votes", "export", "sat", "--format", "jsonl", "--history", "--out", str(out)))
    assert len(out.read_text().splitlines()) == 10

    # A bad import names the line and changes nothing.
    bad = tmp_path / "bad.csv"
    bad.write_text(f"item,annotator,question,value\n{sat_keys[0]},ann,satisfied,1\nNOPE,ann,satisfied,1\n")
    result = cli(db_url, "votes", "import", "sat", str(bad))
    assert result.returncode == 2 and "bad.csv:line 3" in result.stderr and "Traceback" not in result.stderr
    assert json.loads(ok(cli(db_url, "status", "sat", "--json")))["vote_events"] == 10


def test_bad_study_input_is_one_line(db_url, tmp_path):
    broken = tmp_path / "broken.json"
    broken.write_bytes(b"\xff\xfe not json")
    result = cli(db_url, "study", "create", "x", "--kind", "satisfaction", str(broken))
    assert result.returncode == 2
    assert result.stderr.startswith("error: ") and "broken.json:line 1" in result.stderr and "UTF-8" in result.stderr
    assert ok(cli(db_url, "study", "list")) == ""


def test_archive_and_unarchive_say_what_they_did_and_list_shows_it(db_url, fixtures):
    """Issue 24, item 3: ``study unarchive`` says "unarchived" (it said "archived set"); archiving twice
    leaves the study archived and says so; ``study list`` tells archived studies apart."""
    ok(cli(db_url, "init"))
    ok(cli(db_url, "study", "create", "sat", "--kind", "satisfaction", "--overlap", "2", str(fixtures / "fga_human_eval")))
    ok(cli(db_url, "study", "create", "slu", "--kind", "slu", str(fixtures / "dstc2")))
    assert [line.split("\t")[-1] for line in ok(cli(db_url, "study", "list")).splitlines()] == ["open", "open"]
    assert ok(cli(db_url, "study", "archive", "sat")) == "sat: archived (hidden from annotators)\n"
    assert ok(cli(db_url, "study", "archive", "sat")) == "sat: already archived (nothing changed)\n"
    listing = ok(cli(db_url, "study", "list")).splitlines()
    assert [(line.split("\t")[0], line.split("\t")[-1]) for line in listing] == [("sat", "archived"), ("slu", "open")]
    assert ok(cli(db_url, "study", "unarchive", "sat")) == "sat: unarchived (open to annotators again)\n"
    assert ok(cli(db_url, "study", "unarchive", "sat")) == "sat: already open (not archived; nothing changed)\n"
    assert [line.split("\t")[-1] for line in ok(cli(db_url, "study", "list")).splitlines()] == ["open", "open"]
    changes = ok(cli(db_url, "study", "changes", "sat")).splitlines()
    assert [c.split("\t", 2)[2] for c in changes] == ["archived\tFalse -> True", "archived\tTrue -> False"]
