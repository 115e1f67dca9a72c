"""``dst-judge`` (or ``python -m annotate``, the same commands): scripted set-up of studies, annotators and votes.

    dst-judge config                                     (the effective settings and where each came from)
    python -m annotate [--db URL] init
    python -m annotate [--db URL] serve [STREAMLIT OPTIONS...]   (the app, with the demo accounts printed at start)
    python -m annotate [--db URL] api [--host H] [--port 8600]   (the HTTP API alone; serve starts it too)
    python -m annotate annotator add NAME [--admin]      (password: DST_JUDGE_PASSWORD or a prompt)
    python -m annotate annotator add NAME --judge        (an automatic judge: no password, votes with an API token)
    python -m annotate token add NAME [--judge] [--label TEXT]   (prints a new API token; --judge makes NAME a judge if new)
    python -m annotate token revoke NAME [--all | --id N]   (every live token of NAME, or one; no option: --all)
    python -m annotate token list
    python -m annotate judge-run STUDY --token T --command "..." [--url http://127.0.0.1:8600] [--limit N]
    python -m annotate annotator password NAME          (a reset: ends their sessions and API tokens, clears failed logins)
    python -m annotate annotator list
    python -m annotate study create NAME --kind satisfaction|coco|slu [--overlap 3] [--condition NAME]
                       [--guideline FILE] [--sample N --seed S] [--gold FILE.csv] [--timeout MINUTES] PATHS...
    python -m annotate study list
    python -m annotate study reopen NAME ITEM|--all [--condition C] [--extra N]
    python -m annotate study items NAME --json
    python -m annotate study members NAME [--set A B ... | --add A ... | --remove A ... | --open]
    python -m annotate study guideline NAME FILE
    python -m annotate study overlap NAME K
    python -m annotate study design NAME [--policy uniform|adaptive|designed] [--question fga_vs_jga|lambda] [--lambda L]
                       [--icc R --seed S]   (designed: the designer's proposal for the budget, fixed)
                       [--budget N] [--target-width W] [--max-k K] [--json]   (no option: the design and where it stands)
    python -m annotate study archive|unarchive NAME
    python -m annotate study changes NAME [--json]
    python -m annotate study plan NAME [--freeze] [--export PATH] [--json]   (the analysis plan: frozen before the first vote)
    python -m annotate study delete NAME --confirm NAME   (refused while votes exist that were not exported)
    python -m annotate status NAME [--json]
    python -m annotate votes import NAME FILE.csv
    python -m annotate votes export NAME [--format csv|jsonl] [--history] [--out F]

The database is ``--db``, else ``DST_JUDGE_DB``, else the SQLite file in the per-user data folder
(``~/.local/share/dst-judge/``; ``formats.settings``), whatever folder the command runs from.
Every command that writes is one transaction: an error changes nothing.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import sys
from dataclasses import asdict
from pathlib import Path

from formats.settings import settings


def build_parser() -> argparse.ArgumentParser:
    from annotate.kinds import KINDS
    from annotate.store.models import DEFAULT_TIMEOUT_MINUTES

    parser = argparse.ArgumentParser(prog="dst-judge", description="DST Judge: studies, annotators, votes")
    parser.add_argument("--db", help="database URL (default: DST_JUDGE_DB or the SQLite file in the per-user data folder)")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("config", help="print the effective settings (DST_JUDGE_* variables) and where each came from")
    commands.add_parser("init", help="create or migrate the database")
    serve = commands.add_parser("serve", help="prepare the database (and the demo), print the accounts, start the app")
    serve.set_defaults(streamlit_args=[])  # what follows 'serve' goes to streamlit run (e.g. --server.port 8502)
    serve.add_argument("--api-port", type=int, default=8600, help="the HTTP API's port (0: no API)")
    serve.add_argument("--api-host", default="127.0.0.1", help="the HTTP API's address")
    api = commands.add_parser("api", help="the HTTP API alone (uvicorn)")
    api.add_argument("--host", default="127.0.0.1")
    api.add_argument("--port", type=int, default=8600)
    token = commands.add_parser("token", help="API tokens").add_subparsers(dest="action", required=True)
    token_add = token.add_parser("add", help="a new API token for NAME, printed once (only its hash is kept)")
    token_add.add_argument("name")
    token_add.add_argument("--judge", action="store_true", help="NAME is an automatic judge (made one if new)")
    token_add.add_argument("--label", default="", help="what the token is for")
    token_revoke = token.add_parser("revoke", help="revoke NAME's tokens (refused from the next request on)")
    token_revoke.add_argument("name")
    which = token_revoke.add_mutually_exclusive_group()  # neither: every token, as --all says explicitly
    which.add_argument("--all", action="store_true", help="every live token of NAME (also what no option does)")
    which.add_argument("--id", type=int, help="only this token (see token list)")
    token.add_parser("list")
    judge_run = commands.add_parser("judge-run", help="run a local command as an automatic judge over a study, through the API")
    judge_run.add_argument("study", help="the study's name or id")
    judge_run.add_argument("--token", required=True, help="the judge's API token")
    judge_run.add_argument(
        "--command", dest="judge_command", required=True, help="reads an item as JSON on stdin, prints its answers as JSON"
    )
    judge_run.add_argument("--url", default="http://127.0.0.1:8600", help="the API's address")
    judge_run.add_argument("--limit", type=int, help="judge at most this many items")

    annotator = commands.add_parser("annotator").add_subparsers(dest="action", required=True)
    add = annotator.add_parser("add", help="add an annotator (password from DST_JUDGE_PASSWORD or a prompt)")
    add.add_argument("name")
    who = add.add_mutually_exclusive_group()
    who.add_argument("--admin", action="store_true")
    who.add_argument("--judge", action="store_true", help="an automatic judge: no password; give it a token (token add)")
    reset = annotator.add_parser(
        "password",
        help="set a new password (DST_JUDGE_PASSWORD or a prompt); ends their sessions and API tokens, clears failed logins",
    )
    reset.add_argument("name")
    annotator.add_parser("list")
    admin = commands.add_parser("admin", help="admins (the first one: before anybody can log in)")
    admin_add = admin.add_subparsers(dest="action", required=True).add_parser(
        "add", help="add an admin (password from DST_JUDGE_PASSWORD or a prompt); the same as annotator add NAME with --admin"
    )
    admin_add.add_argument("name")
    admin_add.set_defaults(admin=True, judge=False)

    study = commands.add_parser("study").add_subparsers(dest="action", required=True)
    create = study.add_parser("create", help="create a study from data files (one transaction)")
    create.add_argument("name")
    create.add_argument("paths", nargs="+", metavar="PATH")
    create.add_argument("--kind", required=True, choices=list(KINDS))
    create.add_argument("--overlap", type=int, default=3, help="annotators per item (k)")
    create.add_argument("--condition", help="system name (satisfaction) or CoCo variant name (coco)")
    create.add_argument("--guideline", type=Path, help="guideline text shown to annotators on demand")
    create.add_argument("--sample", type=int, help="draw N units at random")
    create.add_argument("--seed", type=int, default=0, help="seed for --sample and the annotators' item orders")
    create.add_argument("--gold", type=Path, help="attention checks: CSV with item, question, value")
    create.add_argument(
        "--timeout", type=int, default=DEFAULT_TIMEOUT_MINUTES, help="minutes before an abandoned item is reclaimed"
    )
    create.add_argument(
        "--unsure",
        action="store_true",
        help="the yes/no and choice questions also offer 'unsure' (left out of the analysis as missing data)",
    )
    study.add_parser("list")
    reopen = study.add_parser("reopen", help="allow more judgements on an item (or every item) beyond the overlap")
    reopen.add_argument("name")
    reopen.add_argument("item", nargs="?", help="item key (see study items)")
    reopen.add_argument("--condition", default=None, help="the item's condition, when its key has several")
    reopen.add_argument("--all", action="store_true", help="every item of the study")
    reopen.add_argument("--extra", type=int, default=1, help="how many more judgements (default 1)")
    items = study.add_parser("items")
    items.add_argument("name")
    items.add_argument("--json", action="store_true")

    members = study.add_parser("members", help="list or change who may annotate the study (none: everybody)")
    members.add_argument("name")
    change = members.add_mutually_exclusive_group()
    change.add_argument("--set", nargs="+", metavar="ANNOTATOR", help="exactly these annotators")
    change.add_argument("--add", nargs="+", metavar="ANNOTATOR")
    change.add_argument("--remove", nargs="+", metavar="ANNOTATOR")
    change.add_argument("--open", action="store_true", help="no members: open to every annotator")
    guideline = study.add_parser("guideline", help="replace the guideline with a text file's content")
    guideline.add_argument("name")
    guideline.add_argument("file", type=Path)
    overlap = study.add_parser("overlap", help="annotators per item (k) from now on")
    overlap.add_argument("name")
    overlap.add_argument("k", type=int)
    design = study.add_parser("design", help="how the study spends its judgements (before the first vote), or where it stands")
    design.add_argument("name")
    design.add_argument("--policy", choices=("uniform", "adaptive", "designed"))
    design.add_argument("--icc", type=float, help="designed: a pilot's or prior single-rating ICC (the designer's input)")
    design.add_argument("--seed", type=int, help="designed: the seed of the draw (default: the study's)")
    design.add_argument("--question", choices=("fga_vs_jga", "lambda"), default="fga_vs_jga")
    design.add_argument("--lambda", dest="lam", type=float, default=0.5, help="the FGA λ compared with JGA")
    design.add_argument("--budget", type=int, help="judgements; the study closes once they are spent")
    design.add_argument("--target-width", type=float, help="close the study when the 95%% interval is this narrow")
    design.add_argument("--max-k", type=int, help="votes on a split dialogue, at most (adaptive)")
    design.add_argument("--json", action="store_true")
    for action, what in (("archive", "hide the study from annotators"), ("unarchive", "show it to annotators again")):
        study.add_parser(action, help=what).add_argument("name")
    plan = study.add_parser(
        "plan", help="the analysis plan and the deviations from it; --freeze fixes it (before the first vote)"
    )
    plan.add_argument("name")
    plan.add_argument("--freeze", action="store_true", help="freeze the analysis settings stored now as the plan")
    plan.add_argument("--export", type=Path, metavar="PATH", help="write the plan file (a folder: its timestamped name)")
    plan.add_argument("--json", action="store_true")
    log = study.add_parser("changes", help="the study's change log (who changed what, when)")
    log.add_argument("name")
    log.add_argument("--json", action="store_true")
    remove = study.add_parser("delete", help="delete the study (its votes must have been exported)")
    remove.add_argument("name")
    remove.add_argument("--confirm", required=True, metavar="NAME", help="the study's name again")

    status = commands.add_parser("status", help="progress of a study")
    status.add_argument("name")
    status.add_argument("--json", action="store_true")

    votes = commands.add_parser("votes").add_subparsers(dest="action", required=True)
    vimport = votes.add_parser("import", help="import tidy CSV votes (item, annotator, question, value[, comment])")
    vimport.add_argument("name")
    vimport.add_argument("file", type=Path)
    vexport = votes.add_parser("export")
    vexport.add_argument("name")
    vexport.add_argument("--format", choices=("csv", "jsonl"), default="csv")
    vexport.add_argument("--history", action="store_true", help="every event, not only current votes")
    vexport.add_argument("--out", type=Path)
    return parser


def _study_id(engine, name: str) -> int:
    from annotate import service

    return service.find_study(engine, service.CLI, name)


def _password() -> str:
    password = settings().password
    if password:
        return password
    if sys.stdin is None or not sys.stdin.isatty():
        raise ValueError("set DST_JUDGE_PASSWORD or run in a terminal to be asked for the password")
    first = getpass.getpass("password: ")
    if first != getpass.getpass("again: "):
        raise ValueError("the passwords differ")
    return first


def _write(text: str, out: Path | None) -> None:
    if out is None:
        sys.stdout.write(text)
    else:
        out.write_text(text, encoding="utf-8")
        print(f"wrote {out}", file=sys.stderr)


def serve(engine, args) -> None:
    """Make the database and, on an empty one, the demo; say who can log in; then become
    ``streamlit run app.py`` (same process, so Ctrl+C and signals reach Streamlit)."""
    from annotate.people.proxy import forwarded_allow_ips, trusted_proxies
    from annotate.ports import check_serve_ports
    from annotate.studies.demo import demo_accounts_active, demo_refusal, ensure_demo, print_accounts, setup_hint

    # before anything is said or started: a port taken is one line (exit 2), not an API announced that died
    check_serve_ports([*streamlit_options(), *args.streamlit_args], app_path(), args.api_host, args.api_port)
    url = engine.url.render_as_string(hide_password=False)
    print(f"DST Judge: database {engine.url.render_as_string(hide_password=True)}", flush=True)
    trusted = trusted_proxies()  # a malformed DST_JUDGE_TRUSTED_PROXIES: one line, exit 2
    refusal = demo_refusal(engine)
    if refusal:  # behind a proxy, never with the published demo passwords
        raise ValueError(f"not starting: {refusal}")
    # Streamlit's server (uvicorn) believes X-Forwarded-For from FORWARDED_ALLOW_IPS (its default:
    # loopback); make it trust exactly our proxies, as annotate.people.proxy does ("" trusts nobody).
    os.environ["FORWARDED_ALLOW_IPS"] = forwarded_allow_ips(trusted)
    if not ensure_demo(engine) and demo_accounts_active(engine):
        print_accounts()
    hint = setup_hint(engine)
    if hint:
        print(hint, flush=True)
    command = [sys.executable, "-m", "streamlit", "run", str(app_path()), *streamlit_options(), *args.streamlit_args]
    os.environ["DST_JUDGE_DB"] = url
    if args.api_port:
        start_api(url, args.api_host, args.api_port)
        os.environ["DST_JUDGE_API_PORT"] = str(args.api_port)  # the Annotators page shows the API's address
        print(f"HTTP API: http://{args.api_host}:{args.api_port}/api/v1 (tokens: dst-judge token add NAME)", flush=True)
    sys.stdout.flush()
    from annotate.analysis.analysis_jobs import NUMERIC_THREADS

    for name, value in {**MALLOC_DEFAULTS, **NUMERIC_THREADS}.items():  # read as the process starts: set before the exec
        os.environ.setdefault(name, value)
    os.execv(sys.executable, command)


# glibc's allocator settings for the serving process (issue 37, the 1-hour soak with 10 tabs,
# ``python -m bench.bench_soak --heap``): with glibc's defaults the memory in use stayed flat while the free
# memory inside the heap grew from 4 to 65 MB (freed blocks scattered over one arena per thread, which no
# trim gives back; glibc also raises its mmap threshold after each large free, so that a rerun's large
# temporary buffers land in the heap between long-lived blocks).  Two arenas and a fixed threshold keep the
# free memory at a few MB (docs/deployment.md, "Memory over a long day").  A value set in the environment
# is kept.
MALLOC_DEFAULTS = {"MALLOC_ARENA_MAX": "2", "MALLOC_MMAP_THRESHOLD_": "131072"}


def app_path() -> Path:
    """``app.py``: beside the ``annotate`` package, in a checkout and in an installed copy alike (the wheel
    installs it as the top-level module ``app``), never looked up on ``sys.path`` (a user's own ``app.py``
    in the current folder must not be served)."""
    return Path(__file__).resolve().parent.parent / "app.py"


def streamlit_options() -> list[str]:
    """The app's Streamlit settings (``annotate/streamlit_config.toml``, which ``.streamlit/config.toml``
    links to) as command-line options, so that they hold whatever folder ``serve`` runs from; options
    given after ``serve`` come later and win."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]

    config = tomllib.loads((Path(__file__).resolve().parent / "streamlit_config.toml").read_text(encoding="utf-8"))
    options = []
    for section, values in config.items():
        for key, value in values.items():
            shown = str(value).lower() if isinstance(value, bool) else str(value)
            options.append(f"--{section}.{key}={shown}")
    return options


