"""Issue 17: a study's allocation design (annotate.studies.allocation) in the store, on SQLite and PostgreSQL.

The adaptive design draws, before any vote, which dialogues are judged (known probabilities from the
metrics); the others are never offered.  Split dialogues get more votes up to max k; the caps and the
concurrency guarantees of the uniform design stay; a spent budget closes the study; the analysis
reports the design and its weighted estimates."""

from __future__ import annotations

import json
import random
from concurrent.futures import ThreadPoolExecutor

import pytest
from sqlalchemy import func, select

from annotate import service
from annotate.kinds import StudyError
from annotate.people.auth import PermissionDenied, add_annotator
from annotate.store.db import read_session, write_session
from annotate.store.models import Assignment, Item, Study, VoteEvent
from annotate.studies import assignment, create_study
from bench.corpus import build, dialogue_file
from metrics.analysis import AnalysisSettings
from tests.store.test_holders import counters_match


def _study(engine, tmp_path, n=120, overlap=3, annotators=12, name="adaptive"):
    corpus = tmp_path / f"{name}.json"
    corpus.write_text(json.dumps(build(n)))
    with write_session(engine) as session:
        study = create_study(session, name, "satisfaction", [corpus, dialogue_file(corpus)], overlap=overlap)
        admin = add_annotator(session, f"{name}-admin", "pw-admin-123", role="admin")
        people = [add_annotator(session, f"{name}-{i}") for i in range(annotators)]
    return study, admin, people


def _judge_everything(engine, study, people, rng_seed=0):
    """Every annotator judges until nothing is left, all at once; returns how many judgements."""

    def work(index):
        rng, done = random.Random(rng_seed + index), 0
        person = people[index]
        try:
            while (item := service.next_item(engine, person, study.id)) is not None:
                vote = "1" if item.payload["dialogue_id"] < "B0060" else rng.choice("01")  # half the dialogues split
                service.submit(engine, person, item.id, {"satisfied": vote})
                done += 1
        except PermissionDenied:  # the study closed: its budget is spent
            pass
        return done

    with ThreadPoolExecutor(max_workers=len(people)) as pool:
        return sum(pool.map(work, range(len(people))))


def test_the_adaptive_draw_is_the_only_thing_offered_and_caps_hold(engine, tmp_path):
    study, admin, people = _study(engine, tmp_path)
    drawn = service.set_allocation(engine, admin, study.id, policy="adaptive", budget=300, max_k=5)
    assert drawn.items == 120 and 0 < drawn.included < 120 and drawn.expected_dialogues == 60
    done = _judge_everything(engine, study, people)
    with read_session(engine) as session:
        items = session.execute(
            select(Item.id, Item.included, Item.pi, Item.extra_capacity).where(Item.study_id == study.id)
        ).all()
        judged = dict(
            session.execute(
                select(Assignment.item_id, func.count())
                .where(Assignment.study_id == study.id, Assignment.status == "done")
                .group_by(Assignment.item_id)
            ).all()
        )
        values = {}
        rows = session.execute(select(VoteEvent.item_id, VoteEvent.annotator_id, VoteEvent.value).order_by(VoteEvent.id))
        for item_id, annotator_id, value in rows:
            values.setdefault(item_id, {})[annotator_id] = value
    included = {i for i, inc, _, _ in items if inc}
    with read_session(engine) as session:
        closed = session.get(Study, study.id).archived  # the budget ran out (the draw came out large)
    assert set(judged) <= included  # left-out dialogues never offered
    assert closed or set(judged) == included  # every drawn one finished
    assert done <= 300 + len(people)
    assert all(0 < pi <= 1 for _, _, pi, _ in items)
    for item_id, _, _, extra in items:
        if item_id in included:
            if item_id not in judged:
                continue
            assert judged[item_id] <= 5 and judged[item_id] <= 3 + extra  # never past max k, never past capacity
            unanimous = len(set(values[item_id].values())) == 1
            assert closed or unanimous or judged[item_id] == 5, (judged[item_id], values[item_id])  # split: up to max k
            if judged[item_id] > 3:
                assert len(set(list(values[item_id].values())[:3])) > 1  # extra votes only on split dialogues
    assert done == sum(judged.values())
    counters_match(engine, study.id)


