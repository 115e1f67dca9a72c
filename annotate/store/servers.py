"""Which app server processes use an embedded SQLite file, so that the app can warn.

SQLite serialises writers with a file lock: it is safe for several threads of one server
process, and for a few processes on one host, but it is not built for many app servers,
and never for a file on a network filesystem.  Each server process registers itself as a
small file ``<database>.servers/<host>-<pid>`` next to the SQLite file; a page counts the
registrations whose process is still alive on this host and warns when there is more
than one.  PostgreSQL needs none of this.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

from sqlalchemy.engine import make_url


def _folder(url: str) -> Path | None:
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or not parsed.database or parsed.database == ":memory:":
        return None
    return Path(parsed.database).with_name(Path(parsed.database).name + ".servers")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by someone else
        return True
    return True


def register(url: str, pid: int | None = None) -> None:
    """Note this server process as a user of the SQLite file (no-op for other databases)."""
    folder = _folder(url)
    if folder is None:
        return
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{socket.gethostname()}-{pid or os.getpid()}").write_text("")


def live_servers(url: str) -> int:
    """How many registered processes on this host are alive; stale registrations are removed."""
    folder = _folder(url)
    if folder is None or not folder.is_dir():
        return 0
    host = socket.gethostname()
    alive = 0
    for entry in folder.iterdir():
        name_host, _, pid_text = entry.name.rpartition("-")
        if name_host != host or not pid_text.isdigit():
            alive += 1  # another host: we cannot check it, and it should not be there at all
            continue
        if _alive(int(pid_text)):
            alive += 1
        else:
            entry.unlink(missing_ok=True)
    return alive


def sqlite_warning(url: str) -> str | None:
    """The warning to show, or None."""
    count = live_servers(url)
    if count <= 1:
        return None
    return (
        f"This app runs on the embedded SQLite database with {count} server processes. SQLite is meant for one "
        "app server on one host (never on a network filesystem); for several servers set DST_JUDGE_DB to a "
        "PostgreSQL database (see docs/deployment.md, several app servers on PostgreSQL)."
    )


def loopback_only(address: str | None) -> bool:
    """Whether a server bound to ``address`` (Streamlit's ``server.address``) is reachable from this
    host only.  An empty address means every interface.

    >>> [loopback_only(a) for a in ("127.0.0.1", "localhost", "::1", "0.0.0.0", "", None)]
    [True, True, True, False, False, False]
    """
    import ipaddress

    if not address:
        return False
    if address.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(address.strip().strip("[]")).is_loopback
    except ValueError:
        return False
