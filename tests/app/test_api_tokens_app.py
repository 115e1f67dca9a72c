"""Issue 28 in the app: an admin makes an automatic judge and its API token on the Annotators page
(the token shown once, working, then revoked), and the Analysis page shows a judge that voted through
the API against the human majority, with the κ ``metrics.judges.judge_report`` computes."""

from __future__ import annotations

from dataclasses import replace

from annotate import service
from annotate.people.sessions import log_in
from annotate.store.db import get_engine
from formats.tidy import votes_from_rows
from metrics import present
from metrics.judges import judge_report
from tests.app.test_app import analysis_as, login, page_as, start


def _button(probe, label: str):
    return next(b for b in probe.button if b.label == label)


def _codes(probe) -> list[str]:
    return [c.value for c in probe.code]


def test_an_admin_makes_a_judge_and_its_token_shown_once_then_revokes_it(app_db):
    engine = get_engine(app_db)
    token = login("admin", "demo-admin-pw").session_state["token"]
    probe = page_as("annotators_page", token)
    assert not probe.exception, probe.exception
    probe.text_input(key="add-name").input("gpt-judge")
    probe.checkbox(key="add-judge").check()
    _button(probe, "Add annotator").click().run()
    assert not probe.exception, probe.exception
    people = probe.dataframe[0].value.set_index("name")
    assert people.loc["gpt-judge", "kind"] == "judge" and not people.loc["gpt-judge", "login"]
    assert people.loc["ann1", "kind"] == "human" and people.loc["gpt-judge", "role"] == "annotator"

    # a judge is never an admin: the service refuses, the page says so and adds nobody
    probe.text_input(key="add-name").input("admin-judge")
    probe.checkbox(key="add-admin").check()
    probe.checkbox(key="add-judge").check()
    _button(probe, "Add annotator").click().run()
    assert [e.value for e in probe.error] == ["Refused; nothing was changed."]
    assert "admin-judge" not in set(probe.dataframe[0].value["name"])

    # the token: for the judge, with a label that looks like Markdown and HTML (shown as text)
    label = "**gpt** <b>judge</b>"
    assert {"gpt-judge (automatic judge)", "ann1 (annotator)", "admin (admin)"} <= set(
        probe.selectbox(key="token-person").options
    )
    probe.selectbox(key="token-person").set_value("gpt-judge")
    probe.text_input(key="token-label").input(label)
    _button(probe, "Create token").click().run()
    assert not probe.exception, probe.exception
    made = [c for c in _codes(probe) if c.startswith("dstj_")]
    assert len(made) == 1, _codes(probe)
    secret = made[0]
    assert any("not shown again" in s.value and "only its hash is kept" in s.value for s in probe.success)
    assert f"For gpt-judge (judge, annotator): {label}" in [t.value for t in probe.text]
    judge = service.token_user(engine, secret)
    assert judge is not None and judge.name == "gpt-judge" and judge.kind == "judge"
    listed = next(d.value for d in probe.dataframe if "token" in d.value.columns)
    row = listed.set_index("annotator").loc["gpt-judge"]
    assert row["token"] == secret[:12] + "…" and row["label"] == label and row["kind"] == "judge"
    assert row["created by"] == "admin" and row["revoked at (UTC)"] == ""
    assert secret not in listed.to_csv()  # the table has its first characters only

    probe.run()  # any next run: the token is gone from the page for good
    assert not [c for c in _codes(probe) if c.startswith("dstj_")]

    (info,) = [t for t in service.list_tokens(engine, service.CLI) if t.annotator == "gpt-judge"]
    probe.selectbox(key="token-revoke").set_value(info.id)
    _button(probe, "Revoke").click().run()
    assert not probe.exception, probe.exception
    assert any(s.value == "Revoked." for s in probe.success)
    assert service.token_user(engine, secret) is None
    listed = next(d.value for d in probe.dataframe if "token" in d.value.columns)
    assert listed.set_index("annotator").loc["gpt-judge", "revoked at (UTC)"] != ""
    assert probe.selectbox(key="token-revoke").options == []  # no live token left to revoke


