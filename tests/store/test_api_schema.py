"""schemathesis against the API's own OpenAPI document (issue 28), on SQLite and PostgreSQL.

Every operation the document lists is fuzzed (the coverage cases schemathesis derives from the schema,
then Hypothesis' positive and negative data, and every other HTTP method) with an admin's token and again
with an annotator's, under every built-in check of schemathesis (no 5xx, every status, content type,
header and body as documented, schema-valid data accepted and invalid data refused, auth enforced, 405
with an Allow header; the run's line names them all).  Then by hand, with each request checked the same way: a bad,
revoked or missing token is 401 problem+json with a Bearer challenge on every operation, an annotator's
token on the export 403, and a judge's token claims and votes.

The fuzzing mixes the study's real values (its name and id, its items, its export formats) into the
generated ones so that it reaches the success paths as well as the refusals; a seeded, derandomized run:
the same cases on every machine.  Each run writes one line: cases sent per operation and the statuses
seen (the figures of the issue's closing note)."""

from __future__ import annotations

import secrets
from collections import Counter
from dataclasses import dataclass, field

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import CHECKS, load_all_checks
from schemathesis.core import NOT_SET
from sqlalchemy import select

from annotate import service
from annotate.api.app import create_app
from annotate.store.db import read_session
from annotate.store.models import Item
from tests.api_harness import ApiStudy, api_study, bearer

SCHEMA = "/api/v1/openapi.json"
SEED = 28  # the same cases on every machine: a failure in CI is a failure here
MAX_EXAMPLES = 100  # Hypothesis examples per operation and generation mode, for each role and backend
OPERATIONS = {
    "GET /api/v1/studies",
    "GET /api/v1/studies/{study}/next",
    "POST /api/v1/studies/{study}/items/{item}/votes",
    "GET /api/v1/studies/{study}/progress",
    "GET /api/v1/studies/{study}/export",
}
# refusals of a well-formed request by a rule of the study (not of the document): 422 with these types
STUDY_RULES = {"invalid-answer", "unknown-format", "idempotency-key-reused"}


def builtin_checks() -> list[str]:
    load_all_checks()
    return [check.__name__ for check in CHECKS.get_all() if not isinstance(check, type)]


@dataclass
class Api:
    """The API in-process on the test's database, with its study and tokens, and what a run sent."""

    engine: object
    study: ApiStudy
    app: object
    items: list[int]
    cases: Counter = field(default_factory=Counter)  # operation -> cases sent
    statuses: Counter = field(default_factory=Counter)  # (operation, status) -> responses
    failed: bool = False

    def token(self, role: str) -> str:
        return {"admin": self.study.admin, "annotator": self.study.annotators[0], "judge": self.study.judge}[role]


@pytest.fixture
def api(engine, fixtures) -> Api:
    study = api_study(engine, fixtures)
    with read_session(engine) as session:
        items = list(session.scalars(select(Item.id).where(Item.study_id == study.study_id).order_by(Item.id)))
    return Api(engine, study, create_app(engine), items)


def run_config(api: Api) -> schemathesis.config.SchemathesisConfig:
    from exports.formats import FORMATS

    return schemathesis.config.SchemathesisConfig.from_dict(
        {
            "seed": SEED,
            "dictionaries": {
                "studies": {"values": [api.study.name, str(api.study.study_id)]},
                "items": {"values": api.items},
                "formats": {"values": list(FORMATS)},
            },
            "parameters": {
                "path.study": {"dictionary": "studies", "probability": 0.7},
                "path.item": {"dictionary": "items", "probability": 0.5},
                "query.format": {"dictionary": "formats", "probability": 0.7},
            },
            "generation": {"max-examples": MAX_EXAMPLES},
            # A request the document allows may still break a rule of the study (an answer its question
            # does not take, a format of another kind): 422, and ``study_rule_refusals`` checks that such
            # a 422 is one of those rules, never the request validation's "invalid-request".
            "checks": {"positive_data_acceptance": {"expected-statuses": ["2xx", "401", "403", "404", "409", "422"]}},
        }
    )


