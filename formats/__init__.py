"""The lowest layer: the data model (``formats.dialogue``), one reader module per input format (and
the writer that mirrors it, where there is one), tidy votes and gold CSV, CSV safety, reader errors.
Imports nothing of ours.  This module: format auto-detection and loading dialogues from paths.

Every reader raises :class:`ReaderError` (file + line or key + message) on bad
input and returns nothing partial.  Importing this package is cheap (no numpy,
no database), so the metrics CLI starts fast.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from formats import coco_eval, dstc, fga_json, fga_text, trade_dials, trade_predictions
from formats.dialogue import Dialogue
from formats.errors import ReaderError, parse_json, read_text

# JSON formats in the order they are tried; each module has sniff(document) and read(path, document=...).
JSON_READERS = {module.FORMAT: module for module in (fga_json, trade_predictions, trade_dials)}
FORMATS = (fga_text.FORMAT, *JSON_READERS)
# Formats that hold no belief-state dialogues; study creation reads them with their own modules.
OTHER_JSON = {coco_eval.FORMAT: coco_eval, dstc.FORMAT: dstc}

__all__ = ["FORMATS", "ReaderError", "detect_format", "load_dialogues", "read_file", "read_file_detected"]


def detect_format(path: str | os.PathLike[str], text: str) -> tuple[str, Any]:
    """The format name and, for JSON formats, the parsed document."""
    if fga_text.sniff(text):
        return fga_text.FORMAT, None
    stripped = text.lstrip()
    if not stripped.startswith(("{", "[")):
        raise ReaderError(path, "line 1", f"unknown format: not JSON and not FGA text (known formats: {', '.join(FORMATS)})")
    document = parse_json(path, text)
    for name, module in {**JSON_READERS, **OTHER_JSON}.items():
        if module.sniff(document):
            return name, document
    raise ReaderError(path, "", f"unknown JSON layout (known formats: {', '.join((*FORMATS, *OTHER_JSON))})")


def read_file(path: str | os.PathLike[str], fmt: str | None = None, data: bytes | None = None) -> list[Dialogue]:
    """Read one file (``data`` may hold its bytes, e.g. from an upload)."""
    return read_file_detected(path, fmt, data)[1]


def read_file_detected(
    path: str | os.PathLike[str], fmt: str | None = None, data: bytes | None = None
) -> tuple[str, list[Dialogue]]:
    """:func:`read_file`, with the format the file was read as (detected unless ``fmt`` is given)."""
    if fmt is not None and fmt not in FORMATS:
        raise ReaderError(path, "", f"unknown format {fmt!r} (known formats: {', '.join(FORMATS)})")
    text = read_text(path, data)
    detected, document = detect_format(path, text) if fmt is None else (fmt, None)
    return detected, _read_detected(path, text, detected, document)


def _read_detected(path: str | os.PathLike[str], text: str, detected: str, document: Any) -> list[Dialogue]:
    if detected in OTHER_JSON:
        raise ReaderError(path, "", f"is a {detected} file, which holds no predicted belief states")
    if detected == fga_text.FORMAT:
        return fga_text.read(path, text.encode("utf-8"))
    if document is None:
        document = parse_json(path, text)
    dialogues: list[Dialogue] = JSON_READERS[detected].read(path, document=document)
    return dialogues


def expand_paths(paths: list[str | os.PathLike[str]]) -> list[Path]:
    """Files as given; folders become their .json / .txt files, sorted."""
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            files.extend(sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in (".json", ".txt")))
        else:
            files.append(path)
    return files


def load_dialogues(paths: list[str | os.PathLike[str]], fmt: str | None = None) -> list[Dialogue]:
    """Dialogues of every file, in order.  A dialogue id seen twice is an error."""
    dialogues: list[Dialogue] = []
    seen: dict[str, str] = {}
    for path in expand_paths(paths):
        for dialogue in read_file(path, fmt):
            if dialogue.id in seen:
                raise ReaderError(path, f"dialogue {dialogue.id!r}", f"already read from {seen[dialogue.id]}")
            seen[dialogue.id] = str(path)
            dialogues.append(dialogue)
    if not dialogues:
        raise ReaderError(", ".join(map(str, paths)), "", "no dialogues found")
    return dialogues