def _judge_answer(key: str, n_seen: int) -> str:
    """The judge follows the humans' majority (the key's length) but for every third item it sees."""
    majority = "1" if len(key) % 2 else "0"
    return majority if n_seen % 3 else str(1 - int(majority))


def test_the_analysis_page_shows_a_judge_that_voted_through_the_api(app_db):
    engine = get_engine(app_db)
    start()  # the demo database
    admin, token = log_in(engine, "admin", "demo-admin-pw")
    study = next(s for s in service.list_studies(engine) if s.kind == "satisfaction")
    stored = service.study_settings(engine, admin, study.id)
    service.set_study_settings(engine, admin, study.id, replace(stored, resamples=200))
    # Annotators 1 and 2 follow the length of the dialogue id; 3 always says 1 (the majority: 1 and 2).
    for n in (1, 2, 3):
        person, _ = log_in(engine, f"ann{n}", f"demo-ann{n}-pw")
        while (item := service.next_item(engine, person, study.id)) is not None:
            service.submit(engine, person, item.id, {"satisfied": "1" if n == 3 or len(item.key) % 2 else "0"})
    service.add_person(engine, admin, "gpt-judge", None, kind="judge")
    judge = service.token_user(engine, service.add_token(engine, admin, "gpt-judge")[0])
    seen = 0
    while (item := service.api_next(engine, judge, study.id).item) is not None:
        voted = service.api_vote(
            engine, judge, study.id, item.id, {"satisfied": _judge_answer(item.key, seen)}, key=f"j-{item.id}"
        )
        assert voted.complete
        seen += 1
    assert seen == study.items == 10

    rows = service.vote_table(engine, admin, study.id)
    table = lambda rows: votes_from_rows((r["item"], r["annotator"], r["question"], r["value"], r["condition"]) for r in rows)  # noqa: E731
    expected = judge_report(
        table([r for r in rows if r["annotator_kind"] != "judge"]),
        table([r for r in rows if r["annotator_kind"] == "judge"]),
        "satisfied",
        resamples=200,
        seed=stored.seed,
    )["judges"][0]
    assert expected["n"] == 10 and expected["cohen_kappa"] is not None and 0 < expected["cohen_kappa"] < 1

    probe = analysis_as(token)
    assert not probe.exception, probe.exception
    judges = next(d.value for d in probe.dataframe if "Cohen's κ" in d.value.columns and "items" in d.value.columns)
    assert judges.values.tolist() == [
        [
            "gpt-judge",
            10,
            present.number(expected["accuracy"]),
            present.number(expected["cohen_kappa"]),
            present.interval(expected["kappa_ci"]),
        ]
    ]
    assert "Question satisfied: 10 items with a human majority." in [t.value for t in probe.text]
    pointer = (
        f"satisfied: gpt-judge κ {present.number(expected['cohen_kappa'])} {present.interval(expected['kappa_ci'])} (10 items)."
    )
    assert any(t.value.startswith("Automatic judges against") and t.value.endswith(pointer) for t in probe.text)
    # kept apart: the agreement is the three humans', and a note says where the judge went
    assert set(probe.dataframe[0].value["annotators"]) == {3}
    assert any("kept apart from the humans: see the judges table" in t.value for t in probe.text)

    # the setting that counts the judges with the humans, stored with the study like the others
    box = probe.checkbox(key=f"an-{study.id}-judges")
    assert box.label == "Count automatic judges with the humans" and box.value is False
    box.check().run()
    probe.button(key=f"an-{study.id}-store").click().run()
    assert not probe.exception, probe.exception
    assert service.study_settings(engine, admin, study.id).include_judges is True
    assert set(probe.dataframe[0].value["annotators"]) == {4}  # the judge counted with the humans now
    assert any("are counted with the humans here" in t.value for t in probe.text)
    # the judges table stays: the judge against the humans alone, the same numbers
    judges = next(d.value for d in probe.dataframe if "Cohen's κ" in d.value.columns and "items" in d.value.columns)
    assert judges["Cohen's κ"].tolist() == [present.number(expected["cohen_kappa"])]
