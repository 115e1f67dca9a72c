"""The API's edges (issue 37), on SQLite and PostgreSQL: the token and the size before the body, one
strict rule for study and item references, the text rule on every string, and the document saying so.

The memory test runs the API as its own uvicorn process (``python -m annotate api``) and reads the
process's peak resident size (``VmHWM`` in ``/proc/PID/status``) before and after 32 MB bodies; the
issue measured 124 MB -> 703 MB for one such body with no token, and 2,077 MB for four in parallel.
"""

from __future__ import annotations

import http.client
import json
import re
import threading
import time
from pathlib import Path

import jsonschema
import pytest
from sqlalchemy import func, select

from annotate import service
from annotate.api.limits import MAX_ANSWER, MAX_ANSWERS, MAX_BODY, MAX_COMMENT, MAX_QUESTION, TEXT_PATTERN
from annotate.judging.idempotency import MAX_KEY
from annotate.store.db import read_session
from annotate.store.models import Annotator, Item, Study, VoteEvent
from annotate.studies.crowd import JoinRefused
from formats import ReaderError
from formats.errors import MAX_FIELD_CHARS
from tests.api_harness import LiveApi, api_study, bearer, client

MB = 1 << 20
ATTACK = 32 * MB  # the body
GROWTH = 50 * MB  # the bound on the API process's peak memory over its warmed-up peak
QUICK = 10.0  # seconds one refused 32 MB request may take, upload included (loopback: well under 1 s)


def _events(engine) -> int:
    with read_session(engine) as session:
        return session.scalar(select(func.count()).select_from(VoteEvent))


def _status_kb(pid: int, field: str) -> int:
    text = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(rf"^{field}:\s+(\d+) kB", text, re.M).group(1))


def _post(url: str, path: str, body, headers: dict, *, connection: http.client.HTTPConnection | None = None):
    """(status, problem, seconds, the connection) of one POST; ``body`` bytes (Content-Length) or an
    iterable of chunks (chunked, no Content-Length)."""
    connection = connection or http.client.HTTPConnection(url.removeprefix("http://"), timeout=60)
    started = time.perf_counter()
    connection.request("POST", path, body=body, headers={"Content-Type": "application/json", **headers})
    response = connection.getresponse()
    data = response.read()
    seconds = time.perf_counter() - started
    assert response.getheader("content-type", "").startswith("application/problem+json"), (response.status, data[:200])
    return response.status, json.loads(data), seconds, connection


def _big_vote(size: int) -> bytes:
    """A well-formed vote of ``size`` bytes: its comment fills it."""
    head, tail = b'{"answers": {"satisfied": "1"}, "comment": "', b'"}'
    return head + b"x" * (size - len(head) - len(tail)) + tail


def _chunks(size: int, chunk: int = 256 * 1024):
    data = _big_vote(size)
    for start in range(0, len(data), chunk):
        yield data[start : start + chunk]


# ---- 1. the token, then the size, before the body: a real server process and its peak memory ----


