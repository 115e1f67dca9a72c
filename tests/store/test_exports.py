"""Exports: golden files per format, the DSTC labels and FGA text round trips on the shared
files, spreadsheet safety, the CLI, and the HTML report in headless Chromium.

Golden files live in tests/golden/; ``DST_JUDGE_UPDATE_GOLDEN=1`` rewrites them (then read
the diff before committing).  Vote times differ per run, so ``created_at`` is left out of
the comparison; numbers compare to 1e-9 relative, so a BLAS rounding change is no failure.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import select

from annotate.analysis.reports import load_study
from annotate.judging.votes import cast_votes
from annotate.people.auth import add_annotator
from annotate.store.db import make_engine, upgrade, write_session
from annotate.store.models import Item
from annotate.studies import create_study
from exports.formats import FORMATS, write
from formats import dstc, fga_text
from formats.tidy import read_votes
from metrics.analysis import AnalysisSettings
from tests.conftest import REPO

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
SETTINGS = AnalysisSettings(resamples=200, grid=(0.0, 5.0, 51), folds=3)
HOSTILE = "<img src=x onerror=alert(1)>"


@pytest.fixture(scope="module")
def store(tmp_path_factory, fixtures):
    """One SQLite store with a study of each kind and deterministic votes."""
    url = f"sqlite:///{tmp_path_factory.mktemp('exports') / 'store.sqlite'}"
    engine = make_engine(url)
    upgrade(engine)
    with write_session(engine) as session:
        create_study(session, "sat", "satisfaction", [fixtures / "fga_human_eval"], overlap=3)
        create_study(session, "coco", "coco", [fixtures / "coco"], overlap=2)
        create_study(session, "slu", "slu", [fixtures / "dstc2"], overlap=3)
        people = [add_annotator(session, name) for name in ("ann1", "ann2", "@evil")]
    with write_session(engine) as session:
        people = [session.merge(p) for p in people]
        items = {
            kind: list(session.scalars(select(Item).join(Item.study).where(Item.study.has(name=kind)).order_by(Item.id)))
            for kind in ("sat", "coco", "slu")
        }
        for position, item in enumerate(items["sat"]):
            exact = sum(t["gold"] == t["pred"] for t in item.payload["turns"]) / len(item.payload["turns"])
            for k, person in enumerate(people):
                value = "1" if exact + 0.15 * k > 0.5 else "0"
                comment = {0: '=HYPERLINK("http://x")', 1: "+cmd", 2: "\tTab"}.get(position % 5, "fine")
                cast_votes(session, person, item.id, {"satisfied": value}, comment=comment if k == 0 else "", seconds=3.5)
        for position, item in enumerate(items["coco"]):
            for k, person in enumerate(people[:2]):
                correct = "1" if item.condition == "original" or (position + k) % 3 else "0"
                cast_votes(session, person, item.id, {"human_like": "1" if k == 0 or position % 2 else "0", "correct": correct})
        for position, item in enumerate(items["slu"][:12]):
            for k, person in enumerate(people):
                answers = {act["name"]: "1" if (position + k + i) % 4 else "0" for i, act in enumerate(item.payload["acts"])}
                answers["transcription"] = item.payload["transcription"] if k else f"{item.payload['transcription']} (k{k})"
                answers["transcription_status"] = "transcribed"
                cast_votes(session, person, item.id, answers)
    return engine, fixtures


def _normalise_csv(text: str) -> list[list[str]]:
    rows = list(csv.reader(io.StringIO(text)))
    if rows and "created_at" in rows[0]:
        drop = rows[0].index("created_at")
        rows = [row[:drop] + row[drop + 1 :] for row in rows]
    return rows


def _close(a, b) -> bool:
    try:
        x, y = float(a), float(b)
    except (TypeError, ValueError):
        return a == b
    return x == y or abs(x - y) <= 1e-9 * max(abs(x), abs(y))


def _same_json(a, b) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_json(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same_json(x, y) for x, y in zip(a, b))
    if isinstance(a, float) or isinstance(b, float):
        return _close(a, b)
    return a == b


def check_golden(name: str, content: bytes) -> None:
    path = GOLDEN / name
    text = content.decode()
    if name.endswith(".jsonl"):
        text = "".join(
            json.dumps({k: v for k, v in json.loads(line).items() if k != "created_at"}) + "\n" for line in text.splitlines()
        )
    if name.endswith(".md"):
        text = re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+", "data:image/png;base64,…", text)
    if os.environ.get("DST_JUDGE_UPDATE_GOLDEN") == "1" or not path.exists():
        if os.environ.get("CI") == "true" and not path.exists():
            pytest.fail(f"golden file {path} is missing")
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(text)
    expected = path.read_text()
    if name.endswith(".csv"):
        got, want = _normalise_csv(text), _normalise_csv(expected)
        assert len(got) == len(want) and all(
            len(g) == len(w) and all(_close(x, y) for x, y in zip(g, w)) for g, w in zip(got, want)
        ), f"{name} differs from its golden file"
    elif name.endswith(".json"):
        assert _same_json(json.loads(text), json.loads(expected)), f"{name} differs from its golden file"
    else:
        assert text == expected, f"{name} differs from its golden file"


GOLDEN_CASES = [
    ("sat", "votes-csv", "sat.votes.csv"),
    ("sat", "votes-jsonl", "sat.votes.jsonl"),
    ("sat", "majority-csv", "sat.majority.csv"),
    ("sat", "agreement-csv", "sat.agreement.csv"),
    ("sat", "correlation-csv", "sat.correlation.csv"),
    ("sat", "calibration-json", "sat.calibration.json"),
    ("sat", "report-md", "sat.report.md"),
    ("coco", "majority-csv", "coco.majority.csv"),
    ("coco", "report-md", "coco.report.md"),
    ("slu", "agreement-csv", "slu.agreement.csv"),
]


@pytest.mark.parametrize("study, fmt, golden", GOLDEN_CASES)
def test_golden_files(store, study, fmt, golden):
    engine, _ = store
    ((name, content),) = write(load_study(engine, study), fmt, SETTINGS)
    assert name == FORMATS[fmt].file_name
    check_golden(golden, content)


def test_every_format_is_written_for_its_kinds(store, tmp_path):
    engine, _ = store
    for study in ("sat", "coco", "slu"):
        data = load_study(engine, study, history=True)
        for fmt in FORMATS.values():
            if data.kind not in fmt.kinds:
                with pytest.raises(ValueError, match=f"{fmt.name} is for"):
                    write(data, fmt.name, SETTINGS)
                continue
            files = write(data, fmt.name, SETTINGS, history=True)
            assert files and all(content for _, content in files), (study, fmt.name)


def test_csv_cells_are_neutralised_and_numbers_stay_numbers(store):
    engine, _ = store
    ((_, content),) = write(load_study(engine, "sat"), "votes-csv", SETTINGS)
    rows = list(csv.DictReader(io.StringIO(content.decode())))
    comments = {row["comment"] for row in rows}
    assert '\'=HYPERLINK("http://x")' in comments and "'+cmd" in comments and "'\tTab" in comments
    assert not any(cell.startswith(("=", "+", "-", "@", "\t", "\r")) for row in rows for cell in row.values() if cell)
    assert {row["annotator"] for row in rows} == {"ann1", "ann2", "'@evil"}
    assert {row["seconds"] for row in rows} == {"3.5"}
    # numbers stay numbers, even negative ones
    from exports.tables import csv_bytes

    written = csv_bytes([{"a": -0.5, "b": "-1", "c": "-cmd", "d": "\rx", "e": "@x"}], "abcde").decode()
    assert list(csv.reader(io.StringIO(written)))[1] == ["-0.5", "-1", "'-cmd", "'\rx", "'@x"]
    # our own reader reads the neutralised export back as it was written
    table = read_votes_from_bytes(content)
    assert {v.annotator for v in table.votes} == {"ann1", "ann2", "@evil"}


def read_votes_from_bytes(content: bytes, tmp=Path("/tmp")):
    path = tmp / f"dst-judge-votes-{os.getpid()}.csv"
    path.write_bytes(content)
    try:
        return read_votes(path)
    finally:
        path.unlink()


def test_parquet_holds_the_same_votes(store):
    import pyarrow.parquet as pq

    engine, _ = store
    data = load_study(engine, "sat")
    ((_, parquet),) = write(data, "votes-parquet", SETTINGS)
    table = pq.read_table(io.BytesIO(parquet)).to_pylist()
    assert len(table) == len(data.votes) == 30
    assert [(r["item"], r["annotator"], r["value"], r["seconds"]) for r in table] == [
        (v["item"], v["annotator"], v["value"], v["seconds"]) for v in data.votes
    ]
    assert table[0]["comment"] == '=HYPERLINK("http://x")'  # Parquet is not a spreadsheet: kept as written


# --- round trips on the shared files --------------------------------------------------------


def test_fga_text_round_trip(store, tmp_path):
    engine, fixtures = store
    files = write(load_study(engine, "sat"), "fga-text", SETTINGS)
    originals = sorted((fixtures / "fga_human_eval").glob("*.txt"))
    assert sorted(Path(p).name for p, _ in files) == [p.name for p in originals]
    for relative, content in files:
        original = fixtures / "fga_human_eval" / Path(relative).name
        assert "".join(content.decode().split()) == "".join(original.read_text().split()), relative
        target = tmp_path / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
        (back,), (want,) = fga_text.read(target), fga_text.read(original)
        assert back.turns == want.turns and back.id == want.id
    assert {Path(p).parent.name for p, _ in files} == {"fga_human_eval"}  # the condition is the folder, as on import


LABELS_SCHEMA = {
    "type": "object",
    "required": ["session-id", "turns"],
    "properties": {
        "session-id": {"type": "string"},
        "turns": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["turn-index", "audio-file", "slu-labels"],
                "properties": {
                    "turn-index": {"type": "integer", "minimum": 0},
                    "transcription": {"type": "string"},
                    "transcription-status": {"enum": list(dstc.TRANSCRIPTION_STATUSES)},
                    "audio-file": {"type": "string"},
                    "slu-labels": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["slots", "label"],
                            "properties": {
                                "slots": {"type": "object", "additionalProperties": {"type": "string"}},
                                "label": {"type": ["boolean", "null"]},
                                "source": {"enum": ["human", "auto"]},
                                "act": {"type": "string"},
                            },
                        },
                    },
                },
            },
        },
    },
}


def test_dstc_labels_validate_and_read_back(store, tmp_path):
    import jsonschema

    engine, fixtures = store
    data = load_study(engine, "slu")
    files = write(data, "dstc-labels", SETTINGS)
    calls = sorted(p for p in (fixtures / "dstc2").iterdir() if p.is_dir())
    assert sorted(Path(p).parent.name for p, _ in files) == [c.name for c in calls]
    votes = {(v["item"], v["question"]): [] for v in data.votes}
    for v in data.votes:
        votes[(v["item"], v["question"])].append(v["value"])
    seen_null = seen_auto = seen_unjudged = 0
    for relative, content in files:
        document = json.loads(content)
        jsonschema.validate(document, LABELS_SCHEMA)
        folder = tmp_path / Path(relative).parent
        folder.mkdir(parents=True)
        (folder / "dstc.labels.json").write_bytes(content)
        shutil.copy(fixtures / "dstc2" / folder.name / "log.json", folder / "dstc.log.json")
        session = dstc.read_session(folder)  # the DSTC reader takes our files back
        labels = dstc.read_labels(folder / "dstc.labels.json")
        for turn, label_turn in zip(session.turns, labels["turns"]):
            key = f"{session.session_id}/{turn.index}"
            voted = votes.get((key, "transcription"))
            if voted:
                assert turn.transcription == max(set(voted), key=lambda t: (voted.count(t), voted[::-1].index(t) * -1))
            acts = {a.name: a for a, _ in turn.recognised_acts()}
            for entry in label_turn["slu-labels"]:
                name = f"{entry['act']}({','.join(f'{s}={v}' for s, v in entry['slots'].items())})"
                assert name in acts
                judged = votes.get((key, name), [])
                if judged:
                    yes, no = judged.count("1"), judged.count("0")
                    assert entry["source"] == "human"
                    assert entry["label"] == (None if yes == no else yes > no)
                    seen_null += entry["label"] is None
                else:  # nobody judged it: pre-marked (true, auto), or unlabelled with no source at all
                    seen_auto += entry.get("source") == "auto"
                    assert (entry["label"], entry.get("source", "none")) in ((True, "auto"), (None, "none")), entry
                    seen_unjudged += entry["label"] is None
    assert seen_auto > 0  # unjudged turns keep the label file's exact-match pre-marks
    assert seen_unjudged > 0


def test_dstc_label_ties_are_null():
    from exports.dstc_labels import _label, _most_common

    assert _label(["1", "0"]) is None and _label([]) is None and _label(["1", "1", "0"]) is True
    assert _most_common(["a", "b"]) == "b" and _most_common(["a", "b", "a"]) == "a"


# --- the CLI ---------------------------------------------------------------------------------


def run(*args: str, db: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "exports", *args, "--db", db], cwd=REPO, capture_output=True, text=True, timeout=300
    )


def test_cli_writes_every_format(store, tmp_path):
    engine, _ = store
    db = str(engine.url)
    listing = subprocess.run([sys.executable, "-m", "exports", "--list"], cwd=REPO, capture_output=True, text=True)
    assert all(name in listing.stdout for name in FORMATS)
    for study, fmt in (
        ("sat", "votes-parquet"),
        ("sat", "report-html"),
        ("sat", "fga-text"),
        ("slu", "dstc-labels"),
        ("coco", "agreement-csv"),
    ):
        out = tmp_path / f"{study}-{fmt}"
        result = run(study, "--format", fmt, "--out", str(out), "--bootstrap", "50", "--grid", "0:5:11", db=db)
        assert result.returncode == 0, result.stderr
        assert out.exists() and (out.is_file() or any(out.rglob("*")))
    printed = run("sat", "--format", "votes-csv", db=db)
    assert printed.returncode == 0 and printed.stdout.startswith("item,condition,annotator,question,value")
    history = run("sat", "--format", "votes-csv", "--history", db=db)
    assert history.stdout.count("\n") == printed.stdout.count("\n")  # one event per vote here


def test_cli_errors_write_nothing(store, tmp_path):
    engine, _ = store
    db = str(engine.url)
    out = tmp_path / "labels"
    result = run("sat", "--format", "dstc-labels", "--out", str(out), db=db)
    assert (
        result.returncode == 2 and result.stderr.strip() == "error: dstc-labels is for slu studies; 'sat' is a satisfaction study"
    )
    assert not out.exists()
    result = run("nope", "--format", "votes-csv", db=db)
    assert result.returncode == 2 and "no study named 'nope'" in result.stderr and "Traceback" not in result.stderr
    result = run("slu", "--format", "fga-text", db=db)
    assert result.returncode == 2 and "fga-text is for satisfaction studies" in result.stderr


# --- the HTML report in a real browser -----------------------------------------------------------


@pytest.mark.browser
def test_html_report_in_chromium(store, tmp_path):
    from playwright.sync_api import sync_playwright

    from tests.browser_harness import CHROMIUM, CHROMIUM_ARGS, SCREENSHOTS

    engine, fixtures = store
    with write_session(engine) as session:
        create_study(session, HOSTILE, "satisfaction", [fixtures / "fga_human_eval"], overlap=1)
    data = load_study(engine, "sat")
    data.name = HOSTILE  # the report of a study whose name is hostile, with sat's votes
    ((_, content),) = write(data, "report-html", SETTINGS)
    report = tmp_path / "report.html"
    report.write_bytes(content)
    assert b"<script" not in content and HOSTILE.encode() not in content
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1100, "height": 900})
        dialogs = []
        page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        page.goto(report.as_uri())
        assert page.locator("h1").inner_text() == f"DST Judge report: {HOSTILE}"
        headings = page.locator("h2").all_inner_texts()
        # the answers first (issue 27): the summary with the forest plot and the agreement chart, then the tables
        assert headings[:5] == ["Summary", "Settings", "Progress", "Design", "Agreement"] and "λ calibration for FGA" in headings
        image = page.locator("img")
        assert image.count() == 3 and all(page.evaluate(f"document.images[{i}].naturalWidth") > 500 for i in range(3))
        assert "forest" in (image.first.get_attribute("alt") or "") or "correlation" in (image.first.get_attribute("alt") or "")
        assert page.locator("table").nth(2).locator("td").first.inner_text() == "satisfied"
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / "report-html.png"), full_page=True)
        browser.close()
    assert dialogs == []  # nothing in the report ran


def test_gold_items_give_each_annotator_an_accuracy(store, tmp_path):
    """Attention checks: a study built with a gold file reports each annotator's accuracy on those items."""
    from annotate.analysis.study_data import analyse
    from annotate.people.sessions import log_in

    engine, fixtures = store
    gold = tmp_path / "gold.csv"
    gold.write_text("item,question,value\nPMUL4648.json,satisfied,0\nMUL0144.json,satisfied,1\n")
    with write_session(engine) as session:
        study = create_study(session, "with-gold", "satisfaction", [fixtures / "fga_human_eval"], overlap=2, gold_path=gold)
        study_id = study.id
        admin = add_annotator(session, "gold-admin", "gold-admin-password", role="admin")
        people = [add_annotator(session, f"gold-{n}") for n in ("right", "wrong")]
        items = {i.key: i.id for i in session.scalars(select(Item).where(Item.study_id == study_id))}
        for person, answers in zip(
            people, ({"PMUL4648.json": "0", "MUL0144.json": "1"}, {"PMUL4648.json": "1", "MUL0144.json": "1"})
        ):
            for key, value in answers.items():
                cast_votes(session, person, items[key], {"satisfied": value})
    admin_user, _ = log_in(engine, "gold-admin", "gold-admin-password")
    report = analyse(engine, admin_user, study_id, SETTINGS)["agreement"]["questions"]["satisfied"]
    accuracy = {row["annotator"]: (row["gold_accuracy"], row["n_gold"]) for row in report["annotators"]}
    assert accuracy == {"gold-right": (1.0, 2), "gold-wrong": (0.5, 2)}
    ((_, content),) = write(load_study(engine, "with-gold"), "agreement-csv", SETTINGS)
    assert content.startswith(b"question,n_items")
    assert admin is not None