def config(args) -> None:
    """``dst-judge config``: every setting, its value now and its source; then the paths they give."""
    from formats.settings import effective

    rows = effective()
    width = max(len(r.env) for r in rows)
    for r in rows:
        print(f"{r.env:<{width}}  {r.value:<40}  ({r.source})")
    current = settings()
    url = args.db or current.database_url
    print(f"\ndatabase: {url}{'  (--db)' if args.db else ''}")
    print(f"demo data: {current.fixtures}")
    print(f"app: {app_path()}")


def api(engine, args) -> None:
    """The HTTP API alone, in this process (uvicorn); several app servers may each run one."""
    import uvicorn

    from annotate.api.app import create_app

    print(f"DST Judge API on http://{args.host}:{args.port}/api/v1 (OpenAPI: /api/v1/openapi.json)", flush=True)
    uvicorn.run(create_app(engine), host=args.host, port=args.port, log_level="warning")


def api_command(host: str, port: int) -> list[str]:
    """The API's command line: the database comes through DST_JUDGE_DB (a password stays out of ``ps``)."""
    return [sys.executable, "-m", "annotate", "api", "--host", host, "--port", str(port)]


def start_api(url: str, host: str, port: int):
    """The HTTP API as a child process beside the app; it ends with this process (Linux: the parent's
    death signal; elsewhere at exit)."""
    import atexit
    import signal
    import subprocess

    def die_with_parent() -> None:
        try:
            import ctypes

            ctypes.CDLL("libc.so.6").prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        except OSError:
            pass

    child = subprocess.Popen(
        api_command(host, port),
        env={**os.environ, "DST_JUDGE_DB": url},  # never on the command line: ps shows it to every local user
        preexec_fn=die_with_parent if sys.platform.startswith("linux") else None,
    )
    atexit.register(child.terminate)
    return child


