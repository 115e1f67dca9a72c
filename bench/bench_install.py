"""Benchmark: the app's install before and after issue 36 (crowd-kit out of the runtime requirements).

    python -m bench.bench_install [--runs 2] [--before REV] [--json]

Two requirement sets, each installed into fresh virtual environments in a temporary folder:

- ``before``: ``requirements.txt`` as it was, with crowd-kit (``git show REV:requirements.txt``; REV by
  default the commit before the one that took crowd-kit out of the file, or HEAD while that change is
  not committed);
- ``after``: the work tree's ``requirements.txt``.

Same conditions both sides: first every wheel of both sets is downloaded once (``pip download``, with
pip's configuration as set up on the machine: its indexes and constraints), into one wheelhouse; then
each run creates a venv (``python -m venv``, this Python) and installs into it with ``pip install
--no-index --find-links WHEELHOUSE --no-cache-dir -r REQUIREMENTS``, pip's configuration files and
``PIP_*`` variables left out, so that the figures are about the install (unpacking, byte-compiling)
and the venv, not the network.  Before the timed runs every wheel is read once and one venv is created
and removed (untimed: a warm disk cache for the first run as for the others).  The runs alternate
(before, after, before, after, ...; ``--runs`` each).

Prints per run: seconds to create the venv and to install, the venv's size on disk (``du -sk``, in MiB),
its number of packages and which of transformers, torch, nltk, tokenizers, scikit-learn and
huggingface-hub it holds; then the medians and the ratios after/before.  ``--json`` prints one object
with the command, the settings, the runs and the summary.

Measured (2 shared cores, busy with other work: load ~6; Python 3.11.7, pip 23.2.1, ``--runs 2``;
docs/benchmarks/install.json), medians:

    before  64.4 / 98.9 s -> 81.7 s   1,107.6 MiB   84 packages   transformers, nltk, tokenizers, scikit-learn, huggingface-hub
    after   34.2 / 50.2 s -> 42.2 s     851.9 MiB   59 packages   none
    after/before: size 0.769, time 0.517 (the install alone 0.501)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent  # run as python -m bench.bench_install from the checkout

HEAVY = ("transformers", "torch", "nltk", "tokenizers", "scikit-learn", "huggingface-hub")  # an NLP/model stack


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True, text=True).stdout


def before_revision() -> str:
    """The commit before the one that took crowd-kit out of requirements.txt; HEAD while that change is
    in the work tree only."""
    for commit in git("log", "--format=%H", "-S", "crowd-kit", "--", "requirements.txt").split():
        if "crowd-kit" not in git("show", f"{commit}:requirements.txt"):
            return f"{commit}^"
        break  # the latest change added it: it is still in the committed file
    return "HEAD"


def quiet_pip_env() -> dict[str, str]:
    """The environment for the installs: no pip configuration file, no ``PIP_*`` variable."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env["PIP_CONFIG_FILE"] = os.devnull
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def du_mib(path: Path) -> float:
    kib = int(subprocess.run(["du", "-sk", str(path)], check=True, capture_output=True, text=True).stdout.split()[0])
    return kib / 1024


def packages(venv: Path) -> list[str]:
    listed = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "list", "--format=json"],
        check=True,
        capture_output=True,
        text=True,
        env=quiet_pip_env(),
    ).stdout
    return sorted(p["name"].lower().replace("_", "-") for p in json.loads(listed))


def install(side: str, requirements: Path, wheelhouse: Path, folder: Path, run: int) -> dict:
    venv = folder / f"venv-{side}-{run}"
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    created = time.monotonic()
    subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-index", "--find-links", str(wheelhouse)]
        + ["--no-cache-dir", "-r", str(requirements)],
        check=True,
        env=quiet_pip_env(),
    )
    installed = time.monotonic()
    names = packages(venv)
    result = {
        "side": side,
        "run": run,
        "venv_s": round(created - started, 2),
        "install_s": round(installed - created, 2),
        "total_s": round(installed - started, 2),
        "size_mib": round(du_mib(venv), 1),
        "packages": len(names),
        "heavy": [name for name in HEAVY if name in names],
        "names": names,
    }
    subprocess.run(["rm", "-rf", str(venv)], check=True)
    return result


