"""The HTTP API (issue 28) on SQLite and PostgreSQL, as scripts and automatic judges use it: the same
rules as the pages (the item must be the caller's, k is never exceeded, roles are checked on the
server), a retried POST stores one vote, judges on places of their own and kept apart in the analysis."""

from __future__ import annotations

import json
import sys
import threading
from collections import Counter

import pytest
from sqlalchemy import func, select

from annotate import service
from annotate.store.db import read_session
from annotate.store.models import Annotator, Item, VoteEvent
from metrics.analysis import AnalysisSettings
from tests.api_harness import LiveApi, api_study, bearer, client


def _events(engine, name: str | None = None) -> int:
    with read_session(engine) as session:
        query = select(func.count()).select_from(VoteEvent)
        if name is not None:
            query = query.join(Annotator, Annotator.id == VoteEvent.annotator_id).where(Annotator.name == name)
        return session.scalar(query)


def test_next_twice_gives_the_same_item_until_it_is_judged_then_the_next(engine, fixtures):
    study = api_study(engine, fixtures)
    api = client(engine)
    me = bearer(study.annotators[0])
    first = api.get(f"/api/v1/studies/{study.name}/next", headers=me).json()
    again = api.get(f"/api/v1/studies/{study.study_id}/next", headers=me).json()  # by id or by name
    assert first["item"]["id"] == again["item"]["id"]
    assert [q["name"] for q in first["item"]["questions"]] == ["satisfied"]
    assert first["item"]["questions"][0]["answers"] == ["1", "0"]
    assert {"turns", "first_error_turn"} <= set(first["item"]["data"]) and "trade" not in json.dumps(first["item"]["data"])
    stored = api.post(
        f"/api/v1/studies/{study.name}/items/{first['item']['id']}/votes", headers=me, json={"answers": {"satisfied": "0"}}
    )
    assert stored.status_code == 200, stored.text
    assert stored.json()["complete"] is True and stored.json()["progress"]["judged"] == 1
    following = api.get(f"/api/v1/studies/{study.name}/next", headers=me).json()
    assert following["item"]["id"] != first["item"]["id"]
    assert api.get(f"/api/v1/studies/{study.name}/progress", headers=me).json()["judged"] == 1


def test_a_retried_post_with_the_same_key_stores_one_vote(engine, fixtures):
    study = api_study(engine, fixtures)
    api = client(engine)
    me = bearer(study.annotators[0])
    item = api.get(f"/api/v1/studies/{study.name}/next", headers=me).json()["item"]["id"]
    url = f"/api/v1/studies/{study.name}/items/{item}/votes"
    answers = {"answers": {"satisfied": "1"}, "comment": "fine"}
    first = api.post(url, headers={**me, "Idempotency-Key": "vote-1"}, json=answers)
    again = api.post(url, headers={**me, "Idempotency-Key": "vote-1"}, json=answers)
    assert first.status_code == again.status_code == 200
    assert again.json() == {**first.json(), "replayed": True}
    assert _events(engine) == 1
    other = api.post(url, headers={**me, "Idempotency-Key": "vote-1"}, json={"answers": {"satisfied": "0"}})
    assert other.status_code == 422 and other.headers["content-type"].startswith("application/problem+json")
    assert other.json()["type"].endswith("idempotency-key-reused")
    assert _events(engine) == 1  # the reused key changed nothing
    # without a key every POST is a new vote event (a changed answer appends one; the current one counts)
    api.post(url, headers=me, json={"answers": {"satisfied": "0"}})
    assert _events(engine) == 2


