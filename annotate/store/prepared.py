"""Core statements of the judgement path, compiled once and run on the driver's cursor (SQLite).

Every annotator waits for the judgement transaction, and on SQLite it holds the only write lock,
so what Python spends inside it limits everyone (issue 16).  SQLAlchemy's execution path costs about
40 µs per statement before SQLite starts; sqlite3's own cursor about 2 µs.  A :class:`Prepared`
statement is written as ordinary SQLAlchemy Core (one definition for every backend); on SQLite it
is compiled once by SQLAlchemy's compiler, its parameters converted by the column types' own bind
processors and its results by their result processors (datetimes, JSON), and run on the pooled
connection's sqlite3 cursor inside the transaction SQLAlchemy began.  On PostgreSQL (and anything
else) it runs through ``Connection.execute`` unchanged.

>>> from sqlalchemy import bindparam, create_engine, select
>>> from annotate.store.models import Base, Study
>>> engine = create_engine("sqlite://")
>>> Base.metadata.create_all(engine)
>>> name = Prepared(select(Study.name).where(Study.id == bindparam("study")))
>>> with engine.begin() as connection:
...     _ = connection.execute(Study.__table__.insert().values(id=1, name="fga", kind="satisfaction", overlap=3))
...     name.rows(connection, {"study": 1})
[('fga',)]
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection
from sqlalchemy.sql import Executable


class _Compiled:
    def __init__(self, statement, dialect):
        compiled = statement.compile(dialect=dialect)
        self.compiled = compiled
        self.sql = compiled.string
        self.names = list(compiled.positiontup or ())
        binds = [compiled.binds[name] for name in self.names]
        if any(bind.expanding or bind.callable is not None for bind in binds):
            raise ValueError("Prepared takes plain bound values only (no IN lists, no callables)")
        # What construct_params would do, decided once: a named parameter comes from the caller,
        # a literal (a value written into the statement) is its own default.
        self.plan = tuple(
            (name, bind.required, None if bind.required else bind.value, bind.type.dialect_impl(dialect).bind_processor(dialect))
            for name, bind in zip(self.names, binds)
        )
        columns = getattr(statement, "selected_columns", None)
        self.results = (
            [column.type.dialect_impl(dialect).result_processor(dialect, None) for column in columns]
            if columns is not None and getattr(statement, "is_select", False)
            else []
        )
        self.convert_rows = any(self.results)


class Prepared:
    """A Core statement run with the least overhead the backend allows; ``rows`` gives tuples,
    ``run`` the row count (DML), ``insert`` the new row's id."""

    def __init__(self, statement: Executable):
        self.statement = statement
        self._by_dialect: dict[str, _Compiled] = {}

    def _driver(self, connection: Connection):
        if connection.dialect.name != "sqlite":
            return None, None
        compiled = self._by_dialect.get("sqlite")
        if compiled is None:
            compiled = self._by_dialect["sqlite"] = _Compiled(self.statement, connection.dialect)
        return compiled, connection.connection.dbapi_connection  # pysqlite: the sqlite3 connection itself

    def _execute(self, compiled: _Compiled, driver, params: dict[str, Any]):
        args = []
        for name, required, default, process in compiled.plan:
            value = params[name] if required else params.get(name, default)  # KeyError: a parameter not given
            args.append(value if process is None else process(value))
        return driver.execute(compiled.sql, args)

    def rows(self, connection: Connection, params: dict[str, Any] | None = None) -> list[tuple]:
        compiled, driver = self._driver(connection)
        if compiled is None:
            return [tuple(row) for row in connection.execute(self.statement, params or {})]
        fetched = self._execute(compiled, driver, params or {}).fetchall()
        if not compiled.convert_rows:
            return fetched
        processors = compiled.results
        return [tuple(v if p is None else p(v) for p, v in zip(processors, row, strict=True)) for row in fetched]

    def first(self, connection: Connection, params: dict[str, Any] | None = None) -> tuple | None:
        found = self.rows(connection, params)
        return found[0] if found else None

    def run(self, connection: Connection, params: dict[str, Any] | None = None) -> int:
        compiled, driver = self._driver(connection)
        if compiled is None:
            return connection.execute(self.statement, params or {}).rowcount
        return self._execute(compiled, driver, params or {}).rowcount

    def insert(self, connection: Connection, params: dict[str, Any]) -> int:
        compiled, driver = self._driver(connection)
        if compiled is None:
            return connection.execute(self.statement, params).inserted_primary_key[0]
        return self._execute(compiled, driver, params).lastrowid
