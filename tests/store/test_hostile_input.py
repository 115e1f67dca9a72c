"""Hostile and broken input for every reader and every upload path.

Real fixture files are truncated, mutated and replaced with random bytes (hypothesis).
Each attempt either imports (the mutation was harmless) or is refused with a
``ValueError`` carrying a message — never another exception type, never a traceback — and
a refused import leaves the database exactly as it was.  Nothing in a file is executed.
"""

from __future__ import annotations

import json
import shutil
from itertools import count
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select

from annotate import service
from annotate.judging.votes import import_votes
from annotate.people.auth import add_annotator
from annotate.store.db import make_engine, read_session, upgrade, write_session
from annotate.store.models import Item, Study, VoteEvent
from annotate.studies import build_items, create_study
from formats import ReaderError, load_dialogues
from formats.tidy import read_votes
from tests.store.test_satisfaction_needs_utterances import dialogue_file_for
from tests.store_helpers import zip_bytes

# (study kind, the file to mutate, the other files the study needs, relative layout); paths are relative to
# the shared fixtures folder, a pattern stands for the first file it matches there (resolved by ``target``
# when a test runs, never at import: without the folder, each test fails with conftest's message).
TARGETS = {
    "fga-text": ("satisfaction", "fga_human_eval/PMUL4648.json.txt", []),
    "fga-json": ("satisfaction", "fga_result_json/som-dst_result.sample.json", ["coco/test_dials.sample.json"]),
    "trade-pred": ("satisfaction", "trade_predictions/*.json", []),
    "trade-dials": ("coco", "coco/test_dials.sample.json", ["coco/coco_eval.sample.json"]),
    "coco-eval": ("coco", "coco/coco_eval.sample.json", ["coco/test_dials.sample.json"]),
    "dstc-log": ("slu", "dstc2/voip-00d76b791d-20130327_010906/log.json", ["dstc2/voip-00d76b791d-20130327_010906/label.json"]),
    "dstc-label": ("slu", "dstc2/voip-00d76b791d-20130327_010906/label.json", ["dstc2/voip-00d76b791d-20130327_010906/log.json"]),
}
NAMES = count()


def target(fixtures: Path, name: str) -> tuple[str, str, list[str]]:
    """``TARGETS[name]`` with a pattern replaced by the first fixture file it matches."""
    kind, relative, companions = TARGETS[name]
    if "*" in relative:
        matches = sorted(p.relative_to(fixtures).as_posix() for p in fixtures.glob(relative))
        assert matches, f"no fixture file matches {relative} in {fixtures}"
        relative = matches[0]
    return kind, relative, companions


@pytest.fixture(scope="module")
def store(tmp_path_factory, fixtures):
    engine = make_engine(f"sqlite:///{tmp_path_factory.mktemp('hostile') / 'store.sqlite'}")
    upgrade(engine)
    with write_session(engine) as session:
        create_study(session, "existing", "satisfaction", [fixtures / "fga_human_eval"], overlap=2)
    return engine


def admin_of(engine):
    """An admin account for the upload paths (made once per store)."""
    from annotate.people.auth import find_annotator

    with write_session(engine) as session:
        admin = find_annotator(session, "fuzz-admin") or add_annotator(session, "fuzz-admin", "fuzz-admin-pw", role="admin")
        session.flush()
        session.expunge(admin)
    return admin


def snapshot(engine) -> tuple[int, int, int]:
    with read_session(engine) as session:
        return tuple(session.scalar(select(func.count()).select_from(t)) for t in (Study, Item, VoteEvent))