def test_the_design_is_fixed_before_the_first_vote_and_only_for_metric_studies(engine, tmp_path, fixtures):
    study, admin, people = _study(engine, tmp_path, n=20, annotators=1)
    with pytest.raises(StudyError, match="needs a budget"):
        service.set_allocation(engine, admin, study.id, policy="adaptive")
    with pytest.raises(StudyError, match="one of"):
        service.set_allocation(engine, admin, study.id, policy="greedy", budget=30)
    item = service.next_item(engine, people[0], study.id)
    service.submit(engine, people[0], item.id, {"satisfied": "1"})
    with pytest.raises(StudyError, match="before the first vote"):
        service.set_allocation(engine, admin, study.id, policy="adaptive", budget=30)
    from tests.store_helpers import make_study

    coco, _ = make_study(engine, fixtures, kind="coco", annotators=0, name="coco")
    with pytest.raises(StudyError, match="satisfaction studies only"):
        service.set_allocation(engine, admin, coco.id, policy="adaptive", budget=30)
    with read_session(engine) as session:
        assert session.get(Study, coco.id).settings.get("allocation") is None  # nothing changed


def test_a_spent_budget_closes_the_study(engine, tmp_path):
    study, admin, people = _study(engine, tmp_path, n=30, annotators=2, name="budget")
    service.set_allocation(engine, admin, study.id, policy="uniform", budget=7)
    done, refused = 0, 0
    for _ in range(20):
        for person in people:
            try:
                item = service.next_item(engine, person, study.id)
            except PermissionDenied:  # closed: annotators no longer see it
                refused += 1
                continue
            if item is not None:
                service.submit(engine, person, item.id, {"satisfied": "1"})
                done += 1
    assert done == 7 and refused > 0
    with read_session(engine) as session:
        assert session.get(Study, study.id).archived
        assert session.scalar(select(func.count()).where(Assignment.study_id == study.id, Assignment.status == "active")) == 0
    assert any(c.what == "archived" and "budget" in c.new for c in service.study_changes(engine, admin, study.id))


def test_the_analysis_of_an_adaptive_study_is_weighted_and_says_so(engine, tmp_path):
    study, admin, people = _study(engine, tmp_path, n=90, annotators=6, name="analysed")
    service.set_allocation(engine, admin, study.id, policy="adaptive", budget=120, target_width=0.01)
    _judge_everything(engine, study, people)
    from annotate.analysis.reports import load_study

    data = load_study(engine, study.id)
    settings = AnalysisSettings(resamples=200, grid=(0.0, 2.0, 21))
    result = data.analyser(settings)
    design = result["design"]
    assert design["design"] == "adaptive" and design["allocation"]["budget"] == 120
    judged = {i.key for i in data.items if i.pi is not None} & {v["item"] for v in data.votes}
    assert design["n_judged"] == len(judged) and design["n_effective"] < design["n_judged"]
    names = {m["metric"] for m in design["metrics"]}
    assert {"jga", "fga_0.5"} <= names and design["lambda"]["lambda_star"] is not None
    pair = next(d for d in design["differences"] if {d["a"], d["b"]} == {"jga", "fga_0.5"})
    assert pair["diff_ci"][0] <= pair["diff"] <= pair["diff_ci"][1] and "p_holm" in pair
    from exports.report import to_markdown

    report = to_markdown(data, result, settings).decode()
    assert "Design: adaptive" in report and "estimates for the pool" in report and "r jga" in report
    status = service.allocation_status(engine, admin, study.id)
    assert status.policy == "adaptive" and status.spent > 0 and status.width > 0.01
    assert status.projected > status.spent  # the target is far: more judgements projected
    with write_session(engine) as session:  # a reachable target closes the study on the next look
        row = assignment.lock_study(session, study.id)
        row.settings = {**row.settings, "allocation": {**row.settings["allocation"], "target_width": 10.0}}
    assert service.allocation_status(engine, admin, study.id).reached
    with read_session(engine) as session:
        assert session.get(Study, study.id).archived


def test_the_design_from_the_command_line(db_url, tmp_path):
    from tests.store.test_annotate_cli import cli, ok

    corpus = tmp_path / "pool.json"
    corpus.write_text(json.dumps(build(40)))
    ok(cli(db_url, "init"))
    ok(cli(db_url, "study", "create", "pool", "--kind", "satisfaction", str(corpus), str(dialogue_file(corpus))))
    refused = cli(db_url, "study", "design", "pool", "--policy", "adaptive")
    assert refused.returncode != 0 and "needs a budget" in refused.stderr
    drawn = json.loads(
        ok(cli(db_url, "study", "design", "pool", "--policy", "adaptive", "--budget", "45", "--target-width", "0.3", "--json"))
    )
    assert drawn["policy"] == "adaptive" and drawn["items"] == 40 and 0 < drawn["included"] < 40
    status = json.loads(ok(cli(db_url, "study", "design", "pool", "--json")))
    assert status["policy"] == "adaptive" and status["budget"] == 45 and status["spent"] == 0 and status["width"] is None
    line = ok(cli(db_url, "study", "design", "pool"))
    assert line.startswith("Design: adaptive, question r(FGA) - r(JGA); 0 of 45 judgements spent; no interval yet")
    assert "allocation" in ok(cli(db_url, "study", "changes", "pool"))
