"""Run a bench with ``--json`` and keep its output as ``docs/benchmarks/NAME.json``, with the command.

    python docs/hooks/record_bench.py NAME -- python -m bench.bench_exports --json
    python docs/hooks/record_bench.py --text NAME -- python -m bench.bench_metrics

A bench without ``--json`` is kept with ``--text``: its printed report, verbatim, under ``"output"``.

A bench whose JSON is ``{"rows": [{"estimate", "design", ...}], ...}`` (``bench_coverage``) can re-run a part
with ``--merge``::

    python docs/hooks/record_bench.py --merge coverage -- python -m bench.bench_coverage --estimates spearman,kendall --json

The new rows replace the recorded ones of the same estimate and design (the others stay as recorded), and
the record's ``"parts"`` list says how the new ones were made (``"command"``, ``"recorded"``, ``"wall_s"``,
``"machine"``, ``"estimates"``, ``"settings"``), so that the docs name each table's own run.

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


def merge_rows(recorded: dict, result: dict, record: dict) -> dict:
    """``recorded`` (a file of this script) with ``result``'s rows in place of its rows of the same estimate and
    design, and ``record`` (how the new rows were made) appended to its ``"parts"``."""
    new_rows = result["rows"]
    replaced = {(row["estimate"], row["design"]) for row in new_rows}
    rows: list[dict] = []
    placed = False
    for row in recorded["result"]["rows"]:
        if (row["estimate"], row["design"]) not in replaced:
            rows.append(row)
        elif not placed:
            rows += new_rows
            placed = True
    if not placed:
        rows += new_rows
    merged = {**recorded, "result": {**recorded["result"], "rows": rows}}
    estimates = sorted({row["estimate"] for row in new_rows})
    part = {**{k: v for k, v in record.items() if k != "bench"}, "estimates": estimates, "settings": result.get("settings")}
    merged["parts"] = [p for p in recorded.get("parts", []) if set(p.get("estimates", [])) - set(estimates)] + [part]
    return merged


def main(argv: list[str]) -> int:
    flags = set()
    while argv and argv[0] in ("--text", "--merge"):
        flags.add(argv[0])
        argv = argv[1:]
    text_mode, merge = "--text" in flags, "--merge" in flags
    if len(argv) < 3 or argv[1] != "--" or (text_mode and merge):
        print("usage: record_bench.py [--text | --merge] NAME -- COMMAND...", file=sys.stderr)
        return 2
    if merge and not (OUT / f"{argv[0]}.json").exists():
        print(f"{argv[0]}: nothing recorded to merge into (docs/benchmarks/{argv[0]}.json)", file=sys.stderr)
        return 1
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
    if merge:
        recorded = json.loads((OUT / f"{name}.json").read_text(encoding="utf-8"))
        if not isinstance(result, dict) or "rows" not in result or "rows" not in recorded.get("result", {}):
            print(f"{name}: --merge needs rows in both the new output and the recorded file; nothing written", file=sys.stderr)
            return 1
        record = merge_rows(recorded, result, record)
    elif text_mode:
        record["output"] = text
    else:
        record["result"] = result
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"{name}.json").write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{name}: {wall:.1f} s, wrote docs/benchmarks/{name}.json", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