def test_32_mb_bodies_are_refused_by_token_then_size_without_the_memory(db_url, engine, fixtures, capsys):
    study = api_study(engine, fixtures)
    good = bearer(study.annotators[0])
    with LiveApi(db_url) as live:
        pid = live.process.pid
        idle = _status_kb(pid, "VmRSS")
        # warmed up: a claim, a vote and a refused one load everything a vote touches
        connection = http.client.HTTPConnection(live.url.removeprefix("http://"), timeout=60)
        connection.request("GET", f"/api/v1/studies/{study.name}/next", headers=good)
        item = json.loads(connection.getresponse().read())["item"]["id"]
        votes = f"/api/v1/studies/{study.name}/items/{item}/votes"
        connection.request(
            "POST", votes, body=json.dumps({"answers": {"satisfied": "1"}}), headers={**good, "Content-Type": "application/json"}
        )
        assert connection.getresponse().read() and _events(engine) == 1
        _post(live.url, votes, b'{"answers": {"satisfied": "maybe"}}', good, connection=connection)
        warm = _status_kb(pid, "VmHWM")

        seen = {}
        for why, headers, status in [
            ("no token", {}, 401),
            ("a made-up token", bearer("dstj_" + "x" * 43), 401),
            ("a good token", good, 413),
        ]:
            got, problem, seconds, connection = _post(live.url, votes, _big_vote(ATTACK), headers, connection=connection)
            assert got == status and problem["status"] == status, (why, problem)
            assert seconds < QUICK, (why, seconds)
            seen[why] = seconds
            # the body was never read into the process, and the connection still serves (keep-alive)
            port = connection.sock.getsockname()[1] if connection.sock else None
            connection.request("GET", f"/api/v1/studies/{study.name}/progress", headers=good)
            assert connection.getresponse().read() and connection.sock.getsockname()[1] == port, why
        assert problem["type"] == "/api/v1/problems/too-large" and f"{MAX_BODY:,} bytes" in problem["detail"]
        # chunked, with no Content-Length: counted as it streams in, refused past the cap
        got, problem, seconds, _ = _post(live.url, votes, _chunks(ATTACK), good)
        assert got == 413 and seconds < QUICK, (problem, seconds)
        got, problem, _, _ = _post(live.url, votes, _chunks(ATTACK), {})
        assert got == 401, problem
        # four at once with made-up tokens (the issue: 2,077 MB)
        results = []

        def attack(n: int) -> None:
            results.append(_post(live.url, votes, _big_vote(ATTACK), bearer(f"dstj_made-up-{n}"))[0])

        threads = [threading.Thread(target=attack, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert results == [401] * 4
        peak = _status_kb(pid, "VmHWM")
    with capsys.disabled():
        print(
            f"\nAPI process: idle {idle / 1024:.0f} MB, warmed-up peak {warm / 1024:.0f} MB, peak after 9 refused "
            f"32 MB bodies {peak / 1024:.0f} MB (+{(peak - warm) / 1024:.1f} MB); "
            + ", ".join(f"{why} {s * 1000:.0f} ms" for why, s in seen.items())
        )
    assert (peak - warm) * 1024 < GROWTH, f"peak {warm / 1024:.0f} -> {peak / 1024:.0f} MB"
    assert _events(engine) == 1  # nothing of the refused bodies was stored


def test_a_refused_string_keeps_the_keep_alive_connection(db_url, engine, fixtures):
    """An unpaired surrogate in an answer's key was a 500, after which the server dropped the connection."""
    study = api_study(engine, fixtures)
    good = bearer(study.annotators[0])
    with LiveApi(db_url) as live:
        connection = http.client.HTTPConnection(live.url.removeprefix("http://"), timeout=60)
        connection.request("GET", f"/api/v1/studies/{study.name}/next", headers=good)
        item = json.loads(connection.getresponse().read())["item"]["id"]
        port = connection.sock.getsockname()[1]
        votes = f"/api/v1/studies/{study.name}/items/{item}/votes"
        for body in (b'{"answers": {"sat\\ud800": "1"}}', b'{"answers": {"satisfied": "1"}, "comment": "\\udfff"}'):
            status, problem, _, _ = _post(live.url, votes, body, good, connection=connection)
            assert status == 422 and problem["type"] == "/api/v1/problems/invalid-request", problem
            connection.request("GET", f"/api/v1/studies/{study.name}/progress", headers=good)
            response = connection.getresponse()
            assert response.read() and response.status == 200
            assert connection.sock.getsockname()[1] == port  # the same connection
    assert _events(engine) == 0


# ---- 2. one rule for references: ASCII digits are an id, anything else a name ----


def test_study_and_item_references_are_ascii_digits_or_names(engine, fixtures):
    study = api_study(engine, fixtures)
    other = service.create_study_from_files(
        engine, service.CLI, "١", "satisfaction", [fixtures / "fga_human_eval"], overlap=1, sample=3, condition="trade"
    )
    api = client(engine)
    me = bearer(study.annotators[0])
    assert study.study_id == 1
    for ref in ("¹", "²", "①", "②", "١", "٣", "１", "1 ", "+1", "1.0"):
        answer = api.get(f"/api/v1/studies/{ref}/progress", headers=me)
        if ref == "١":  # a name: the study of that name, never study 1
            assert answer.status_code == 200 and answer.json()["items"] == other.items == 3, answer.text
            continue
        assert answer.status_code == 404, (ref, answer.text)  # was 500 (int("¹")) or study 1 ("١")
        assert answer.json()["detail"] == "no such study"
    assert api.get("/api/v1/studies/01/progress", headers=me).json()["items"] == 10  # ASCII digits: an id
    for ref in ("0", "2147483648", "9" * 30):
        assert api.get(f"/api/v1/studies/{ref}/progress", headers=me).status_code == 404, ref
    # an item is an id: ASCII digits and nothing else (pydantic alone took "+1", " 1", "1_0", "1.0")
    item = api.get(f"/api/v1/studies/{study.name}/next", headers=me).json()["item"]["id"]
    for ref in (f"+{item}", f" {item}", f"{item}.0", f"1_{item}", "١", "¹", "①"):
        answer = api.post(f"/api/v1/studies/{study.name}/items/{ref}/votes", headers=me, json={"answers": {"satisfied": "1"}})
        assert answer.status_code == 422 and answer.json()["type"] == "/api/v1/problems/invalid-request", (ref, answer.text)
    assert _events(engine) == 0
    answer = api.post(f"/api/v1/studies/{study.name}/items/0{item}/votes", headers=me, json={"answers": {"satisfied": "1"}})
    assert answer.status_code == 200, answer.text
    # the judge-run command's study, by the same rule
    from annotate.api.client import Api, ClientError, study_of

    listed = [{"id": 1, "name": "7"}, {"id": 7, "name": "seven"}, {"id": 2, "name": "١"}]
    listing = type("Listing", (Api,), {"call": lambda self, method, path: listed})("http://unused", "token")
    assert study_of(listing, "7")["name"] == "seven" and study_of(listing, "١")["id"] == 2
    with pytest.raises(ClientError):
        study_of(listing, "¹")


def test_a_join_link_reads_its_study_by_the_same_rule(engine, fixtures):
    study = api_study(engine, fixtures)
    settings = service.set_crowd(
        engine, service.CLI, study.study_id, enabled=True, quota=2, completion_code="C1", redirect_url=""
    )
    for ref in ("¹", "①", "١", "+1", " 1x"):  # "¹" was a ValueError (int()), "١" joined study 1
        with pytest.raises(JoinRefused):
            service.join_crowd(engine, {"join": ref, "key": settings["secret"], "worker": "w1"})
    with read_session(engine) as session:
        assert session.scalar(select(func.count()).select_from(Annotator).where(Annotator.role == "worker")) == 0


def test_a_coco_key_and_a_device_token_read_numbers_by_the_same_rule(tmp_path):
    from annotate.people.sessions import _device_parts
    from formats.coco_eval import split_key

    assert split_key("PMUL4648.json3", {"PMUL4648.json"}, "eval.json") == ("PMUL4648.json", 3)
    for key in ("PMUL4648.json¹", "PMUL4648.json١"):  # a ValueError, and turn 1
        with pytest.raises(ReaderError, match="does not name a known dialogue and turn"):
            split_key(key, {"PMUL4648.json"}, "eval.json")
    assert _device_parts("¹.abcdefghij.mac") is None  # was a ValueError from int()
    assert _device_parts("12.abcdefghij.mac") == (12, "abcdefghij", "mac")


# ---- 3. every string the API takes: no NUL, no unpaired surrogate, each field's cap ----


def test_nul_surrogates_and_long_fields_are_422_and_change_nothing(engine, fixtures):
    study = api_study(engine, fixtures)
    api = client(engine)
    me = bearer(study.annotators[0])
    item = api.get(f"/api/v1/studies/{study.name}/next", headers=me).json()["item"]["id"]
    votes = f"/api/v1/studies/{study.name}/items/{item}/votes"
    ok = {"satisfied": "1"}
    bodies = {
        "NUL in an answer's key": {"answers": {"satisfied\x00": "1"}},
        "a surrogate in an answer's key": {"answers": {"satisfied\ud800": "1"}},  # was a 500
        "NUL in an answer": {"answers": {"satisfied": "1\x00"}},
        "a surrogate in an answer": {"answers": {"satisfied": "\udc00"}},
        "NUL in the comment": {"answers": ok, "comment": "a\x00b"},
        "a surrogate in the comment": {"answers": ok, "comment": "\ud83d"},
        "a comment over its cap": {"answers": ok, "comment": "x" * (MAX_COMMENT + 1)},
        "an answer over its cap": {"answers": {"satisfied": "1" * (MAX_ANSWER + 1)}},
        "a question name over its cap": {"answers": {"q" * (MAX_QUESTION + 1): "1"}},
        "too many answers": {"answers": {f"q{i}": "1" for i in range(MAX_ANSWERS + 1)}},
    }
    for why, payload in bodies.items():
        answer = api.post(votes, headers={**me, "Content-Type": "application/json"}, content=json.dumps(payload).encode())
        assert answer.status_code == 422, (why, answer.text)
        assert answer.json()["type"] == "/api/v1/problems/invalid-request", (why, answer.json())
        answer.json()["detail"].encode("utf-8")  # a problem a client can read: no surrogate echoed
    others = [
        ("a NUL study reference", "GET", f"/api/v1/studies/{study.name}%00/progress", {}),  # PostgreSQL: was 503
        ("a NUL export format", "GET", f"/api/v1/studies/{study.name}/export?format=votes-csv%00", {}),
        ("a NUL Idempotency-Key", "POST", votes, {"Idempotency-Key": "k\x00"}),
        ("an Idempotency-Key over its cap", "POST", votes, {"Idempotency-Key": "k" * (MAX_KEY + 1)}),
    ]
    for why, method, url, headers in others:
        answer = api.request(method, url, headers={**bearer(study.admin), **headers}, json={"answers": ok})
        assert answer.status_code == 422, (why, answer.text)
        assert answer.json()["type"] == "/api/v1/problems/invalid-request", (why, answer.json())
    # a body over the cap: 413 with a token, 401 without (the token first), either way nothing parsed
    big = json.dumps({"answers": ok, "comment": "x" * MAX_BODY}).encode()
    assert api.post(votes, headers={**me, "Content-Type": "application/json"}, content=big).status_code == 413
    assert api.post(votes, headers={"Content-Type": "application/json"}, content=big).status_code == 401
    assert _events(engine) == 0
    # the largest vote the caps allow fits in the body's cap, and is stored
    answer = api.post(votes, headers=me, json={"answers": ok, "comment": "é" * MAX_COMMENT})
    assert answer.status_code == 200 and _events(engine) == 1, answer.text


def test_the_document_states_the_text_rule_and_the_caps(engine):
    """The OpenAPI document says what is refused (schemathesis ST202: NUL was refused, undocumented)."""
    document = client(engine).get("/api/v1/openapi.json").json()
    post = document["paths"]["/api/v1/studies/{study}/items/{item}/votes"]["post"]
    vote = document["components"]["schemas"][
        post["requestBody"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
    ]
    answers, comment = vote["properties"]["answers"], vote["properties"]["comment"]
    strings = {
        "an answer's key": (answers["propertyNames"], MAX_QUESTION),
        "an answer": (answers["additionalProperties"], MAX_ANSWER),
        "the comment": (comment, MAX_COMMENT),
    }
    described = [answers["description"], comment["description"]]
    for operation in (post, *[p["get"] for p in document["paths"].values() if "get" in p and "parameters" in p.get("get", {})]):
        for parameter in operation.get("parameters", []):
            if parameter["in"] != "path" or parameter["name"] != "item":
                schema = parameter["schema"].get("anyOf", [parameter["schema"]])[0]
                strings[parameter["name"]] = (schema, schema.get("maxLength"))
                described.append(parameter["description"])
    assert {"study", "format", "Idempotency-Key"} <= set(strings)
    for what, (schema, cap) in strings.items():
        # NUL in the pattern, which every regular expression engine reads alike (schemathesis' is Rust's)
        assert schema.get("pattern") == TEXT_PATTERN and schema.get("maxLength") == cap and cap, (what, schema)
        for bad in ("a\x00b", "\x00"):
            with pytest.raises(jsonschema.ValidationError):
                jsonschema.validate(bad, schema)
        jsonschema.validate("Très bien 😀 – ok\n", schema)
    # the unpaired surrogates in words: a JSON Schema string is characters, and they are none
    assert all("no NUL (U+0000) and no unpaired surrogate (U+D800 to U+DFFF)" in text for text in described), described
    assert answers["maxProperties"] == MAX_ANSWERS and "413" in post["responses"]
    item = next(p for p in post["parameters"] if p["name"] == "item")
    assert item["schema"]["type"] == "integer" and "ASCII digits" in item["description"]


# ---- 4. the same caps on the app's uploads: an utterance, a name ----


def _studies(engine) -> int:
    with read_session(engine) as session:
        return session.scalar(select(func.count()).select_from(Study)) + session.scalar(select(func.count()).select_from(Item))


def test_a_50_mb_utterance_is_refused_naming_the_file_and_the_place(engine, fixtures, tmp_path):
    before = _studies(engine)
    source = (fixtures / "fga_human_eval" / "PMUL4648.json.txt").read_text()
    huge = re.sub(r"^Usr : .*$", lambda m: "Usr : " + "x" * (50 * 10**6), source, count=1, flags=re.M)
    line = source[: source.index("Usr : ")].count("\n") + 1
    with pytest.raises(ValueError) as refused:
        service.create_study_from_uploads(engine, service.CLI, "huge", "satisfaction", [("PMUL4648.json.txt", huge.encode())])
    assert str(refused.value).startswith(f"PMUL4648.json.txt:line {line}: a text of 50,000,006 characters")
    assert f"at most {MAX_FIELD_CHARS:,}" in str(refused.value)
    # an utterance over several lines, each short: the utterance is the field
    spread = source.replace("Usr : ", "Usr : " + "\n".join(["y" * 1000] * 25) + "\n", 1)
    with pytest.raises(ValueError, match=r"PMUL4648.json.txt:line \d+: a text of 2\d,\d{3} characters"):
        service.create_study_from_uploads(engine, service.CLI, "spread", "satisfaction", [("PMUL4648.json.txt", spread.encode())])
    # a JSON file: the place is the field's path in the document
    dials = json.loads((fixtures / "coco" / "test_dials.sample.json").read_text())
    dials[0]["dialogue"][1]["transcript"] = "z" * (MAX_FIELD_CHARS + 1)
    files = [
        ("test_dials.sample.json", json.dumps(dials).encode()),
        ("coco_eval.sample.json", (fixtures / "coco" / "coco_eval.sample.json").read_bytes()),
    ]
    with pytest.raises(ValueError) as refused:
        service.create_study_from_uploads(engine, service.CLI, "long-json", "coco", files)
    assert str(refused.value) == (
        f"test_dials.sample.json:[0]['dialogue'][1]['transcript']: a text of {MAX_FIELD_CHARS + 1:,} characters: "
        f"one field holds at most {MAX_FIELD_CHARS:,}"
    )
    assert _studies(engine) == before


def test_names_and_vote_fields_of_uploads_have_their_caps(engine, fixtures):
    with pytest.raises(ValueError, match="a study name has at most 200 characters"):
        service.create_study_from_files(
            engine, service.CLI, "s" * 201, "satisfaction", [fixtures / "fga_human_eval"], condition="trade"
        )
    # an item key and a condition longer than the store keeps (PostgreSQL: a DataError, SQLite: stored)
    source = (fixtures / "fga_human_eval" / "PMUL4648.json.txt").read_text()
    long_id = source.replace("Dialogue ID : PMUL4648.json", "Dialogue ID : " + "d" * 400, 1)
    for text, condition, refusal in [
        (long_id, "trade", "an item key has at most 300 characters"),
        (source, "t" * 101, r"a condition \(system name\) has at most 100 characters"),
    ]:
        with pytest.raises(ValueError, match=refusal):
            service.create_study_from_uploads(
                engine, service.CLI, "long-name", "satisfaction", [("a.json.txt", text.encode())], condition=condition
            )
    assert _studies(engine) == 0
    study = api_study(engine, fixtures)
    with read_session(engine) as session:
        key = session.scalar(select(Item.key).where(Item.study_id == study.study_id).limit(1))
    for row, place in [
        (f"{key},{'n' * 101},satisfied,1,", "an annotator name has at most 100 characters"),
        (f"{key},ann,satisfied,1,{'c' * (MAX_FIELD_CHARS + 1)}", "line 2 column 'comment'"),
    ]:
        with pytest.raises(ValueError, match=place):
            service.import_votes(
                engine, service.CLI, study.study_id, "votes.csv", f"item,annotator,question,value,comment\n{row}\n"
            )
    assert _events(engine) == 0