def token_add(engine, args) -> None:
    """Print a new token on stdout (alone: ``T=$(python -m annotate token add NAME)``), the rest on stderr."""
    from annotate import service

    known = {a.name: a for a in service.list_annotators(engine, service.CLI)}
    if args.name not in known:
        if not args.judge:
            raise ValueError(f"no annotator named {args.name!r} (add them first, or give --judge to make an automatic judge)")
        service.add_person(engine, service.CLI, args.name, None, kind="judge")
        print(f"added automatic judge {args.name}", file=sys.stderr)
    elif args.judge and known[args.name].kind != "judge":
        raise ValueError(f"{args.name!r} is a {known[args.name].role}, not an automatic judge")
    token, info = service.add_token(engine, service.CLI, args.name, args.label)
    print(token)
    print(f"token {info.id} for {info.annotator} ({info.kind}, {info.role}): shown once, only its hash is kept", file=sys.stderr)


def token_revoke(engine, args) -> None:
    from annotate import service

    count = service.revoke_tokens(engine, service.CLI, args.name, args.id)
    print(f"revoked {count} token{'s' if count != 1 else ''} of {args.name}")


def token_list(engine, args) -> None:
    from annotate import service

    for t in service.list_tokens(engine, service.CLI):
        state = f"revoked {t.revoked_at}" if t.revoked_at else "live"
        print(f"{t.id}\t{t.annotator}\t{t.kind}\t{t.prefix}\t{state}\t{t.label}")


