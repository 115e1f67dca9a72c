"""FGA human-evaluation text (SuvodipDey/FGA ``human_evaluation_files``).

One dialogue per file::

    Dialogue ID : PMUL4648.json
    ----------------------
    Turn: 0
    Sys :
    Usr : Please find a restaurant called Nusha.

    GT  : {{}}
    PR  : {'restaurant': {'name': 'nusha'}}

    Matched : False

    ----------------------

States are Python dict literals (read with ``ast.literal_eval``, never ``eval``);
``{{}}`` is the empty state.  A Sys / Usr utterance may run over several lines (the
lines that follow it and start with no field name).  ``Matched`` must agree with GT == PR.

Writing (the mirror of reading): one file per dialogue, ``<condition>/<dialogue id>.txt``.
States are written as the originals are: Python dict literals (an empty gold state is ``{{}}``
and an empty prediction ``{}``, as in the originals), and domain-slots in the order of their
MultiWOZ names sorted as strings, where booking slots carry a ``book`` prefix
(``hotel-area`` < ``hotel-book day`` < ``hotel-internet``) — the order in every one of the
shared files.  Other domains' slots sort by name.

>>> from formats.dialogue import Dialogue, Turn
>>> state = frozenset({("hotel", "internet", "yes"), ("hotel", "day", "monday"), ("hotel", "area", "north")})
>>> state_text(state)
"{'hotel': {'area': 'north', 'day': 'monday', 'internet': 'yes'}}"
>>> print(dialogue_text(Dialogue("D1.json", [Turn(0, "", "hi", frozenset(), frozenset())])))
Dialogue ID : D1.json
----------------------
Turn: 0
Sys :
Usr : hi
<BLANKLINE>
GT  : {{}}
PR  : {}
<BLANKLINE>
Matched : True
<BLANKLINE>
----------------------
<BLANKLINE>
"""

from __future__ import annotations

import ast
import os
import re
from typing import Any

from formats.dialogue import BeliefState, Dialogue, Turn, state_from_nested
from formats.errors import ReaderError, check_field, read_text

FORMAT = "fga-text"
HEADER = "Dialogue ID :"
_FIELD = re.compile(r"^(Dialogue ID|Turn|Sys|Usr|GT|PR|Matched)\s*:\s?(.*)$")


def sniff(text: str) -> bool:
    return text.lstrip().startswith(HEADER)


def _state(text: str, path: str | os.PathLike[str], line_no: int) -> BeliefState:
    text = text.strip()
    if text == "{{}}":
        return frozenset()
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        raise ReaderError(path, f"line {line_no}", f"not a Python dict literal: {text[:80]!r}") from None
    try:
        return state_from_nested(value)
    except ValueError as err:
        raise ReaderError(path, f"line {line_no}", str(err)) from None


