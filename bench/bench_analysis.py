"""Benchmark: the Analysis page's first render and a change of setting, 100-dialogue study, before and after.

    python -m bench.bench_analysis [--dialogues 100] [--votes 3] [--resamples 1000] [--before REF] [--json]

Each side runs in a process of its own whose code is its checkout (cwd and ``PYTHONPATH``; "before"
is ``git worktree add --detach REF``, default ``HEAD``, removed at the end; "after" is the working tree
as it is).  In each: a satisfaction study of ``--dialogues`` dialogues (``bench.corpus``), every
dialogue rated by ``--votes`` annotators, and the admin's Analysis page run by Streamlit's AppTest
(the whole script, as the server runs it):

- *first render*: the page opened on the study, nothing computed before in this process;
- *first render after the votes*: after the analysis the votes started in the background had time to
  finish (after: the warmer's job, waited for; before: there is no background, so this is the first
  render again);
- *settings change*: the bootstrap resamples doubled (an expensive setting) and the page run again;
- *until complete*: after the change, how long until the page has the new analysis (after: the
  background job; before: the same as the change itself).

The page waits up to ``DST_JUDGE_ANALYSIS_WAIT`` = 0.5 s for an analysis before it shows a progress bar
(and the last analysis of fewer votes, if any); the goal (issue 27) is at most 1 s for the first
render and for a change.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def child(args) -> dict:
    """Run inside one checkout: make the study, vote, time the page."""
    work = Path(tempfile.mkdtemp(prefix="dst-bench-analysis-"))
    os.environ.update(
        {
            "DST_JUDGE_DB": f"sqlite:///{work / 'bench.sqlite'}",
            "DST_JUDGE_DEMO": "0",
            "DST_JUDGE_BCRYPT_ROUNDS": "4",
            "DST_JUDGE_BACKGROUND_ANALYSIS": "0",  # the bench waits for the votes' job itself, below
            "DST_JUDGE_ANALYSIS_WAIT": "0.5",
        }
    )
    import importlib

    from streamlit.testing.v1 import AppTest

    from annotate import service

    def ours(module: str, wing: str):  # this checkout's module, in its wing (issue 39) or flat (older commits)
        try:
            return importlib.import_module(f"annotate.{wing}.{module}")
        except ModuleNotFoundError:
            return importlib.import_module(f"annotate.{module}")

    add_annotator = ours("auth", "people").add_annotator
    from annotate.store.db import get_engine, write_session
    from bench.corpus import dialogue_file, write

    engine = get_engine(os.environ["DST_JUDGE_DB"])
    corpus = work / "corpus.json"
    write(corpus, args.dialogues)
    with write_session(engine) as session:
        admin = add_annotator(session, "admin", "bench-admin-pw", role="admin")
        people = [add_annotator(session, f"ann{i}", f"bench-ann{i}-pw") for i in range(args.votes)]
    study = service.create_study_from_files(
        engine, admin, "bench", "satisfaction", [corpus, dialogue_file(corpus)], overlap=args.votes
    )
    for n, person in enumerate(people):
        while (item := service.next_item(engine, person, study.id)) is not None:
            # a dialogue's chance of "1" varies between dialogues, so that its mean rating does too
            chance = 0.2 + 0.6 * random.Random(item.position).random()
            service.submit(
                engine, person, item.id, {"satisfied": "1" if random.Random(item.position * 31 + n).random() < chance else "0"}
            )
    _, token = service.log_in(engine, "admin", "bench-admin-pw")
    settings = service.study_settings(engine, admin, study.id)
    from dataclasses import replace

    settings = replace(settings, resamples=args.resamples)
    service.set_study_settings(engine, admin, study.id, settings)

    def page(study_id: int = study.id):
        probe = AppTest.from_string("from annotate.pages import analysis\nanalysis.render()\n", default_timeout=600)
        probe.session_state["token"] = token
        probe.session_state["admin-chosen-study"] = study_id
        return probe

    # warm-up, untimed: a small study's analysis, so that neither side's figures include importing the
    # page and the analysis modules (a server has them loaded after its first analysis)
    small = work / "small.json"
    write(small, 6)
    warm = service.create_study_from_files(engine, admin, "warm-up", "satisfaction", [small, dialogue_file(small)], overlap=1)
    while (item := service.next_item(engine, people[0], warm.id)) is not None:
        service.submit(engine, people[0], item.id, {"satisfied": "1" if item.position % 2 else "0"})
    warm_page = page(warm.id)
    warm_page.run()
    has_jobs = any((Path.cwd() / "annotate" / where).exists() for where in ("analysis_jobs.py", "analysis/analysis_jobs.py"))
    if has_jobs:
        analysis_jobs = ours("analysis_jobs", "analysis")

        analysis_jobs.wait(engine, admin, warm.id, service.study_settings(engine, admin, warm.id))
        warm_page.run()

    def timed(run) -> float:
        start = time.perf_counter()
        run()
        return time.perf_counter() - start

    def shows_answers(probe) -> bool:
        return any("Answers" in h.value for h in probe.subheader) or any("Metrics against" in h.value for h in probe.subheader)

    result = {}
    probe = page()
    result["first_render_s"] = timed(probe.run)
    assert not probe.exception, probe.exception
    result["first_render_complete"] = shows_answers(probe) and not any("Analysing" in p.proto.text for p in probe.get("progress"))
    reports = ours("reports", "analysis")

    try:  # as if the votes had just arrived: nothing of them computed yet (kept in the database since issue 39)
        reports.clear_cache(engine)
    except TypeError:
        reports.clear_cache()
    if has_jobs:  # the votes' analysis, computed in the background while nobody looks
        analysis_jobs = ours("analysis_jobs", "analysis")

        started = time.perf_counter()
        analysis_jobs.wait(engine, admin, study.id, settings)
        result["background_s"] = time.perf_counter() - started
    probe = page()
    result["first_render_after_votes_s"] = timed(probe.run)
    assert not probe.exception, probe.exception
    box = probe.number_input(key=f"an-{study.id}-boot")
    box.set_value(args.resamples * 2)
    result["settings_change_s"] = timed(probe.run)
    assert not probe.exception, probe.exception
    if has_jobs:
        changed = replace(settings, resamples=args.resamples * 2)
        started = time.perf_counter()
        analysis_jobs.wait(engine, admin, study.id, changed)
        result["until_complete_s"] = result["settings_change_s"] + time.perf_counter() - started
    else:
        result["until_complete_s"] = result["settings_change_s"]
    return result


def run_side(root: Path, args) -> dict:
    # this file measures both sides; the code measured (annotate, metrics, bench.corpus) is the checkout's
    command = [sys.executable, str(Path(__file__).resolve()), "--child", "--dialogues", str(args.dialogues)]
    command += ["--votes", str(args.votes), "--resamples", str(args.resamples)]
    # a worktree in a temporary folder has no ../shared beside it: the fixtures are this checkout's
    fixtures = os.environ.get("DST_JUDGE_FIXTURES", str(ROOT.parent / "shared" / "fixtures"))
    env = {**os.environ, "PYTHONPATH": str(root), "DST_JUDGE_FIXTURES": fixtures}
    done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        raise SystemExit(f"{root}: the benchmark failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dialogues", type=int, default=100)
    parser.add_argument("--votes", type=int, default=3)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--before", default="HEAD", help="git ref of the code before (a worktree)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args)))
        return
    from bench.worktree import checkout  # the parent's only: a child may run in a tree of before it

    with checkout(args.before) as folder:
        before = run_side(folder, args)
    after = run_side(ROOT, args)
    result = {"dialogues": args.dialogues, "votes": args.votes, "resamples": args.resamples, "before": before, "after": after}
    if args.json:
        print(json.dumps(result, indent=1))
        return
    rows = (
        ("first render", "first_render_s"),
        ("first render after the votes", "first_render_after_votes_s"),
        ("settings change (resamples x2)", "settings_change_s"),
        ("until the change is complete", "until_complete_s"),
    )
    print(f"Analysis page, {args.dialogues} dialogues x {args.votes} votes, {args.resamples} resamples (AppTest)")
    print(f"{'':<34}{'before':>10}{'after':>10}{'ratio':>8}")
    for label, key in rows:
        b, a = before[key], after[key]
        print(f"{label:<34}{b:>9.2f}s{a:>9.2f}s{a / b:>8.2f}")
    if "background_s" in after:
        print(f"(after: the votes' analysis took {after['background_s']:.2f} s in the background)")


if __name__ == "__main__":
    main()
