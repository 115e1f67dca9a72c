"""Spreadsheet safety: neutralise CSV cells that a spreadsheet would run as a formula.

A text cell starting with ``=``, ``+``, ``-``, ``@``, tab or carriage return gets a
leading apostrophe.  Numbers (ints, floats, and strings that are plain numbers such as
``-0.5``) stay numbers.

>>> neutralise("=HYPERLINK(1)")
"'=HYPERLINK(1)"
>>> neutralise("-0.5"), neutralise(-1), neutralise("@SUM(A1)")
('-0.5', -1, "'@SUM(A1)")
>>> unneutralise(neutralise("+cmd"))
'+cmd'
"""

from __future__ import annotations

import re

DANGEROUS_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


def neutralise(value):
    if not isinstance(value, str) or not value.startswith(DANGEROUS_START) or _NUMBER.match(value):
        return value
    return "'" + value


def unneutralise(value: str) -> str:
    """Undo :func:`neutralise` when reading our own CSV back."""
    if value.startswith("'") and value[1:].startswith(DANGEROUS_START) and not _NUMBER.match(value[1:]):
        return value[1:]
    return value


def neutralise_row(row: dict) -> dict:
    return {key: neutralise(value) for key, value in row.items()}