def load(api: Api):
    return schemathesis.openapi.from_asgi(SCHEMA, api.app, config=run_config(api))


def study_rule_refusals(ctx, response, case) -> None:
    """A schema-valid request refused with 422 is refused by a rule of the study: the document and the
    request validation agree on what a well-formed request is."""
    if case.meta is None or not case.meta.generation.mode.is_positive or response.status_code != 422:
        return
    problem = response.json()
    assert problem["type"].rsplit("/", 1)[-1] in STUDY_RULES, f"a request the document allows was refused: {problem}"


@pytest.fixture(params=["admin", "annotator"])
def role(request) -> str:
    return request.param


@pytest.fixture
def api_schema(api, role, request):
    """The document as schemathesis reads it from the app, for one role; afterwards, what was run."""
    yield load(api)
    operations = sorted(api.cases)
    line = (
        f"schemathesis [{request.node.callspec.id}]: {sum(api.cases.values())} cases; "
        + "; ".join(
            f"{op} {api.cases[op]} ({', '.join(f'{s}x{n}' for (o, s), n in sorted(api.statuses.items()) if o == op)})"
            for op in operations
        )
        + f"; checks: {', '.join(builtin_checks())}"
    )
    plugins = request.config.pluginmanager
    capture, reporter = plugins.get_plugin("capturemanager"), plugins.get_plugin("terminalreporter")
    if capture is not None and reporter is not None:
        with capture.global_and_fixture_disabled():
            reporter.write("\n" + line + "\n")
    if api.failed:
        return
    # the run reached every operation, and both its success and its refusal paths
    assert OPERATIONS <= set(operations), line
    assert all(api.cases[op] >= MAX_EXAMPLES for op in OPERATIONS), line
    for op in OPERATIONS - {"POST /api/v1/studies/{study}/items/{item}/votes", "GET /api/v1/studies/{study}/export"}:
        assert api.statuses[op, 200] > 0 and api.statuses[op, 401] > 0, line
    export = "GET /api/v1/studies/{study}/export"
    assert api.statuses[export, 200 if role == "admin" else 403] > 0, line
    votes = "POST /api/v1/studies/{study}/items/{item}/votes"
    assert api.statuses[votes, 404] > 0 and api.statuses[votes, 422] > 0, line
    assert sum(n for (o, s), n in api.statuses.items() if s == 405) >= len(OPERATIONS), line  # other methods


fuzzed = schemathesis.pytest.from_fixture("api_schema")


@fuzzed.parametrize()
@settings(
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.filter_too_much],
)
def test_every_operation_answers_as_documented(case, api, role):
    try:
        response = case.call_and_validate(headers=bearer(api.token(role)), additional_checks=[study_rule_refusals])
    except BaseException:
        api.failed = True
        raise
    operation = case.operation.label  # the probes with other methods (405) count for their operation
    api.cases[operation] += 1
    api.statuses[operation, response.status_code] += 1


# ---- by hand: every operation with a well-formed request, each response checked as above ----


def well_formed(schema, api: Api, label: str, item: int | None = None, **headers):
    """A request to the operation ``label`` that only its token can spoil."""
    operation = schema.find_operation_by_label(label)
    assert operation is not None, f"the document has no {label}"
    parameters = {"study": api.study.name}
    if "{item}" in label:
        parameters["item"] = item if item is not None else api.items[0]
    body = {"answers": {"satisfied": "1"}} if operation.method.upper() == "POST" else NOT_SET
    query = {"format": "votes-csv"} if label.endswith("/export") else None
    return operation.Case(path_parameters=parameters, query=query, body=body, headers=headers or None)


def checked(case, headers: dict):
    """The response to ``case`` sent with ``headers``, after every check schemathesis has."""
    return case.call_and_validate(headers=headers)


