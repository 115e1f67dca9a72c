"""A bounded line in front of the API's work (issue 37, item 5): under overload a request waits at most
a documented time, then gets 503 with ``Retry-After``.

Before, with 200 clients on SQLite, a request waited for one of the server's threads and then in the
store's writer line for as long as those were (``next`` a median 27-46 s), and no client was ever told
to come back later.  ``Admission`` is an ASGI middleware in front of everything else (the token check
included):

- at most ``DST_JUDGE_API_CONCURRENCY`` requests (8) are worked on at once: fewer than the thread
  pool's 40, so an admitted request never waits for a thread, and few enough that the threads do not
  crowd each other out of one Python process (with 200 clients, 8 at once answered as many votes per
  second as 32 or no limit: ``bench/bench_faults.py``);
- at most ``DST_JUDGE_API_QUEUE`` more (256) wait for a place, first come first served, each at most
  ``DST_JUDGE_API_QUEUE_WAIT`` seconds (5): the line is long enough that the time, not the length, is
  what usually turns a request away, so that a line that moves is not refused;
- any other request, and one whose wait ran out, is answered at once: 503 problem+json ``busy`` with
  ``Retry-After: 2`` (:data:`RETRY_AFTER`).  Nothing of it ran, so nothing was stored: the client
  sends it again (a vote with the same Idempotency-Key stores it once).

Behind the line, a write on SQLite waits at most ``DST_JUDGE_WRITE_QUEUE_WAIT`` seconds (10) for its turn
at the writer (``annotate.store.db.Busy``), and a request for a pooled PostgreSQL connection at most
``DST_JUDGE_DB_POOL_TIMEOUT`` (10): either is also answered 503 ``busy`` with ``Retry-After`` here,
nothing having been sent.  So an API request is answered within the line's wait plus the writer's
(15 s by default) plus its own work; on a database server that hangs, within the client timeouts of
``annotate.store.deadline``.  The OpenAPI document and Swagger UI need no database and skip the line.
``0`` for the concurrency turns the line off.  ``tests/store/test_api_overload.py`` checks it with
small bounds; ``bench/bench_faults.py`` runs 200 clients against the defaults.
"""

from __future__ import annotations

import collections

import anyio
from sqlalchemy import exc
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from annotate.api.problems import MEDIA_TYPE, body
from formats.settings import settings

RETRY_AFTER = 2  # seconds a client told "busy" waits before it sends the request again
BUSY = f"the server is busy; nothing was stored by this request: try again in {RETRY_AFTER} s"


class Admission:
    """At most ``concurrency`` requests at once, ``queue`` more waiting at most ``wait`` seconds each;
    the rest 503 ``busy`` (see the module docstring).  ``open_paths``: path prefixes that skip the line."""

    def __init__(self, app: ASGIApp, *, concurrency: int, queue: int, wait: float, open_paths: tuple[str, ...] = ()) -> None:
        self.app, self.concurrency, self.queue, self.wait, self.open_paths = app, concurrency, queue, wait, open_paths
        self.active = 0
        self.line: collections.deque[anyio.Event] = collections.deque()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.concurrency <= 0 or scope["path"].startswith(self.open_paths):
            await self.app(scope, receive, send)
            return
        if not await self._enter():
            await _busy(scope, send)
            return
        started = False

        async def sending(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, sending)
        except exc.TimeoutError:  # the writer's line (db.Busy) or the pool: nothing was sent
            if started:
                raise
            await _busy(scope, send)
        finally:
            self._leave()

    async def _enter(self) -> bool:
        """A place now, or in line until one is handed over (True); False when the line is full or the
        wait ran out (the place in line given up)."""
        if self.active < self.concurrency and not self.line:
            self.active += 1
            return True
        if len(self.line) >= self.queue:
            return False
        turn = anyio.Event()
        self.line.append(turn)
        try:
            with anyio.move_on_after(self.wait):
                await turn.wait()
        except BaseException:  # the client went away: a place handed over meanwhile goes on to the next
            if turn.is_set():
                self._leave()
            else:
                self.line.remove(turn)
            raise
        if turn.is_set():
            return True
        self.line.remove(turn)
        return False

    def _leave(self) -> None:
        """The place passes straight to the oldest in line, else it is free."""
        if self.line:
            self.line.popleft().set()
        else:
            self.active -= 1


async def _busy(scope: Scope, send: Send) -> None:
    response = JSONResponse(
        body(503, "busy", BUSY, scope.get("path")), 503, headers={"Retry-After": str(RETRY_AFTER)}, media_type=MEDIA_TYPE
    )
    await response(scope, _no_receive, send)


async def _no_receive() -> Message:
    return {"type": "http.disconnect"}


def install_admission(app, prefix: str = "/api/v1") -> None:
    """Put the line in front of ``app`` (its outermost middleware: add it after the others), with the
    settings' bounds; the OpenAPI document and the docs skip it."""
    current = settings()
    app.add_middleware(
        Admission,
        concurrency=current.api_concurrency,
        queue=current.api_queue,
        wait=current.api_queue_wait,
        open_paths=(f"{prefix}/openapi.json", f"{prefix}/docs"),
    )
