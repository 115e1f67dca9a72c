"""Issue 29 (item 1): the designer on Studies → Change a study → Design and budget: the proposal beside
uniform k = 3 and the FGA study's 11 x 100 (judgements, predicted width), and fixing it before the first
vote (the store then runs it: ``annotate.studies.allocation`` policy ``designed``)."""

from __future__ import annotations

import json

from annotate import service
from annotate.people.sessions import session_user
from annotate.store.db import get_engine
from bench.corpus import build, dialogue_file
from tests.app.test_app import login, page_as


def _pool_study(app_db, tmp_path, name):
    """The admin logged in, a satisfaction study of 400 dialogues: (engine, admin, its id, the studies
    page with the study chosen under *Change a study*)."""
    app = login("admin", "demo-admin-pw")
    token = app.session_state["token"]
    engine = get_engine(app_db)
    boss = session_user(engine, token)
    corpus = tmp_path / "pool.json"
    corpus.write_text(json.dumps(build(400)))
    created = service.create_study_from_files(engine, boss, name, "satisfaction", [corpus, dialogue_file(corpus)], overlap=3)
    page = page_as("studies_page", token)
    box = page.selectbox(key="change-study")
    box.select(next(s for s in box.options if name in str(s))).run()
    return engine, boss, created, page


def test_the_admin_sees_the_designers_proposal_beside_uniform_and_fixes_it(app_db, tmp_path):
    engine, boss, created, page = _pool_study(app_db, tmp_path, "pool of 400")
    expected = service.design_proposal(engine, boss, created.id, icc=0.5, budget=600)

    page.number_input(key=f"designer-icc-{created.id}").set_value(0.5)
    page.number_input(key=f"designer-budget-{created.id}").set_value(600)
    page.button(key=f"designer-go-{created.id}").click().run()
    assert not page.exception, page.exception
    table = next(frame.value for frame in page.dataframe if "predicted 95% width" in frame.value.columns)
    rows = table.set_index("design")
    assert rows.loc["designer", "judgements"] == expected.proposal.judgements <= 600
    assert rows.loc["designer", "predicted 95% width"] == round(expected.proposal.width, 3)
    assert rows.loc["designer", "predicted 95% width"] < rows.loc["uniform k = 3", "predicted 95% width"]
    assert rows.loc["FGA study 11 x 100", "judgements"] == 1100

    page.button(key=f"designer-fix-{created.id}").click().run()
    assert not page.exception, page.exception
    design = service.allocation_settings(engine, boss, created.id)
    assert design["policy"] == "designed"
    assert (design["design"]["n"], design["design"]["m"]) == (expected.proposal.n, expected.proposal.m)
    page.run()
    assert any("the designer's design (400 dialogues, 200 of them with 2 votes" in c.value for c in page.caption)


def test_the_designer_answers_lambda_with_one_vote_each_drawn_by_lambda_score(app_db, tmp_path):
    engine, boss, created, page = _pool_study(app_db, tmp_path, "lambda pool")
    expected = service.design_proposal(engine, boss, created.id, icc=0.5, budget=300, question="lambda")

    page.selectbox(key=f"designer-question-{created.id}").select("lambda").run()
    page.number_input(key=f"designer-icc-{created.id}").set_value(0.5)
    page.number_input(key=f"designer-budget-{created.id}").set_value(300)
    page.button(key=f"designer-go-{created.id}").click().run()
    assert not page.exception, page.exception
    table = next(frame.value for frame in page.dataframe if "predicted 95% width" in frame.value.columns)
    rows = table.set_index("design")
    assert rows.loc["designer", "dialogues"] == f"{expected.proposal.n} expected, π by λ score"
    assert rows.loc["designer", "predicted 95% width"] == round(expected.proposal.width, 3)
    assert rows.loc["designer", "predicted 95% width"] < rows.loc["uniform k = 3", "predicted 95% width"]
    page.button(key=f"designer-fix-{created.id}").click().run()
    assert not page.exception, page.exception
    design = service.allocation_settings(engine, boss, created.id)
    assert (design["policy"], design["question"], design["design"]["weighting"]) == ("designed", "lambda", "lambda")
    page.run()
    assert any("drawn by their λ scores, weighted 1/π" in c.value for c in page.caption)


def test_the_designer_answers_agreement_with_the_overlap_subset_only(app_db, tmp_path):
    engine, boss, created, page = _pool_study(app_db, tmp_path, "agreement pool")
    expected = service.design_proposal(engine, boss, created.id, icc=0.5, budget=300, question="agreement")
    assert expected.proposal.n == expected.proposal.m and expected.proposal.judgements <= 300
    page.selectbox(key=f"designer-question-{created.id}").select("agreement").run()
    page.number_input(key=f"designer-icc-{created.id}").set_value(0.5)
    page.number_input(key=f"designer-budget-{created.id}").set_value(300)
    page.button(key=f"designer-go-{created.id}").click().run()
    assert not page.exception, page.exception
    table = next(frame.value for frame in page.dataframe if "predicted 95% width" in frame.value.columns)
    row = table.set_index("design").loc["designer"]
    assert row["dialogues"] == str(expected.proposal.n) and row["judgements"] == expected.proposal.judgements
    assert row["overlap"] == f"{expected.proposal.m} x k={expected.proposal.k_overlap}"