def judge_run(engine, args) -> None:
    from annotate.api import client

    code = client.main(args)
    if code:
        raise SystemExit(code)


def init(engine, args) -> None:
    print(f"database ready: {engine.url.render_as_string(hide_password=True)}")


def annotator_add(engine, args) -> None:
    from annotate import service

    if args.judge:
        person = service.add_person(engine, service.CLI, args.name, None, kind="judge")
        print(f"added automatic judge {person.name} (give it an API token: dst-judge token add {person.name})")
        return
    password = _password()
    person = service.add_person(engine, service.CLI, args.name, password, "admin" if args.admin else "annotator")
    print(f"added {person.role} {person.name}")


def annotator_password(engine, args) -> None:
    from annotate import service

    password = _password()
    revoked = service.reset_password(engine, service.CLI, args.name, password)
    tokens = f"{revoked} API token{'s' if revoked != 1 else ''} revoked"
    print(f"new password for {args.name}; their sessions ended, {tokens} and failed logins cleared")


def annotator_list(engine, args) -> None:
    from annotate import service

    for person in service.list_annotators(engine, service.CLI, workers=True):
        print(f"{person.name}\t{person.role}\t{'login' if person.login else 'no login'}")


def study_create(engine, args) -> None:
    from annotate import service
    from formats.errors import read_text

    guideline = read_text(args.guideline) if args.guideline else ""
    created = service.create_study_from_files(
        engine,
        service.CLI,
        args.name,
        args.kind,
        args.paths,
        overlap=args.overlap,
        condition=args.condition,
        guideline=guideline,
        sample=args.sample,
        seed=args.seed,
        gold_path=args.gold,
        timeout_minutes=args.timeout,
        unsure=args.unsure,
    )
    print(f"created {args.kind} study {args.name!r} with {created.items} items (overlap {args.overlap})")


