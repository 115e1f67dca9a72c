"""Issue 37, item 5: under overload the API answers 503 with Retry-After within a documented time.

Before: with 200 API clients on SQLite, ``next`` waited a median 27-46 s (in the server's thread pool
and in the writer's line) and nobody was told to come back later.  Now the API works on at most
``DST_JUDGE_API_CONCURRENCY`` requests at once, lets at most ``DST_JUDGE_API_QUEUE`` more wait, each at
most ``DST_JUDGE_API_QUEUE_WAIT`` seconds, and answers the others 503 problem+json with ``Retry-After``
at once (``annotate.api.admission``).  Here the bounds are small (2 at once, 4 in line, 1 s) and 30
clients keep the API busy on SQLite: some get 503 quickly, every vote acknowledged (200) is stored
exactly once, and a retry of a 503'd vote with its Idempotency-Key stores it once.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from sqlalchemy import func, select

from annotate import service
from annotate.store.db import make_engine, read_session, upgrade
from annotate.store.models import Annotator, ApiRequest, VoteEvent
from bench.corpus import build, dialogue_file
from tests.api_harness import LiveApi, bearer

pytestmark = pytest.mark.slow

CLIENTS, SECONDS = 30, 10.0
CONCURRENCY, QUEUE, QUEUE_WAIT = 2, 4, 1.0
SLACK = 4.0  # a loaded 2-core machine


def _client(url: str, study: int, token: str, name: str, deadline: float, log: dict) -> None:
    with httpx.Client(base_url=url, headers=bearer(token), timeout=60) as http:

        def ask(method: str, path: str, **options) -> httpx.Response:
            """The request until it is answered other than 503 (a 503 stored nothing: the same again)."""
            while True:
                start = time.monotonic()
                response = http.request(method, f"/api/v1/studies/{study}{path}", **options)
                seconds = time.monotonic() - start
                with log["lock"]:
                    log["statuses"][response.status_code] += 1
                    if response.status_code == 503:
                        log["busy"].append((seconds, response.headers.get("retry-after"), response.headers["content-type"]))
                if response.status_code != 503:
                    return response
                time.sleep(0.2)  # a brisk client (Retry-After says 2 s)

        n = 0
        while time.monotonic() < deadline:
            found = ask("GET", "/next")
            assert found.status_code == 200, found.text
            item = found.json()["item"]
            if item is None:
                return
            key = f"{name}-{n}"
            n += 1
            voted = ask(
                "POST", f"/items/{item['id']}/votes", json={"answers": {"satisfied": "1"}}, headers={"Idempotency-Key": key}
            )
            assert voted.status_code == 200, voted.text
            with log["lock"]:
                log["acknowledged"].add((name, key))


def test_an_overloaded_api_answers_503_with_retry_after_quickly_and_loses_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("DST_JUDGE_API_CONCURRENCY", str(CONCURRENCY))
    monkeypatch.setenv("DST_JUDGE_API_QUEUE", str(QUEUE))
    monkeypatch.setenv("DST_JUDGE_API_QUEUE_WAIT", str(QUEUE_WAIT))
    url = f"sqlite:///{tmp_path / 'judge.sqlite'}"
    engine = make_engine(url)
    upgrade(engine)
    corpus = tmp_path / "corpus.json"
    corpus.write_text(json.dumps(build(300)))
    study = service.create_study_from_files(
        engine, service.CLI, "overload", "satisfaction", [corpus, dialogue_file(corpus)], overlap=3
    ).id
    names = [f"over-{i:02d}" for i in range(CLIENTS)]
    tokens = []
    for name in names:
        service.add_person(engine, service.CLI, name, None)
        tokens.append(service.add_token(engine, service.CLI, name)[0])
    log = {"lock": threading.Lock(), "statuses": Counter(), "busy": [], "acknowledged": set()}
    with LiveApi(url, log=tmp_path / "api.log") as api:
        deadline = time.monotonic() + SECONDS
        with ThreadPoolExecutor(CLIENTS) as pool:
            list(pool.map(lambda i: _client(api.url, study, tokens[i], names[i], deadline, log), range(CLIENTS)))

    statuses, busy = log["statuses"], log["busy"]
    assert set(statuses) <= {200, 503}, statuses
    assert statuses[503] > 0, f"no request was told to come back later: {statuses}"
    assert all(retry is not None and int(retry) >= 1 for _, retry, _ in busy)
    assert {kind for _, _, kind in busy} == {"application/problem+json"}
    slowest = max(seconds for seconds, _, _ in busy)
    assert slowest < QUEUE_WAIT + SLACK, slowest  # told within the queue's wait, not after the line

    acknowledged = log["acknowledged"]
    with read_session(engine) as session:
        ids = dict(session.execute(select(Annotator.id, Annotator.name)).all())
        keys = {(ids[a], k) for a, k in session.execute(select(ApiRequest.annotator_id, ApiRequest.key))}
        events = session.scalar(select(func.count()).select_from(VoteEvent))
    assert keys == acknowledged  # every acknowledged vote stored, nothing stored that was not acknowledged
    assert events == len(keys)  # each once: a 503 stored nothing, its retry stored it once
    engine.dispose()
    print(
        f"\n{CLIENTS} clients x {SECONDS:.0f} s, {CONCURRENCY} at once + {QUEUE} in line: {len(acknowledged)} votes "
        f"acknowledged and stored, {statuses[503]} 503s of {sum(statuses.values())} answers, the slowest 503 in {slowest:.2f} s"
    )


def test_the_line_gives_up_a_request_after_its_wait_and_refuses_one_past_its_length():
    """The line alone, in front of a slow app: one at a time, one in line for at most 0.3 s."""
    import anyio
    from starlette.testclient import TestClient

    from annotate.api.admission import Admission
    from annotate.store.db import Busy

    async def slow(scope, receive, send):
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        if scope["path"] == "/busy":
            raise Busy("the writer's line is too long")
        await anyio.sleep(2)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"done"})

    app = Admission(slow, concurrency=1, queue=1, wait=0.3, open_paths=("/open",))

    def timed(client, path):
        start = time.monotonic()
        response = client.get(path)
        return response.status_code, time.monotonic() - start, response.headers.get("retry-after")

    with TestClient(app) as client, ThreadPoolExecutor(3) as pool:
        working = pool.submit(timed, client, "/a")
        time.sleep(0.3)
        waiting = pool.submit(timed, client, "/b")
        time.sleep(0.1)
        refused = timed(client, "/c")  # the line (1) is full: at once
        assert refused[0] == 503 and refused[1] < 0.25 + SLACK and refused[2] == "2"
        status, seconds, retry = waiting.result()
        assert status == 503 and 0.3 <= seconds < 0.3 + SLACK and retry == "2"  # gave up after its wait
        assert working.result()[0] == 200
        assert timed(client, "/open")[0] == 200  # skips the line
        assert timed(client, "/busy")[:3:2] == (503, "2")  # the writer's line: busy too
        assert app.active == 0 and not app.line
