"""Every ``DST_JUDGE_*`` setting, read in one place into one typed, frozen object.

The settings live in the bottom layer so that every layer (the readers' size caps, the agreement's
memory cap, the store, the pages) reads them the same way::

    from formats.settings import settings
    settings().session_hours

:func:`settings` reads the environment each time it is called (about 25 look-ups, microseconds), so a
variable set after start-up, or by a test, is seen by the next call; modules that keep a value for the
life of the process (the bcrypt cost, the session length) read it once at import, as they always did.
A value that does not parse stops with one line naming the variable and what to give
(:class:`SettingsError`), never a traceback.  ``dst-judge config`` prints the effective settings and
where each came from (:func:`effective`); the documentation's settings reference is made from
:func:`describe_settings`.

The default database is an SQLite file in the per-user data folder,
``$XDG_DATA_HOME/dst-judge/dst_judge.sqlite`` (``~/.local/share/dst-judge/`` when ``XDG_DATA_HOME`` is
unset): the same database whatever folder the command runs from, and never inside the installed
package.  The default demo data is the sample shipped inside the package (``annotate/sample_data``).

>>> s = load({"DST_JUDGE_SESSION_HOURS": "2", "DST_JUDGE_DEMO": "0", "XDG_DATA_HOME": "/tmp/x"})
>>> s.session_hours, s.demo, s.database_url
(2.0, False, 'sqlite:////tmp/x/dst-judge/dst_judge.sqlite')
>>> load({"DST_JUDGE_BCRYPT_ROUNDS": "many"})
Traceback (most recent call last):
...
formats.settings.SettingsError: DST_JUDGE_BCRYPT_ROUNDS='many': give a whole number
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import Field, dataclass, field, fields
from pathlib import Path
from typing import Any

PREFIX = "DST_JUDGE_"
PACKAGE_SAMPLE_DATA = Path(__file__).resolve().parent.parent / "annotate" / "sample_data"


class SettingsError(ValueError):
    """A ``DST_JUDGE_*`` variable whose value does not parse: the message names it and says what to give."""


def _text(raw: str) -> str:
    return raw


def _optional_text(raw: str) -> str | None:
    return raw or None


def _whole(raw: str) -> int:
    try:
        return int(raw)
    except ValueError:
        raise SettingsError("give a whole number") from None


def _number(raw: str) -> float:
    try:
        return float(raw)
    except ValueError:
        raise SettingsError("give a number") from None


def _seconds(raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if value < 0:
        raise SettingsError("give a number of seconds (0: no limit)")
    return value


def _switch(raw: str) -> bool:
    if raw.lower() in ("1", "true", "yes", "on"):
        return True
    if raw.lower() in ("0", "false", "no", "off"):
        return False
    raise SettingsError("give 1 (on) or 0 (off)")


def _path(raw: str) -> Path:
    return Path(raw).expanduser()


_KIND: dict[Callable[[str], object], str] = {
    _text: "text",
    _optional_text: "text",
    _whole: "integer",
    _number: "number",
    _seconds: "seconds",
    _switch: "0/1",
}
_KIND[_path] = "path"


def _setting(
    name: str, parse: Callable[[str], object], default: object, doc: str, *, secret: bool = False, shown: str | None = None
) -> Any:
    """A field read from ``DST_JUDGE_<name>``; ``shown`` is the default as the docs print it."""
    return field(
        default=default,
        metadata={"env": PREFIX + name, "parse": parse, "doc": doc, "secret": secret, "shown": shown},
    )


def user_data_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The per-user data folder: ``$XDG_DATA_HOME/dst-judge``, else ``~/.local/share/dst-judge``."""
    environ = os.environ if environ is None else environ
    base = environ.get("XDG_DATA_HOME", "").strip()
    return (Path(base) if base else Path.home() / ".local" / "share") / "dst-judge"