def mutations() -> st.SearchStrategy:
    """A function bytes -> bytes: truncate, flip, insert, delete, or replace with random bytes."""
    cut = st.floats(0, 1)
    return st.one_of(
        cut.map(lambda f: ("truncate", f)),
        st.tuples(cut, st.integers(0, 255)).map(lambda t: ("flip", t)),
        st.tuples(cut, st.binary(min_size=1, max_size=40)).map(lambda t: ("insert", t)),
        st.tuples(cut, st.floats(0, 0.3)).map(lambda t: ("delete", t)),
        st.binary(max_size=300).map(lambda b: ("random", b)),
        st.sampled_from([b"", b"\xff\xfe\x00bad", b"[" * 100_000 + b"]" * 100_000, b'{"a": 1', b"null", b"[]", b"{}"]).map(
            lambda b: ("replace", b)
        ),
    )


def apply(data: bytes, mutation) -> bytes:
    kind, arg = mutation
    if kind == "truncate":
        return data[: int(len(data) * arg)]
    if kind == "flip":
        at = min(int(len(data) * arg[0]), len(data) - 1)
        return data[:at] + bytes([arg[1]]) + data[at + 1 :]
    if kind == "insert":
        at = int(len(data) * arg[0])
        return data[:at] + arg[1] + data[at:]
    if kind == "delete":
        at = int(len(data) * arg[0])
        return data[:at] + data[at + int(len(data) * arg[1]) + 1 :]
    return arg


def _stored(engine, name: str) -> list[tuple]:
    with read_session(engine) as session:
        items = session.scalars(select(Item).join(Study).where(Study.name == name).order_by(Item.position))
        return [(i.key, i.condition, list(i.questions), i.payload) for i in items]


def _drafts(kind: str, paths) -> list[tuple]:
    return [(d.key, d.condition, list(d.questions), json.loads(json.dumps(d.payload))) for d in build_items(kind, paths)]


def _same_content(original: bytes, mutated: bytes) -> bool:
    """The mutation changed nothing a reader should see (JSON: the same document; text: the same lines)."""
    try:
        return json.loads(original) == json.loads(mutated)
    except ValueError:
        strip = lambda data: [line.rstrip() for line in data.decode("utf-8").splitlines()]  # noqa: E731
        try:
            return strip(original) == strip(mutated)
        except UnicodeDecodeError:
            return False


def _dialogue_files(tmp_path: Path, fixtures: Path, name: str) -> list[Path]:
    """TRADE predictions need a dialogue file, and the shared fixtures hold none for theirs: one made for them."""
    if name != "trade-pred":
        return []
    return [dialogue_file_for(fixtures / target(fixtures, name)[1], tmp_path / "trade-pred-dials.json")]


def attempt_import(engine, tmp_path: Path, fixtures: Path, name: str, data: bytes) -> bool:
    """The mutated file is refused with a message and nothing stored, or it imports, and then the
    study holds exactly the items the reader makes of those bytes — the same dialogues as the
    original's when the mutation changed nothing a reader should see (whitespace, JSON layout)."""
    kind, relative, companions = target(fixtures, name)
    folder = tmp_path / f"case{next(NAMES)}"
    for other in companions:
        (folder / other).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(fixtures / other, folder / other)
    (folder / relative).parent.mkdir(parents=True, exist_ok=True)
    (folder / relative).write_bytes(data)
    top = folder / relative.split("/")[0]
    paths = [top / Path(relative).name] if kind == "satisfaction" else [top]
    dials = _dialogue_files(tmp_path, fixtures, name)  # predictions without utterances need them (issue 24, item 6)
    paths += [folder / other for other in companions if kind == "satisfaction"] + dials
    before = snapshot(engine)
    study = f"fuzz-{next(NAMES)}"
    try:
        with write_session(engine) as session:
            create_study(session, study, kind, paths, overlap=2)
    except ValueError as refused:  # ReaderError and StudyError are ValueErrors
        assert str(refused).strip(), "a refusal needs a message"
        assert "Traceback" not in str(refused)
        assert snapshot(engine) == before, "a refused import changed the database"
        return False
    finally:
        stored = _stored(engine, study)
        expected = _drafts(kind, paths) if stored else []
        shutil.rmtree(folder, ignore_errors=True)
    assert stored and stored == expected, "the study does not hold exactly what the reader read"
    original = (fixtures / relative).read_bytes()
    if _same_content(original, data):
        original_paths = [fixtures / relative] if kind == "satisfaction" else [fixtures / Path(relative).parent]
        original_paths += [fixtures / other for other in companions if kind == "satisfaction"] + dials
        assert stored == _drafts(kind, original_paths), "a harmless change altered the dialogues"
    return True


