"""Benchmark: server CPU per vote at a person's pace, the background analysis on and off (issue 38).

    python -m bench.bench_pace [--votes 30] [--every 12] [--dialogues 100] [--before REF] [--json]

Each side runs in a process of its own, all sides at once (the figures are CPU time, not wall time):

- *warmer on*: the code as it is, ``DST_JUDGE_BACKGROUND_ANALYSIS=1``, and an admin who has just opened
  the study's Analysis page (one look, waited for: the study is *wanted*, so the background keeps its
  analysis current; nobody wanting it would cost nothing at all);
- *warmer off*: the same code, ``DST_JUDGE_BACKGROUND_ANALYSIS=0``, nobody looking;
- *before* (``--before REF``, e.g. ``HEAD``): the code of ``REF`` (a ``git worktree``, removed at the
  end) with its warmer on and the same look.

In each: a satisfaction study of ``--dialogues`` dialogues (``bench.corpus``), overlap 3, two
annotators' votes on every dialogue already in (as after a votes import), the stored analysis settings
(1,000 resamples); then a third annotator votes one item every ``--every`` seconds through the store
(``service.next_item`` and ``service.submit``, what the page and the HTTP API call), ``--votes`` times.
The CPU of every process of the side (the serving process, its threads and the analysis process it
started, as ``dst-judge serve``'s Streamlit process would have them) is read just before each vote;
the CPU per vote is the CPU spent between two votes (the write and whatever ran in the background
meanwhile).  Printed: median, p90 and mean per side.  The target: at a vote every 12 s, a median of
0.25 s or less with the warmer on.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TICKS = os.sysconf("SC_CLK_TCK")


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            pass
    return found


def _cpu_of(pid: int) -> float:
    """user + system seconds of a live process (``/proc/PID/stat``)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICKS


def tree_cpu() -> float:
    """CPU seconds of this process, its live descendants and its ended (waited-for) children."""
    own = os.times()
    total = own.user + own.system
    ended = resource.getrusage(resource.RUSAGE_CHILDREN)
    total += ended.ru_utime + ended.ru_stime
    stack = _children(os.getpid())
    while stack:
        pid = stack.pop()
        total += _cpu_of(pid)
        stack += _children(pid)
    return total


def child(args) -> dict:
    """Run inside one checkout: make the study, look once (warmer on), vote at a person's pace."""
    work = Path(tempfile.mkdtemp(prefix="dst-bench-pace-"))
    os.environ.update(
        {
            "DST_JUDGE_DB": f"sqlite:///{work / 'bench.sqlite'}",
            "DST_JUDGE_DEMO": "0",
            "DST_JUDGE_BCRYPT_ROUNDS": "4",
            "DST_JUDGE_BACKGROUND_ANALYSIS": "1" if args.side != "off" else "0",
        }
    )
    from annotate import service
    from annotate.people.auth import add_annotator
    from annotate.store.db import get_engine, write_session
    from bench.corpus import dialogue_file, write

    engine = get_engine(os.environ["DST_JUDGE_DB"])
    corpus = work / "corpus.json"
    write(corpus, args.dialogues)
    with write_session(engine) as session:
        admin = add_annotator(session, "admin", "bench-admin-pw", role="admin")
        people = [add_annotator(session, f"ann{i}", f"bench-ann{i}-pw") for i in range(3)]
    study = service.create_study_from_files(engine, admin, "bench", "satisfaction", [corpus, dialogue_file(corpus)], overlap=3)

    def vote(person, n: int) -> bool:
        item = service.next_item(engine, person, study.id)
        if item is None:
            return False
        chance = 0.2 + 0.6 * random.Random(item.position).random()  # dialogues differ in their mean rating
        answer = "1" if random.Random(item.position * 31 + n).random() < chance else "0"
        service.submit(engine, person, item.id, {"satisfied": answer})
        return True

    for n, person in enumerate(people[:2]):  # as after a votes import
        while vote(person, n):
            pass
    settings = service.study_settings(engine, admin, study.id)
    if args.side != "off":
        started = hasattr(service, "start_background_analysis") and service.start_background_analysis(engine)
        from annotate.analysis import analysis_jobs

        analysis_jobs.wait(engine, admin, study.id, settings)  # the admin opened the Analysis page: wanted
        time.sleep(min(args.every, 5))
    else:
        started = False
    samples = []
    last = tree_cpu()
    for _ in range(args.votes):
        time.sleep(args.every)
        now = tree_cpu()  # what the last interval cost: its vote and the background meanwhile
        vote(people[2], 2)
        samples.append(now - last)
        last = now
    time.sleep(args.every)
    samples.append(tree_cpu() - last)
    samples = samples[1:]  # the first interval has no vote in it
    ordered = sorted(samples)
    return {
        "side": args.side,
        "warmer": bool(started),
        "votes": len(samples),
        "every_s": args.every,
        "cpu_per_vote_s": {
            "median": round(statistics.median(samples), 3),
            "p90": round(ordered[max(0, math.ceil(0.9 * len(ordered)) - 1)], 3),  # nearest rank
            "mean": round(statistics.fmean(samples), 3),
            "max": round(max(samples), 3),
        },
        "samples_s": [round(s, 3) for s in samples],
    }


