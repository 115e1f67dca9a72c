"""Issue 29, item 2: the store runs the designer's design, on SQLite and PostgreSQL.

A designed study judges n of its dialogues (drawn at random, π = n / pool each), k_overlap votes on a
random overlap subset of m of them (probability m / n, recorded) and one vote on the others: each
item's ``k`` column, every capacity ``coalesce(k, overlap) + extra``.  The design is fixed before the
first vote; no item ever gets more than its designed k, whatever the concurrency; equal k everywhere
is the uniform study exactly; a designed k is not an extra place (no optional-stopping rule)."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from sqlalchemy import func, select

from annotate import service
from annotate.kinds import StudyError
from annotate.people.auth import add_annotator
from annotate.store.db import read_session, write_session
from annotate.store.models import Assignment, Item, Study
from annotate.studies import create_study, crowd
from bench.corpus import build, dialogue_file
from metrics.design import Design
from tests.store.test_holders import counters_match


def _corpus(tmp_path, n):
    corpus = tmp_path / f"pool{n}.json"
    if not corpus.exists():
        corpus.write_text(json.dumps(build(n)))
    return corpus


def _study(engine, tmp_path, *, n=60, overlap=3, annotators=8, name="designed", seed=0, people=None):
    corpus = _corpus(tmp_path, n)
    with write_session(engine) as session:
        study = create_study(session, name, "satisfaction", [corpus, dialogue_file(corpus)], overlap=overlap, seed=seed)
        admin = add_annotator(session, f"{name}-admin", "pw-admin-123", role="admin")
        if people is None:
            people = [add_annotator(session, f"{name}-{i}") for i in range(annotators)]
    return study, admin, people


def _designed_k(engine, study_id) -> dict[int, tuple[bool, int | None, float | None]]:
    with read_session(engine) as session:
        rows = session.execute(
            select(Item.id, Item.included, Item.k, Item.pi).where(Item.study_id == study_id).order_by(Item.position, Item.id)
        ).all()
    return {item_id: (included, k, pi) for item_id, included, k, pi in rows}


def _done_per_item(engine, study_id) -> dict[int, int]:
    with read_session(engine) as session:
        return dict(
            session.execute(
                select(Assignment.item_id, func.count())
                .where(Assignment.study_id == study_id, Assignment.status == "done")
                .group_by(Assignment.item_id)
            ).all()
        )


def test_the_design_is_drawn_as_the_designer_draws_it_and_recorded(engine, tmp_path):
    study, admin, _ = _study(engine, tmp_path, annotators=0)
    drawn = service.set_designed_k(engine, admin, study.id, {"n": 40, "m": 12, "k_overlap": 3, "seed": 7})
    assert (drawn.policy, drawn.items, drawn.included) == ("designed", 60, 40)
    items = _designed_k(engine, study.id)
    expected = Design("designed", 40, 12, 3, 40 - 12 + 12 * 3, None, 60).votes_per_dialogue(7)
    assert [k if included else 0 for included, k, _ in items.values()] == expected.tolist()
    assert all((pi == pytest.approx(40 / 60)) if included else k is None for included, k, pi in items.values())
    with read_session(engine) as session:
        stored = session.get(Study, study.id).settings["allocation"]
    assert stored["policy"] == "designed"
    assert stored["design"] == {
        "n": 40,
        "m": 12,
        "k_overlap": 3,
        "seed": 7,
        "pool": 60,
        "pi_dialogue": pytest.approx(40 / 60),
        "pi_overlap": pytest.approx(12 / 40),
        "judgements": 64,
    }
    changes = service.study_changes(engine, admin, study.id)
    assert any(c.what == "allocation" and "designed" in c.new and "40 of 60" in c.new for c in changes)
    # what the progress pages and the crowd link count: the designed places, 64 judgements
    assert service.study_progress(engine, admin, study.id).judgements_needed == 64
    with read_session(engine) as session:
        assert crowd.need(session, session.get(Study, study.id), None) == 64
    # a seed left out is the study's own seed
    again = service.set_designed_k(engine, admin, study.id, {"n": 40, "m": 12, "k_overlap": 3})
    assert again.included == 40
    assert [k if inc else 0 for inc, k, _ in _designed_k(engine, study.id).values()] == (
        Design("designed", 40, 12, 3, 64, None, 60).votes_per_dialogue(0).tolist()
    )
    # back to the uniform design: every item judged, k the study's overlap again
    service.set_allocation(engine, admin, study.id, policy="uniform")
    assert {(inc, k, pi) for inc, k, pi in _designed_k(engine, study.id).values()} == {(True, None, None)}


def test_designs_that_cannot_be_drawn_are_refused(engine, tmp_path):
    study, admin, _ = _study(engine, tmp_path, n=20, annotators=0)
    for design, why in [
        ({"n": 21, "m": 2, "k_overlap": 2}, "pool"),
        ({"n": 10, "m": 11, "k_overlap": 2}, "overlap subset"),
        ({"n": 10, "m": 5, "k_overlap": 1}, "k_overlap"),
        ({"n": 0, "m": 0, "k_overlap": 2}, "at least one"),
        ({"n": 10, "k_overlap": 2}, "missing: m"),
        ({**Design("proposal", 10, 4, 3, 18, 0.2, 30).as_dict(), "seed": 1}, "another pool"),
    ]:
        with pytest.raises(StudyError, match=why):
            service.set_designed_k(engine, admin, study.id, design)
    with read_session(engine) as session:
        assert session.get(Study, study.id).settings.get("allocation") is None  # nothing changed
    assert {k for _, k, _ in _designed_k(engine, study.id).values()} == {None}
    # the designer's proposal as it prints it (``Design.as_dict``), with a seed: taken as it is
    drawn = service.set_designed_k(engine, admin, study.id, {**Design("proposal", 10, 4, 3, 18, 0.2, 20).as_dict(), "seed": 1})
    assert (drawn.included, drawn.judgements) == (10, 18)
    assert sorted(k for inc, k, _ in _designed_k(engine, study.id).values() if inc) == [1] * 6 + [3] * 4


def test_the_design_is_fixed_before_the_first_vote(engine, tmp_path):
    study, admin, (person,) = _study(engine, tmp_path, n=20, annotators=1)
    service.set_designed_k(engine, admin, study.id, {"n": 15, "m": 5, "k_overlap": 2, "seed": 1})
    before = _designed_k(engine, study.id)
    item = service.next_item(engine, person, study.id)
    service.submit(engine, person, item.id, {"satisfied": "1"})
    with pytest.raises(StudyError, match="before the first vote"):
        service.set_designed_k(engine, admin, study.id, {"n": 20, "m": 20, "k_overlap": 3, "seed": 1})
    with pytest.raises(StudyError, match="before the first vote"):
        service.set_allocation(engine, admin, study.id, policy="uniform")
    assert _designed_k(engine, study.id) == before


def test_the_store_never_exceeds_a_dialogues_designed_k(engine, tmp_path):
    """Twelve annotators claim and judge at once until nothing is left: each drawn dialogue gets exactly
    its designed k (the overlap subset k_overlap, the others one), the left-out ones none, and the
    study's progress counts the designed places; the study's overlap (3) plays no part."""
    study, admin, people = _study(engine, tmp_path, n=60, overlap=3, annotators=12)
    service.set_designed_k(engine, admin, study.id, {"n": 45, "m": 15, "k_overlap": 3, "seed": 3})
    designed = _designed_k(engine, study.id)
    barrier = threading.Barrier(len(people))

    def work(person):
        done = 0
        barrier.wait()  # every first claim at once
        while (item := service.next_item(engine, person, study.id)) is not None:
            service.submit(engine, person, item.id, {"satisfied": "1"})
            done += 1
        return done

    with ThreadPoolExecutor(max_workers=len(people)) as pool:
        done = sum(pool.map(work, people))
    judged = _done_per_item(engine, study.id)
    assert done == 45 - 15 + 15 * 3 == sum(judged.values())
    assert judged == {item_id: k for item_id, (included, k, _) in designed.items() if included}
    counters_match(engine, study.id)
    progress = service.study_progress(engine, admin, study.id)
    assert (progress.judgements_needed, progress.judgements_done, progress.items_complete) == (75, 75, 45)
    assert {p.needed for p in progress.per_item} == {1, 3}
    assert service.my_progress(engine, people[0], study.id)["study_fraction"] == 1.0


def test_concurrent_claims_never_pass_a_designed_k_of_one(engine, tmp_path):
    """Every item designed k = 1 (no overlap subset) in a study of overlap 3: twenty annotators each
    claim (and hold, without voting) at once; no item is held twice, and the claims take every place."""
    study, admin, people = _study(engine, tmp_path, n=12, overlap=3, annotators=20, name="k-one")
    service.set_designed_k(engine, admin, study.id, {"n": 12, "m": 0, "k_overlap": 2, "seed": 0})
    barrier = threading.Barrier(len(people))

    def claim(person):
        barrier.wait()
        item = service.next_item(engine, person, study.id)
        return None if item is None else item.id

    with ThreadPoolExecutor(max_workers=len(people)) as pool:
        claimed = [c for c in pool.map(claim, people) if c is not None]
    assert len(claimed) == 12 and len(set(claimed)) == 12  # one holder each, every place taken
    counters_match(engine, study.id)
    with read_session(engine) as session:
        assert set(session.scalars(select(Item.holders).where(Item.study_id == study.id))) == {1}


def _run(engine, study_id, people, steps):
    """A fixed script of claims, votes and skips, one annotator after another: the items as claimed."""
    seen = []
    for step in range(steps):
        person = people[step % len(people)]
        item = service.next_item(engine, person, study_id)
        if item is None:
            seen.append((person.name, None))
            continue
        seen.append((person.name, item.key))
        if step % 7 == 3:
            service.skip(engine, person, item.id)
        else:
            service.submit(engine, person, item.id, {"satisfied": str(step % 2)})
    return seen


def test_equal_k_everywhere_is_the_uniform_study(engine, tmp_path):
    """The same pool, seed and annotators: a uniform study of overlap 2 (k NULL) and a designed one
    of overlap 1 whose every item has k = 2 claim the same items in the same order and count the same
    progress."""
    uniform, admin, people = _study(engine, tmp_path, n=30, overlap=2, annotators=4, name="uniform")
    designed, _, _ = _study(engine, tmp_path, n=30, overlap=1, name="designed", people=people)
    service.set_designed_k(engine, admin, designed.id, {"n": 30, "m": 30, "k_overlap": 2, "seed": 0})
    assert {k for _, k, _ in _designed_k(engine, designed.id).values()} == {2}
    a = _run(engine, uniform.id, people, 80)
    b = _run(engine, designed.id, people, 80)
    assert a == b
    assert any(key is None for _, key in a)  # the script ran the studies to the end
    keys = lambda study: {  # noqa: E731
        key: n for key, n in ((_key(engine, i), n) for i, n in _done_per_item(engine, study.id).items())
    }
    assert keys(uniform) == keys(designed) and set(keys(uniform).values()) == {2}
    p, q = service.study_progress(engine, admin, uniform.id), service.study_progress(engine, admin, designed.id)
    assert (p.judgements_needed, p.judgements_done, p.items_complete) == (
        q.judgements_needed,
        q.judgements_done,
        q.items_complete,
    )
    assert service.my_progress(engine, people[1], uniform.id) == service.my_progress(engine, people[1], designed.id)
    # equal π and equal k: the designed study's estimates are the uniform study's, exactly
    from metrics.analysis import AnalysisSettings

    settings = AnalysisSettings(resamples=40)
    u = service.study_analysis(engine, admin, uniform.id, settings)
    d = service.study_analysis(engine, admin, designed.id, settings)
    assert {key for key in u if key != "design"} == {key for key in d if key != "design"}
    for key in u:
        if key != "design":
            assert u[key] == d[key], key
    weighted = {m["metric"]: m["pearson"] for m in d["design"]["metrics"]}
    plain = {m["metric"]: m["pearson"] for m in u["correlation"]["metrics"]}
    assert weighted == pytest.approx({k: v for k, v in plain.items() if k in weighted}, abs=1e-12)


def _key(engine, item_id):
    with read_session(engine) as session:
        return session.get(Item, item_id).key


def test_a_designed_k_is_not_an_extra_place(engine, tmp_path):
    """The overlap subset's votes are designed, not decided from the votes: the analysis applies no
    optional-stopping rule to them (that is for places added from votes: max k, re-opens)."""
    study, admin, people = _study(engine, tmp_path, n=40, overlap=1, annotators=3, name="not-extra")
    service.set_designed_k(engine, admin, study.id, {"n": 40, "m": 20, "k_overlap": 3, "seed": 2})
    for person in people:
        while (item := service.next_item(engine, person, study.id)) is not None:
            service.submit(engine, person, item.id, {"satisfied": "1" if item.payload["dialogue_id"] < "B0020" else "0"})
    assert sum(_done_per_item(engine, study.id).values()) == 20 + 20 * 3
    from annotate.analysis.reports import load_study
    from metrics.analysis import AnalysisSettings

    data = load_study(engine, study.id)
    result = data.analyser(AnalysisSettings())
    assert isinstance(result.get("correlation"), dict) and isinstance(result.get("agreement"), dict)
    assert "optional stopping" not in json.dumps(result, default=str)


def test_places_held_before_the_design_go_back_and_a_left_out_dialogue_takes_no_vote(engine, tmp_path):
    """Three annotators hold places (no vote yet) when the admin fixes a design that gives every dialogue
    k = 1 and leaves some out: the places go back (a held place would outlast its item's new k), and a
    vote on a left-out dialogue is refused."""
    study, admin, people = _study(engine, tmp_path, n=10, overlap=3, annotators=3, name="held")
    held = [service.next_item(engine, person, study.id).id for person in people]
    service.set_designed_k(engine, admin, study.id, {"n": 6, "m": 0, "k_overlap": 2, "seed": 5})
    counters_match(engine, study.id)
    with read_session(engine) as session:
        assert session.scalar(select(func.count()).where(Assignment.study_id == study.id, Assignment.status == "active")) == 0
    designed = _designed_k(engine, study.id)
    refused = 0
    for person, item_id in zip(people, held, strict=True):  # the page they had open: voted if it still has room
        try:
            service.submit(engine, person, item_id, {"satisfied": "1"})
        except StudyError:
            refused += 1
    assert len(set(held)) == 3 and refused == sum(1 for item_id in held if not designed[item_id][0]) == 1
    for item_id, (included, _, _) in designed.items():  # an admin may vote on any item: not on a left-out one
        if not included:
            with pytest.raises(StudyError):
                service.submit(engine, admin, item_id, {"satisfied": "1"})
    judged = _done_per_item(engine, study.id)
    assert all(designed[item_id][0] and n <= designed[item_id][1] for item_id, n in judged.items())
    counters_match(engine, study.id)


def test_the_command_line_fixes_the_designers_proposal(db_url, engine, tmp_path):
    """``python -m annotate study design NAME --policy designed --icc R --budget N``: the designer's
    proposal for the study's pool, drawn and recorded as on the Design and budget tab."""
    import subprocess
    import sys

    study, _admin, _people = _study(engine, tmp_path, n=400, name="cli-designed")
    expected = service.design_proposal(engine, service.CLI, study.id, icc=0.5, budget=600)
    done = subprocess.run(
        [sys.executable, "-m", "annotate", "--db", db_url, "study", "design", "cli-designed"]
        + ["--policy", "designed", "--icc", "0.5", "--budget", "600", "--json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    assert printed["proposal"]["proposal"]["judgements"] == expected.proposal.judgements <= 600
    design = service.allocation_settings(engine, service.CLI, study.id)
    assert design["policy"] == "designed" and design["design"]["m"] == expected.proposal.m
    with read_session(engine) as session:
        ks = list(session.scalars(select(Item.k).where(Item.study_id == study.id, Item.included)))
    assert len(ks) == expected.proposal.n and ks.count(expected.proposal.k_overlap) == expected.proposal.m


def test_downgrading_0013_and_0012_keeps_every_vote_and_place(db_url, engine, tmp_path, fixtures):
    """A migration's downgrade that copies a table (SQLite's batch mode) would drop the old table with
    foreign keys on, and that cascades to every vote and assignment: the review found 12 votes → 0."""
    from alembic import command
    from alembic.config import Config

    from annotate.store.models import VoteEvent

    study, _admin, people = _study(engine, tmp_path, n=12, annotators=3, name="downgraded")
    for person in people:
        while (item := service.next_item(engine, person, study.id)) is not None:
            service.submit(engine, person, item.id, {"satisfied": "1"})

    def counts():
        with read_session(engine) as session:
            return [session.scalar(select(func.count()).select_from(t)) for t in (VoteEvent, Assignment, Item)]

    before = counts()
    assert before[0] == 36
    config = Config()
    config.set_main_option("script_location", str(Path(__file__).resolve().parents[2] / "annotate" / "store" / "migrations"))
    engine.dispose()
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.downgrade(config, "0011")
    engine.dispose()
    assert counts() == before
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "head")
    engine.dispose()
    assert counts() == before


def test_a_reopened_designed_item_is_rated_from_its_first_k_votes():
    """The optional-stopping fixed part keeps each item's first *designed* k votes (not the study's
    overlap): a k = 1 item re-opened once and voted again is rated from its first vote only."""
    from formats.tidy import Vote
    from metrics.adaptive import fixed_part

    votes = [Vote("d1", "a", "satisfied", "1"), Vote("d1", "b", "satisfied", "0"), Vote("d2", "a", "satisfied", "1")]
    kept = fixed_part(votes, 3, {("d1", ""): 1}, base={("d1", ""): 1, ("d2", ""): 1})
    assert [(v.item, v.annotator) for v in kept] == [("d1", "a"), ("d2", "a")]


def test_a_lambda_design_draws_by_lambda_score_and_the_analysis_weights_it(engine, tmp_path):
    """The designer's λ design (``weighting: lambda``): each dialogue's π from its λ score (the adaptive
    draw of issue 17, n expected), a random m of those drawn with k_overlap votes, the others one; the
    study's question becomes λ*, four annotators at once never pass a dialogue's k, and the analysis
    weights each judged dialogue by 1/π and leads with λ*."""
    from annotate.studies.allocation import _scores
    from metrics import adaptive

    study, admin, people = _study(engine, tmp_path, n=60, overlap=3, annotators=4, name="lambda-design")
    drawn = service.set_designed_k(engine, admin, study.id, {"n": 30, "m": 10, "k_overlap": 2, "seed": 5, "weighting": "lambda"})
    designed = _designed_k(engine, study.id)
    with read_session(engine) as session:
        stored_study = session.get(Study, study.id)
        items = list(session.scalars(select(Item).where(Item.study_id == study.id).order_by(Item.position, Item.id)))
        scores = _scores(stored_study, items, "lambda", 0.5)
        allocation = stored_study.settings["allocation"]
    ((pi, take),) = adaptive.draw([[scores[i.id] for i in items]], 30, 5)
    assert [p for _, _, p in designed.values()] == pytest.approx(pi.tolist())  # π by λ score: not all equal
    assert len({round(p, 9) for p in pi}) > 5 and pi.sum() == pytest.approx(30)
    assert [included for included, _, _ in designed.values()] == take.tolist()
    ks = [k for included, k, _ in designed.values() if included]
    assert drawn.included == int(take.sum()) == len(ks) and ks.count(2) == 10 and ks.count(1) == len(ks) - 10
    assert allocation["question"] == "lambda"
    design = allocation["design"]
    assert (design["weighting"], design["drawn"], design["m"], design["judgements"]) == ("lambda", len(ks), 10, len(ks) + 10)

    def work(person):
        while (item := service.next_item(engine, person, study.id)) is not None:
            service.submit(engine, person, item.id, {"satisfied": str(int(item.position % 3 != 0))})

    with ThreadPoolExecutor(max_workers=len(people)) as workers:
        list(workers.map(work, people))
    judged = _done_per_item(engine, study.id)
    assert judged == {item_id: k for item_id, (included, k, _) in designed.items() if included}
    from metrics.analysis import AnalysisSettings
    from metrics.present import design_table

    result = service.study_analysis(engine, admin, study.id, AnalysisSettings(resamples=50))
    design = result["design"]
    assert design["design"] == "designed" and design["n_judged"] == len(ks)
    assert design["n_effective"] < len(ks)  # unequal weights: fewer effective dialogues than judged
    found = design["lambda"]
    assert "refined between grid points" in found["method"] and found["ci"][0] <= found["lambda_star"] <= found["ci"][1]
    table = design_table(design)
    assert table.rows[0][0].startswith("question: λ*") and table.rows[0][1] == f"{found['lambda_star']:.3f}"
    assert any("unweighted and describe the judged dialogues" in note for note in design["corrected"]["notes"])


def test_the_command_line_fixes_the_designers_lambda_proposal(db_url, engine, tmp_path):
    """``... --policy designed --question lambda``: the designer's λ design (one vote each but the smallest
    identified overlap, π by λ score) drawn and recorded; the study's question is λ*."""
    import subprocess
    import sys

    study, _admin, _people = _study(engine, tmp_path, n=400, name="cli-designed-lambda")
    expected = service.design_proposal(engine, service.CLI, study.id, icc=0.5, budget=300, question="lambda")
    assert expected.proposal.weighting == "lambda" and expected.proposal.n == 300 - expected.proposal.m
    done = subprocess.run(
        [sys.executable, "-m", "annotate", "--db", db_url, "study", "design", "cli-designed-lambda"]
        + ["--policy", "designed", "--question", "lambda", "--icc", "0.5", "--budget", "300", "--json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    assert printed["proposal"]["question"] == "lambda"
    design = service.allocation_settings(engine, service.CLI, study.id)
    assert design["policy"] == "designed" and design["question"] == "lambda"
    assert design["design"]["weighting"] == "lambda" and design["design"]["m"] == expected.proposal.m
    with read_session(engine) as session:
        rows = session.execute(select(Item.k, Item.pi).where(Item.study_id == study.id, Item.included)).all()
    assert (
        len(rows) == design["design"]["drawn"] and [k for k, _ in rows].count(expected.proposal.k_overlap) == expected.proposal.m
    )
    assert len({round(pi, 9) for _, pi in rows}) > 10  # π by λ score, not n / pool


def test_a_lambda_weighted_design_is_refused_on_a_study_of_several_systems():
    """The designer scores one system's dialogues and the analysis reads one: a λ-weighted draw over two
    systems' items (reachable only by hand: a proposal's pool is one system's) is refused, nothing set."""
    from annotate.studies.allocation import _draw_design

    items = [Item(id=i, condition=("sys-a" if i % 2 else "sys-b"), position=i, included=True) for i in range(20)]
    study = Study(id=1, kind="satisfaction", settings={})
    with pytest.raises(StudyError, match="draws one system's dialogues; this study shows 2 systems"):
        _draw_design(items, {"n": 10, "m": 4, "k_overlap": 2, "seed": 0, "weighting": "lambda"}, study, 0.5)
    assert all(item.k is None and item.pi is None and item.included for item in items)
