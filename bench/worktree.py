"""The code "before" of a side-by-side bench: a ``git worktree add --detach`` of a ref in a temporary
folder, removed at the end (``bench_analysis``, ``bench_analysis_cpu``)."""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@contextmanager
def checkout(ref: str) -> Iterator[Path]:
    """A worktree of ``ref`` for the block; removed (``--force``) however the block ends."""
    folder = Path(tempfile.mkdtemp(prefix="dst-bench-before-"))
    subprocess.run(["git", "worktree", "add", "--detach", str(folder), ref], cwd=ROOT, check=True, capture_output=True)
    try:
        yield folder
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(folder)], cwd=ROOT, capture_output=True)