def summary(runs: list[dict]) -> dict:
    sides = {}
    for side in ("before", "after"):
        mine = [r for r in runs if r["side"] == side]
        sides[side] = {
            "total_s": round(statistics.median(r["total_s"] for r in mine), 2),
            "install_s": round(statistics.median(r["install_s"] for r in mine), 2),
            "size_mib": round(statistics.median(r["size_mib"] for r in mine), 1),
            "packages": mine[-1]["packages"],
            "heavy": mine[-1]["heavy"],
        }
    before, after = sides["before"], sides["after"]
    names = {side: set(next(r["names"] for r in runs if r["side"] == side)) for side in sides}
    return {
        **sides,
        "ratio_size": round(after["size_mib"] / before["size_mib"], 3),
        "ratio_total_s": round(after["total_s"] / before["total_s"], 3),
        "ratio_install_s": round(after["install_s"] / before["install_s"], 3),
        "only_before": sorted(names["before"] - names["after"]),
        "only_after": sorted(names["after"] - names["before"]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=2, help="installs of each side, alternating (default 2)")
    parser.add_argument("--before", help="the git revision whose requirements.txt is 'before' (default: see above)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    revision = args.before or before_revision()
    before_text = git("show", f"{revision}:requirements.txt")
    after_text = (ROOT / "requirements.txt").read_text()

    def say(*parts, **options):  # progress: on stderr with --json, whose stdout is the object alone
        print(*parts, **options, file=sys.stderr if args.json else sys.stdout)

    with tempfile.TemporaryDirectory(prefix="bench-install-") as name:
        folder = Path(name)
        files = {"before": folder / "before.txt", "after": folder / "after.txt"}
        files["before"].write_text(before_text)
        files["after"].write_text(after_text)
        wheelhouse = folder / "wheelhouse"
        started = time.monotonic()
        for path in files.values():
            subprocess.run(
                [sys.executable, "-m", "pip", "download", "--quiet", "--dest", str(wheelhouse), "-r", str(path)],
                check=True,
            )
        download_s = time.monotonic() - started
        # untimed warm-up, so that the first run does not pay for a cold disk cache the later ones skip:
        # every wheel read once, and one venv created and removed
        for wheel in wheelhouse.iterdir():
            wheel.read_bytes()
        subprocess.run([sys.executable, "-m", "venv", str(folder / "warm-up")], check=True)
        subprocess.run(["rm", "-rf", str(folder / "warm-up")], check=True)
        say(f"wheels of both sets downloaded in {download_s:.1f} s ({len(list(wheelhouse.iterdir()))} files)", flush=True)
        say(f"{'side':6} {'run':>3} {'venv s':>7} {'install s':>9} {'total s':>8} {'size MiB':>9} {'pkgs':>5}  NLP/model stack")
        runs = []
        for run in range(1, args.runs + 1):
            for side in ("before", "after"):
                result = install(side, files[side], wheelhouse, folder, run)
                runs.append(result)
                say(
                    f"{side:6} {run:>3} {result['venv_s']:>7.1f} {result['install_s']:>9.1f} {result['total_s']:>8.1f} "
                    f"{result['size_mib']:>9.1f} {result['packages']:>5}  {', '.join(result['heavy']) or 'none'}",
                    flush=True,
                )
    found = summary(runs)
    if args.json:
        print(
            json.dumps(
                {
                    "command": "python -m bench.bench_install " + shlex.join(sys.argv[1:]),
                    "settings": {
                        "before": f"git show {revision}:requirements.txt (with crowd-kit: {'crowd-kit' in before_text})",
                        "after": "requirements.txt of the work tree",
                        "runs": args.runs,
                        "order": "alternating: before, after, before, after, ...",
                        "download": "pip download -r REQUIREMENTS of both sets into one wheelhouse, once, with pip's "
                        "configuration (indexes, constraints); not in the timings",
                        "warm_up": "every wheel read once and one venv created and removed, untimed, before the runs",
                        "install": "python -m venv VENV; VENV/bin/python -m pip install --no-index --find-links "
                        "WHEELHOUSE --no-cache-dir -r REQUIREMENTS (no pip configuration file, no PIP_* variable)",
                        "size": "du -sk VENV, in MiB (1,048,576 bytes)",
                        "time": "wall seconds, venv creation + install (total_s), median over the runs",
                        "python": platform.python_version(),
                        "pip": subprocess.run(
                            [sys.executable, "-m", "pip", "--version"], capture_output=True, text=True
                        ).stdout.split()[1],
                        "cpus": os.cpu_count(),
                        "download_s": round(download_s, 1),
                    },
                    "runs": [{k: v for k, v in r.items() if k != "names"} for r in runs],
                    "summary": found,
                },
                indent=1,
            )
        )
        return
    print()
    print(f"{'median':10} {'total s':>8} {'install s':>9} {'size MiB':>9} {'pkgs':>5}  NLP/model stack")
    for side in ("before", "after"):
        s = found[side]
        print(
            f"{side:10} {s['total_s']:>8.1f} {s['install_s']:>9.1f} {s['size_mib']:>9.1f} {s['packages']:>5}  "
            f"{', '.join(s['heavy']) or 'none'}"
        )
    print(
        f"after/before: size {found['ratio_size']:.3f}, time {found['ratio_total_s']:.3f} (install alone "
        f"{found['ratio_install_s']:.3f})"
    )
    print(f"only before: {', '.join(found['only_before']) or '-'}")
    print(f"only after: {', '.join(found['only_after']) or '-'}")


if __name__ == "__main__":
    main()
