"""A MultiWOZ-test-sized corpus (1,000 dialogues, about 7,400 turns) built from the fixtures.

The 10 real SOM-DST dialogues are repeated under new ids with seeded perturbations of
the predictions (a triplet dropped, a value changed), so error patterns vary.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

from formats import load_dialogues  # noqa: E402
from formats.dialogue import state_to_nested  # noqa: E402


def fixtures_dir() -> Path:
    """The shared fixtures (``DST_JUDGE_FIXTURES``, else ``../shared/fixtures`` beside the checkout): the
    10 real dialogues and TRADE's predictions, more than the demo's sample inside the package."""
    return Path(os.environ.get("DST_JUDGE_FIXTURES") or Path(__file__).resolve().parents[2] / "shared" / "fixtures")


def build(n_dialogues: int = 1000, seed: int = 0) -> dict:
    rng = random.Random(seed)
    base = load_dialogues([fixtures_dir() / "fga_human_eval"]) + load_dialogues([fixtures_dir() / "trade_predictions"])
    corpus = {}
    for i in range(n_dialogues):
        dialogue = base[i % len(base)]
        turns = {}
        for turn in dialogue.turns:
            pred = set(turn.pred)
            if pred and rng.random() < 0.08:
                pred.discard(rng.choice(sorted(pred)))
            if pred and rng.random() < 0.05:
                d, s, _ = rng.choice(sorted(pred))
                pred = {t for t in pred if t[:2] != (d, s)} | {(d, s, "changed")}
            turns[str(turn.index)] = {"gt": state_to_nested(turn.gold), "pr": state_to_nested(frozenset(pred))}
        corpus[f"B{i:04d}-{dialogue.id}"] = turns
    return corpus


def dialogue_file(path: Path) -> Path:
    """The TRADE dialogue file (``test_dials.json`` format) for the corpus written at ``path``, beside it as
    ``<stem>_dials.json``: a satisfaction study of FGA result JSON needs its utterances (issue 24, item 6).
    Each dialogue gets its base dialogue's utterances where the fixtures have them (the FGA text files),
    else a made-up line per turn; the study is made of ``[path, dialogue_file(path)]``."""
    corpus = json.loads(path.read_text())
    base = {d.id: d for d in load_dialogues([fixtures_dir() / "fga_human_eval"])}
    dialogues = []
    for dialogue_id, turns in corpus.items():
        known = base.get(dialogue_id.split("-", 1)[-1])
        records = []
        for position in range(len(turns)):
            turn = known.turns[position] if known is not None and position < len(known.turns) else None
            records.append(
                {
                    "turn_idx": position,
                    "turn_label": [],
                    "belief_state": [],
                    "system_transcript": turn.system if turn else f"system turn {position}",
                    "transcript": turn.user if turn else f"user turn {position}",
                }
            )
        dialogues.append({"dialogue_idx": dialogue_id, "domains": [], "dialogue": records})
    out = path.with_name(f"{path.stem}_dials.json")
    out.write_text(json.dumps(dialogues))
    return out


def write(path: Path, n_dialogues: int = 1000) -> tuple[int, int]:
    corpus = build(n_dialogues)
    path.write_text(json.dumps(corpus))
    return len(corpus), sum(len(t) for t in corpus.values())
