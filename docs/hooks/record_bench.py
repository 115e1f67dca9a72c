"""Run a bench with ``--json`` and keep its output as ``docs/benchmarks/NAME.json``, with the command.

    python docs/hooks/record_bench.py NAME -- python -m bench.bench_exports --json
    python docs/hooks/record_bench.py --text NAME -- python -m bench.bench_metrics

A bench without ``--json`` is kept with ``--text``: its printed report, verbatim, under ``"output"``.

The file holds the bench's own JSON untouched under ``"result"``, beside what the docs need to say
where a figure came from: ``"command"`` (as given, ``python3`` written ``python``), ``"recorded"``
(UTC date), ``"wall_s"`` (the whole command, on the clock) and ``"machine"`` (CPUs, the load average
before the run, Python).  Nothing is written when the command fails or prints no JSON.  The docs'
benchmarks page renders every ``docs/benchmarks/*.json`` at build time (``docs/hooks/generate.py``);
no figure is typed by hand.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import shlex
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "docs" / "benchmarks"


def main(argv: list[str]) -> int:
    text_mode = bool(argv) and argv[0] == "--text"
    argv = argv[1:] if text_mode else argv
    if len(argv) < 3 or argv[1] != "--":
        print("usage: record_bench.py [--text] NAME -- COMMAND...", file=sys.stderr)
        return 2
    name, command = argv[0], argv[2:]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    started = time.perf_counter()
    done = subprocess.run(command, cwd=REPO, stdout=subprocess.PIPE, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        print(f"{name}: the command exited with {done.returncode}; nothing written", file=sys.stderr)
        return 1
    text = done.stdout.strip()
    if text_mode:
        result = None
    else:
        try:
            result, _ = json.JSONDecoder().raw_decode(text[text.index("{") :])
        except ValueError as err:
            print(f"{name}: no JSON in the output ({err}); nothing written", file=sys.stderr)
            return 1
    shown = ["python" if part in ("python3", sys.executable) else part for part in command]
    record = {
        "bench": name,
        "command": shlex.join(shown),
        "recorded": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
        "wall_s": round(wall, 1),
        "machine": {
            "cpus": os.cpu_count(),
            "load_average_before": None if load is None else round(load, 2),
            "load_average_after": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None,
            "python": platform.python_version(),
        },
    }
    if text_mode:
        record["output"] = text
    else:
        record["result"] = result
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"{name}.json").write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{name}: {wall:.1f} s, wrote docs/benchmarks/{name}.json", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
