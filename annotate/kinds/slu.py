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

from annotate.kinds.base import ItemContext, ItemDraft, Kind, context_turns, register
from formats import ReaderError, dstc
from formats.dstc import TRANSCRIPTION_STATUSES
from formats.tidy import VoteTable, votes_from_rows
from metrics.analysis import agreement_all


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
    regrouped = by_act_type(votes)
    if not regrouped.votes:
        return {}
    agreement = agreement_all(regrouped, level=settings.level, resamples=settings.resamples, seed=settings.seed)
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


ACT_KEYS = tuple("123456789")  # act n's shortcut; s is skip, Ctrl+Enter saves


def _flip(state, key: str) -> None:
    """A shortcut press: unmarked or incorrect -> correct, correct -> incorrect."""
    state[key] = "0" if state.get(key) == "1" else "1"


def render(st, ctx: ItemContext) -> None:
    """Everything to act on is on the first screen on arrival at 1400x900 (``tests/browser/test_browser_fold.py``):
    on the left the turn (its system prompt, the recording, the transcription box with its status, then the
    ASR N-best it starts from); on the right *Save and next*, *Skip* and the comment, then one compact row
    per recognised act.  The two turns before and after are context and come below both columns."""
    item, answers = ctx.item, ctx.answers
    view = item_view(item.payload)
    turn, acts = st.columns([1, 1], gap="medium")
    with turn:
        with st.container(border=True):
            st.caption("System prompt of this turn")
            st.text(view["system"])
            recording = ctx.audio() if item.payload.get("audio") else None
            if recording is not None:  # the caller's own words, when the call folder had the audio
                st.audio(recording[2], format=recording[1])
            transcription_key = f"transcription-{item.id}"
            if transcription_key not in ctx.state:
                ctx.state[transcription_key] = answers.get("transcription", view["transcription_start"])
            box, status_box = st.columns([3, 2])
            box.text_input("Transcription (what the caller actually said)", key=transcription_key)
            status_now = answers.get("transcription_status", view["transcription_status"])
            status = status_box.selectbox(
                "Transcription status",
                TRANSCRIPTION_STATUSES,
                index=TRANSCRIPTION_STATUSES.index(status_now),
                key=f"status-{item.id}",
            )
            st.caption("What the recogniser heard (ASR N-best)")
            st.text("\n".join(view["asr"]) or "(nothing)")
    with acts:
        keys = {name: f"act-{item.id}-{position}" for position, (name, _score, _auto) in enumerate(view["acts"])}
        for name, _score, auto in view["acts"]:  # the defaults live in the state, so a shortcut can flip them
            if keys[name] not in ctx.state:
                ctx.state[keys[name]] = answers.get(name, "1" if auto else None)
        save, skip, comment = st.columns([5, 2, 4])
        if save.button("Save and next", shortcut="Ctrl+Enter", key=ctx.key("slu-save"), type="primary"):
            choices = {name: ctx.state.get(key) for name, key in keys.items()}
            missing = [name for name, value in choices.items() if value is None]
            if missing:
                st.warning(f"Mark every act correct or incorrect first ({len(missing)} left).")
            else:
                answers_now = {**choices, "transcription": ctx.state[transcription_key], "transcription_status": status}
                # A change adds events only for what changed; a first judgement stores everything.
                changed = {q: v for q, v in answers_now.items() if answers.get(q) != v} if answers else answers_now
                if changed:
                    ctx.vote(changed, True)
                else:
                    ctx.finish()
        with skip:
            ctx.skip_button()
        with comment.popover("Comment (optional)", use_container_width=True):
            ctx.comment_box()
        st.markdown("**Recognised acts: does each capture the complete meaning?**")
        with st.container(gap="xsmall"):  # compact rows: eight acts fit on the first screen
            _act_rows(st, ctx, view, keys)
        if any(auto for _name, _score, auto in view["acts"]) and not answers:
            st.caption("auto: pre-marked correct, it matches the label file")
    if view["before"] or view["after"]:
        st.caption("Context: the turns before and after this one")
        context_turns(st, view["before"])
        st.text(f"[{item.payload['turn_index']}] (this turn)")
        context_turns(st, view["after"])


def _act_rows(st, ctx: ItemContext, view: dict, keys: dict[str, str]) -> None:
    """One row per recognised act: its shortcut key, its name and score, correct / incorrect."""
    if not view["acts"]:
        st.text("The recogniser found no act in this turn: check the transcription and save.")
    for position, (name, score, auto) in enumerate(view["acts"]):
        key = keys[name]
        shortcut = ACT_KEYS[position] if position < len(ACT_KEYS) else None
        press, label, choice = st.columns([2, 9, 7], vertical_alignment="center", gap="small")
        if shortcut:
            press.button(
                "toggle",
                shortcut=shortcut,
                key=f"{key}-key",
                on_click=_flip,
                args=(ctx.state, key),
                help=f"Press {shortcut}: correct, press again: incorrect",
            )
        unjudged = ctx.answers.get(name) is None
        label.text(f"{name}  {score:.2f}" + ("  auto" if auto and unjudged else ""))
        with choice:
            st.radio(
                f"act {position + 1}",
                ["1", "0"],
                format_func=lambda v: "correct" if v == "1" else "incorrect",
                horizontal=True,
                label_visibility="collapsed",
                key=key,
            )


KIND = register(
    Kind(
        name="slu",
        label="SLU labels",
        inputs="DSTC call folders (as a .zip in the app)",
        questions=QUESTIONS,
        build_items=build_items,
        render=render,
        shortcuts=(("1-9", "act n: correct, again: incorrect"), ("Ctrl+Enter", "save and next"), ("s", "skip")),
        takes_condition=False,
        export_formats=("dstc-labels",),
        summarise=summarise,
        guideline=GUIDELINE,
        preview=lambda payload: payload["asr"][0][0] if payload.get("asr") else "(no speech recognised)",
    )
)
