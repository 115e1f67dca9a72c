"""The HTTP API (issue 28): FastAPI, its own process and port beside the Streamlit app
(``python -m annotate api``; ``python -m annotate serve`` starts both).

    GET  /api/v1/studies                              the studies the caller may annotate (admins: all)
    GET  /api/v1/studies/{study}/next                 claims the caller's next item: the item as data
    POST /api/v1/studies/{study}/items/{item}/votes   one judgement (Idempotency-Key: a retry stores nothing)
    GET  /api/v1/studies/{study}/progress             the caller's progress
    GET  /api/v1/studies/{study}/export?format=F      an export (admins)
    GET  /api/v1/openapi.json                         this API's OpenAPI document
    GET  /api/v1/docs                                 the document browsable (Swagger UI, from the API's own files)

Auth: ``Authorization: Bearer <token>`` (``annotate.people.tokens``); the token acts as its annotator with
their role, and every rule (access, roles, k, the item being the caller's) is ``annotate.service``'s,
as for the pages.  ``{study}`` is a study's id (ASCII digits) or its name, ``{item}`` an item's id
(``formats.references``).  A request's token is checked before its body is read, a body is at most
1 MB, each field has its cap and no string holds NUL or an unpaired surrogate (``annotate.api.limits``:
401, 413 and 422 before any work).  Errors are RFC 9457 problem+json (``annotate.api.problems``).
Routes are plain functions: FastAPI runs them on its thread pool, and the store's write path (group
commit on SQLite, row locks on PostgreSQL) is the pages'.
"""

import logging
from typing import Annotated

from fastapi import Depends, FastAPI, Header, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.security.utils import get_authorization_scheme_param
from fastapi_offline import FastAPIOffline
from pydantic import BaseModel, Field
from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError, OperationalError
from starlette.exceptions import HTTPException as StarletteHTTPException

from annotate import service
from annotate.api.admission import install_admission
from annotate.api.limits import (
    MAX_ANSWER,
    MAX_ANSWERS,
    MAX_COMMENT,
    QUESTION_SCHEMA,
    TEXT_RULE,
    USER,
    BodyLimit,
    Id,
    Question,
    Text,
)
from annotate.api.problems import MEDIA_TYPE, ApiProblem, body, documented
from annotate.judging.idempotency import MAX_KEY
from annotate.service import (
    AuthError,
    CapacityError,
    KeyReused,
    NotLoggedIn,
    PermissionDenied,
    Reassigned,
    StudyClosed,
    StudyError,
)

log = logging.getLogger("dst_judge.api")
PREFIX = "/api/v1"
MAX_ID = 2**31 - 1  # ids are 32-bit integers in the store
# what each export's file is, by its suffix (several files come zipped)
MEDIA = {
    ".csv": "text/csv; charset=utf-8",
    ".jsonl": "application/x-ndjson",
    ".json": "application/json",
    ".md": "text/markdown; charset=utf-8",
    ".html": "text/html; charset=utf-8",
    ".txt": "text/plain; charset=utf-8",
    ".zip": "application/zip",
    ".parquet": "application/vnd.apache.parquet",
}
OTHER_MEDIA = "application/octet-stream"  # a file of any other suffix
UNAVAILABLE = (
    "the database did not answer; a vote sent now may or may not be stored: send it again with the same "
    "Idempotency-Key, which stores it once"
)


class StudyOut(BaseModel):
    id: int
    name: str
    kind: str = Field(description="satisfaction, coco or slu")
    items: int
    overlap: int = Field(description="k: human votes per item")
    guideline: str


class QuestionOut(BaseModel):
    name: str
    type: str = Field(description="binary, choice or text")
    label: str
    required: bool
    answers: list[str] | None = Field(description="the answers it takes; null: free text")


class ItemOut(BaseModel):
    id: int
    key: str
    study: int
    kind: str
    data: dict = Field(description="the item as the kind's page shows it (turns, belief states, acts, ...)")
    questions: list[QuestionOut]
    answers: dict[str, str] = Field(description="the caller's current answers on the item")
    comment: str


