"""Where the demo data lives (the shared fixtures), and what the home page shows of it."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def fixtures_dir() -> Path:
    """``DST_JUDGE_FIXTURES`` or ``../shared/fixtures`` beside the repository."""
    return Path(os.environ.get("DST_JUDGE_FIXTURES", REPO.parent / "shared" / "fixtures"))


def demo_scores() -> dict | None:
    from annotate.readers import load_dialogues
    from metrics.corpus import ScoreSettings, score_dialogues

    folder = fixtures_dir() / "fga_human_eval"
    if not folder.is_dir():
        return None
    return score_dialogues(load_dialogues([folder]), ScoreSettings())