def header(response, name: str) -> str:
    """One header of a schemathesis response (its headers are lists under lower-case names)."""
    return ", ".join(response.headers.get(name.lower(), []))


def assert_unauthorized(response, why: str) -> None:
    assert response.status_code == 401, (why, response.status_code, response.text)
    assert header(response, "content-type").startswith("application/problem+json"), why
    assert header(response, "www-authenticate").startswith("Bearer"), why
    problem = response.json()
    assert problem["type"] == "/api/v1/problems/unauthorized" and problem["status"] == 401, (why, problem)
    assert problem["instance"].startswith("/api/v1/studies"), (why, problem)


def test_a_bad_revoked_or_missing_token_is_401_problem_on_every_operation(api):
    schema = load(api)
    labels = {op.ok().label for op in schema.get_all_operations()}
    assert labels == OPERATIONS  # a new operation is tested here the day it is added
    annotator = f"{api.study.name}-a1"
    token = api.study.annotators[1]
    # the annotator's token works on every operation before it is revoked (export: their role's 403)
    before = {label: checked(well_formed(schema, api, label), bearer(token)).status_code for label in sorted(labels)}
    assert before["GET /api/v1/studies"] == before["GET /api/v1/studies/{study}/next"] == 200, before
    assert before["GET /api/v1/studies/{study}/export"] == 403, before
    assert service.revoke_tokens(api.engine, service.CLI, annotator) == 1
    bad = {
        "no Authorization header": {},
        "a random token": bearer(secrets.token_urlsafe(32)),
        "a token-shaped random token": bearer("dstj_" + secrets.token_urlsafe(32)),
        "an empty bearer token": {"Authorization": "Bearer "},
        "another scheme": {"Authorization": f"Basic {api.study.admin}"},
        "a revoked token": bearer(token),
        "a live token with a character changed": bearer(api.study.admin[:-1] + ("A" if api.study.admin[-1] != "A" else "B")),
    }
    for label in sorted(labels):
        for why, headers in bad.items():
            assert_unauthorized(checked(well_formed(schema, api, label), headers), f"{label}: {why}")
    # the other tokens still work, and the revoked one stays refused
    assert (
        checked(well_formed(schema, api, "GET /api/v1/studies/{study}/progress"), bearer(api.study.annotators[0])).status_code
        == 200
    )
    assert service.token_user(api.engine, token) is None


def test_an_annotators_or_judges_token_on_the_export_is_403_problem(api):
    from exports.formats import FORMATS

    schema = load(api)
    for role in ("annotator", "judge"):
        for fmt in ("votes-csv", "report-html", "no-such-format"):
            case = well_formed(schema, api, "GET /api/v1/studies/{study}/export")
            case.query = {"format": fmt}
            response = checked(case, bearer(api.token(role)))
            assert response.status_code == 403, (role, fmt, response.text)
            assert header(response, "content-type").startswith("application/problem+json")
            assert response.json()["type"] == "/api/v1/problems/forbidden" and response.json()["detail"]
            assert "www-authenticate" not in response.headers  # the token is good; the role is not
    # the admin's token on the same requests: each format of the study's kind, with its documented type
    shown = {}
    for fmt in FORMATS:
        case = well_formed(schema, api, "GET /api/v1/studies/{study}/export")
        case.query = {"format": fmt}
        shown[fmt] = checked(case, bearer(api.study.admin)).status_code
    assert shown["votes-csv"] == shown["report-html"] == shown["votes-parquet"] == 200, shown
    assert shown["dstc-labels"] == 422, shown  # an SLU format on a satisfaction study
    assert shown["majority-csv"] == 409, shown  # no votes yet: nothing to take a majority of


