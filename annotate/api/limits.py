"""What the API takes before it does any work (issue 37): the token, then the size, then the text.

**The token before the body.**  ``BodyLimit`` is an ASGI middleware in front of FastAPI.  A request
that carries a body (a ``Content-Length`` above 0, or ``Transfer-Encoding``) has its bearer token
checked first, from the headers alone: a missing, unknown or revoked token is 401 problem+json and
not one byte of the body is read (FastAPI reads and parses a body before it resolves a route's
dependencies, so a 32 MB JSON body with no token took the process from 124 MB to 703 MB).

**The size before the parse.**  A request body is at most ``MAX_BODY`` bytes (1 MB, 1,048,576 bytes:
a vote with its longest answers and comment fits many times over).  A ``Content-Length`` over it is
413 problem+json at once; a body without one (chunked) is counted as it streams in and refused the
moment it passes the cap, so at most ``MAX_BODY`` and one chunk are ever held.  Only then does
FastAPI see the body (the bytes read, handed on).  The rest of a refused body is never read into
memory: the server (uvicorn) drops what still arrives, so the client reads its answer.

**Each field's own cap, and the text rule.**  Within the body, an answer is at most ``MAX_ANSWER``
characters, a question name ``MAX_QUESTION``, a vote carries at most ``MAX_ANSWERS`` answers, and a
comment is at most ``MAX_COMMENT`` characters (``formats.errors.MAX_FIELD_CHARS``, the cap on one
field of an uploaded data file: 20,000).  Every string the API takes (each answer, each question
name, the comment, the study reference, the export format, the Idempotency-Key) holds no NUL (U+0000:
no database stores it in text) and no unpaired surrogate (U+D800 to U+DFFF: half of a UTF-16 pair, no
character, which UTF-8 cannot write); the OpenAPI document says so (``TEXT_PATTERN`` and each field's
description) and a request that breaks it is 422 ``invalid-request`` before anything runs.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated

from pydantic import AfterValidator, BeforeValidator, Field, StringConstraints
from pydantic_core import PydanticCustomError
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from annotate.api.problems import MEDIA_TYPE, ApiProblem, body
from formats.errors import MAX_FIELD_CHARS
from formats.references import MAX_ID, number

MAX_BODY = 1 << 20  # bytes of one request body
MAX_ANSWER = MAX_FIELD_CHARS  # characters of one answer (a text question's)
MAX_COMMENT = MAX_FIELD_CHARS  # characters of a comment
MAX_QUESTION = 200  # characters of a question name (an answer's key)
MAX_ANSWERS = 100  # answers in one vote
USER = "api_user"  # where BodyLimit leaves the caller it checked (``request.state``)

# The document's pattern says "no NUL" (the same in Python's, ECMA-262's and Rust's regular expressions);
# the unpaired surrogates are said in each field's description: a JSON Schema string is Unicode
# characters, which they are not, and a validator written in Rust refuses a pattern that names them.
TEXT_PATTERN = r"^[^\x00]*$"
TEXT_RULE = "no NUL (U+0000) and no unpaired surrogate (U+D800 to U+DFFF)"
_REFUSED = re.compile(r"[\x00\ud800-\udfff]")


def clean(text: str) -> str:
    """``text`` when it keeps the text rule; a validation error (422 invalid-request) otherwise."""
    if _REFUSED.search(text):
        raise PydanticCustomError("text_character", f"text must hold {TEXT_RULE}")
    return text


def Text(max_length: int, *, min_length: int = 0) -> object:  # noqa: N802 - a type, as pydantic's constr
    """A string of the API's text rule and at most ``max_length`` characters (the length is checked
    first, so a long string is refused before it is searched)."""
    return Annotated[
        str,
        StringConstraints(min_length=min_length, max_length=max_length),
        AfterValidator(clean),
        Field(json_schema_extra={"pattern": TEXT_PATTERN}),
    ]


# An answer's key (a question name): the rule of Text, documented on the answers as ``propertyNames``
# (a key's pattern, pydantic writes as ``patternProperties``: a rule on the values, not on the names).
Question = Annotated[str, StringConstraints(min_length=1, max_length=MAX_QUESTION), AfterValidator(clean)]
QUESTION_SCHEMA = {"minLength": 1, "maxLength": MAX_QUESTION, "pattern": TEXT_PATTERN}


def _digits(value: object) -> object:
    if isinstance(value, str) and number(value) is None:  # "+1", " 1", "1_0", "1.0", "١": not an id
        raise PydanticCustomError("id_digits", "an id is ASCII digits (0-9) and nothing else")
    return value


# a path's id: ASCII digits only (formats.references.number), 1 to the store's largest
Id = Annotated[int, Field(ge=1, le=MAX_ID), BeforeValidator(_digits)]


class BodyLimit:
    """The token, then the size, before any body is read (see the module docstring).

    ``authenticate(authorization)`` takes the ``Authorization`` header (None without one) and returns
    the caller, or raises ``ApiProblem`` (401, or 503 when the database does not answer); it runs on the
    thread pool.  The caller it returns is left in ``scope["state"][USER]`` for the route."""

    def __init__(self, app: ASGIApp, *, authenticate: Callable[[str | None], object], limit: int = MAX_BODY) -> None:
        self.app, self.authenticate, self.limit = app, authenticate, limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        length = headers.get("content-length")
        declared = number(length.strip()) if length is not None else None
        if "transfer-encoding" not in headers and (length is None or declared == 0):
            await self.app(scope, receive, send)  # no body: the route checks the token as ever
            return
        try:
            user = await run_in_threadpool(self.authenticate, headers.get("authorization"))
        except ApiProblem as err:
            await _refuse(scope, send, err)
            return
        too_large = ApiProblem(413, "too-large", f"a request body is at most {self.limit:,} bytes")
        if declared is not None and declared > self.limit:
            await _refuse(scope, send, too_large)
            return
        read = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return  # the client went away: nobody to answer
            read += message.get("body", b"")
            if len(read) > self.limit:
                await _refuse(scope, send, too_large)
                return
            if not message.get("more_body", False):
                break
        scope.setdefault("state", {})[USER] = user
        whole: Message | None = {"type": "http.request", "body": bytes(read), "more_body": False}
        del read

        async def replay() -> Message:
            nonlocal whole
            if whole is not None:
                message, whole = whole, None
                return message
            return await receive()

        await self.app(scope, replay, send)


async def _refuse(scope: Scope, send: Send, err: ApiProblem) -> None:
    """``err`` as problem+json, the body unread (uvicorn drops what still arrives of it)."""
    response = JSONResponse(
        body(err.status, err.name, err.detail, scope.get("path")), err.status, headers=err.headers, media_type=MEDIA_TYPE
    )
    await response(scope, _no_receive, send)


async def _no_receive() -> Message:
    return {"type": "http.disconnect"}