def study_list(engine, args) -> None:
    from annotate import service

    for study in service.list_studies(engine):
        state = "archived" if study.archived else "open"  # archived: hidden from annotators
        print(f"{study.name}\t{study.kind}\t{study.items} items\toverlap {study.overlap}\t{state}")


def study_reopen(engine, args) -> None:
    from annotate import service

    if bool(args.item) == bool(args.all):
        raise ValueError("give an item key or --all")
    study_id = _study_id(engine, args.name)
    count = service.reopen(engine, service.CLI, study_id, None if args.all else args.item, args.condition, args.extra)
    print(f"re-opened {count} item{'s' if count != 1 else ''} of {args.name!r} for {args.extra} more judgement(s) each")


def study_items(engine, args) -> None:
    from annotate import service

    listing = service.study_items(engine, service.CLI, _study_id(engine, args.name))
    if args.json:
        print(json.dumps([asdict(i) for i in listing], indent=1))
    else:
        print("\n".join(f"{i.key}\t{i.condition}" for i in listing))


def study_members(engine, args) -> None:
    from annotate import service

    study_id = _study_id(engine, args.name)
    if args.set or args.open:
        current = service.set_members(engine, service.CLI, study_id, args.set or [])
    elif args.add or args.remove:
        current = service.change_members(engine, service.CLI, study_id, add=args.add, remove=args.remove)
    else:
        current = service.study_members(engine, service.CLI, study_id)
    print("\n".join(current) or "(everybody)")