def test_a_carriage_return_in_a_cell_survives_the_round_trip(tmp_path):
    """A comment that starts with CR is neutralised, quoted (CRLF rows) and read back as written."""
    from exports.tables import votes_csv

    rows = [
        {"item": "d1", "condition": "", "annotator": "a", "question": "satisfied", "value": "1", "comment": "\r=cmd\nnext"},
        {"item": "d2", "condition": "", "annotator": "a", "question": "satisfied", "value": "0", "comment": ""},
    ]
    table = read_votes_from_bytes(votes_csv(rows), tmp_path)
    assert [(v.item, v.value) for v in table.votes] == [("d1", "1"), ("d2", "0")]
    from formats.errors import csv_rows

    (_, first), _ = list(csv_rows("votes.csv", votes_csv(rows).decode(), {"comment"}, ""))
    assert first["comment"] == "'\r=cmd\nnext"


def test_slu_agreement_is_per_act_type(store):
    """Per act string nearly every act would be a question of one item; per act type a few questions
    with many units each (a unit: one act of one turn)."""
    engine, _ = store
    data = load_study(engine, "slu")
    act_strings = {v["question"] for v in data.votes if "(" in v["question"]}
    questions = data.analyser(SETTINGS)["agreement"]["questions"]
    assert set(questions) == {f"act:{q.split('(')[0]}" for q in act_strings} | {"transcription_status"}
    assert len(questions) <= len(act_strings) / 2  # 20 act strings on 12 turns become 9 act types + the status
    assert sum(q["n_items"] for name, q in questions.items() if name.startswith("act:")) == len(
        {(v["item"], v["question"]) for v in data.votes if "(" in v["question"]}
    )
