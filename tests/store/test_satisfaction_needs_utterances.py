"""A satisfaction study from predictions that carry no utterances is refused (issue 24, item 6).

FGA result JSON and TRADE's ``all_prediction_TRADE.json`` hold belief states only.  Before, such a
study was created silently and annotators saw every turn as empty Sys / Usr lines.  Now the CLI and the
upload path both refuse it with one message naming the file and the missing TRADE dialogue file, and
create nothing; with the dialogue file the same study is made, with utterances on every item.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import func, select

from annotate import service
from annotate.people.auth import add_annotator
from annotate.store.db import read_session, write_session
from annotate.store.models import Item, Study
from formats import ReaderError
from tests.store.test_annotate_cli import cli, ok

FGA_JSON = "som-dst_result.sample.json"
TRADE_PRED = "all_prediction_TRADE.sample.json"
DIALS = "test_dials.sample.json"
FGA_MESSAGE = f"{FGA_JSON}: FGA result JSON has no utterances; add the TRADE dialogue file (test_dials.json) it was run on"
TRADE_MESSAGE = (
    f"{TRADE_PRED}: TRADE predictions have no utterances; add the TRADE dialogue file (test_dials.json) they were made on"
)


def dialogue_file_for(predictions: Path, out: Path) -> Path:
    """A TRADE dialogue file for the dialogues of a TRADE prediction file (the shared fixtures hold none
    for theirs): the same dialogue ids and turn counts, a made-up utterance per turn."""
    document = json.loads(predictions.read_text())
    dialogues = [
        {
            "dialogue_idx": dialogue_id,
            "domains": [],
            "dialogue": [
                {
                    "turn_idx": t,
                    "system_transcript": f"system turn {t} of {dialogue_id}",
                    "transcript": f"user turn {t} of {dialogue_id}",
                    "turn_label": [],
                    "belief_state": [],
                }
                for t in range(len(turns))
            ],
        }
        for dialogue_id, turns in document.items()
    ]
    out.write_text(json.dumps(dialogues))
    return out


def counts(engine) -> tuple[int, int]:
    with read_session(engine) as session:
        return session.scalar(select(func.count()).select_from(Study)), session.scalar(select(func.count()).select_from(Item))


def admin(engine):
    with write_session(engine) as session:
        person = add_annotator(session, "boss", "long-enough-pw", role="admin")
        session.flush()
        session.expunge(person)
    return person


@pytest.mark.parametrize(
    ("folder", "name", "message"),
    [("fga_result_json", FGA_JSON, FGA_MESSAGE), ("trade_predictions", TRADE_PRED, TRADE_MESSAGE)],
    ids=["fga-json", "trade-pred"],
)
def test_an_upload_of_predictions_alone_is_refused_and_creates_nothing(engine, fixtures, folder, name, message):
    boss = admin(engine)
    before = counts(engine)
    upload = [(name, (fixtures / folder / name).read_bytes())]
    with pytest.raises(ReaderError) as refused:
        service.create_study_from_uploads(engine, boss, "no utterances", "satisfaction", upload, overlap=1)
    assert str(refused.value) == message
    assert counts(engine) == before


def test_an_upload_with_the_dialogue_file_has_utterances_on_every_item(engine, fixtures):
    boss = admin(engine)
    upload = [
        (FGA_JSON, (fixtures / "fga_result_json" / FGA_JSON).read_bytes()),
        (DIALS, (fixtures / "coco" / DIALS).read_bytes()),
    ]
    created = service.create_study_from_uploads(engine, boss, "with utterances", "satisfaction", upload, overlap=1)
    assert created.items == 10
    with read_session(engine) as session:
        items = session.scalars(select(Item).where(Item.study_id == created.id)).all()
        assert all(any(t["user"] for t in item.payload["turns"]) for item in items)
        pmul = next(i for i in items if i.key == "PMUL4648.json")
        assert pmul.payload["turns"][0]["user"] == "Please find a restaurant called Nusha."


def test_the_cli_refuses_predictions_alone_and_takes_them_with_the_dialogue_file(db_url, fixtures, tmp_path):
    ok(cli(db_url, "init"))
    fga_json = str(fixtures / "fga_result_json" / FGA_JSON)
    refused = cli(db_url, "study", "create", "sat", "--kind", "satisfaction", fga_json)
    assert refused.returncode != 0
    assert f"{fga_json}: FGA result JSON has no utterances; add the TRADE dialogue file (test_dials.json)" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert ok(cli(db_url, "study", "list")).strip() == ""  # nothing was created
    trade = str(fixtures / "trade_predictions")
    refused = cli(db_url, "study", "create", "sat", "--kind", "satisfaction", trade)
    assert refused.returncode != 0 and f"{TRADE_PRED}: TRADE predictions have no utterances" in refused.stderr
    dials = dialogue_file_for(fixtures / "trade_predictions" / TRADE_PRED, tmp_path / "test_dials.json")
    assert "with 5 items" in ok(cli(db_url, "study", "create", "trade", "--kind", "satisfaction", trade, str(dials)))
    out = ok(cli(db_url, "study", "create", "sat", "--kind", "satisfaction", fga_json, str(fixtures / "coco" / DIALS)))
    assert "with 10 items" in out