def study_guideline(engine, args) -> None:
    from annotate import service
    from formats.errors import read_text

    text = read_text(args.file)
    service.set_guideline(engine, service.CLI, _study_id(engine, args.name), text)
    print(f"{args.name}: guideline set")


def study_overlap(engine, args) -> None:
    from annotate import service

    service.set_overlap(engine, service.CLI, _study_id(engine, args.name), args.k)
    print(f"{args.name}: overlap set")


def study_design(engine, args) -> None:
    """Set the design (with --policy), else print it with the judgements spent and the main question's
    interval now (the study closes here, as on the Progress page, when the target width is reached)."""
    from annotate import service
    from annotate.analysis.reports import allocation_line

    study_id = _study_id(engine, args.name)
    if args.policy == "designed":  # the designer's proposal for the budget (metrics.design), fixed now
        if args.icc is None or args.budget is None:
            raise ValueError("--policy designed needs --icc (a pilot's or prior single-rating ICC) and --budget")
        found = service.design_proposal(
            engine,
            service.CLI,
            study_id,
            icc=args.icc,
            budget=args.budget,
            lam=args.lam,
            question="lambda" if args.question == "lambda" else "comparison",
        )
        chosen_seed = {} if args.seed is None else {"seed": args.seed}
        drawn = service.set_designed_k(engine, service.CLI, study_id, {**found.proposal.as_dict(), **chosen_seed})
        chosen = found.proposal
        print(
            json.dumps({**drawn.as_json(), "proposal": found.as_dict()})
            if args.json
            else f"{args.name}: designed, {chosen.n} dialogues ({chosen.m} with {chosen.k_overlap} votes, the others 1), "
            f"{chosen.judgements} judgements, predicted 95% width {chosen.width:.3f} (uniform k = 3: "
            f"{'n/a' if found.uniform_k3 is None else format(found.uniform_k3.width, '.3f')}); "
            f"{drawn.included} of {drawn.items} items will be judged"
        )
        return
    if args.policy:
        drawn = service.set_allocation(
            engine,
            service.CLI,
            study_id,
            policy=args.policy,
            question=args.question,
            budget=args.budget,
            target_width=args.target_width,
            max_k=args.max_k,
            lam=args.lam,
        )
        print(
            json.dumps(drawn.as_json())
            if args.json
            else f"{args.name}: {drawn.policy}, {drawn.included} of {drawn.items} items will be judged"
        )
        return
    report = service.allocation_status(engine, service.CLI, study_id)
    print(json.dumps(report.as_json(), indent=1) if args.json else allocation_line(report))


