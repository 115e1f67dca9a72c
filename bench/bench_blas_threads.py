"""Benchmark: what OpenBLAS's threads cost the app's computations, on a quiet and on a busy machine.

    python -m bench.bench_blas_threads [--rounds 3] [--busy N] [--json]

Two workloads, each in a fresh process per measurement:

- ``analysis``: one satisfaction analysis (``metrics.analysis.metrics_summary``, 100 dialogues x 3 votes,
  1,000 resamples), what the analysis process computes after votes arrive;
- ``designer``: the λ designer (``metrics.design.design("lambda", ...)``, a pool of 1,500 dialogues, a
  budget of 900 judgements), what the Studies page computes when an admin asks for a proposal.

Each runs with the BLAS library's default threads (one per core) and with ``OPENBLAS_NUM_THREADS=1``
(``annotate.analysis.analysis_jobs.NUMERIC_THREADS``, what the app now sets for its processes), alternating
in each round, once on a quiet machine and once beside ``--busy`` processes that spin (default: one per
core; the test suite's three workers and their browsers, or an app server's annotators, are that kind of
load).  Prints the median CPU seconds (``time.process_time``: every thread of the process) and wall
seconds per side, and the ratios one thread / default.  Both sides must compute the same numbers (checked: to 1e-9, relative).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORKLOADS = ("analysis", "designer")


def _analysis() -> tuple[float, float, float]:
    import random
    import tempfile

    from bench.corpus import build
    from formats import load_dialogues
    from formats.tidy import Vote, VoteTable
    from metrics.analysis import AnalysisSettings, metrics_summary

    path = Path(tempfile.mkdtemp(prefix="dst-bench-blas-")) / "fga.json"
    path.write_text(json.dumps(build(100)), encoding="utf-8")
    dialogues = load_dialogues([path])
    rng = random.Random(1)
    votes = [Vote(d.id, f"a{k}", "satisfied", str(int(rng.random() < 0.6)), "") for d in dialogues for k in range(3)]
    table = VoteTable(votes)
    settings = AnalysisSettings(resamples=1000)
    start = time.process_time(), time.perf_counter()
    summary = metrics_summary({"": dialogues}, table, settings)
    cpu, wall = time.process_time() - start[0], time.perf_counter() - start[1]
    return cpu, wall, _checksum(summary)


def _checksum(value) -> float:
    """The sum of every finite number in a result (the two sides must compute the same numbers)."""
    import math

    if isinstance(value, dict):
        return sum(_checksum(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return sum(_checksum(v) for v in value)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return 0.0


def _designer() -> tuple[float, float, float]:
    from bench.bench_adaptive import pool_metrics
    from metrics import design as dz

    data = pool_metrics(300, 1200, grid=dz.DESIGN_GRID)
    pool = {f"fga_{v:g}": data["fga"][:, j] for j, v in enumerate(dz.DESIGN_GRID)} | {"jga": data["jga"]}
    start = time.process_time(), time.perf_counter()
    proposal = dz.design("lambda", pool, budget=900, icc=0.26, r_a=0.8)
    cpu, wall = time.process_time() - start[0], time.perf_counter() - start[1]
    return cpu, wall, float(proposal.proposal.width)


def child(workload: str) -> None:
    cpu, wall, value = {"analysis": _analysis, "designer": _designer}[workload]()
    print(json.dumps({"cpu": cpu, "wall": wall, "value": value}))


def measure(workload: str, one_thread: bool) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    if one_thread:
        from annotate.analysis.analysis_jobs import NUMERIC_THREADS

        env.update(NUMERIC_THREADS)
    env["PYTHONPATH"] = str(ROOT)
    env.setdefault("DST_JUDGE_FIXTURES", str(ROOT.parent / "shared" / "fixtures"))
    command = [sys.executable, "-m", "bench.bench_blas_threads", "--child", workload]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        raise SystemExit(f"the {workload} run failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _spin() -> None:
    while True:
        pass


def run(rounds: int, busy: int) -> dict:
    spinners = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(busy)]
    for spinner in spinners:
        spinner.start()
    try:
        out: dict = {}
        for workload in WORKLOADS:
            sides: dict[str, list[dict]] = {"default": [], "one": []}
            for _ in range(rounds):  # alternating, so both sides share the machine's moments
                sides["default"].append(measure(workload, one_thread=False))
                sides["one"].append(measure(workload, one_thread=True))
            values = [m["value"] for runs in sides.values() for m in runs]
            if max(values) - min(values) > 1e-9 * max(1.0, abs(values[0])):
                raise SystemExit(f"{workload}: the results differ between the sides: {values}")
            row = {}
            for side, runs in sides.items():
                row[f"{side}_cpu_s"] = statistics.median(m["cpu"] for m in runs)
                row[f"{side}_wall_s"] = statistics.median(m["wall"] for m in runs)
            row["cpu_one_over_default"] = row["one_cpu_s"] / row["default_cpu_s"]
            row["wall_one_over_default"] = row["one_wall_s"] / row["default_wall_s"]
            out[workload] = row
        return out
    finally:
        for spinner in spinners:
            spinner.terminate()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--busy", type=int, default=os.cpu_count() or 2, help="spinning processes beside the busy runs")
    parser.add_argument("--child", choices=WORKLOADS, help=argparse.SUPPRESS)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.child:
        child(args.child)
        return
    result = {"cores": os.cpu_count(), "rounds": args.rounds, "busy_processes": args.busy}
    result["quiet"] = run(args.rounds, 0)
    result["busy"] = run(args.rounds, args.busy)
    if args.json:
        print(json.dumps(result, indent=1))
        return
    print(f"{result['cores']} cores; median of {args.rounds} runs per side; busy = {args.busy} spinning processes beside")
    head = ("machine", "workload", "default CPU s", "1 thread CPU s", "ratio", "default wall s", "1 thread wall s", "ratio")
    print("{:8} {:9} {:>14} {:>15} {:>6} {:>15} {:>16} {:>6}".format(*head))
    for machine in ("quiet", "busy"):
        for workload, row in result[machine].items():
            cpu = f"{row['default_cpu_s']:14.2f} {row['one_cpu_s']:15.2f} {row['cpu_one_over_default']:6.2f}"
            wall = f"{row['default_wall_s']:15.2f} {row['one_wall_s']:16.2f} {row['wall_one_over_default']:6.2f}"
            print(f"{machine:8} {workload:9} {cpu} {wall}")


if __name__ == "__main__":
    main()
