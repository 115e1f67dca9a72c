"""DSTC label files (the handbook's Appendix B) from an slu study's votes.

Per session, ``<session-id>/dstc.labels.json``::

    {"session-id": ..., "turns": [{"turn-index", "transcription", "transcription-status",
                                    "audio-file", "slu-labels": [{"slots": {...}, "label": true|false|null,
                                                                  ["source": "human"|"auto",] "act": "inform"}]}]}

Choices, written down:
- ``label`` is the majority of the annotators' current judgements of the act; a tie, or no
  judgement, is ``null``.  With no human judgement, an act pre-marked from the DSTC2 label
  file's gold semantics (exact match) is ``true`` with source ``auto``; an act nobody judged
  and nothing pre-marked is ``null`` with no ``source`` (App. B's sources are ``auto`` and
  ``human``, and neither produced it).
- ``transcription`` / ``transcription-status`` are the annotators' most common answers (a tie
  goes to the most recent of the tied answers); with no votes, the values the study was
  built with.  ``transcription`` is left out unless the status is ``transcribed``, as the
  handbook does.
- ``act`` keeps the act type beside ``slots`` (an extra field the reader ignores).
- An "unsure" answer (a study that offers it) is missing data here as in the analysis: it chooses no
  transcription status and no label, so the file stays one the DSTC reader reads (the votes export keeps it).
"""

from __future__ import annotations

import json
from collections import Counter

from exports.study import ItemRecord, StudyData
from formats.tidy import is_unsure


def _most_common(answers: list[str]) -> str | None:
    """The most frequent answer; ties go to the latest of the tied answers (answers oldest first)."""
    if not answers:
        return None
    counts = Counter(answers)
    top = max(counts.values())
    return next(a for a in reversed(answers) if counts[a] == top)


def _label(values: list[str]) -> bool | None:
    yes, no = values.count("1"), values.count("0")
    if yes == no:
        return None
    return yes > no


def session_labels(data: StudyData) -> dict[str, dict]:
    """Label documents per session id, turns in order.  Items' payloads are DSTC turn records
    (``session_id``, ``turn_index``, ``acts`` with ``name``/``act``/``slots``/``auto``, ``transcription``,
    ``transcription_status``, ``audio_file``), as the slu kind builds them."""
    votes: dict[tuple[str, str], list[dict]] = {}
    for vote in data.votes:  # oldest first
        votes.setdefault((vote["item"], vote["question"]), []).append(vote)
    sessions: dict[str, list[tuple[int, dict]]] = {}
    for item in data.items:
        payload = item.payload
        sessions.setdefault(payload["session_id"], []).append((payload["turn_index"], _turn(item, votes)))
    documents = {}
    for session_id, turns in sessions.items():
        turns.sort(key=lambda pair: pair[0])
        documents[session_id] = {"session-id": session_id, "turns": [turn for _, turn in turns]}
    return documents


def _turn(item: ItemRecord, votes: dict) -> dict:
    payload = item.payload
    answers = lambda question: [v["value"] for v in votes.get((item.key, question), []) if not is_unsure(v["value"])]  # noqa: E731
    transcription = _most_common(answers("transcription"))
    status = _most_common(answers("transcription_status"))
    if transcription is None:
        transcription = payload.get("transcription", "")
    if status is None:
        status = payload.get("transcription_status") or ("transcribed" if transcription else None)
    turn: dict = {"turn-index": payload["turn_index"]}
    if status == "transcribed" or (status is None and transcription):
        turn["transcription"] = transcription
    if status:
        turn["transcription-status"] = status
    turn["audio-file"] = payload.get("audio_file", "")
    labels = []
    for act in payload["acts"]:
        human = answers(act["name"])
        entry: dict = {"slots": {s: v for s, v in act["slots"]}}
        if human:
            entry.update(label=_label(human), source="human")
        elif act.get("auto"):
            entry.update(label=True, source="auto")
        else:  # nobody judged it: not labelled, and no source claims it was
            entry["label"] = None
        entry["act"] = act["act"]
        labels.append(entry)
    turn["slu-labels"] = labels
    return turn


def files(data: StudyData) -> list[tuple[str, bytes]]:
    """``(<session-id>/dstc.labels.json, bytes)`` for every session."""
    out = []
    for session_id, document in session_labels(data).items():
        safe = session_id.replace("/", "_").replace("\\", "_").lstrip(".") or "session"
        out.append((f"{safe}/dstc.labels.json", (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode()))
    return out