def test_a_judges_token_claims_and_votes_and_a_retry_replays(api):
    schema = load(api)
    judge = bearer(api.study.judge)
    claimed = checked(well_formed(schema, api, "GET /api/v1/studies/{study}/next"), judge)
    assert claimed.status_code == 200
    item = claimed.json()["item"]
    assert item is not None and item["questions"][0]["answers"] == ["1", "0"]
    vote = well_formed(
        schema, api, "POST /api/v1/studies/{study}/items/{item}/votes", item=item["id"], **{"Idempotency-Key": "j-1"}
    )
    first = checked(vote, judge)
    assert first.status_code == 200, first.text
    assert first.json()["answers"] == {"satisfied": "1"} and first.json()["complete"] is True
    assert first.json()["replayed"] is False and first.json()["progress"]["judged"] == 1
    again = checked(vote, judge)
    assert again.json() == {**first.json(), "replayed": True}
    progress = checked(well_formed(schema, api, "GET /api/v1/studies/{study}/progress"), judge)
    assert progress.json()["judged"] == 1
    # a person's token on the judge's item is refused (it is not theirs): never stored as their vote
    theirs = well_formed(schema, api, "POST /api/v1/studies/{study}/items/{item}/votes", item=item["id"])
    refused = checked(theirs, bearer(api.study.annotators[0]))
    assert refused.status_code == 403 and header(refused, "content-type").startswith("application/problem+json")
    assert refused.json()["detail"] == "this item is not assigned to you"


def test_what_the_fuzzing_found_is_answered_as_a_problem_not_a_500(api, caplog):
    """The defects schemathesis found, each answered now as the document says."""
    from fastapi.testclient import TestClient

    http = TestClient(api.app, raise_server_exceptions=False)
    admin = bearer(api.study.admin)
    # an export of a study id no study has: 404 as on every route (was 500, a StopIteration)
    missing = http.get("/api/v1/studies/0/export", params={"format": "votes-csv"}, headers=admin)
    assert missing.status_code == 404 and missing.json()["detail"] == "no such study"
    # an analysis export of a study with no votes: the export's refusal, 409 (was 500, a ValueError)
    early = http.get(f"/api/v1/studies/{api.study.name}/export", params={"format": "agreement-csv"}, headers=admin)
    assert early.status_code == 409 and early.json()["type"] == "/api/v1/problems/export-unavailable"
    assert early.json()["detail"] == f"study {api.study.name!r} has no votes yet"
    # the parquet export under a documented media type (was application/octet-stream, undocumented)
    parquet = http.get(f"/api/v1/studies/{api.study.name}/export", params={"format": "votes-parquet"}, headers=admin)
    assert parquet.status_code == 200 and parquet.headers["content-type"] == "application/vnd.apache.parquet"
    assert parquet.content[:4] == b"PAR1"
    # a vote whose body is not UTF-8: 422 invalid-request, as a broken JSON is (was 400, undocumented)
    url = f"/api/v1/studies/{api.study.name}/items/{api.items[0]}/votes"
    garbled = http.post(url, content=b"\xff\xfe{", headers={**admin, "Content-Type": "application/json"})
    assert garbled.status_code == 422 and garbled.json()["type"] == "/api/v1/problems/invalid-request"
    # next and progress document their 422 as problem+json, as they send it (was FastAPI's JSON schema)
    document = http.get(SCHEMA).json()["paths"]
    for path in ("/api/v1/studies/{study}/next", "/api/v1/studies/{study}/progress"):
        assert list(document[path]["get"]["responses"]["422"]["content"]) == ["application/problem+json"]
    # an unexpected error: 500 problem+json with nothing of it sent, and its traceback in the log
    # (the handler runs on a worker thread: log.exception there logged "NoneType: None")
    api.app.add_api_route("/api/v1/boom", lambda: 1 / 0)
    with caplog.at_level("ERROR", logger="dst_judge.api"):
        boom = http.get("/api/v1/boom")
    assert boom.status_code == 500 and boom.json()["type"] == "/api/v1/problems/internal-error"
    assert "ZeroDivisionError" not in boom.text
    logged = [record for record in caplog.records if record.name == "dst_judge.api"]
    assert logged and logged[-1].exc_info and logged[-1].exc_info[0] is ZeroDivisionError
