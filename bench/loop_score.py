"""Baseline: a straightforward per-turn loop in the style of the authors' scripts.

    python -m bench.loop_score CORPUS.json --lambdas START:STOP:NUM | L1,L2,...

Reads FGA result JSON with the json module, and for every λ walks every turn again.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from metrics.reference import corpus_loop  # noqa: E402


def lambdas_from(text: str) -> list[float]:
    if ":" in text:
        start, stop, num = text.split(":")
        n = int(num)
        return [float(start) + (float(stop) - float(start)) * i / (n - 1) for i in range(n)] if n > 1 else [float(start)]
    return [float(v) for v in text.split(",")]


def main() -> None:
    path, _, spec = sys.argv[1], sys.argv[2], sys.argv[3]
    data = json.loads(Path(path).read_text())
    dialogues = []
    for turns in data.values():
        ordered = [turns[str(i)] for i in range(len(turns))]
        as_set = lambda nested: frozenset((d, s, v) for d, slots in nested.items() for s, v in slots.items())  # noqa: E731
        dialogues.append(([as_set(t["gt"]) for t in ordered], [as_set(t["pr"]) for t in ordered]))
    result = corpus_loop(dialogues, lambdas_from(spec))
    print(json.dumps({"turns": result["turns"], "jga": result["jga"], "n_fga": len(result["fga"])}))


if __name__ == "__main__":
    main()
