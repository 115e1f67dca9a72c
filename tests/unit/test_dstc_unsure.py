"""An "unsure" transcription status (a study that offers unsure) is missing data in the DSTC label files:
the status comes from the other answers, or the study's own, so the DSTC reader reads the file back."""

from __future__ import annotations

from exports.dstc_labels import session_labels
from exports.study import ItemRecord, StudyData


def _turn(votes: list[str]) -> dict:
    item = ItemRecord(
        key="s1:0",
        condition="",
        questions=["transcription_status"],
        payload={
            "session_id": "s1",
            "turn_index": 0,
            "acts": [],
            "transcription": "hello",
            "transcription_status": "transcribed",
        },
        gold=None,
        capacity=3,
    )
    rows = [
        {"item": "s1:0", "condition": "", "annotator": f"a{i}", "question": "transcription_status", "value": value}
        for i, value in enumerate(votes)
    ]
    data = StudyData(name="slu", kind="slu", guideline="", overlap=3, settings={}, items=[item], votes=rows)
    return session_labels(data)["s1"]["turns"][0]


def test_unsure_chooses_no_transcription_status():
    assert _turn(["unsure", "unsure", "unintelligible"])["transcription-status"] == "unintelligible"
    only_unsure = _turn(["unsure", "unsure"])
    assert only_unsure["transcription-status"] == "transcribed" and only_unsure["transcription"] == "hello"