@pytest.mark.parametrize("name", sorted(TARGETS))
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(mutation=mutations())
def test_mutated_files_are_refused_cleanly(store, tmp_path, fixtures, name, mutation):
    original = (fixtures / target(fixtures, name)[1]).read_bytes()
    attempt_import(store, tmp_path, fixtures, name, apply(original, mutation))


@pytest.mark.parametrize(
    "name, document",
    [
        ("fga-json", {"D1": {"0": {"gt": ["hotel-area-north"], "pr": {}}}}),  # a state that is a list
        ("fga-json", {"D1": {"0": {"gt": {"hotel": {"area": ["north"]}}, "pr": {}}}}),  # a value that is a list
        ("fga-json", {"D1": {"0": {"gt": {}, "pr": {}}, "2": {"gt": {}, "pr": {}}}}),  # turns that do not line up
        ("fga-json", {"D1": "not a dialogue"}),
        ("trade-pred", {"D1.json": {"0": {"turn_belief": "hotel-area-north", "pred_bs_ptr": []}}}),
        ("dstc-label", {"session-id": "voip-00d76b791d-20130327_010906", "turns": [{"turn-index": 0}]}),  # too few turns
        ("dstc-label", {"session-id": "another-call", "turns": []}),
        ("dstc-log", {"session-id": "voip-00d76b791d-20130327_010906", "turns": [{"output": [], "input": 3}]}),
    ],
)
def test_wrong_types_and_misaligned_turns(store, tmp_path, fixtures, name, document):
    before = snapshot(store)
    kind, relative, companions = target(fixtures, name)
    folder = tmp_path / "case"
    for other in companions:
        (folder / other).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(fixtures / other, folder / other)
    (folder / relative).parent.mkdir(parents=True, exist_ok=True)
    (folder / relative).write_text(json.dumps(document))
    paths = [folder / relative] if kind == "satisfaction" else [folder / relative.split("/")[0]]
    with pytest.raises(ReaderError) as refused:
        with write_session(store) as session:
            create_study(session, "typed", kind, paths)
    assert Path(relative).name in str(refused.value)
    assert snapshot(store) == before


def test_deep_nesting_non_utf8_and_empty(tmp_path):
    cases = {
        "deep.json": b"[" * 100_000 + b"]" * 100_000,
        "deep_object.json": b'{"a":' * 100_000 + b"1" + b"}" * 100_000,
        "latin1.txt": "Dialogue ID : caf\xe9".encode("latin-1"),
        "empty.json": b"",
        "blank.txt": b"   \n\n",
        "nul.json": b"\x00\x00\x00",
    }
    for name, data in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(ReaderError) as refused:
            load_dialogues([path])
        assert str(path) in str(refused.value), name


def test_python_in_a_state_is_never_run(tmp_path):
    marker = tmp_path / "pwned"
    for payload in (f"__import__('os').system('touch {marker}')", f"open('{marker}', 'w')", "(lambda: 1)()", "{'a': print(1)}"):
        path = tmp_path / "evil.txt"
        path.write_text(f"Dialogue ID : X\n---\nTurn: 0\nSys : hi\nUsr : hi\n\nGT  : {payload}\nPR  : {{}}\n\nMatched : False\n")
        with pytest.raises(ReaderError, match="not a Python dict literal"):
            load_dialogues([path])
    assert not marker.exists()


