"""Study creation for all three kinds, on both backends; bad input imports nothing."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from annotate.store.db import read_session, write_session
from annotate.store.models import Item, Study
from annotate.studies import StudyError, create_study
from formats import ReaderError


def count(engine, model) -> int:
    with read_session(engine) as session:
        return session.scalar(select(func.count()).select_from(model))


def items_of(engine, name: str) -> list[Item]:
    with read_session(engine) as session:
        study = session.scalar(select(Study).where(Study.name == name))
        return list(session.scalars(select(Item).where(Item.study_id == study.id).order_by(Item.position)))


def test_satisfaction_from_fga_text(engine, fixtures):
    with write_session(engine) as session:
        create_study(session, "sat", "satisfaction", [fixtures / "fga_human_eval"], guideline="Be fair.")
    items = items_of(engine, "sat")
    assert len(items) == 10
    assert {i.condition for i in items} == {"fga_human_eval"}
    pmul = next(i for i in items if i.key == "PMUL4648.json")
    assert pmul.questions == ["satisfied"]
    assert pmul.payload["turns"][0]["user"] == "Please find a restaurant called Nusha."
    assert pmul.payload["turns"][0]["pred"] == [["restaurant", "name", "nusha"]]


def test_satisfaction_trade_with_utterances_and_sample(engine, fixtures):
    with write_session(engine) as session:
        create_study(
            session,
            "fga-json",
            "satisfaction",
            [fixtures / "fga_result_json", fixtures / "coco" / "test_dials.sample.json"],
            sample=4,
            seed=7,
        )
        create_study(
            session,
            "again",
            "satisfaction",
            [fixtures / "fga_result_json", fixtures / "coco" / "test_dials.sample.json"],
            sample=4,
            seed=7,
        )
    first, second = items_of(engine, "fga-json"), items_of(engine, "again")
    assert len(first) == 4 and [i.key for i in first] == [i.key for i in second]
    assert first[0].condition == "som-dst_result"
    assert all(i.payload["turns"][0]["user"] for i in first)  # utterances came from the dialogue file


def test_coco_items_hide_the_condition(engine, fixtures):
    with write_session(engine) as session:
        create_study(session, "coco", "coco", [fixtures / "coco"], condition="coco-freq")
    items = items_of(engine, "coco")
    assert len(items) == 12  # 6 CoCo turns x (original, counterfactual)
    assert {i.condition for i in items} == {"original", "coco-freq"}
    original = next(i for i in items if i.key == "MUL0144.json/1" and i.condition == "original")
    counterfactual = next(i for i in items if i.key == "MUL0144.json/1" and i.condition == "coco-freq")
    assert original.payload["user"] == "Not really. Just get me a table for  3 on Tuesday at 17:00"
    assert counterfactual.payload["user"].startswith("Not really. Could you book a table for 5 people")
    assert counterfactual.payload["turn_label"][0] == ["restaurant-book day", "friday"]
    assert len(original.payload["history"]) == 1 and original.payload["system"].startswith("I have several listings")
    for item in items:
        assert "coco-freq" not in repr(item.payload) and "original" not in repr(item.payload)


def test_slu_items_from_dstc_folders(engine, fixtures):
    with write_session(engine) as session:
        create_study(session, "slu", "slu", [fixtures / "dstc2"])
    items = items_of(engine, "slu")
    assert len(items) == 36
    item = next(i for i in items if i.key == "voip-00d76b791d-20130327_010906/1")
    assert item.questions == ["request(slot=addr)", "transcription", "transcription_status"]
    assert item.payload["transcription"] == "address" and item.payload["transcription_status"] == "transcribed"
    assert item.payload["acts"][0]["auto"] is True  # exact match with the label file's semantics
    assert len(item.payload["before"]) == 1 and len(item.payload["after"]) == 2
    assert item.payload["system"] == "la raza serves spanish food in the cheap price range"


def test_gold_file_marks_attention_checks(engine, fixtures, tmp_path):
    gold = tmp_path / "gold.csv"
    gold.write_text("item,question,value\nPMUL4648.json,satisfied,0\n")
    with write_session(engine) as session:
        create_study(session, "sat", "satisfaction", [fixtures / "fga_human_eval"], gold_path=gold)
    marked = [i for i in items_of(engine, "sat") if i.gold]
    assert [(i.key, i.gold) for i in marked] == [("PMUL4648.json", {"satisfied": "0"})]


@pytest.mark.parametrize(
    "kind, make_paths, expected",
    [
        ("satisfaction", lambda f, t: [f / "fga_human_eval", t / "bad.json"], "bad.json:line 1 column"),
        ("coco", lambda f, t: [f / "coco" / "coco_eval.sample.json"], "needs both"),
        ("slu", lambda f, t: [t], "no DSTC log files"),
    ],
)
def test_bad_input_imports_nothing(engine, fixtures, tmp_path, kind, make_paths, expected):
    (tmp_path / "bad.json").write_text('{"x": {"0": {"gt": {}, "pr": ')
    before = (count(engine, Study), count(engine, Item))
    with pytest.raises(ReaderError, match=expected), write_session(engine) as session:
        create_study(session, "broken", kind, make_paths(fixtures, tmp_path))
    assert (count(engine, Study), count(engine, Item)) == before


def test_bad_gold_row_rolls_back_the_whole_study(engine, fixtures, tmp_path):
    gold = tmp_path / "gold.csv"
    gold.write_text("item,question,value\nPMUL4648.json,satisfied,0\nNOPE.json,satisfied,1\n")
    with pytest.raises(ReaderError, match="gold.csv:line 3"), write_session(engine) as session:
        create_study(session, "sat", "satisfaction", [fixtures / "fga_human_eval"], gold_path=gold)
    assert count(engine, Study) == 0 and count(engine, Item) == 0


def test_duplicate_study_name(engine, fixtures):
    with write_session(engine) as session:
        create_study(session, "sat", "satisfaction", [fixtures / "fga_human_eval"])
    with pytest.raises(StudyError, match="exists already"), write_session(engine) as session:
        create_study(session, "sat", "satisfaction", [fixtures / "fga_human_eval"])


def test_migrations_match_the_models(engine):
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    from annotate.store.models import Base

    with engine.connect() as connection:
        diff = compare_metadata(MigrationContext.configure(connection), Base.metadata)
    assert diff == []


def test_coco_original_and_counterfactual_never_follow_each_other(engine, fixtures):
    """Every annotator judges every CoCo item (both conditions of each turn); no two consecutive items
    share a turn, and the condition never reaches the page's payload."""
    from annotate.judging.votes import cast_votes
    from tests.store_helpers import make_study, next_item

    study, people = make_study(engine, fixtures, kind="coco", overlap=3, annotators=3)
    for person in people:
        keys = []
        while True:
            with write_session(engine) as session:
                item = next_item(session, study.id, person)
                if item is None:
                    break
                keys.append(item.key)
                assert "condition" not in item.payload and "original" not in str(item.payload.get("system", ""))[:0]
                cast_votes(session, person, item.id, {"human_like": "1", "correct": "1"})
        assert len(keys) == 12 and len(set(keys)) == 6
        assert all(a != b for a, b in zip(keys[:-1], keys[1:-1])), keys  # the last pair may be all that was left


def test_slu_transcription_box_never_starts_with_the_gold(fixtures):
    from annotate.kinds import slu

    drafts = slu.build_items([fixtures / "dstc2"])
    differ = [d for d in drafts if d.payload["asr"] and d.payload["transcription"] != d.payload["asr"][0][0]]
    assert len(differ) >= 5  # the calls have turns where the recogniser misheard
    for draft in drafts:
        start = slu.item_view(draft.payload)["transcription_start"]
        assert start == (draft.payload["asr"][0][0] if draft.payload["asr"] else "")
    assert all(slu.item_view(d.payload)["transcription_start"] != d.payload["transcription"] for d in differ)