def study_archive(engine, args) -> None:
    """Archive or unarchive: idempotent (archiving an archived study changes nothing), and says which."""
    from annotate import service

    archive = args.action == "archive"
    done = service.set_archived(engine, service.CLI, _study_id(engine, args.name), archive)
    said = {
        (True, True): "archived (hidden from annotators)",
        (True, False): "already archived (nothing changed)",
        (False, True): "unarchived (open to annotators again)",
        (False, False): "already open (not archived; nothing changed)",
    }
    print(f"{args.name}: {said[(archive, done['changed'])]}")


def study_changes(engine, args) -> None:
    from annotate import service

    log = service.study_changes(engine, service.CLI, _study_id(engine, args.name))
    if args.json:
        print(json.dumps([asdict(c) for c in log], indent=1))
    else:
        for c in log:
            print(f"{c.at}\t{c.by}\t{c.what}\t{c.old} -> {c.new}")


def study_plan(engine, args) -> None:
    """Print the analysis plan and its deviations; --freeze freezes it first, --export writes its file."""
    from annotate import service

    study_id = _study_id(engine, args.name)
    plan = (
        service.freeze_plan(engine, service.CLI, study_id) if args.freeze else service.study_plan(engine, service.CLI, study_id)
    )
    if args.export is not None:
        name, content = service.plan_file(engine, service.CLI, study_id)
        out = args.export / name if args.export.is_dir() else args.export
        try:
            out.write_bytes(content)
        except OSError as err:  # one line, not a traceback
            raise ValueError(f"cannot write {out}: {err.strerror}") from None
        print(f"wrote {out}", file=sys.stderr)
    if args.json:
        print(json.dumps({**asdict(plan), "frozen": plan.frozen, "deviations": [d.text() for d in plan.deviations]}, indent=1))
        return
    if plan.frozen:
        print(
            f"{args.name}: analysis plan frozen at {plan.frozen_at} by {plan.frozen_by} (settings SHA-256 {plan.settings_sha256})"
        )
    else:
        votes = f"{plan.votes} vote{'s' if plan.votes != 1 else ''}"
        print(f"{args.name}: analysis plan not frozen ({votes}; it can be frozen only before the first vote)")
    for key, value in plan.settings.items():
        print(f"  {key}: {json.dumps(value)}")
    for deviation in plan.deviations:
        print(f"flag: {deviation.text()}")


