"""A deadline on every answer of a PostgreSQL server, kept by the client (issue 37, item 5).

The timeouts of issue 23 (``annotate.store.db.ServerTimeouts``) cover a server that is gone or cut off;
they do not cover one that hangs.  A PostgreSQL server stopped with SIGSTOP (or swapped out, or stuck
in a kernel call) still has a kernel that accepts connections and acknowledges data, so neither
``tcp_user_timeout`` nor the keepalives fire, and ``statement_timeout`` is enforced by the server's
own process, which is stopped: a request on a pooled connection waited as long as the server slept
(60 s measured), then answered.

Here the client keeps the deadline.  Every round trip of a psycopg connection (a statement and its
results, a commit, a rollback, a COPY) goes through ``Connection.wait``; :class:`DeadlineConnection`
gives it ``answer`` seconds (``DST_JUDGE_DB_CLIENT_TIMEOUT``, 35 by default: the server's own statement
timeout, 30, fires first whenever the server runs at all).  When the server has not answered by then,
the connection is closed on the client's side (the protocol stopped half-way: it can never be used
again) and :class:`NoAnswer` is raised, an ``OperationalError``: SQLAlchemy sees a dead connection
and drops it from the pool, the pages say the database cannot be reached (``annotate.pages.outage``),
the API answers 503.  A server that wakes up later finds the connection closed and rolls back what
that transaction wrote; a COMMIT already sent may still be applied (the answer to it is what was
lost), which is why the pages settle a pending answer by reading it back (``annotate.screen.settle``)
and the API's clients retry with the same Idempotency-Key.

The check SQLAlchemy makes on a pooled connection before using it (``pool_pre_ping``: one empty
statement) gets the connect timeout instead (5 s by default): a server that does not answer that
quickly is not there for this request, and the new connection tried next gives up after the connect
timeout too (libpq's ``connect_timeout``, which psycopg keeps on the client).  So with a frozen server
a new request fails after at most twice the connect timeout, and one in flight after the client
timeout.  ``tests/store/test_frozen_server.py`` freezes a server of its own and checks both.

Needs psycopg 3.3 or later (``Connection.wait`` takes a ``timeout``).
"""

from __future__ import annotations

import psycopg
from psycopg import errors
from psycopg.connection import _WAIT_INTERVAL
from sqlalchemy import Engine, event


class NoAnswer(psycopg.OperationalError):
    """The server did not answer within the client's deadline; the connection was closed."""


class DeadlineConnection(psycopg.Connection):
    """A psycopg connection whose every round trip gives up after ``answer_within`` seconds (None:
    none), closing the connection."""

    answer_within: float | None = None

    def wait(self, gen, interval: float = _WAIT_INTERVAL, timeout: float | None = None):
        if timeout is not None or self.answer_within is None:  # a caller's own timeout is the caller's
            return super().wait(gen, interval=interval, timeout=timeout)
        try:
            return super().wait(gen, interval=interval, timeout=self.answer_within)
        except errors._WaitTimeout:
            self.pgconn.finish()  # half-way through the protocol: this connection is done
            raise NoAnswer(
                f"the database server did not answer within {self.answer_within:g} s; the connection was closed"
            ) from None


def bound_answers(engine: Engine, *, answer: float | None, ping: float | None) -> None:
    """Make ``engine``'s connections :class:`DeadlineConnection` with ``answer`` seconds per round trip,
    and ``ping`` seconds for the check of a pooled connection before use."""

    @event.listens_for(engine, "do_connect")
    def connect(_dialect, _record, cargs, cparams):
        connection = DeadlineConnection.connect(*cargs, **cparams)
        connection.answer_within = answer
        return connection

    checked = engine.dialect.do_ping

    def do_ping(dbapi_connection) -> bool:
        if not isinstance(dbapi_connection, DeadlineConnection):
            return checked(dbapi_connection)
        dbapi_connection.answer_within = ping
        try:
            return checked(dbapi_connection)
        finally:
            dbapi_connection.answer_within = answer

    engine.dialect.do_ping = do_ping
