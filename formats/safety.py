"""Spreadsheet safety: neutralise CSV cells that a spreadsheet would run as a formula.

A text cell gets a leading apostrophe when it starts with ``=``, ``+``, ``-``, ``@``, tab or
carriage return, also when any leading whitespace (spaces, tabs, line breaks, no-break or
ideographic spaces) comes before the ``= + - @``: some spreadsheets trim it and run the rest.
Numbers (ints, floats, and strings that are plain numbers such as ``-0.5`` or `` -0.5``) stay numbers.

A text that itself starts with apostrophes before such a cell (``'=x``) gets one more, so that
:func:`unneutralise` gives every text back exactly: ``unneutralise(neutralise(s)) == s`` for every
string (our own readers, formats.tidy and annotate.judging.votes, read our exports back as written).

>>> neutralise("=HYPERLINK(1)"), neutralise(" =2+5"), neutralise("\\t@x")
("'=HYPERLINK(1)", "' =2+5", "'\\t@x")
>>> neutralise("-0.5"), neutralise(-1), neutralise("@SUM(A1)"), neutralise("a=b")
('-0.5', -1, "'@SUM(A1)", 'a=b')
>>> unneutralise(neutralise("+cmd")), neutralise("'=x"), unneutralise(neutralise("'=x"))
('+cmd', "''=x", "'=x")
"""

from __future__ import annotations

import re

FORMULA_START = ("=", "+", "-", "@")
DANGEROUS_START = (*FORMULA_START, "\t", "\r")
_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


def _runs(text: str) -> bool:
    """Whether a spreadsheet could take ``text`` (a cell without our apostrophe) for a formula."""
    if text.startswith(("\t", "\r")):
        return True
    return text.lstrip().startswith(FORMULA_START) and not _NUMBER.match(text.strip())


def _needs_apostrophe(text: str) -> bool:
    # Apostrophes already in front are looked through, so a typed '=x is kept apart from a neutralised =x.
    return _runs(text.lstrip("'"))


def neutralise(value: object) -> object:
    if not isinstance(value, str) or not _needs_apostrophe(value):
        return value
    return "'" + value


def unneutralise(value: str) -> str:
    """Undo :func:`neutralise` when reading our own CSV back."""
    if value.startswith("'") and _needs_apostrophe(value[1:]):
        return value[1:]
    return value


def neutralise_row(row: dict[str, object]) -> dict[str, object]:
    return {key: neutralise(value) for key, value in row.items()}