class ProgressOut(BaseModel):
    judged: int = Field(description="items the caller judged in this study")
    items: int = Field(description="the study's items to judge")
    study_fraction: float = Field(description="the study's judgements done (or its budget spent), 0 to 1")
    quota: int | None = Field(description="a crowd worker's quota, else null")


class NextOut(BaseModel):
    item: ItemOut | None = Field(description="null: nothing is left for the caller")
    progress: ProgressOut


class VoteIn(BaseModel):
    answers: dict[Question, Text(MAX_ANSWER)] = Field(
        min_length=1,
        max_length=MAX_ANSWERS,
        description=f"question name -> answer (one of the question's answers, or text); {TEXT_RULE} in either",
        json_schema_extra={"propertyNames": QUESTION_SCHEMA},
    )
    comment: Text(MAX_COMMENT) = Field(default="", description=f"a comment on the item; {TEXT_RULE}")
    seconds: float | None = Field(default=None, ge=0, le=86_400, description="time spent on the item")


class VoteOut(BaseModel):
    item: int
    answers: dict[str, str] = Field(description="the caller's current answers on the item, after this vote")
    complete: bool = Field(description="every required question of the item is answered")
    progress: ProgressOut
    closed: bool = Field(description="this vote spent the study's budget: it is closed now")
    replayed: bool = Field(description="the response of an earlier POST with the same Idempotency-Key; nothing stored")


