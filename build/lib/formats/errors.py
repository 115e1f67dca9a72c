"""The one error type every reader raises, and helpers to read files safely."""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Iterator
from pathlib import Path

# Files larger than this are refused before they are read (DST_JUDGE_MAX_FILE_MB overrides).
DEFAULT_MAX_FILE_MB = 200


class ReaderError(ValueError):
    """Bad input: the message names the file and the place (line or key)."""

    def __init__(self, path: str | os.PathLike, place: str, message: str):
        self.path = str(path)
        self.place = place
        self.message = message
        where = f"{self.path}:{place}" if place else self.path
        super().__init__(f"{where}: {message}")


def max_file_bytes() -> int:
    return int(float(os.environ.get("DST_JUDGE_MAX_FILE_MB", DEFAULT_MAX_FILE_MB)) * 1024 * 1024)


def read_text(path: str | os.PathLike, data: bytes | None = None) -> str:
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


def parse_json(path: str | os.PathLike, text: str):
    """json.loads with the file, line and column in the message."""
    if not text.strip():
        raise ReaderError(path, "", "the file is empty")
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise ReaderError(path, f"line {err.lineno} column {err.colno}", f"broken JSON: {err.msg}") from None
    except RecursionError:
        raise ReaderError(path, "", "JSON nested too deeply") from None


def expect(condition: bool, path: str | os.PathLike, place: str, message: str) -> None:
    if not condition:
        raise ReaderError(path, place, message)


def csv_rows(path: str | os.PathLike, text: str, required: set[str], what: str) -> Iterator[tuple[int, dict]]:
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
            yield reader.line_num, row
    except csv.Error as err:
        raise ReaderError(path, f"line {reader.line_num}", f"broken CSV: {err}") from None
