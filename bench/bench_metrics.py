"""Benchmark: the metrics engine beside a per-turn Python loop, on a MultiWOZ-test-sized corpus.

    python -m bench.bench_metrics [--dialogues 1000] [--repeat 3]

Prints in-process and whole-process wall times (best of --repeat) and their ratios.
"""

from __future__ import annotations

import argparse
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from bench.corpus import write  # noqa: E402


def best_of(repeat: int, function) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dialogues", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    import numpy as np

    from formats import load_dialogues
    from metrics.corpus import ScoreSettings, score_dialogues
    from metrics.reference import corpus_loop, fga_loop
    from metrics.scores import fga
    from metrics.turnstats import extract

    work = Path(tempfile.mkdtemp(prefix="dst-bench-"))
    corpus_path = work / "corpus.json"
    n_dialogues, n_turns = write(corpus_path, args.dialogues)
    print(f"machine: {platform.machine()}, {platform.python_implementation()} {platform.python_version()}, {_cores()} cores")
    print(f"corpus: {n_dialogues} dialogues, {n_turns} turns ({corpus_path.stat().st_size / 1e6:.1f} MB FGA result JSON)")
    dialogues = load_dialogues([corpus_path])
    pairs = [([t.gold for t in d.turns], [t.pred for t in d.turns]) for d in dialogues]
    four = (0.25, 0.5, 0.75, 1.0)
    grid = tuple(np.linspace(0, 5, 1000))

    print("\nin-process (corpus already read)")
    t_engine4 = best_of(args.repeat, lambda: score_dialogues(dialogues, ScoreSettings(), per_dialogue=True))
    t_loop4 = best_of(args.repeat, lambda: corpus_loop(pairs, four))
    print(
        f"  all metrics, 4 λ, per dialogue too: engine {t_engine4 * 1e3:8.1f} ms"
        f"   loop {t_loop4 * 1e3:8.1f} ms   x{t_loop4 / t_engine4:.1f}"
    )
    stats = extract(dialogues)
    t_extract = best_of(args.repeat, lambda: extract(dialogues))
    t_grid = best_of(args.repeat, lambda: fga(stats, grid))
    t_loop_grid = best_of(1, lambda: [sum(fga_loop(g, p, lam)) for lam in grid for g, p in pairs])
    print(f"  statistics extraction (once):        {t_extract * 1e3:8.1f} ms")
    print(
        f"  FGA on a 1,000-λ grid: engine {(t_extract + t_grid) * 1e3:8.1f} ms (grid alone {t_grid * 1e3:.2f} ms)"
        f"   loop {t_loop_grid * 1e3:9.1f} ms   x{t_loop_grid / (t_extract + t_grid):.0f}"
    )

    print("\nwhole process (python start-up, reading, scoring, printing)")
    engine = [sys.executable, "-m", "metrics", "score", str(corpus_path), "--json", "--lambdas"]
    loop = [sys.executable, "-m", "bench.loop_score", str(corpus_path), "--lambdas"]
    for label, spec in (("4 λ", "0.25,0.5,0.75,1"), ("1,000-λ grid", "0:5:1000")):
        t_e = best_of(args.repeat, lambda spec=spec: subprocess.run([*engine, spec], cwd=ROOT, check=True, capture_output=True))
        repeat = args.repeat if label == "4 λ" else 1
        t_l = best_of(repeat, lambda spec=spec: subprocess.run([*loop, spec], cwd=ROOT, check=True, capture_output=True))
        print(f"  {label:<13} engine {t_e:7.2f} s   loop {t_l:7.2f} s   x{t_l / t_e:.1f}")


def _cores() -> int:
    import os

    return os.cpu_count() or 1


if __name__ == "__main__":
    main()