def create_app(engine: Engine | None = None) -> FastAPI:
    """The API on ``engine`` (default: the app's database, ``DST_JUDGE_DB``)."""
    # Swagger UI at /api/v1/docs from the API's own files (fastapi-offline ships them): FastAPI's page would
    # load them from a CDN, and be blank offline.  No validator badge (an image from validator.swagger.io).
    app = FastAPIOffline(
        title="DST Judge API",
        version="1",
        description="Scripts, notebooks and automatic judges annotate through the same assignment and store as people.",
        openapi_url=f"{PREFIX}/openapi.json",
        docs_url=f"{PREFIX}/docs",
        redoc_url=None,
        static_url=f"{PREFIX}/docs/static",
        swagger_ui_oauth2_redirect_url=f"{PREFIX}/docs/oauth2-redirect",
        swagger_ui_parameters={"validatorUrl": None},
    )
    app.state.engine = engine
    bearer = HTTPBearer(auto_error=False, description="an API token (python -m annotate token add NAME)")

    def the_engine() -> Engine:
        if app.state.engine is None:
            app.state.engine = service.open_engine()
        return app.state.engine

    def authenticate(authorization: str | None):
        """The caller an ``Authorization`` header names, else ApiProblem (401; 503 when the database
        does not answer): the route's dependency, and ``BodyLimit`` before a body is read."""
        scheme, token = get_authorization_scheme_param(authorization)
        if not authorization or scheme.lower() != "bearer" or not token:
            raise ApiProblem(401, "unauthorized", "send an API token: Authorization: Bearer <token>", _challenge())
        try:
            user = service.token_user(the_engine(), token)
        except (OperationalError, DBAPIError) as err:  # BodyLimit runs outside the exception handlers
            log.warning("database error checking a token: %s", str(err).splitlines()[0])
            raise ApiProblem(503, "database-unavailable", UNAVAILABLE, {"Retry-After": "5"}) from None
        if user is None:
            raise ApiProblem(401, "unauthorized", "this API token is unknown or revoked", _challenge())
        return user

    def caller(request: Request, _: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]):
        checked = request.scope.get("state", {}).get(USER)  # BodyLimit checked it before the body
        return checked if checked is not None else authenticate(request.headers.get("authorization"))

    app.add_middleware(BodyLimit, authenticate=authenticate)
    install_admission(app, PREFIX)  # outermost: a bounded line before any work, 503 busy past it (issue 37)
    Caller = Annotated[object, Depends(caller)]
    StudyRef = Annotated[Text(200, min_length=1), Path(description=f"the study's id (ASCII digits) or its name; {TEXT_RULE}")]

    def study_id(user, study: str) -> int:
        return service.api_study(the_engine(), user, study)

    @app.get(f"{PREFIX}/studies", response_model=list[StudyOut], responses=documented(401, 503), tags=["studies"])
    def studies(user: Caller) -> list[StudyOut]:
        """The studies the caller may annotate now (an admin: every study)."""
        listed = service.list_studies(the_engine(), None if user.role == "admin" else user)
        return [
            StudyOut(id=s.id, name=s.name, kind=s.kind, items=s.items, overlap=s.overlap, guideline=s.guideline) for s in listed
        ]

    @app.get(
        f"{PREFIX}/studies/{{study}}/next",
        response_model=NextOut,
        responses=documented(401, 403, 404, 409, 422, 503),
        tags=["annotate"],
    )
    def next_item(user: Caller, study: StudyRef) -> NextOut:
        """Claims the caller's next item (the one they hold, if any) and returns it as data, with its
        questions and allowed answers; ``item`` null when nothing is left for the caller."""
        found = service.api_next(the_engine(), user, study_id(user, study))
        return NextOut.model_validate(_plain(found))

    @app.post(
        f"{PREFIX}/studies/{{study}}/items/{{item}}/votes",
        response_model=VoteOut,
        responses=documented(401, 403, 404, 409, 413, 422, 503),
        tags=["annotate"],
    )
    def vote(
        user: Caller,
        study: StudyRef,
        item: Annotated[Id, Path(description="the item's id (ASCII digits)")],
        judgement: VoteIn,
        idempotency_key: Annotated[
            Text(MAX_KEY) | None,
            Header(
                alias="Idempotency-Key",
                description=f"a key of the client's own: a POST retried with it stores nothing twice; {TEXT_RULE}",
            ),
        ] = None,
    ) -> VoteOut:
        """One judgement on an item the caller was given: the answers checked and stored as the page
        stores them (never on another item, never past k)."""
        stored = service.api_vote(
            the_engine(),
            user,
            study_id(user, study),
            item,
            dict(judgement.answers),
            comment=judgement.comment,
            seconds=judgement.seconds,
            key=idempotency_key or None,
        )
        return VoteOut.model_validate(_plain(stored))

    @app.get(
        f"{PREFIX}/studies/{{study}}/progress",
        response_model=ProgressOut,
        responses=documented(401, 403, 404, 409, 422, 503),
        tags=["annotate"],
    )
    def progress(user: Caller, study: StudyRef) -> ProgressOut:
        """The caller's progress in the study."""
        return ProgressOut.model_validate(_plain(service.api_progress(the_engine(), user, study_id(user, study))))

    @app.get(
        f"{PREFIX}/studies/{{study}}/export",
        responses={
            200: {
                "description": "the export's file (several files come as a zip)",
                "content": {
                    media.split(";")[0]: {"schema": {"type": "string", "format": "binary"}}
                    for media in [*MEDIA.values(), OTHER_MEDIA]
                },
            },
            **documented(401, 403, 404, 409, 422, 503),
        },
        response_class=Response,
        tags=["admin"],
    )
    def export(
        user: Caller,
        study: StudyRef,
        fmt: Annotated[
            Text(40, min_length=1), Query(alias="format", description=f"an export format (the app's names); {TEXT_RULE}")
        ],
    ) -> Response:
        """An export of the study in one of its formats (admins), recorded as exported."""
        from exports.formats import FORMATS

        service.require_admin(user)
        found = study_id(user, study)
        kind = next((s.kind for s in service.list_studies(the_engine()) if s.id == found), None)
        if kind is None:  # an id no study has: 404 as on every other route (was a StopIteration: 500)
            raise ApiProblem(404, "not-found", "no such study")
        offered = [name for name, spec in FORMATS.items() if kind in spec.kinds]
        if fmt not in offered:
            raise ApiProblem(422, "unknown-format", f"format {fmt!r} is not one of this study's: {', '.join(offered)}")
        try:
            data, name = service.api_export(the_engine(), user, found, fmt)
        except ValueError as err:  # the export's refusal (a study with no votes yet), as the pages show it
            raise ApiProblem(409, "export-unavailable", str(err)) from err
        suffix = "." + name.rsplit(".", 1)[-1] if "." in name else ".txt"
        return Response(
            data,
            media_type=MEDIA.get(suffix, OTHER_MEDIA),
            headers={"Content-Disposition": f'attachment; filename="{name}"'},
        )

    _install_problems(app)
    return app


