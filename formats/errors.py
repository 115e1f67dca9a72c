"""The one error type every reader raises, and helpers to read files safely."""

from __future__ import annotations

import csv
import io
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from formats.settings import settings

# Files larger than this are refused before they are read (DST_JUDGE_MAX_FILE_MB overrides).
DEFAULT_MAX_FILE_MB = 200
# A JSON document with more values than this is refused before it is parsed (DST_JUDGE_MAX_JSON_VALUES
# overrides).  Parsing costs 40-70 bytes per value on the fixtures (one object or list alone, 56-64),
# so the cap bounds a parse to some 350 MB whatever the file holds: a 195 MB ``[{},{},...]`` (65
# million empty objects, 4.5 GB once parsed) is refused after the check.  The largest real inputs
# (a TRADE prediction file of a whole MultiWOZ test set) hold about a million.
DEFAULT_MAX_JSON_VALUES = 5_000_000
# One text field of an input file (an utterance, a dialogue id, a slot or its value, a name, a
# comment, a JSON key, a CSV cell, a line of an FGA text file) holds at most this many characters; a
# longer one is refused with the file and its place (issue 37: a single 50 MB utterance became one
# item, which the app then held and served whole).  The real inputs' longest is some 600 characters
# (a booking confirmation).  The HTTP API caps an answer and a comment the same (annotate.api.limits).
MAX_FIELD_CHARS = 20_000


class ReaderError(ValueError):
    """Bad input: the message names the file and the place (line or key)."""

    def __init__(self, path: str | os.PathLike[str], place: str, message: str):
        self.path = str(path)
        self.place = place
        self.message = message
        where = f"{self.path}:{place}" if place else self.path
        super().__init__(f"{where}: {message}")


def max_file_bytes() -> int:
    return int(settings().max_file_mb * 1024 * 1024)


def read_text(path: str | os.PathLike[str], data: bytes | None = None) -> str:
    """The file's text as UTF-8; refuses huge files and names the line of a bad byte."""
    if data is None:
        try:
            size = Path(path).stat().st_size
        except OSError as err:
            raise ReaderError(path, "", f"cannot read the file ({err.strerror or err})") from None
        if size > max_file_bytes():
            raise ReaderError(path, "", f"the file is {size / 1e6:.1f} MB, over the {max_file_bytes() / 1e6:.0f} MB limit")
        try:
            data = Path(path).read_bytes()
        except OSError as err:
            raise ReaderError(path, "", f"cannot read the file ({err.strerror or err})") from None
    elif len(data) > max_file_bytes():
        raise ReaderError(path, "", f"the file is {len(data) / 1e6:.1f} MB, over the {max_file_bytes() / 1e6:.0f} MB limit")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise ReaderError(path, f"line {line}", f"not UTF-8 text (byte 0x{data[err.start]:02x} at offset {err.start})") from None
    if text.startswith("\ufeff"):
        text = text[1:]
    return text


def max_json_values() -> int:
    return settings().max_json_values


_STRUCTURE = "{[,:"  # every value but the first is preceded by one of these
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')


def json_values(text: str, cap: int) -> int:
    """Over ``cap`` exactly when the JSON text holds more than ``cap`` values (objects, arrays, keys,
    strings, numbers, literals), counted without parsing and without copying the text: its ``{ [ , :``
    outside strings, plus one.  At most ``cap``, the count may include those inside strings.

    >>> json_values('{"a": [1, 2], "b": {}}', 100)
    8
    >>> json_values('["a,b,c,d", {}]', 4)  # the commas inside the string do not count
    4
    >>> json_values("[{},{},{}]", 5) > 5
    True
    """
    quick = sum(text.count(c) for c in _STRUCTURE) + 1  # with those inside strings: never fewer
    if quick <= cap:
        return quick
    inside = strings = 0
    for string in _STRING.finditer(text):  # only when the quick count is over: take away what strings hold
        strings += 1
        if strings > cap:  # every string is a value
            return strings
        start, end = string.span()
        if end - start > 2:
            inside += sum(text.count(c, start, end) for c in _STRUCTURE)
    return quick - inside


