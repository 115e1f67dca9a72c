"""Readers on every shared fixture, and bad input for every reader."""

from __future__ import annotations

import json

import pytest

from formats import ReaderError, load_dialogues, read_file
from formats.trade_dials import attach_utterances


def test_fga_text_fixtures(fixtures):
    files = sorted((fixtures / "fga_human_eval").glob("*.json.txt"))
    assert len(files) == 10
    dialogues = load_dialogues(files)
    assert sum(len(d.turns) for d in dialogues) == 75
    pmul4648 = next(d for d in dialogues if d.id == "PMUL4648.json")
    first = pmul4648.turns[0]
    assert first.system == "" and first.user == "Please find a restaurant called Nusha."
    assert first.gold == frozenset() and first.pred == {("restaurant", "name", "nusha")}
    mul1240 = next(d for d in dialogues if d.id == "MUL1240.json")
    # A multi-line system utterance stays whole.
    assert mul1240.turns[7].system.splitlines() == [
        "Booking was successful.",
        "Booking completed!",
        "Booked car type\t:\tgrey honda",
        "Contact number\t:\t07025426721    Is there anything else I can assist you with?",
    ]


def test_fga_json_equals_fga_text(fixtures):
    text = {d.id: d for d in load_dialogues([fixtures / "fga_human_eval"])}
    json_dialogues = read_file(fixtures / "fga_result_json" / "som-dst_result.sample.json")
    assert {d.id for d in json_dialogues} == set(text)
    for dialogue in json_dialogues:
        other = text[dialogue.id]
        assert [(t.gold, t.pred) for t in dialogue.turns] == [(t.gold, t.pred) for t in other.turns]


def test_trade_predictions(fixtures):
    dialogues = load_dialogues([fixtures / "trade_predictions"])
    assert [d.id for d in dialogues] == ["MUL0003.json", "MUL0004.json", "MUL0011.json", "MUL0014.json", "MUL0018.json"]
    assert [len(d.turns) for d in dialogues] == [8, 8, 13, 8, 8]
    raw = json.loads((fixtures / "trade_predictions" / "all_prediction_TRADE.sample.json").read_text())
    # Turn keys arrive out of order; turn 5 must be the record keyed "5".
    turn5 = dialogues[0].turns[5]
    assert len(turn5.gold) == len(set(raw["MUL0003.json"]["5"]["turn_belief"]))
    assert ("hotel", "book day", "sunday") in turn5.gold
    assert ("hotel", "type", "guest house") in turn5.pred


def test_trade_predictions_keep_none_triplets(tmp_path):
    path = tmp_path / "pred.json"
    path.write_text(
        json.dumps(
            {"D1.json": {"0": {"turn_belief": ["hotel-area-none", "taxi-leaveat-12:00"], "pred_bs_ptr": ["taxi-leaveat-12:00"]}}}
        )
    )
    (dialogue,) = read_file(path)
    assert ("hotel", "area", "none") in dialogue.turns[0].gold
    assert dialogue.turns[0].gold != dialogue.turns[0].pred


def test_trade_dialogues_give_utterances(fixtures):
    source = read_file(fixtures / "coco" / "test_dials.sample.json")
    assert len(source) == 10 and not source[0].has_predictions
    predicted = read_file(fixtures / "fga_result_json" / "som-dst_result.sample.json")
    merged = attach_utterances(predicted, source)
    first = next(d for d in merged if d.id == "MUL0144.json")
    assert first.turns[0].user.startswith("I am looking for suggestions for a cheaper restaurant")
    assert first.has_predictions


BAD_FILES = {
    "broken.json": (b'{"D1.json": {"0": {"gt": {}, "pr": {}', "line 1 column"),
    "empty.json": (b"", "empty"),
    "latin1.txt": ("Dialogue ID : X\nTurn: 0\nSys : caf\xe9\n".encode("latin-1"), "line 3"),
    "unknown.json": (b'{"a": 1}', "unknown JSON layout"),
    "notjson.txt": (b"hello world", "unknown format"),
    "gaps.json": (b'{"D1.json": {"0": {"gt": {}, "pr": {}}, "2": {"gt": {}, "pr": {}}}}', "do not line up"),
    "liststate.json": (b'{"D1.json": {"0": {"gt": [], "pr": {}}}}', "key 'D1.json' turn '0'"),
    "badkey.json": (b'{"D1.json": {"x": {"gt": {}, "pr": {}}}}', "turn keys must be integers"),
    "trade_type.json": (
        b'{"D1.json": {"0": {"turn_belief": "hotel-area-east", "pred_bs_ptr": []}}}',
        "turn_belief must be a list",
    ),
    "trade_triplet.json": (b'{"D1.json": {"0": {"turn_belief": ["hotelarea"], "pred_bs_ptr": []}}}', "domain-slot-value"),
    "trade_conflict.json": (
        b'{"D1.json": {"0": {"turn_belief": ["hotel-area-east", "hotel-area-west"], "pred_bs_ptr": []}}}',
        "two values",
    ),
    "dials.json": (
        b'[{"dialogue_idx": "D1", "dialogue": [{"turn_idx": 1, "system_transcript": "", "transcript": "hi"}]}]',
        "does not line up",
    ),
    "deep.json": (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    "eval.txt": (
        b"Dialogue ID : X\nTurn: 0\nSys : \nUsr : hi\nGT  : __import__('os').system('touch /tmp/pwned')\nPR  : {{}}\nMatched : False\n",
        "line 5",
    ),
    "badmatch.txt": (b"Dialogue ID : X\nTurn: 0\nSys : \nUsr : hi\nGT  : {{}}\nPR  : {{}}\nMatched : False\n", "disagrees"),
    "order.txt": (b"Dialogue ID : X\nTurn: 1\nSys : \nUsr : hi\nGT  : {{}}\nPR  : {{}}\nMatched : True\n", "out of order"),
    "truncated.txt": (b"Dialogue ID : X\nTurn: 0\nSys : \nUsr : hi\nGT  : {'hotel': {'area'", "line 5"),
    "missing.txt": (b"Dialogue ID : X\nTurn: 0\nSys : \nUsr : hi\n", "lacks GT, PR, Matched"),
    "stray.txt": (b"Dialogue ID : X\nGT  : {{}}\n", "before the first"),
}


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_bad_input_names_file_and_place(tmp_path, name):
    data, expected = BAD_FILES[name]
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(ReaderError) as caught:
        load_dialogues([path])
    message = str(caught.value)
    assert str(path) in message
    assert expected in message


def test_nothing_is_executed(tmp_path):
    path = tmp_path / "eval.txt"
    path.write_bytes(BAD_FILES["eval.txt"][0])
    with pytest.raises(ReaderError):
        read_file(path)
    assert not (tmp_path / "pwned").exists()


def test_size_cap(tmp_path, monkeypatch):
    monkeypatch.setenv("DST_JUDGE_MAX_FILE_MB", "0.001")
    path = tmp_path / "big.json"
    path.write_text("[" + "0," * 2000 + "0]")
    with pytest.raises(ReaderError, match="over the"):
        read_file(path)


def test_duplicate_dialogue_across_files(fixtures):
    path = fixtures / "fga_human_eval" / "PMUL4648.json.txt"
    with pytest.raises(ReaderError, match="already read from"):
        load_dialogues([path, fixtures / "fga_result_json" / "som-dst_result.sample.json"])


def test_explicit_format_mismatch(fixtures):
    with pytest.raises(ReaderError):
        read_file(fixtures / "fga_result_json" / "som-dst_result.sample.json", "trade-pred")
