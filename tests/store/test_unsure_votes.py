""" "Unsure" as a declared answer, on SQLite and PostgreSQL: a study created with ``unsure`` offers it on
its yes/no questions; the store keeps it (as ``unsure``), the analysis leaves it out as missing and
reports its rate, the votes file round-trips it, and a study that does not offer it refuses it and
stores nothing."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from annotate import service
from annotate.people.auth import add_annotator
from annotate.store.db import read_session, write_session
from annotate.store.models import Item, VoteEvent
from annotate.studies import StudyError, create_study
from metrics.analysis import AnalysisSettings


def _study(engine, fixtures, name: str, *, unsure: bool):
    with write_session(engine) as session:
        study = create_study(session, name, "satisfaction", [fixtures / "fga_human_eval"], overlap=2, unsure=unsure)
        admin = add_annotator(session, f"{name}-admin", "pw-admin-123", role="admin")
        people = [add_annotator(session, f"{name}-{i}") for i in range(2)]
    return study, admin, people


def _events(engine, study_id) -> int:
    with read_session(engine) as session:
        return session.scalar(
            select(func.count()).select_from(VoteEvent).join(Item, Item.id == VoteEvent.item_id).where(Item.study_id == study_id)
        )


def test_a_study_that_offers_unsure_keeps_it_and_the_analysis_leaves_it_out(engine, fixtures):
    study, admin, people = _study(engine, fixtures, "offers", unsure=True)
    spec = next(q for q in study.questions if q["name"] == "satisfied")
    assert spec["unsure"] is True
    answered = 0
    for n, person in enumerate(people):
        while (item := service.next_item(engine, person, study.id)) is not None:
            value = " Unsure " if (n == 0 and item.position < 3) else str(item.position % 2)
            service.submit(engine, person, item.id, {"satisfied": value})
            answered += 1
    result = service.study_analysis(engine, admin, study.id, AnalysisSettings(resamples=0))
    rates = result["unsure"]["questions"]["satisfied"]
    assert (rates["votes"], rates["unsure"]) == (answered, 3)
    assert {r["annotator"]: r["unsure"] for r in rates["annotators"]} == {"offers-0": 3}
    assert all(row["majority"] != "unsure" for row in result["majority"]["satisfied"]["rows"])
    text, _ = service.votes_download(engine, admin, study.id)
    assert text.count(",unsure") == 3  # stored and exported as the one spelling
    # the file goes back in: a second study offering unsure takes it, the same votes
    copy, copy_admin, _ = _study(engine, fixtures, "copy", unsure=True)
    assert service.import_votes(engine, copy_admin, copy.id, "votes.csv", text) == answered
    again, _ = service.votes_download(engine, copy_admin, copy.id)

    def votes(csv_text: str) -> list[list[str]]:  # item, condition, annotator, question, value (not the times)
        return sorted(line.split(",")[:5] for line in csv_text.splitlines()[1:])

    assert votes(again) == votes(text)


def test_a_study_that_does_not_offer_unsure_refuses_it_and_stores_nothing(engine, fixtures):
    study, _admin, people = _study(engine, fixtures, "plain", unsure=False)
    assert "unsure" not in next(q for q in study.questions if q["name"] == "satisfied")
    item = service.next_item(engine, people[0], study.id)
    with pytest.raises(StudyError, match="does not offer 'unsure'"):
        service.submit(engine, people[0], item.id, {"satisfied": "unsure"})
    assert _events(engine, study.id) == 0
