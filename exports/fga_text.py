"""FGA human-evaluation text (the format of SuvodipDey/FGA ``human_evaluation_files``).

One file per dialogue, ``<condition>/<dialogue id>.txt``, in the layout the reader
(``annotate.readers.fga_text``) reads.  States are written as the originals are: Python
dict literals (an empty gold state is ``{{}}`` and an empty prediction ``{}``, as in the
originals), and domain-slots in the order of their
MultiWOZ names sorted as strings, where booking slots carry a ``book`` prefix
(``hotel-area`` < ``hotel-book day`` < ``hotel-internet``) — the order in every one of the
shared files.  Other domains' slots sort by name.

>>> from metrics.dialogue import Dialogue, Turn
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

from metrics.dialogue import BeliefState, Dialogue

# MultiWOZ's booking slots: their original names start with "book " (the FGA files' order).
BOOKING_SLOTS = {
    ("hotel", "day"), ("hotel", "people"), ("hotel", "stay"),
    ("restaurant", "day"), ("restaurant", "people"), ("restaurant", "time"),
    ("train", "people"),
}  # fmt: skip
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