def study_delete(engine, args) -> None:
    from annotate import service

    service.delete_study(engine, service.CLI, _study_id(engine, args.name), args.confirm)
    print(f"deleted study {args.name!r}")


def status(engine, args) -> None:
    from annotate import service

    report = service.study_progress(engine, service.CLI, _study_id(engine, args.name))
    if args.json:
        print(json.dumps(asdict(report), indent=1))
        return
    print(
        f"{report.study} ({report.kind}, overlap {report.overlap}): {report.items} items, "
        f"{report.judgements_done}/{report.judgements_needed} judgements ({100 * report.fraction_done:.1f}%)"
    )
    for name, counts in report.annotators.items():
        print(f"  {name}: {counts.done} done, {counts.active} in progress")


def votes_import(engine, args) -> None:
    """Checked, then staged apart, then swapped in by one short transaction (annotators keep voting)."""
    from annotate import service
    from formats.errors import read_text

    text = read_text(args.file)
    count = service.import_votes(engine, service.CLI, _study_id(engine, args.name), str(args.file), text)
    print(f"imported {count} votes into {args.name!r}")


def votes_export(engine, args) -> None:
    """The votes, written; then the export is recorded (a study's votes must be exported before a delete)."""
    from annotate import service

    study_id = _study_id(engine, args.name)
    text, through = service.votes_download(engine, service.CLI, study_id, history=args.history, fmt=args.format)
    _write(text, args.out)
    what = f"votes {args.format}{' (every event)' if args.history else ''}"
    service.record_export(engine, service.CLI, study_id, what, through)


# (command, action) -> what runs it; every command that writes is one transaction.
COMMANDS = {
    ("serve", None): serve,
    ("init", None): init,
    ("api", None): api,
    ("token", "add"): token_add,
    ("token", "revoke"): token_revoke,
    ("token", "list"): token_list,
    ("judge-run", None): judge_run,
    ("annotator", "add"): annotator_add,
    ("annotator", "password"): annotator_password,
    ("annotator", "list"): annotator_list,
    ("admin", "add"): annotator_add,
    ("study", "create"): study_create,
    ("study", "list"): study_list,
    ("study", "reopen"): study_reopen,
    ("study", "items"): study_items,
    ("study", "members"): study_members,
    ("study", "guideline"): study_guideline,
    ("study", "overlap"): study_overlap,
    ("study", "design"): study_design,
    ("study", "archive"): study_archive,
    ("study", "unarchive"): study_archive,
    ("study", "changes"): study_changes,
    ("study", "plan"): study_plan,
    ("study", "delete"): study_delete,
    ("status", None): status,
    ("votes", "import"): votes_import,
    ("votes", "export"): votes_export,
}


def run(args) -> int:
    from annotate.store.db import get_engine

    if args.command == "judge-run":  # a client of the API: no database of its own
        return judge_run(None, args) or 0
    if args.command == "config":  # reads no database
        config(args)
        return 0
    COMMANDS[(args.command, getattr(args, "action", None))](get_engine(args.db), args)
    return 0


def main(argv: list[str] | None = None) -> int:
    try:
        settings()  # a DST_JUDGE_* value that does not parse: one line, before any module reads it
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra and args.command != "serve":
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    args.streamlit_args = extra
    try:
        return run(args)
    except ValueError as err:  # ReaderError, StudyError, AuthError: one clear line
        print(f"error: {err}", file=sys.stderr)
        return 2
    except Exception as err:  # database errors: one line, not a traceback
        from sqlalchemy.exc import SQLAlchemyError

        if isinstance(err, SQLAlchemyError):
            print(f"error: database: {err.__class__.__name__}: {str(err).splitlines()[0]}", file=sys.stderr)
            return 2
        raise


if __name__ == "__main__":
    sys.exit(main())
