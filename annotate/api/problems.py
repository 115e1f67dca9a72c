"""Errors as RFC 9457 problem details (``application/problem+json``).

Every refusal of the API is one of these: a ``type`` URI of ours (``/api/v1/problems/<name>``), the
HTTP ``title``, the ``status``, a ``detail`` a person can read (the same sentence the page shows) and
the ``instance`` (the request's path).  Nothing else leaves the server: no traceback, no SQL.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

MEDIA_TYPE = "application/problem+json"
BASE = "/api/v1/problems/"


class Problem(BaseModel):
    """RFC 9457 problem details."""

    type: str = Field(description="a URI naming the kind of problem")
    title: str = Field(description="the HTTP status's phrase")
    status: int = Field(description="the HTTP status code")
    detail: str = Field(description="what went wrong, for a person")
    instance: str | None = Field(default=None, description="the request's path")
    errors: list[dict] | None = Field(default=None, description="the fields a request failed validation on (422)")


TITLES = {
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    409: "Conflict",
    413: "Content Too Large",
    422: "Unprocessable Content",
    500: "Internal Server Error",
    503: "Service Unavailable",
}


class ApiProblem(Exception):
    """Raised by a route: answered as problem+json with ``status``, ``name`` (the type) and ``detail``."""

    def __init__(self, status: int, name: str, detail: str, headers: dict | None = None) -> None:
        super().__init__(detail)
        self.status, self.name, self.detail, self.headers = status, name, detail, headers or {}


def body(status: int, name: str, detail: str, instance: str | None = None, errors: list | None = None) -> dict:
    problem = {"type": BASE + name, "title": TITLES.get(status, "Error"), "status": status, "detail": detail}
    if instance is not None:
        problem["instance"] = instance
    if errors is not None:
        problem["errors"] = errors
    return problem


def documented(*statuses: int) -> dict:
    """The ``responses`` of a route's OpenAPI entry for these problem statuses."""
    return {
        status: {"description": TITLES[status], "content": {MEDIA_TYPE: {"schema": Problem.model_json_schema()}}}
        for status in statuses
    }