@dataclass(frozen=True)
class Settings:
    """The effective settings (see the module docstring).  Field docs are the settings reference."""

    db: str | None = _setting(
        "DB",
        _optional_text,
        None,
        "database URL: `sqlite:///PATH` or `postgresql://USER@HOST/DB`; `--db` on the command line wins",
        shown="SQLite in the per-user data folder",
    )
    demo: bool = _setting("DEMO", _switch, True, "make the demo (accounts and three studies) on an empty database")
    fixtures: Path = _setting(
        "FIXTURES", _path, PACKAGE_SAMPLE_DATA, "the demo's data folder", shown="the sample inside the package"
    )
    password: str | None = _setting(
        "PASSWORD", _optional_text, None, "the password for `annotator add` / `annotator password` without a prompt", secret=True
    )
    bcrypt_rounds: int = _setting("BCRYPT_ROUNDS", _whole, 12, "bcrypt cost of stored passwords (tests lower it; never below 4)")
    session_hours: float = _setting("SESSION_HOURS", _number, 12.0, "a login lasts this many hours")
    device_days: float = _setting("DEVICE_DAYS", _number, 30.0, "a browser's device cookie lasts this many days")
    max_login_failures: int = _setting("MAX_LOGIN_FAILURES", _whole, 5, "failed logins of one name before it is throttled")
    joins_per_client: int = _setting("JOINS_PER_CLIENT", _whole, 5, "crowd joins one client address may make")
    max_upload_mb: float = _setting("MAX_UPLOAD_MB", _number, 200.0, "cap on one upload (and an archive's unpacked size), MB")
    max_file_mb: float = _setting("MAX_FILE_MB", _number, 200.0, "cap on one data file read, MB")
    max_json_values: int = _setting("MAX_JSON_VALUES", _whole, 5_000_000, "cap on the values of one JSON document")
    alpha_max_mb: float = _setting("ALPHA_MAX_MB", _number, 256.0, "memory cap of one Krippendorff's alpha bootstrap, MB")
    background_analysis: bool = _setting(
        "BACKGROUND_ANALYSIS", _switch, True, "compute studies' analyses in the background so the Analysis page opens done"
    )
    analysis_wait: float = _setting("ANALYSIS_WAIT", _number, 0.5, "seconds the Analysis page waits for a fresh result")
    analysis_wanted_minutes: float = _setting(
        "ANALYSIS_WANTED_MINUTES", _number, 30.0, "minutes the warmer keeps a study's analysis current after its page or report"
    )
    analysis_refresh_seconds: float = _setting(
        "ANALYSIS_REFRESH_SECONDS", _number, 300.0, "while votes keep arriving, the warmer re-analyses a study at most this often"
    )
    analysis_process: bool = _setting(
        "ANALYSIS_PROCESS", _switch, True, "compute analyses in a process of their own at a lower CPU priority (0: a thread)"
    )
    analysis_lease_seconds: float = _setting(
        "ANALYSIS_LEASE_SECONDS",
        _number,
        60.0,
        "an app server computing an analysis holds it this long, renewed as it runs; others wait, then take over",
    )
    api_port: int = _setting("API_PORT", _whole, 8600, "the HTTP API's port, as the Annotators page shows it (`serve` sets it)")
    public_url: str = _setting("PUBLIC_URL", _text, "", "the app's address as people reach it, for join links (behind a proxy)")
    trusted_proxies: str = _setting(
        "TRUSTED_PROXIES", _text, "", "reverse proxies whose forwarding headers are believed (addresses or CIDR, comma-separated)"
    )
    trust_proxy: bool = _setting(
        "TRUST_PROXY", _switch, False, "the older switch: 1 trusts the loopback proxies 127.0.0.1 and ::1"
    )
    db_connect_timeout: float = _setting(
        "DB_CONNECT_TIMEOUT", _seconds, 5.0, "seconds a new PostgreSQL connection may take (0: no limit)"
    )
    db_statement_timeout: float = _setting(
        "DB_STATEMENT_TIMEOUT", _seconds, 30.0, "seconds one statement may run or wait (0: no limit)"
    )
    db_network_timeout: float = _setting(
        "DB_NETWORK_TIMEOUT", _seconds, 15.0, "seconds sent data may go unacknowledged by the server's host (0: no limit)"
    )
    db_pool_timeout: float = _setting("DB_POOL_TIMEOUT", _seconds, 10.0, "seconds to wait for a free pooled connection (0: 120)")
    db_client_timeout: float = _setting(
        "DB_CLIENT_TIMEOUT",
        _seconds,
        35.0,
        "seconds the app waits for the server's answer to one statement before it closes the connection itself "
        "(holds when the server hangs; keep it above the statement timeout; 0: no limit)",
    )
    write_queue_wait: float = _setting(
        "WRITE_QUEUE_WAIT",
        _seconds,
        10.0,
        "seconds a write waits for its turn at SQLite's writer before it is refused as busy (0: no limit)",
    )
    api_concurrency: int = _setting(
        "API_CONCURRENCY", _whole, 8, "requests the HTTP API works on at once; the others queue (0: no limit, no queue)"
    )
    api_queue: int = _setting("API_QUEUE", _whole, 256, "requests that may queue for the HTTP API; any more get 503 at once")
    api_queue_wait: float = _setting(
        "API_QUEUE_WAIT", _seconds, 5.0, "seconds a request may queue for the HTTP API before it gets 503 with Retry-After"
    )
    chromium: str = _setting("CHROMIUM", _text, "/usr/bin/chromium", "the Chromium the browser tests and benches drive")
    test_pg: str | None = _setting(
        "TEST_PG", _optional_text, None, "the PostgreSQL server the tests use", shown="postgresql://postgres@127.0.0.1:5432/test"
    )
    # Not a DST_JUDGE_ variable: where the default SQLite file lives.
    data_dir: Path = field(default_factory=user_data_dir, metadata={"env": None})

    @property
    def database_url(self) -> str:
        """``db`` or the SQLite file in the per-user data folder."""
        return self.db or f"sqlite:///{self.data_dir / 'dst_judge.sqlite'}"


