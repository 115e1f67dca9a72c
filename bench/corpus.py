"""A MultiWOZ-test-sized corpus (1,000 dialogues, about 7,400 turns) built from the fixtures.

The 10 real SOM-DST dialogues are repeated under new ids with seeded perturbations of
the predictions (a triplet dropped, a value changed), so error patterns vary.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from annotate.demo import fixtures_dir  # noqa: E402
from formats import load_dialogues  # noqa: E402
from formats.dialogue import state_to_nested  # noqa: E402


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


def write(path: Path, n_dialogues: int = 1000) -> tuple[int, int]:
    corpus = build(n_dialogues)
    path.write_text(json.dumps(corpus))
    return len(corpus), sum(len(t) for t in corpus.values())