def _challenge() -> dict:
    return {"WWW-Authenticate": 'Bearer realm="dst-judge"'}


def _plain(value):
    """A service result (dataclasses) as plain data for the response models."""
    from dataclasses import asdict, is_dataclass

    return asdict(value) if is_dataclass(value) else value


def _shown(part) -> str:
    """A place in a request (a field, an answer's key) as the problem shows it: an unpaired surrogate
    escaped (it cannot be written as UTF-8: the answer would fail), a long key cut."""
    text = str(part).encode("utf-8", "backslashreplace").decode("utf-8")
    return text if len(text) <= 80 else text[:80] + "…"


def _problem(request: Request, status: int, name: str, detail: str, headers: dict | None = None, errors=None) -> JSONResponse:
    return JSONResponse(body(status, name, detail, request.url.path, errors), status, headers=headers, media_type=MEDIA_TYPE)


def _install_problems(app: FastAPI) -> None:
    """Every refusal as problem+json: the service's exceptions mapped to their status."""

    @app.exception_handler(ApiProblem)
    def _ours(request: Request, err: ApiProblem):
        return _problem(request, err.status, err.name, err.detail, err.headers)

    @app.exception_handler(RequestValidationError)
    def _invalid(request: Request, err: RequestValidationError):
        errors = [{"loc": [_shown(p) for p in e.get("loc", ())], "msg": str(e.get("msg", ""))} for e in err.errors()]
        detail = "; ".join(f"{'.'.join(e['loc'])}: {e['msg']}" for e in errors) or "the request is not valid"
        return _problem(request, 422, "invalid-request", detail, errors=errors)

    @app.exception_handler(StarletteHTTPException)
    def _http(request: Request, err: StarletteHTTPException):
        if err.status_code == 400:  # FastAPI's "error parsing the body" (not UTF-8): malformed, as a broken JSON is
            return _problem(request, 422, "invalid-request", f"the body is not JSON text: {err.detail}")
        name = {404: "not-found", 405: "method-not-allowed"}.get(err.status_code, "http-error")
        return _problem(request, err.status_code, name, str(err.detail), getattr(err, "headers", None))

    @app.exception_handler(StudyClosed)
    def _closed(request: Request, err: StudyClosed):
        return _problem(request, 409, "study-closed", str(err))

    @app.exception_handler(PermissionDenied)
    def _denied(request: Request, err: PermissionDenied):
        if isinstance(err, NotLoggedIn):
            return _problem(request, 401, "unauthorized", str(err), _challenge())
        if str(err).startswith("no such"):
            return _problem(request, 404, "not-found", str(err))
        return _problem(request, 403, "forbidden", str(err))

    @app.exception_handler(CapacityError)
    def _full(request: Request, err: CapacityError):
        return _problem(request, 409, "reassigned" if isinstance(err, Reassigned) else "item-full", str(err))

    @app.exception_handler(KeyReused)
    def _reused(request: Request, err: KeyReused):
        return _problem(request, 422, "idempotency-key-reused", str(err))

    @app.exception_handler(StudyError)
    def _study(request: Request, err: StudyError):
        return _problem(request, 422, "invalid-answer", str(err))

    @app.exception_handler(AuthError)
    def _auth(request: Request, err: AuthError):
        return _problem(request, 422, "invalid-request", str(err))

    @app.exception_handler(OperationalError)
    @app.exception_handler(DBAPIError)
    def _database(request: Request, err: Exception):
        log.warning("database error on %s: %s", request.url.path, str(err).splitlines()[0])
        return _problem(request, 503, "database-unavailable", UNAVAILABLE, {"Retry-After": "5"})

    @app.exception_handler(Exception)
    def _unexpected(request: Request, err: Exception):
        log.error("unexpected error on %s", request.url.path, exc_info=err)  # run on a thread: no exc_info there
        return _problem(request, 500, "internal-error", "the server failed on this request; it is logged")


app = create_app()  # ``uvicorn annotate.api.app:app``: the database of DST_JUDGE_DB, opened on the first request
