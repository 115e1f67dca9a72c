"""``serve``'s two ports, checked before it says or starts anything (issue 36).

``python -m annotate serve`` runs the app (``streamlit run``) and the HTTP API (uvicorn, a child process)
on ports of their own.  A port already taken (a second serve, another program) would fail only later, in
a child, after serve had printed the accounts and the API's address.  :func:`check_serve_ports` asks
first and refuses in one line that names the port and the option that moves it.  (A port taken between
the check and the server's start still fails there: the check is for the ordinary mistake.)
"""

from __future__ import annotations

import errno
import os
import socket
from pathlib import Path

STREAMLIT_DEFAULT_PORT = 8501


class PortBusy(ValueError):
    """A port serve needs is taken (``python -m annotate`` prints it as one line, exit status 2)."""


def port_free(host: str, port: int) -> bool:
    """Whether a server could listen on ``host:port`` now: a bind as uvicorn and Streamlit make it
    (``SO_REUSEADDR`` off Windows, so a port a stopped server left in TIME_WAIT counts as free).  Only
    "address in use" counts as taken; any other failure (an address not on this host) is the server's
    to report when it starts."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            if os.name != "nt":
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)  # dual-stack, as Streamlit binds "::"
            sock.bind((host, port))
    except OSError as err:  # also: no IPv6 on this host
        return err.errno != errno.EADDRINUSE
    return True


def streamlit_flag(args: list[str], name: str) -> str | None:
    """The value of ``--NAME V`` or ``--NAME=V`` among ``streamlit run``'s options (the last one, as click takes it)."""
    value = None
    for i, arg in enumerate(args):
        if arg == f"--{name}" and i + 1 < len(args):
            value = args[i + 1]
        elif arg.startswith(f"--{name}="):
            value = arg.split("=", 1)[1]
    return value


def streamlit_address(args: list[str], app: Path) -> tuple[str, int]:
    """Where ``streamlit run app ARGS`` will listen: its options, else Streamlit's own settings
    (``STREAMLIT_SERVER_*`` variables) as ``streamlit run`` reads them, else every address, 8501."""
    # an option, else its STREAMLIT_SERVER_* variable (streamlit run's command line reads both), else config.toml
    host, port = (
        streamlit_flag(args, f"server.{key}") or os.environ.get(f"STREAMLIT_SERVER_{key.upper()}") for key in ("address", "port")
    )
    # Not read: a port in a user's own ~/.streamlit/config.toml (serve passes the app's settings as options,
    # annotate.__main__.streamlit_options, and a port given there is not checked here; give --server.port).
    try:
        number = int(port) if port is not None else STREAMLIT_DEFAULT_PORT
    except ValueError:
        number = 0  # not a number: streamlit run refuses it with its own message
    return host or "", number


def check_serve_ports(streamlit_args: list[str], app: Path, api_host: str, api_port: int) -> None:
    """Raise :class:`PortBusy` when the app's port or the API's (0: no API) is taken, or both are one port."""
    host, port = streamlit_address(streamlit_args, app)
    if api_port and port == api_port:
        raise PortBusy(f"the app and the HTTP API cannot share port {port}; choose another with --api-port P")
    if port and not all(port_free(h, port) for h in ([host] if host else ["", "::"])):  # unset: every address
        raise PortBusy(f"port {port} is in use (the app); choose another with --server.port P")
    if api_port and not port_free(api_host, api_port):
        raise PortBusy(f"port {api_port} is in use (the HTTP API); choose another with --api-port P, or --api-port 0 for no API")
