"""Issue 26, item 7, through the store: an admin's reopen gives a dialogue an extra vote; the correlations
rate it from its first k (= overlap) annotators, agreement still counts every vote."""

from __future__ import annotations

from annotate import service
from metrics.analysis import AnalysisSettings
from tests.store.test_crowd import admin
from tests.store_helpers import make_study


def test_a_reopened_dialogues_extra_vote_stays_out_of_its_rating(engine, fixtures):
    study, (first, second) = make_study(engine, fixtures, overlap=1, annotators=2, name="reopened")
    boss = admin(engine)
    keys = []
    while (item := service.next_item(engine, first, study.id)) is not None:
        service.submit(engine, first, item.id, {"satisfied": "1"})
        keys.append(item.key)
    assert service.reopen(engine, boss, study.id, keys[0]) == 1
    extra = service.next_item(engine, second, study.id)
    assert extra is not None and extra.key == keys[0]  # the one place left
    service.submit(engine, second, extra.id, {"satisfied": "0"})
    result = service.study_analysis(engine, boss, study.id, AnalysisSettings(resamples=0, grid=(0.0, 2.0, 5)))
    ratings = {d["id"]: d["rating"] for d in result["correlation"]["per_dialogue"]}
    assert ratings[keys[0]] == 1.0  # the first annotator's vote alone (all votes: 0.5)
    assert result["n_votes"] == len(keys) + 1  # agreement and majority labels take every vote
    assert any("first 1 annotator" in note for note in result["correlation"]["notes"])
