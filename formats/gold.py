"""Attention-check (gold) answers: a CSV with item, question, value and an optional condition."""

from __future__ import annotations

import os
from typing import Any

from formats.errors import ReaderError, csv_rows, read_text


def read_gold(path: str | os.PathLike[str], text: str | None = None) -> list[dict[str, Any]]:
    """Attention-check answers: CSV with item, question, value (and optional condition)."""
    text = read_text(path) if text is None else text
    rows = [row for _, row in csv_rows(path, text, {"item", "question", "value"}, "a gold file has item, question, value")]
    if not rows:
        raise ReaderError(path, "line 2", "no gold answers in the file")
    return rows
