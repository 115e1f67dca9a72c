"""Issue 24, item 7 (AppTest): Progress and Analysis show the same numbers for the same study, and
progress is measured against the study's budget."""

from __future__ import annotations

from annotate import service
from annotate.people.auth import PermissionDenied
from annotate.people.sessions import log_in
from annotate.store.db import get_engine, write_session
from annotate.studies import create_study
from tests.app.test_app import start
from tests.store.test_analysis_cache import text_corpus

BUDGET = 11


def _adaptive_study(engine, tmp_path) -> int:
    """A satisfaction study of 40 dialogues, adaptive with a budget of 11 judgements (its draw: 4
    dialogues, 12 places), judged by the three demo annotators until its budget closes it."""
    corpus = text_corpus(tmp_path / "pool", 40, seed=3)
    with write_session(engine) as session:
        study_id = create_study(session, "pool", "satisfaction", [corpus], overlap=3).id
    admin, _ = log_in(engine, "admin", "demo-admin-pw")
    drawn = service.set_allocation(engine, admin, study_id, policy="adaptive", budget=BUDGET)
    assert drawn.included * 3 > BUDGET  # more places than the budget (the issue: 18 against 15)
    for n in (1, 2, 3):
        person, _ = log_in(engine, f"ann{n}", f"demo-ann{n}-pw")
        try:
            while (item := service.next_item(engine, person, study_id)) is not None:
                service.submit(engine, person, item.id, {"satisfied": "1" if (item.position + n) % 3 else "0"})
        except PermissionDenied:  # the budget is spent: the study closed
            pass
    return study_id


def _as_admin(probe, token: str, study_id: int):
    probe.session_state["token"] = token
    probe.session_state["admin-chosen-study"] = study_id  # the study chooser opens on it
    return probe.run()


def test_progress_and_analysis_agree_on_an_adaptive_study_with_a_budget(app_db, tmp_path):
    from streamlit.testing.v1 import AppTest

    engine = get_engine(app_db)
    start()
    _, token = log_in(engine, "admin", "demo-admin-pw")
    study_id = _adaptive_study(engine, tmp_path)
    analysis = _as_admin(
        AppTest.from_string("from annotate.pages import analysis\nanalysis.render()\n", default_timeout=180), token, study_id
    )
    assert not analysis.exception, analysis.exception
    design = next(d.value for d in analysis.dataframe if "estimate" in d.value.columns)
    row = design[design["estimate"].str.startswith("question:")].iloc[0]
    assert row["estimate"] == "question: r fga_0.5 - r jga"
    value, interval = row["value"], row["CI (bootstrap over dialogues)"]
    assert row["level"] == "99.2%"  # the reference family: 6 metrics against jga, Bonferroni (issue 26)
    assert len(value.rsplit(".", 1)[1]) == 3 and interval.count(".") == 2  # 3 decimals

    progress = _as_admin(
        AppTest.from_string("from annotate.pages import progress\nprogress.progress_page()\n", default_timeout=180),
        token,
        study_id,
    )
    assert not progress.exception, progress.exception
    line = next(t.value for t in progress.text if t.value.startswith("Design: adaptive"))
    assert f"now {value} {interval}, width" in line, (line, value, interval)
    assert f"{BUDGET} of {BUDGET} judgements spent" in line and "the study is closed" in line
    judgements = next(m for m in progress.metric if m.label == "Judgements")
    assert judgements.value == f"{BUDGET} / {BUDGET}"  # against the budget, not the draw's 3 places per dialogue
    assert progress.get("progress")[0].proto.value == 100
    # the Analysis page counts the same way
    assert next(m for m in analysis.metric if m.label == "Judgements").value == f"{BUDGET} / {BUDGET}"
