"""DSTC logs and labels (DSTC handbook, Appendices A and B).

A call folder holds ``log.json`` (or ``dstc.log.json``): turns with ``output.transcript``,
``output.dialog-acts`` and ``input.live.slu-hyps`` / ``asr-hyps``; and, when transcribed,
``label.json`` (or ``dstc.labels.json``): per turn ``transcription``, maybe
``transcription-status``, ``semantics`` (DSTC2) and ``slu-labels`` (App. B).

Dialog acts are named in the DSTC notation: ``inform(food=korean)``,
``request(slot=phone)``, ``affirm()``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from formats.errors import ReaderError, expect, parse_json, read_text

FORMAT = "dstc-log"
LOG_NAMES = ("log.json", "dstc.log.json")
LABEL_NAMES = ("label.json", "dstc.labels.json")
TRANSCRIPTION_STATUSES = ("transcribed", "audio-not-available", "no-speech-for-system", "not-understandable", "silence")


@dataclass(frozen=True)
class Act:
    act: str
    slots: tuple[tuple[str, str], ...]

    @property
    def name(self) -> str:
        return f"{self.act}({','.join(f'{s}={v}' for s, v in self.slots)})"


@dataclass
class DstcTurn:
    index: int
    system: str
    system_acts: list[Act]
    slu_hyps: list[tuple[list[Act], float]]
    asr_hyps: list[tuple[str, float]]
    audio_file: str = ""
    transcription: str | None = None
    transcription_status: str | None = None
    semantics: list[Act] | None = None  # gold acts from a DSTC2 label file

    def recognised_acts(self) -> list[tuple[Act, float]]:
        """Every distinct act in the SLU N-best with its best score, in N-best order."""
        best: dict[Act, float] = {}
        for acts, score in self.slu_hyps:
            for act in acts:
                best[act] = max(best.get(act, float("-inf")), score)
        return list(best.items())


@dataclass
class DstcSession:
    session_id: str
    source: str
    turns: list[DstcTurn] = field(default_factory=list)


def sniff(document: Any) -> bool:
    return isinstance(document, dict) and "session-id" in document and isinstance(document.get("turns"), list)


def _acts(value: Any, path: str | os.PathLike[str], place: str) -> list[Act]:
    expect(isinstance(value, list), path, place, "dialog acts must be a list")
    acts = []
    for entry in value:
        expect(isinstance(entry, dict) and isinstance(entry.get("act"), str), path, place, f"not a dialog act: {entry!r}"[:120])
        slots = entry.get("slots", [])
        ok = isinstance(slots, list) and all(isinstance(p, list) and len(p) == 2 for p in slots)
        expect(ok, path, place, "act slots must be [slot, value] pairs")
        acts.append(Act(entry["act"], tuple((str(s), str(v)) for s, v in slots)))
    return acts


def find_file(folder: Path, names: tuple[str, ...]) -> Path | None:
    for name in names:
        if (folder / name).is_file():
            return folder / name
    return None


def read_log(path: str | os.PathLike[str], data: bytes | None = None, document: Any = None) -> DstcSession:
    if document is None:
        document = parse_json(path, read_text(path, data))
    expect(sniff(document), path, "", "not a DSTC log: expected an object with 'session-id' and 'turns'")
    session = DstcSession(str(document["session-id"]), str(path))
    for position, turn in enumerate(document["turns"]):
        place = f"turns[{position}]"
        expect(isinstance(turn, dict), path, place, "expected an object")
        expect(turn.get("turn-index") == position, path, place, f"turn-index {turn.get('turn-index')!r} does not line up")
        output = turn.get("output", {})
        expect(isinstance(output, dict), path, place, "'output' must be an object")
        live = turn.get("input", {}).get("live", {}) if isinstance(turn.get("input"), dict) else {}
        expect(isinstance(live, dict), path, place, "'input.live' must be an object")
        slu = []
        for hyp in live.get("slu-hyps", []):
            expect(isinstance(hyp, dict) and "slu-hyp" in hyp, path, f"{place} slu-hyps", "each SLU hypothesis needs 'slu-hyp'")
            score = hyp.get("score", 0.0)
            expect(isinstance(score, (int, float)), path, f"{place} slu-hyps", "score must be a number")
            slu.append((_acts(hyp["slu-hyp"], path, f"{place} slu-hyps"), float(score)))
        asr = [(str(h.get("asr-hyp", "")), float(h.get("score", 0.0))) for h in live.get("asr-hyps", []) if isinstance(h, dict)]
        session.turns.append(
            DstcTurn(
                index=position,
                system=str(output.get("transcript", "")),
                system_acts=_acts(output.get("dialog-acts", []), path, f"{place} output"),
                slu_hyps=slu,
                asr_hyps=asr,
                audio_file=str(turn.get("input", {}).get("audio-file", "") if isinstance(turn.get("input"), dict) else ""),
            )
        )
    return session


def read_labels(path: str | os.PathLike[str], data: bytes | None = None) -> dict[str, Any]:
    """A label file as parsed JSON, checked for the App. B shape."""
    document = parse_json(path, read_text(path, data))
    expect(isinstance(document, dict) and isinstance(document.get("turns"), list), path, "", "not a DSTC label file")
    expect("session-id" in document, path, "", "lacks 'session-id'")
    for position, turn in enumerate(document["turns"]):
        place = f"turns[{position}]"
        expect(isinstance(turn, dict), path, place, "expected an object")
        expect(turn.get("turn-index") == position, path, place, f"turn-index {turn.get('turn-index')!r} does not line up")
        status = turn.get("transcription-status")
        expect(status is None or status in TRANSCRIPTION_STATUSES, path, place, f"unknown transcription-status {status!r}")
        for label in turn.get("slu-labels", []):
            ok = isinstance(label, dict) and isinstance(label.get("slots"), dict) and label.get("label") in (True, False, None)
            expect(ok, path, f"{place} slu-labels", "each label needs 'slots' (object) and 'label' true/false/null")
    labels: dict[str, Any] = document
    return labels


def read_session(folder: str | os.PathLike[str]) -> DstcSession:
    """A call folder: the log, and the labels when present (turns must line up)."""
    folder = Path(folder)
    log_path = find_file(folder, LOG_NAMES)
    if log_path is None:
        raise ReaderError(folder, "", f"no {' or '.join(LOG_NAMES)} in the folder")
    session = read_log(log_path)
    label_path = find_file(folder, LABEL_NAMES)
    if label_path is not None:
        labels = read_labels(label_path)
        expect(str(labels["session-id"]) == session.session_id, label_path, "session-id", "does not match the log's session-id")
        expect(len(labels["turns"]) == len(session.turns), label_path, "turns", "turns do not line up with the log")
        for turn, label in zip(session.turns, labels["turns"]):
            transcription = label.get("transcription")
            turn.transcription = transcription if isinstance(transcription, str) else None
            status = label.get("transcription-status")
            turn.transcription_status = status or ("transcribed" if turn.transcription is not None else None)
            semantics = label.get("semantics", {})
            if isinstance(semantics, dict) and "json" in semantics:
                turn.semantics = _acts(semantics["json"], label_path, f"turns[{turn.index}] semantics")
    return session


def session_folders(paths: list[str | os.PathLike[str]]) -> list[Path]:
    """Call folders under the paths (a path may be a call folder or hold many)."""
    folders: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_file() and path.name in LOG_NAMES:
            folders.append(path.parent)
        elif path.is_dir():
            if find_file(path, LOG_NAMES):
                folders.append(path)
            else:
                folders.extend(sorted({p.parent for name in LOG_NAMES for p in path.rglob(name)}))
        else:
            raise ReaderError(path, "", "not a DSTC call folder or log file")
    if not folders:
        raise ReaderError(", ".join(map(str, paths)), "", "no DSTC log files found")
    return folders


AUDIO_TYPES = {".wav": "audio/wav", ".flac": "audio/flac", ".mp3": "audio/mpeg", ".ogg": "audio/ogg"}
MAX_AUDIO_BYTES = 20 * 1024 * 1024  # a DSTC2 turn is a few seconds of 8 kHz audio (tens of kB)


def read_audio(folder: str | os.PathLike[str], name: str) -> tuple[str, str, bytes] | None:
    """A turn's recording named in the log (``input.audio-file``), when the call folder holds it:
    (file name, MIME type, bytes).  None when there is no such file (the DSTC2 release ships the audio
    apart from the logs) or its type is not one a browser plays.  Only a plain file name inside the
    call folder is read (never a path that leaves it); a file over 20 MB is an error naming it.

    >>> read_audio(".", "../etc/passwd.wav") is None
    True
    """
    if not name or name != Path(name).name or name.startswith("."):
        return None
    mime = AUDIO_TYPES.get(Path(name).suffix.lower())
    path = Path(folder) / name
    if mime is None or not path.is_file():
        return None
    size = path.stat().st_size
    expect(size <= MAX_AUDIO_BYTES, path, "", f"audio file of {size} bytes; at most {MAX_AUDIO_BYTES} are taken")
    return name, mime, path.read_bytes()
