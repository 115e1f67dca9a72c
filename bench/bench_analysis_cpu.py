"""Benchmark: the CPU one satisfaction analysis costs (``metrics.analysis.metrics_summary``: correlations with
their bootstrap, the difference tests, λ* with its bootstrap refits), before and after, interleaved.

    python -m bench.bench_analysis_cpu [--before REF] [--dialogues 100] [--votes 3] [--resamples 1000]
                                       [--rounds 3] [--json]

"before" is ``git worktree add --detach REF`` (removed at the end); "after" is the working tree.  Each
round runs one process per side, before then after, so the two sides share the machine's load.  In each
process the study (``bench.corpus``, ``--dialogues`` dialogues, every dialogue rated by ``--votes``
annotators 0/1 at random) is analysed once to warm up, then three times, measuring the process's CPU
time (``time.process_time``: the cost a background analysis puts on the machine, whatever else runs).
Prints the median per side and their ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def child(args: argparse.Namespace) -> list[float]:
    from bench.corpus import build
    from formats import load_dialogues
    from formats.tidy import Vote, VoteTable
    from metrics.analysis import AnalysisSettings, metrics_summary

    path = Path(tempfile.mkdtemp(prefix="dst-bench-cpu-")) / "fga.json"
    path.write_text(json.dumps(build(args.dialogues)), encoding="utf-8")
    dialogues = load_dialogues([path])
    rng = random.Random(1)
    votes = [Vote(d.id, f"a{k}", "satisfied", str(int(rng.random() < 0.6)), "") for d in dialogues for k in range(args.votes)]
    table = VoteTable(votes)
    settings = AnalysisSettings(resamples=args.resamples)
    metrics_summary({"": dialogues}, table, settings)
    seconds = []
    for _ in range(3):
        start = time.process_time()
        metrics_summary({"": dialogues}, table, settings)
        seconds.append(time.process_time() - start)
    return seconds


def run_side(root: Path, args: argparse.Namespace) -> list[float]:
    command = [sys.executable, str(Path(__file__).resolve()), "--child", "--dialogues", str(args.dialogues)]
    command += ["--votes", str(args.votes), "--resamples", str(args.resamples)]
    fixtures = os.environ.get("DST_JUDGE_FIXTURES", str(ROOT.parent / "shared" / "fixtures"))
    env = {**os.environ, "PYTHONPATH": str(root), "DST_JUDGE_FIXTURES": fixtures}
    done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        raise SystemExit(f"{root}: the benchmark failed:\n{done.stderr[-3000:]}")
    found: list[float] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--before", default="HEAD", help="git ref of the code before (a worktree)")
    parser.add_argument("--dialogues", type=int, default=100)
    parser.add_argument("--votes", type=int, default=3)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args)))
        return
    from bench.worktree import checkout  # the parent's only: a child may run in a tree of before it

    before: list[float] = []
    after: list[float] = []
    with checkout(args.before) as folder:
        for _ in range(args.rounds):
            before += run_side(folder, args)
            after += run_side(ROOT, args)
    result = {
        "before_ref": args.before,
        "dialogues": args.dialogues,
        "votes": args.votes,
        "resamples": args.resamples,
        "before_cpu_s": before,
        "after_cpu_s": after,
        "before_median_s": statistics.median(before),
        "after_median_s": statistics.median(after),
        "after_over_before": statistics.median(after) / statistics.median(before),
    }
    if args.json:
        print(json.dumps(result, indent=1))
        return
    print(f"metrics_summary, {args.dialogues} dialogues x {args.votes} votes, {args.resamples} resamples: CPU s per analysis")
    print(f"before ({args.before}): median {result['before_median_s']:.2f} s  {[round(v, 2) for v in before]}")
    print(f"after (working tree): median {result['after_median_s']:.2f} s  {[round(v, 2) for v in after]}")
    print(f"after / before: {result['after_over_before']:.2f}")


if __name__ == "__main__":
    main()
