"""DSTC-style SLU labeling (the DSTC handbook, Appendix E): one item per user turn of a call.

Input: DSTC call folders (``log.json`` and, when present, ``label.json``).  Key =
``<session-id>/<turn-index>``; every turn becomes an item, so that a labels export lines up with
the log (a turn without SLU hypotheses asks only for the transcription); the two turns before
and after are context.  Questions: one 1/0 question per distinct recognised act in DSTC
notation (``inform(food=korean)``), plus ``transcription`` and ``transcription_status``.  An act
that exactly matches the label file's gold semantics is pre-marked correct with source ``auto``
(the handbook's unambiguous case); everything else is left to people.  No conditions.
Export: DSTC ``labels.json`` per call.
"""

from __future__ import annotations

from annotate.kinds.base import ItemDraft, Kind, register
from formats import ReaderError, dstc
from formats.dstc import TRANSCRIPTION_STATUSES
from formats.tidy import VoteTable, votes_from_rows


def act_type(question: str) -> str | None:
    """The act type of an act question in DSTC notation (``inform(food=korean)`` -> ``inform``);
    None for the transcription questions."""
    return None if question in ("transcription", "transcription_status") or "(" not in question else question.split("(", 1)[0]


def by_act_type(votes: VoteTable) -> VoteTable:
    """Act judgements regrouped for agreement: one question per act type, each (turn, act) a unit.
    Per act string, almost every act is a question with one item (dozens of them); per act type
    there are a handful of questions with many units each.  The transcription status stays as is."""
    rows = []
    for vote in votes.votes:
        kind = act_type(vote.question)
        if kind is not None:
            rows.append((f"{vote.item} {vote.question}", vote.annotator, f"act:{kind}", vote.value, vote.condition))
        elif vote.question == "transcription_status":
            rows.append((vote.item, vote.annotator, vote.question, vote.value, vote.condition))
    return votes_from_rows(rows, votes.source)


def summarise(votes, _dialogues, settings, _condition, _progress) -> dict:
    """Agreement per act type (the generic one would be per act string)."""
    from metrics.analysis import agreement_all  # the statistics, when a study is analysed (issue 36)

    regrouped = by_act_type(votes)
    if not regrouped.votes:
        return {}
    declared = {"transcription_status": list(TRANSCRIPTION_STATUSES)}  # the acts are 0/1: their votes imply both
    agreement = agreement_all(
        regrouped, level=settings.level, resamples=settings.resamples, seed=settings.seed, categories=declared
    )
    agreement["notes"] = [*agreement.get("notes", []), "acts are grouped by act type: a unit is one act of one turn"]
    return {"agreement": agreement}


QUESTIONS = (
    {"name": "transcription", "type": "text", "required": False, "label": "Transcription"},
    {
        "name": "transcription_status",
        "type": "choice",
        "required": False,
        "values": list(TRANSCRIPTION_STATUSES),
        "label": "Transcription status",
    },
)
GUIDELINE = (
    "Mark each recognised dialog act correct only if it captures the complete meaning of what the user said "
    "(DSTC handbook, Appendix E). Fix the transcription if it is wrong."
)


def _context_turn(turn: dstc.DstcTurn) -> dict:
    top_asr = turn.asr_hyps[0][0] if turn.asr_hyps else ""
    return {"index": turn.index, "system": turn.system, "user": turn.transcription if turn.transcription is not None else top_asr}


def build_items(paths: list, condition: str | None = None) -> list[ItemDraft]:
    drafts = []
    seen: dict[str, str] = {}
    for folder in dstc.session_folders(paths):
        session = dstc.read_session(folder)
        if session.session_id in seen:
            raise ReaderError(folder, "session-id", f"{session.session_id} already read from {seen[session.session_id]}")
        seen[session.session_id] = str(folder)
        for turn in session.turns:
            recognised = turn.recognised_acts()  # may be empty: the turn is still transcribed
            gold = set(turn.semantics) if turn.semantics is not None else None
            acts = [
                {
                    "name": act.name,
                    "act": act.act,
                    "slots": [list(s) for s in act.slots],
                    "score": round(score, 6),
                    "auto": (act in gold) if gold is not None and act in gold else None,
                }
                for act, score in recognised
            ]
            key = f"{session.session_id}/{turn.index}"
            payload = {
                "session_id": session.session_id,
                "turn_index": turn.index,
                "n_turns": len(session.turns),
                "system": turn.system,
                "system_acts": [a.name for a in turn.system_acts],
                "asr": [list(h) for h in turn.asr_hyps[:5]],
                "transcription": turn.transcription or "",
                "transcription_status": turn.transcription_status or "",
                "audio_file": turn.audio_file,
                "acts": acts,
                "before": [_context_turn(t) for t in session.turns[max(0, turn.index - 2) : turn.index]],
                "after": [_context_turn(t) for t in session.turns[turn.index + 1 : turn.index + 3]],
            }
            audio = dstc.read_audio(folder, turn.audio_file)
            payload["audio"] = audio is not None
            questions = [a["name"] for a in acts] + ["transcription", "transcription_status"]
            drafts.append(ItemDraft(key, "", key, questions, payload, {"source": str(folder)}, audio))
    return drafts


def item_view(payload: dict) -> dict:
    """Context turns, the system prompt, ASR, transcription and the recognised acts."""
    return {
        "before": [(t["index"], t["system"], t["user"]) for t in payload["before"]],
        "after": [(t["index"], t["system"], t["user"]) for t in payload["after"]],
        "system": payload["system"],
        "asr": [f"{text}  ({score:.2f})" for text, score in payload["asr"]],
        # The box starts with the recogniser's top hypothesis, never the label file's transcription
        # (that would anchor the annotator on the answer).
        "transcription_start": payload["asr"][0][0] if payload.get("asr") else "",
        "transcription_status": payload.get("transcription_status", "") or "transcribed",
        "acts": [(a["name"], a["score"], a.get("auto")) for a in payload["acts"]],
    }


def item_data(payload: dict) -> dict:
    """The item as the page shows it (the HTTP API): context turns, the system prompt and acts, the
    recogniser's hypotheses, the transcription box's starting text (never the label file's
    transcription) and the recognised acts, each with its score and whether the page pre-marks it
    correct (``auto``: it matches the label file)."""
    view = item_view(payload)
    return {
        "session_id": payload["session_id"],
        "turn_index": payload["turn_index"],
        "before": [{"index": i, "system": s, "user": u} for i, s, u in view["before"]],
        "after": [{"index": i, "system": s, "user": u} for i, s, u in view["after"]],
        "system": payload["system"],
        "system_acts": list(payload.get("system_acts", [])),
        "asr": [{"text": text, "score": score} for text, score in payload["asr"]],
        "transcription_start": view["transcription_start"],
        "transcription_status": view["transcription_status"],
        "acts": [{"name": name, "score": score, "auto": bool(auto)} for name, score, auto in view["acts"]],
        "audio": bool(payload.get("audio")),
    }


KIND = register(
    Kind(
        name="slu",
        label="SLU labels",
        inputs="DSTC call folders (as a .zip in the app)",
        questions=QUESTIONS,
        build_items=build_items,
        takes_condition=False,
        export_formats=("dstc-labels",),
        summarise=summarise,
        guideline=GUIDELINE,
        preview=lambda payload: payload["asr"][0][0] if payload.get("asr") else "(no speech recognised)",
        data=item_data,
    )
)