def start_side(root: Path, side: str, args) -> subprocess.Popen:
    command = [sys.executable, str(Path(__file__).resolve()), "--child", side, "--dialogues", str(args.dialogues)]
    command += ["--votes", str(args.votes), "--every", str(args.every)]
    fixtures = os.environ.get("DST_JUDGE_FIXTURES", str(ROOT.parent / "shared" / "fixtures"))
    env = {**os.environ, "PYTHONPATH": str(root), "DST_JUDGE_FIXTURES": fixtures}
    return subprocess.Popen(command, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(process: subprocess.Popen, what: str) -> dict:
    out, err = process.communicate(timeout=7200)
    if process.returncode != 0:
        raise SystemExit(f"{what}: the benchmark failed:\n{err[-3000:]}")
    return json.loads(out.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dialogues", type=int, default=100)
    parser.add_argument("--votes", type=int, default=30)
    parser.add_argument("--every", type=float, default=12.0, help="seconds between two votes")
    parser.add_argument("--before", default=None, help="git ref of the code before (a worktree), e.g. HEAD")
    parser.add_argument("--child", choices=("on", "off", "before"), help=argparse.SUPPRESS)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.child:
        args.side = args.child
        print(json.dumps(child(args)))
        return
    folder = None
    running = {"on": start_side(ROOT, "on", args), "off": start_side(ROOT, "off", args)}
    try:
        if args.before:
            folder = Path(tempfile.mkdtemp(prefix="dst-bench-pace-before-"))
            subprocess.run(
                ["git", "worktree", "add", "--detach", str(folder), args.before], cwd=ROOT, check=True, capture_output=True
            )
            running["before"] = start_side(folder, "before", args)
        result = {side: finish(process, side) for side, process in running.items()}
    finally:
        if folder is not None:
            subprocess.run(["git", "worktree", "remove", "--force", str(folder)], cwd=ROOT, capture_output=True)
    result = {"dialogues": args.dialogues, "votes": args.votes, "every_s": args.every, "before_ref": args.before, **result}
    if args.json:
        print(json.dumps(result, indent=1))
        return
    print(f"Server CPU per vote, a vote every {args.every:g} s, {args.votes} votes, {args.dialogues} dialogues")
    print(f"{'':<22}{'median':>9}{'p90':>9}{'mean':>9}{'max':>9}")
    for side, label in (("on", "warmer on (wanted)"), ("off", "warmer off"), ("before", f"before ({args.before})")):
        if side in result:
            cpu = result[side]["cpu_per_vote_s"]
            print(f"{label:<22}" + "".join(f"{cpu[k]:>8.3f}s" for k in ("median", "p90", "mean", "max")))


if __name__ == "__main__":
    main()
