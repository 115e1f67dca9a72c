"""One rule for a number written as text, and for a study's or an item's reference (issue 37).

A number is ASCII digits, ``0`` to ``9``, and nothing else: no sign, no space, no ``_``, no ``.``.
``str.isdigit()`` is not that rule: it accepts superscripts (``¹``), circled digits (``①``) and the
digits of other scripts (Arabic-Indic ``١``), which ``int()`` then refuses (a 500 from the API) or
reads as another number (``١`` was study 1).  A reference (the API's ``{study}`` and ``{item}``, the
``judge-run`` command's study, a crowd join link's study) is an id when it is a number, and a name,
taken as it is, otherwise.  The API, the CLI and the join links use these functions and no other.

Standard library only: the API's reference client (``annotate.api.client``) runs wherever Python does.
"""

from __future__ import annotations

import re

MAX_ID = 2**31 - 1  # ids are 32-bit integers in the store
MAX_DIGITS = 4_000  # a longer run of digits is no number we count or look up (int() stops at 4,300)
_DIGITS = re.compile(r"[0-9]+")


def number(text: str) -> int | None:
    """The whole number that ``text`` spells in ASCII digits, else None.

    >>> number("12"), number("007"), number("0")
    (12, 7, 0)
    >>> [number(t) for t in ("¹", "①", "١", "１", "+1", " 1", "1_0", "1.0", "", "-1")]
    [None, None, None, None, None, None, None, None, None, None]
    """
    if not isinstance(text, str) or len(text) > MAX_DIGITS or not _DIGITS.fullmatch(text):
        return None
    return int(text)


def reference(text: str) -> int | str:
    """A study's or an item's reference: its id when ``text`` is ASCII digits, else its name.

    >>> reference("12"), reference("dst-study"), reference("١"), reference("²")
    (12, 'dst-study', '١', '²')
    >>> reference("2147483648")  # an id past the store's: one no row has
    2147483648
    """
    found = number(text)
    return text if found is None else found


def id_of(text: str) -> int | None:
    """The id a reference names when it is ASCII digits within the store's ids (1 to ``MAX_ID``),
    else None (a name, or an id no row can have).

    >>> id_of("3"), id_of("0"), id_of("2147483648"), id_of("٣"), id_of("three")
    (3, None, None, None, None)
    """
    found = number(text)
    return found if found is not None and 1 <= found <= MAX_ID else None