def _fields() -> list[Field[Any]]:
    return [f for f in fields(Settings) if f.metadata.get("env")]


def load(environ: Mapping[str, str] | None = None) -> Settings:
    """The settings from ``environ`` (default: the process's environment); empty values are unset."""
    environ = os.environ if environ is None else environ
    values = {}
    for f in _fields():
        raw = environ.get(f.metadata["env"], "").strip()
        if not raw:
            continue
        try:
            values[f.name] = f.metadata["parse"](raw)
        except SettingsError as err:
            shown = "(hidden)" if f.metadata["secret"] else repr(raw)
            raise SettingsError(f"{f.metadata['env']}={shown}: {err}") from None
    return Settings(**values, data_dir=user_data_dir(environ))


def settings() -> Settings:
    """The settings now (the process's environment)."""
    return load()


@dataclass(frozen=True)
class SettingRow:
    """One line of the settings reference or of ``dst-judge config``."""

    env: str
    type: str
    default: str
    doc: str
    value: str = ""
    source: str = ""


def _shown(f: Field[Any], value: object) -> str:
    if value is None:
        return "unset"
    if value == "":
        return "(empty)"
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def describe_settings() -> list[SettingRow]:
    """Every setting with its type, default and meaning (the documentation's reference)."""
    return [
        SettingRow(f.metadata["env"], _KIND[f.metadata["parse"]], f.metadata["shown"] or _shown(f, f.default), f.metadata["doc"])
        for f in _fields()
    ]


def effective(environ: Mapping[str, str] | None = None) -> list[SettingRow]:
    """Every setting's value now and where it came from ("environment" or "default"); secrets hidden."""
    environ = os.environ if environ is None else environ
    current = load(environ)
    rows = []
    for row, f in zip(describe_settings(), _fields()):
        from_env = bool(environ.get(f.metadata["env"], "").strip())
        value = getattr(current, f.name)
        shown = "(set)" if f.metadata["secret"] and value else _shown(f, value)
        rows.append(SettingRow(row.env, row.type, row.default, row.doc, shown, "environment" if from_env else "default"))
    return rows
