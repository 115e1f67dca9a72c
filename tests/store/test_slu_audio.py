"""SLU audio (issue 14, item 2): when a call folder holds the turn's audio file named in log.json
(the DSTC2 layout), the item keeps the recording and the annotator gets a player."""

from __future__ import annotations

import io
import json
import shutil
import wave

import pytest

from annotate import service
from annotate.people.auth import PermissionDenied, add_annotator
from annotate.store.db import read_session, write_session
from annotate.store.models import Annotator, Item, ItemAudio
from annotate.studies import create_study
from formats.errors import ReaderError

CALL = "voip-00d76b791d-20130327_010906"


def tone_wav(seconds: float = 0.2, rate: int = 8000) -> bytes:
    """A real (tiny) 8 kHz mono WAV file, as DSTC2 recordings are."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1), out.setsampwidth(2), out.setframerate(rate)
        out.writeframes(bytes(int(seconds * rate) * 2))
    return buffer.getvalue()


def call_with_audio(fixtures, tmp_path, turns=(0, 2)) -> tuple:
    """A copy of a real DSTC2 call folder with the recordings of some turns beside its log."""
    folder = tmp_path / CALL
    shutil.copytree(fixtures / "dstc2" / CALL, folder)
    log = json.loads((folder / "log.json").read_text())
    names = {i: log["turns"][i]["input"]["audio-file"] for i in turns}
    data = tone_wav()
    for name in names.values():
        (folder / name).write_bytes(data)
    return folder, names, data


def test_a_turn_with_its_audio_file_keeps_the_recording(engine, fixtures, tmp_path):
    folder, names, data = call_with_audio(fixtures, tmp_path)
    with write_session(engine) as session:
        study = create_study(session, "slu audio", "slu", [folder])
        add_annotator(session, "ann")
        add_annotator(session, "other")
    with read_session(engine) as session:
        items = {i.payload["turn_index"]: i for i in session.query(Item).filter(Item.study_id == study.id)}
        stored = {a.item_id: a for a in session.query(ItemAudio)}
        ann = session.query(Annotator).filter_by(name="ann").one()
        other = session.query(Annotator).filter_by(name="other").one()
    assert {index for index, item in items.items() if item.payload["audio"]} == set(names)
    assert {items[i].id for i in names} == set(stored)
    assert stored[items[0].id].file_name == names[0] and stored[items[0].id].data == data
    assert stored[items[0].id].mime == "audio/wav"
    held = service.next_item(engine, ann, study.id)
    expected = (names[held.payload["turn_index"]], "audio/wav", data) if held.payload["audio"] else None
    assert service.item_audio(engine, ann, held.id) == expected
    with pytest.raises(PermissionDenied):  # only for the annotator who holds the item
        service.item_audio(engine, other, held.id)


def test_a_call_without_audio_files_has_no_player(engine, fixtures):
    with write_session(engine) as session:
        study = create_study(session, "slu", "slu", [fixtures / "dstc2" / CALL])
    with read_session(engine) as session:
        assert not any(i.payload["audio"] for i in session.query(Item).filter(Item.study_id == study.id))
        assert session.query(ItemAudio).count() == 0


def test_an_oversized_audio_file_is_refused_by_name(engine, fixtures, tmp_path, monkeypatch):
    import formats.dstc

    folder, names, _ = call_with_audio(fixtures, tmp_path, turns=(1,))
    monkeypatch.setattr(formats.dstc, "MAX_AUDIO_BYTES", 100)
    with pytest.raises(ReaderError, match=names[1]), write_session(engine) as session:
        create_study(session, "too big", "slu", [folder])
    with read_session(engine) as session:
        assert session.query(Item).count() == 0