def read(path: str | os.PathLike[str], data: bytes | None = None) -> list[Dialogue]:
    text = read_text(path, data)
    lines = text.splitlines()
    dialogue_id = None
    turns: list[Turn] = []
    current: dict[str, Any] = {}
    current_line = 0
    last_key = ""

    def finish_turn(line_no: int) -> None:
        missing = [k for k in ("Sys", "Usr", "GT", "PR", "Matched") if k not in current]
        if missing:
            raise ReaderError(path, f"line {current_line}", f"turn {current['Turn']} lacks {', '.join(missing)}")
        gold, pred = current["GT"], current["PR"]
        matched = current["Matched"]
        if matched != (gold == pred):
            raise ReaderError(path, f"line {current['Matched_line']}", f"Matched : {matched} disagrees with GT and PR")
        turns.append(Turn(index=current["Turn"], system=current["Sys"], user=current["Usr"], gold=gold, pred=pred))

    for line_no, line in enumerate(lines, start=1):
        check_field(path, f"line {line_no}", line)  # one field's cap, before the line is looked at
        if not line.strip() or set(line.strip()) == {"-"}:
            continue
        match = _FIELD.match(line)
        if not match:
            # Utterances may span lines (e.g. a booking confirmation): continue the last Sys / Usr.
            if last_key in ("Sys", "Usr"):
                current[last_key] = check_field(path, f"line {line_no}", f"{current[last_key]}\n{line.strip()}")
                continue
            raise ReaderError(path, f"line {line_no}", f"unexpected line {line[:60]!r}")
        key, value = match.group(1), match.group(2)
        last_key = key
        if key == "Dialogue ID":
            if dialogue_id is not None:
                raise ReaderError(path, f"line {line_no}", "a second 'Dialogue ID' line")
            dialogue_id = value.strip()
            if not dialogue_id:
                raise ReaderError(path, f"line {line_no}", "empty dialogue id")
            continue
        if dialogue_id is None:
            raise ReaderError(path, f"line {line_no}", "the file must start with 'Dialogue ID :'")
        if key == "Turn":
            if current:
                finish_turn(line_no)
            try:
                index = int(value.strip())
            except ValueError:
                raise ReaderError(path, f"line {line_no}", f"turn number {value.strip()!r} is not an integer") from None
            if index != len(turns):
                raise ReaderError(path, f"line {line_no}", f"turn {index} out of order (expected turn {len(turns)})")
            current = {"Turn": index}
            current_line = line_no
            continue
        if not current:
            raise ReaderError(path, f"line {line_no}", f"'{key}' before the first 'Turn:'")
        if key in current:
            raise ReaderError(path, f"line {line_no}", f"a second '{key}' in turn {current['Turn']}")
        if key in ("Sys", "Usr"):
            current[key] = value.strip()
        elif key in ("GT", "PR"):
            current[key] = _state(value, path, line_no)
        else:
            if value.strip() not in ("True", "False"):
                raise ReaderError(path, f"line {line_no}", f"Matched must be True or False, not {value.strip()!r}")
            current[key] = value.strip() == "True"
            current["Matched_line"] = line_no
    if dialogue_id is None:
        raise ReaderError(path, "", "no 'Dialogue ID :' line (empty or not an FGA text file)")
    if current:
        finish_turn(len(lines))
    if not turns:
        raise ReaderError(path, "", f"dialogue {dialogue_id} has no turns")
    return [Dialogue(dialogue_id, turns, source=str(path))]


# --- writing ---------------------------------------------------------------------------------

# MultiWOZ's booking slots: their original names start with "book " (the FGA files' order).
BOOKING_SLOTS = {
    ("hotel", "day"),
    ("hotel", "people"),
    ("hotel", "stay"),
    ("restaurant", "day"),
    ("restaurant", "people"),
    ("restaurant", "time"),
    ("train", "people"),
}
SEPARATOR = "-" * 22


def _order(triplet: tuple[str, str, str]) -> str:
    domain, slot, _ = triplet
    return f"{domain}-{'book ' if (domain, slot) in BOOKING_SLOTS else ''}{slot}"


def state_text(state: BeliefState, empty: str = "{{}}") -> str:
    if not state:
        return empty
    nested: dict[str, dict[str, str]] = {}
    for domain, slot, value in sorted(state, key=_order):
        nested.setdefault(domain, {})[slot] = value
    return repr(nested)


def dialogue_text(dialogue: Dialogue) -> str:
    lines = [f"Dialogue ID : {dialogue.id}", SEPARATOR]
    for turn in dialogue.turns:
        pred = turn.pred or frozenset()
        lines += [
            f"Turn: {turn.index}",
            f"Sys : {turn.system}".rstrip(),
            f"Usr : {turn.user}".rstrip(),
            "",
            f"GT  : {state_text(turn.gold)}",
            f"PR  : {state_text(pred, empty='{}')}",
            "",
            f"Matched : {turn.gold == pred}",
            "",
            SEPARATOR,
        ]
    return "\n".join(lines) + "\n"


def file_name(dialogue_id: str) -> str:
    """``PMUL4648.json`` → ``PMUL4648.json.txt``, the originals' naming; path separators replaced."""
    safe = dialogue_id.replace("/", "_").replace("\\", "_").lstrip(".") or "dialogue"
    return f"{safe}.txt"