def test_size_cap_on_uploads_and_files(store, tmp_path, monkeypatch):
    monkeypatch.setenv("DST_JUDGE_MAX_FILE_MB", "0.01")
    big = tmp_path / "big.json"
    big.write_text(json.dumps({f"D{i}": {"0": {"gt": {}, "pr": {}}} for i in range(2000)}))
    with pytest.raises(ReaderError, match="MB limit"):
        load_dialogues([big])
    admin = admin_of(store)
    before = snapshot(store)
    with pytest.raises(ValueError, match="MB limit"):
        service.create_study_from_uploads(store, admin, "too-big", "satisfaction", [("big.json", big.read_bytes())])
    assert snapshot(store) == before


# --- the upload path: names, archives, random bytes ----------------------------------------------


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    name=st.text(min_size=0, max_size=40),
    data=st.binary(max_size=400),
    kind=st.sampled_from(["satisfaction", "coco", "slu"]),
    zipped=st.booleans(),
)
def test_random_uploads_are_refused_cleanly(store, name, data, kind, zipped):
    admin = admin_of(store)
    before = snapshot(store)
    assume(not zipped or "\x00" not in name)  # Python's zipfile itself cannot write a NUL name
    files = [(f"{name}.zip", zip_bytes({name or "x": data}))] if zipped else [(name, data)]
    try:
        service.create_study_from_uploads(store, admin, f"upload-{next(NAMES)}", kind, files)
    except ValueError as refused:
        assert str(refused).strip()
        assert snapshot(store) == before
    except OSError as unexpected:  # pragma: no cover - reported with the input that caused it
        pytest.fail(f"upload {files[0][0]!r} raised {unexpected!r}")


@pytest.mark.parametrize(
    "archive, message",
    [
        ({"../../escape.json": b"{}"}, "leaves the archive"),
        ({"/etc/passwd": b"{}"}, "leaves the archive"),
        ({"a/../../b.json": b"{}"}, "leaves the archive"),
    ],
)
def test_archive_paths_cannot_escape(store, archive, message):
    admin = admin_of(store)
    before = snapshot(store)
    with pytest.raises(ValueError, match=message):
        service.create_study_from_uploads(store, admin, "escape", "slu", [("calls.zip", zip_bytes(archive))])
    assert snapshot(store) == before


# --- votes CSV imports --------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=300) | st.text(max_size=300).map(str.encode))
def test_random_vote_files_import_nothing(store, tmp_path, data):
    path = tmp_path / "votes.csv"
    path.write_bytes(b"item,annotator,question,value\n" + data)
    before = snapshot(store)
    try:
        with write_session(store) as session:
            study = session.scalar(select(Study).where(Study.name == "existing"))
            import_votes(session, study, path, data.decode("utf-8", errors="strict"))
    except (ValueError, UnicodeDecodeError) as refused:
        assert str(refused).strip()
        assert snapshot(store) == before
    try:
        read_votes(path)
    except ValueError as refused:
        assert str(path) in str(refused)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=200) | st.text(max_size=200).map(lambda t: ("item,question,value\n" + t).encode()))
def test_random_gold_files_are_refused_cleanly(store, tmp_path, fixtures, data):
    gold = tmp_path / "gold.csv"
    gold.write_bytes(data)
    before = snapshot(store)
    try:
        with write_session(store) as session:
            create_study(session, f"gold-{next(NAMES)}", "satisfaction", [fixtures / "fga_human_eval"], gold_path=gold)
    except ValueError as refused:
        assert str(refused).strip() and str(gold) in str(refused)
        assert snapshot(store) == before


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_harmless_changes_give_the_same_dialogues(store, tmp_path, fixtures, name):
    """Re-indented JSON, or trailing blanks on text lines: the study holds exactly the original's items."""
    original = (fixtures / target(fixtures, name)[1]).read_bytes()
    try:
        harmless = json.dumps(json.loads(original), indent=3).encode()
    except ValueError:
        harmless = b"\n".join(line + b"   " for line in original.splitlines()) + b"\n"
    assert harmless != original and _same_content(original, harmless)
    assert attempt_import(store, tmp_path, fixtures, name, harmless)  # imported, with the same items as the original's