def test_the_same_key_posted_from_eight_threads_at_once_stores_one_vote(engine, fixtures):
    study = api_study(engine, fixtures)
    api = client(engine)
    me = bearer(study.annotators[0])
    item = api.get(f"/api/v1/studies/{study.name}/next", headers=me).json()["item"]["id"]
    url = f"/api/v1/studies/{study.name}/items/{item}/votes"
    start, answers = threading.Barrier(8), []

    def post():
        start.wait()
        answers.append(api.post(url, headers={**me, "Idempotency-Key": "same"}, json={"answers": {"satisfied": "1"}}))

    threads = [threading.Thread(target=post) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [r.status_code for r in answers] == [200] * 8, [r.text for r in answers if r.status_code != 200]
    assert Counter(r.json()["replayed"] for r in answers) == {True: 7, False: 1}
    assert _events(engine) == 1


def test_refusals_are_problems_and_change_nothing(engine, fixtures):
    study = api_study(engine, fixtures, overlap=1, annotators=2)
    api = client(engine)
    me, other = bearer(study.annotators[0]), bearer(study.annotators[1])
    mine = api.get(f"/api/v1/studies/{study.name}/next", headers=me).json()["item"]["id"]
    theirs = api.get(f"/api/v1/studies/{study.name}/next", headers=other).json()["item"]["id"]
    cases = [
        (me, f"/api/v1/studies/{study.name}/items/{theirs}/votes", {"answers": {"satisfied": "1"}}, 403),  # not given to me
        (me, f"/api/v1/studies/{study.name}/items/999999/votes", {"answers": {"satisfied": "1"}}, 404),
        (me, f"/api/v1/studies/{study.name}/items/{mine}/votes", {"answers": {"satisfied": "maybe"}}, 422),
        (me, f"/api/v1/studies/{study.name}/items/{mine}/votes", {"answers": {"nonsense": "1"}}, 422),
        (me, f"/api/v1/studies/{study.name}/items/{mine}/votes", {"answers": {}}, 422),
        (me, f"/api/v1/studies/no-such-study/items/{mine}/votes", {"answers": {"satisfied": "1"}}, 404),
        (
            {"Authorization": "Bearer dstj_wrong"},
            f"/api/v1/studies/{study.name}/items/{mine}/votes",
            {"answers": {"satisfied": "1"}},
            401,
        ),
    ]
    for headers, url, payload, status in cases:
        answer = api.post(url, headers=headers, json=payload)
        assert answer.status_code == status, (url, payload, answer.text)
        problem = answer.json()
        assert answer.headers["content-type"].startswith("application/problem+json")
        assert problem["status"] == status and problem["type"].startswith("/api/v1/problems/") and problem["detail"]
    assert _events(engine) == 0
    assert api.get(f"/api/v1/studies/{study.name}/export?format=votes-csv", headers=me).status_code == 403


def test_a_revoked_token_is_refused_at_once(engine, fixtures):
    study = api_study(engine, fixtures)
    api = client(engine)
    me = bearer(study.annotators[0])
    assert api.get("/api/v1/studies", headers=me).status_code == 200
    assert service.revoke_tokens(engine, service.CLI, f"{study.name}-a0") == 1
    refused = api.get("/api/v1/studies", headers=me)
    assert refused.status_code == 401 and refused.headers["www-authenticate"].startswith("Bearer")


def test_an_archived_study_is_closed_to_annotators(engine, fixtures):
    study = api_study(engine, fixtures)
    api = client(engine)
    service.set_archived(engine, service.CLI, study.study_id, True)
    assert api.get("/api/v1/studies", headers=bearer(study.annotators[0])).json() == []
    closed = api.get(f"/api/v1/studies/{study.study_id}/next", headers=bearer(study.annotators[0]))
    assert closed.status_code == 409 and closed.json()["type"].endswith("study-closed"), closed.text
    assert [s["name"] for s in api.get("/api/v1/studies", headers=bearer(study.admin)).json()] == [study.name]


def _judge_every_item(api, study, token, answer) -> list[int]:
    judged = []
    while True:
        item = api.get(f"/api/v1/studies/{study.name}/next", headers=bearer(token)).json()["item"]
        if item is None:
            return judged
        stored = api.post(
            f"/api/v1/studies/{study.name}/items/{item['id']}/votes",
            headers=bearer(token),
            json={"answers": {"satisfied": answer(item)}},
        )
        assert stored.status_code == 200, stored.text
        judged.append(item["id"])


def test_a_judge_labels_every_item_on_places_of_its_own(engine, fixtures):
    """With k = 2 and two humans who judge everything, the judge still gets all 10 items, once each;
    no item gets more than k humans, and the study's progress counts the humans only."""
    study = api_study(engine, fixtures, overlap=2, annotators=3)
    api = client(engine)
    for token in study.annotators[:2]:
        assert len(_judge_every_item(api, study, token, lambda item: "1")) == 10
    # the study is complete for humans: the third annotator gets nothing
    assert api.get(f"/api/v1/studies/{study.name}/next", headers=bearer(study.annotators[2])).json()["item"] is None
    judged = _judge_every_item(api, study, study.judge, lambda item: "0")
    assert len(judged) == len(set(judged)) == 10
    with read_session(engine) as session:
        assert max(session.scalars(select(Item.holders))) == 2
    progress = api.get(f"/api/v1/studies/{study.name}/progress", headers=bearer(study.judge)).json()
    assert progress["judged"] == 10 and progress["study_fraction"] == 1.0
    report = service.study_progress(engine, service.CLI, study.study_id)
    assert report.judgements_done == 20  # the humans' 2 x 10, not the judge's 10
    assert report.annotators["judge-1"].done == 10  # listed with its count all the same
    quality = service.annotator_quality(engine, service.CLI, study.study_id)  # Dawid-Skene over the people only
    assert sorted(q.annotator for q in quality) == [f"{study.name}-a0", f"{study.name}-a1"]
    rows = service.vote_table(engine, service.CLI, study.study_id)
    assert Counter(r["annotator_kind"] for r in rows) == {"account": 20, "judge": 10}


def test_the_analysis_keeps_judges_apart_and_compares_them_with_the_human_majority(engine, fixtures):
    from metrics.judges import judge_report
    from tests.api_harness import client as make_client

    study = api_study(engine, fixtures, overlap=3, annotators=3)
    api = make_client(engine)
    ratings = {}
    for n, token in enumerate(study.annotators):
        # humans: satisfied unless the dialogue has an error turn, one annotator contrary on a few
        _judge_every_item(api, study, token, lambda item, n=n: ratings.setdefault((n, item["key"]), _human(item, n)))
    _judge_every_item(api, study, study.judge, lambda item: "1" if item["data"]["first_error_turn"] is None else "0")
    settings = AnalysisSettings(resamples=200)
    apart = service.study_analysis(engine, service.CLI, study.study_id, settings)
    together = service.study_analysis(engine, service.CLI, study.study_id, AnalysisSettings(resamples=200, include_judges=True))
    humans = service.vote_table(engine, service.CLI, study.study_id)
    assert apart["judges"]["judges"] == ["judge-1"]
    found = apart["judges"]["questions"]["satisfied"]["judges"][0]
    from formats.tidy import votes_from_rows

    table = lambda rows: votes_from_rows((r["item"], r["annotator"], r["question"], r["value"], r["condition"]) for r in rows)  # noqa: E731
    expected = judge_report(
        table([r for r in humans if r["annotator_kind"] != "judge"]),
        table([r for r in humans if r["annotator_kind"] == "judge"]),
        "satisfied",
        resamples=200,
        seed=0,
    )["judges"][0]
    assert found["cohen_kappa"] == pytest.approx(expected["cohen_kappa"]) and found["n"] == 10
    assert apart["agreement"]["questions"]["satisfied"]["n_annotators"] == 3
    assert together["agreement"]["questions"]["satisfied"]["n_annotators"] == 4
    assert any("kept apart" in note for note in apart["agreement"]["notes"])


def _human(item: dict, n: int) -> str:
    satisfied = item["data"]["first_error_turn"] is None
    contrary = n == 2 and item["key"].startswith("P")
    return "1" if satisfied != contrary else "0"


JUDGE = """
import json, sys
item = json.load(sys.stdin)["item"]
turns = item["data"]["turns"]
exact = sum(t["status"] == "exact" for t in turns) / len(turns)  # the share of turns tracked exactly
print(json.dumps({"satisfied": "1" if exact >= 0.8 else "0"}))
"""


@pytest.mark.slow
def test_judge_run_feeds_each_item_to_a_command_and_the_judges_table_shows_its_kappa(db_url, engine, fixtures, tmp_path):
    """``python -m annotate judge-run`` against the API in its own process: a metric-threshold judge
    (satisfied when at least 80% of the turns are tracked exactly) labels every item; the Analysis
    page's judges table (the analysis's ``judges``) then has its κ against the human majority."""
    import subprocess

    study = api_study(engine, fixtures, overlap=3, annotators=3)
    api = client(engine)
    for n, token in enumerate(study.annotators):
        _judge_every_item(api, study, token, lambda item, n=n: _human(item, n))
    script = tmp_path / "judge.py"
    script.write_text(JUDGE)
    with LiveApi(db_url) as live:
        run = subprocess.run(
            [sys.executable, "-m", "annotate", "judge-run", study.name, "--token", study.judge, "--url", live.url]
            + ["--command", f"{sys.executable} {script}"],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert run.returncode == 0, run.stderr
        assert "judged 10 item(s)" in run.stderr
        again = subprocess.run(
            [sys.executable, "-m", "annotate", "judge-run", study.name, "--token", study.judge, "--url", live.url]
            + ["--command", f"{sys.executable} {script}"],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert "judged 0 item(s)" in again.stderr  # nothing twice
    assert _events(engine, "judge-1") == 10
    result = service.study_analysis(engine, service.CLI, study.study_id, AnalysisSettings(resamples=200))
    row = result["judges"]["questions"]["satisfied"]["judges"][0]
    assert row["judge"] == "judge-1" and row["n"] == 10
    assert row["cohen_kappa"] is not None and -1 <= row["cohen_kappa"] <= 1 and row["kappa_ci"] is not None


def test_the_cli_makes_and_revokes_tokens(db_url, engine, fixtures):
    import subprocess

    api_study(engine, fixtures)
    made = subprocess.run(
        [sys.executable, "-m", "annotate", "--db", db_url, "token", "add", "gpt-judge", "--judge", "--label", "gpt"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert made.returncode == 0, made.stderr
    token = made.stdout.strip()
    assert token.startswith("dstj_") and len(token) > 40
    user = service.token_user(engine, token)
    assert user.name == "gpt-judge" and user.kind == "judge"
    with read_session(engine) as session:  # only the hash is kept
        from annotate.store.models import ApiToken

        assert token not in json.dumps([[t.token_hash, t.prefix] for t in session.scalars(select(ApiToken))])
    revoked = subprocess.run(
        [sys.executable, "-m", "annotate", "--db", db_url, "token", "revoke", "gpt-judge"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert revoked.returncode == 0 and "revoked 1 token" in revoked.stdout
    assert service.token_user(engine, token) is None
    unknown = subprocess.run(
        [sys.executable, "-m", "annotate", "--db", db_url, "token", "add", "nobody"], capture_output=True, text=True, timeout=120
    )
    assert unknown.returncode == 2 and "no annotator named 'nobody'" in unknown.stderr


@pytest.mark.parametrize("kind", ["coco", "slu"])
def test_next_gives_each_kind_as_its_page_shows_it(engine, fixtures, kind):
    """The item as data (``Kind.data``): what the page shows, never the condition or what the page
    hides (an SLU turn's label-file transcription); questions with the answers they take."""
    study = api_study(engine, fixtures, kind=kind, name=f"api-{kind}")
    api = client(engine)
    item = api.get(f"/api/v1/studies/{study.name}/next", headers=bearer(study.annotators[0])).json()["item"]
    questions = {q["name"]: q for q in item["questions"]}
    if kind == "coco":
        assert set(item["data"]) == {"dialogue_id", "turn_index", "history", "system", "user", "turn_label"}
        assert questions["human_like"]["answers"] == questions["correct"]["answers"] == ["1", "0"]
    else:
        assert "transcription" not in item["data"] and {"asr", "acts", "transcription_start"} <= set(item["data"])
        assert questions["transcription"]["answers"] is None and questions["transcription"]["required"] is False
        assert "transcribed" in questions["transcription_status"]["answers"]
        assert [a["name"] for a in item["data"]["acts"]] == [
            q for q in questions if q not in ("transcription", "transcription_status")
        ]
    answers = {name: (q["answers"][0] if q["answers"] else "hello") for name, q in questions.items()}
    stored = api.post(
        f"/api/v1/studies/{study.name}/items/{item['id']}/votes", headers=bearer(study.annotators[0]), json={"answers": answers}
    )
    assert stored.status_code == 200 and stored.json()["complete"] is True, stored.text


# --- the review's findings (each failed before its fix) -------------------------------------------


def test_a_votes_import_refuses_a_judges_name_and_changes_nothing(engine, fixtures, tmp_path):
    """An imported row under a judge's name would have turned its own place into one of the k."""
    from formats.errors import ReaderError

    study = api_study(engine, fixtures, overlap=2)
    api = client(engine)
    _judge_every_item(api, study, study.judge, lambda item: "1")
    with pytest.raises(ReaderError, match="automatic judge"):
        service.import_votes(
            engine, service.CLI, study.study_id, "votes.csv", "item,annotator,question,value\nMUL0144.json,judge-1,satisfied,0\n"
        )
    with read_session(engine) as session:
        assert max(session.scalars(select(Item.holders))) == 0
    assert service.study_progress(engine, service.CLI, study.study_id).judgements_done == 0


def test_a_judges_vote_never_gives_an_adaptive_study_an_extra_place(engine, fixtures):
    """max_k growth decides from the humans' votes only: one human vote and a judge's on an item of a
    study with k = 2 is not a full, split item."""
    from annotate.store.db import write_session
    from annotate.store.models import Study

    study = api_study(engine, fixtures, overlap=2, annotators=1)
    with write_session(engine) as session:
        row = session.get(Study, study.study_id)
        row.settings = {**(row.settings or {}), "allocation": {"policy": "adaptive", "max_k": 4}}
    api = client(engine)
    item = api.get(f"/api/v1/studies/{study.name}/next", headers=bearer(study.annotators[0])).json()["item"]["id"]
    api.post(
        f"/api/v1/studies/{study.name}/items/{item}/votes",
        headers=bearer(study.annotators[0]),
        json={"answers": {"satisfied": "1"}},
    )
    _judge_every_item(api, study, study.judge, lambda given: "0")
    with read_session(engine) as session:
        assert session.scalar(select(Item.extra_capacity).where(Item.id == item)) == 0


def test_a_judge_has_no_password_so_never_a_page_login(engine, fixtures):
    from annotate.people.auth import AuthError

    api_study(engine, fixtures)
    with pytest.raises((AuthError, service.StudyError), match="judge"):
        service.add_person(engine, service.CLI, "judge-2", "password-judge", kind="judge")
    with pytest.raises((AuthError, service.StudyError), match="judge"):
        service.reset_password(engine, service.CLI, "judge-1", "password-judge")


def test_serve_starts_the_api_without_the_database_url_on_its_command_line():
    """A PostgreSQL password in ``--db`` would be readable by every local user in ``ps``."""
    from annotate.__main__ import api_command

    command = api_command("127.0.0.1", 8600)
    assert "--db" not in command and command[-4:] == ["--host", "127.0.0.1", "--port", "8600"]
