"""The reference client of the HTTP API: ``python -m annotate judge-run STUDY --token T --command "..."``.

It runs any automatic judge, with no model bundled: for each item the API gives the judge's token
(``GET .../next``), it runs ``--command`` (through the shell), writes the item as JSON on the
command's stdin (``{"study": ..., "item": <the API's item: key, data, questions with their allowed
answers>, "guideline": ...}``) and reads its answer from stdout: a JSON object of answers
(``{"satisfied": "1"}``), or ``{"answers": {...}, "comment": "..."}``, or, for an item with one
question, a bare answer (``1``).  The answer is POSTed with an Idempotency-Key made of the run's id
and the item, so a POST retried after a lost connection or a 503 never counts twice.  It stops when
nothing is left; a command that fails or answers nonsense stops the run with a message (the item
stays the judge's: the next run starts with it).  Standard library only (urllib): it runs wherever
Python does.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from dataclasses import dataclass

COMMAND_TIMEOUT = 600  # seconds the judge's command may take on one item
RETRIES = 5  # a 503 (database unreachable) or a lost connection: tried again, waiting 1, 2, 4, ... s


class ClientError(RuntimeError):
    """The API refused a request (its problem's detail), or the judge's command failed."""


@dataclass
class Api:
    base: str  # e.g. http://127.0.0.1:8600
    token: str
    timeout: float = 60.0

    def call(self, method: str, path: str, payload: dict | None = None, headers: dict | None = None) -> dict:
        url = self.base.rstrip("/") + "/api/v1" + path
        data = None if payload is None else json.dumps(payload).encode("utf-8")
        for attempt in range(RETRIES + 1):
            request = urllib.request.Request(url, data=data, method=method)
            request.add_header("Authorization", f"Bearer {self.token}")
            request.add_header("Accept", "application/json")
            if data is not None:
                request.add_header("Content-Type", "application/json")
            for name, value in (headers or {}).items():
                request.add_header(name, value)
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    return json.loads(response.read() or b"null")
            except urllib.error.HTTPError as err:
                problem = _problem(err)
                if err.code == 503 and attempt < RETRIES:
                    time.sleep(2**attempt)
                    continue
                raise ClientError(f"{method} {path}: {err.code} {problem}") from None
            except (urllib.error.URLError, ConnectionError, TimeoutError) as err:
                if attempt < RETRIES:  # safe: a vote carries its Idempotency-Key
                    time.sleep(2**attempt)
                    continue
                raise ClientError(f"{method} {path}: {err}") from None
        raise AssertionError("unreachable")


def _problem(err: urllib.error.HTTPError) -> str:
    try:
        return json.loads(err.read()).get("detail", "")
    except Exception:  # not problem+json: say the status only
        return ""


def study_of(api: Api, study: str) -> dict:
    """The study ``study`` names, by the API's rule (``formats.references.reference``): its id when
    ASCII digits, else its name."""
    from formats.references import reference

    wanted = reference(study)
    for found in api.call("GET", "/studies"):
        if (found["id"] if isinstance(wanted, int) else found["name"]) == wanted:
            return found
    raise ClientError(f"no study {study!r} open to this token")


def answers_from(output: str, item: dict) -> tuple[dict[str, str], str]:
    """The judge's stdout as (answers, comment).

    >>> answers_from('{"satisfied": 1}', {"questions": [{"name": "satisfied"}]})
    ({'satisfied': '1'}, '')
    >>> answers_from(' 0\\n', {"questions": [{"name": "satisfied"}]})
    ({'satisfied': '0'}, '')
    >>> answers_from('{"answers": {"correct": "1"}, "comment": "ok"}', {"questions": []})
    ({'correct': '1'}, 'ok')
    >>> answers_from('{"correct": true, "human_like": 0.0}', {"questions": []})
    ({'correct': '1', 'human_like': '0'}, '')
    """
    text = output.strip()
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError:
        parsed = text
    comment = ""
    if isinstance(parsed, dict) and isinstance(parsed.get("answers"), dict):
        comment = str(parsed.get("comment", ""))
        parsed = parsed["answers"]
    if isinstance(parsed, dict):
        return {str(k): _answer(v) for k, v in parsed.items()}, comment
    if len(item["questions"]) == 1 and text:
        return {item["questions"][0]["name"]: _answer(parsed)}, comment
    raise ClientError(f"the judge's output is not a JSON object of answers: {text[:200]!r}")


def _answer(value) -> str:
    """An answer as the API takes it: JSON true/false as 1/0, a whole number without its ".0"."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def run(base: str, token: str, study: str, command: str, *, limit: int | None = None, log=print) -> int:
    """Judge every item the API gives this token in ``study`` with ``command``: the number judged."""
    api = Api(base, token)
    found = study_of(api, study)
    run_id = uuid.uuid4().hex[:12]
    path = f"/studies/{found['id']}"
    judged = 0
    while limit is None or judged < limit:
        given = api.call("GET", f"{path}/next")
        item = given["item"]
        if item is None:
            break
        stdin = json.dumps({"study": found["name"], "guideline": found["guideline"], "item": item}, ensure_ascii=False)
        try:
            done = subprocess.run(command, shell=True, input=stdin, capture_output=True, text=True, timeout=COMMAND_TIMEOUT)
        except subprocess.TimeoutExpired:
            raise ClientError(f"the judge's command took more than {COMMAND_TIMEOUT} s on item {item['key']}") from None
        if done.returncode != 0:
            why = done.stderr.strip()[:500]
            raise ClientError(f"the judge's command failed on item {item['key']} (exit {done.returncode}): {why}")
        answers, comment = answers_from(done.stdout, item)
        stored = api.call(
            "POST",
            f"{path}/items/{item['id']}/votes",
            {"answers": answers, "comment": comment},
            {"Idempotency-Key": f"judge-run-{run_id}-{item['id']}"},
        )
        if not stored["complete"]:
            missing = [q["name"] for q in item["questions"] if q["required"] and q["name"] not in stored["answers"]]
            raise ClientError(f"item {item['key']}: the judge left required questions unanswered: {', '.join(missing)}")
        judged += 1
        if stored["closed"]:
            break
    log(f"judged {judged} item(s) of {found['name']!r}")
    return judged


def main(args) -> int:
    try:
        run(args.url, args.token, args.study, args.judge_command, limit=args.limit, log=lambda text: print(text, file=sys.stderr))
    except ClientError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0