def parse_json(path: str | os.PathLike[str], text: str) -> Any:
    """json.loads with the file, line and column in the message; a document with more than
    ``max_json_values()`` values is refused before it is parsed (memory stays bounded)."""
    if not text.strip():
        raise ReaderError(path, "", "the file is empty")
    cap = max_json_values()
    if json_values(text, cap) > cap:
        raise ReaderError(
            path,
            "",
            f"more than {cap:,} JSON values (objects, lists, keys, strings, numbers): over the limit (DST_JUDGE_MAX_JSON_VALUES)",
        )
    try:
        document = json.loads(text)
    except json.JSONDecodeError as err:
        raise ReaderError(path, f"line {err.lineno} column {err.colno}", f"broken JSON: {err.msg}") from None
    except RecursionError:
        raise ReaderError(path, "", "JSON nested too deeply") from None
    if len(text) > MAX_FIELD_CHARS and _has_long_text(document, MAX_FIELD_CHARS):
        place, size = _long_text(document, MAX_FIELD_CHARS)
        raise ReaderError(path, place, too_long(size))
    return document


def too_long(size: int) -> str:
    return f"a text of {size:,} characters: one field holds at most {MAX_FIELD_CHARS:,}"


def check_field(path: str | os.PathLike[str], place: str, text: str) -> str:
    """``text``, or a ReaderError naming ``path`` and ``place`` when it is over ``MAX_FIELD_CHARS``."""
    if len(text) > MAX_FIELD_CHARS:
        raise ReaderError(path, place, too_long(len(text)))
    return text


def _has_long_text(document: Any, cap: int) -> bool:
    """Whether a string or a key of the parsed JSON document is longer than ``cap`` (one pass, no
    recursion: a tenth of the parse's time)."""
    stack = [document]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            if len(value) > cap:
                return True
        elif isinstance(value, dict):
            for key, inner in value.items():
                if len(key) > cap:
                    return True
                stack.append(inner)
        elif isinstance(value, list):
            stack.extend(value)
    return False


def _long_text(document: Any, cap: int) -> tuple[str, int]:
    """The place of the first string or key longer than ``cap`` (a JSON path: ``[3].dialogue[2].transcript``)
    and its length; called once ``_has_long_text`` found one."""
    stack = [(document, "")]
    while stack:
        value, place = stack.pop()
        if isinstance(value, str) and len(value) > cap:
            return place or "the document", len(value)
        if isinstance(value, dict):
            for key, inner in reversed(value.items()):
                shown = key if len(key) <= 40 else key[:40] + "…"
                if len(key) > cap:
                    return f"{place} key {shown!r}".strip(), len(key)
                stack.append((inner, f"{place}[{shown!r}]"))
        elif isinstance(value, list):
            stack.extend((inner, f"{place}[{i}]") for i, inner in reversed(list(enumerate(value))))
    return "", 0


def expect(condition: bool, path: str | os.PathLike[str], place: str, message: str) -> None:
    if not condition:
        raise ReaderError(path, place, message)


def csv_rows(path: str | os.PathLike[str], text: str, required: set[str], what: str) -> Iterator[tuple[int, dict[str, str]]]:
    """``(line, row)`` for each data row of a CSV text, header checked first.

    Quoted cells may hold line breaks (our exports quote a lone carriage return), so the text
    is read with ``newline=""`` as the csv module asks; a malformed file becomes a ReaderError
    naming the line instead of a csv.Error.
    """
    reader = csv.DictReader(io.StringIO(text, newline=""))
    try:
        columns = set(reader.fieldnames or [])
        if not required <= columns:
            missing = ", ".join(sorted(required - columns))
            raise ReaderError(path, "line 1", f"missing column(s) {missing}; {what}")
        for row in reader:
            if None in row:
                raise ReaderError(path, f"line {reader.line_num}", "more cells than columns")
            for column, cell in row.items():
                if cell is not None and len(cell) > MAX_FIELD_CHARS:
                    raise ReaderError(path, f"line {reader.line_num} column {column[:40]!r}", too_long(len(cell)))
            yield reader.line_num, row
    except csv.Error as err:
        raise ReaderError(path, f"line {reader.line_num}", f"broken CSV: {err}") from None
