"""A PostgreSQL server of a test's own (never the machine's shared one): a fault test stops, starts or
cuts it off without touching anybody else's database.

Made with Debian's PostgreSQL binaries (``/usr/lib/postgresql/<version>/bin``), run as the ``postgres``
system user (``initdb`` refuses root), in a fresh folder, on a free loopback port, trust auth.
"""

from __future__ import annotations

import glob
import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

from tests.browser_harness import free_port


def pg_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    return Path(found[-1]).parent if found else None


def require_pg_binaries() -> Path:
    import pytest

    found = pg_bin()
    if found is None or shutil.which("runuser") is None:
        message = "PostgreSQL server binaries (/usr/lib/postgresql/*/bin) or runuser not found"
        pytest.fail(message) if os.environ.get("CI") == "true" else pytest.skip(message)
    return found


class OwnPostgres:
    """``start()`` / ``stop()`` / ``url``; ``close()`` stops it and removes its folder."""

    def __init__(self, host: str = "127.0.0.1", port: int | None = None, inside: list[str] | None = None):
        """``inside``: a command prefix that runs the server elsewhere (``NetnsHost.run_inside()``)."""
        self.bin = require_pg_binaries()
        self.inside = inside or []
        self.host, self.port = host, port or free_port()
        self.folder = Path(tempfile.mkdtemp(prefix="dstj-pg-", dir="/tmp"))
        os.chmod(self.folder, 0o755)
        self.data = self.folder / "data"
        self.data.mkdir()
        shutil.chown(self.data, "postgres", "postgres")
        shutil.chown(self.folder, "postgres", "postgres")
        self._as_postgres(str(self.bin / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync")
        with open(self.data / "pg_hba.conf", "a") as hba:  # a test host in a network namespace: its own subnet
            hba.write("host all all samenet trust\n")
        self.start()
        self._as_postgres(str(self.bin / "createdb"), "-h", self.host, "-p", str(self.port), "-U", "postgres", "judge")
        self.url = f"postgresql://postgres@{self.host}:{self.port}/judge"

    def _as_postgres(self, *command: str) -> None:
        subprocess.run(
            [*self.inside, "runuser", "-u", "postgres", "--", *command], check=True, capture_output=True, cwd=self.folder
        )

    def start(self) -> None:
        options = f"-p {self.port} -k {self.folder} -c listen_addresses={self.host} -c fsync=off"
        self._as_postgres(
            str(self.bin / "pg_ctl"),
            "-D",
            str(self.data),
            "-o",
            options,
            "-l",
            str(self.folder / "log"),
            "-w",
            "-t",
            "60",
            "start",
        )

    def stop(self, mode: str = "fast") -> None:
        self._as_postgres(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop")

    def processes(self) -> list[int]:
        """The server's processes: the postmaster (``postmaster.pid``'s first line), then its children."""
        postmaster = int((self.data / "postmaster.pid").read_text().split()[0])
        children = []
        for stat in glob.glob("/proc/[0-9]*/stat"):
            try:
                fields = Path(stat).read_text().rsplit(")", 1)[1].split()
            except OSError:  # gone meanwhile
                continue
            if int(fields[1]) == postmaster:
                children.append(int(Path(stat).parent.name))
        return [postmaster, *children]

    def freeze(self) -> None:
        """SIGSTOP to every process of the server (the postmaster first, so it forks nothing more): what a
        hung server looks like.  Its host's kernel still accepts connections and acknowledges data, so no
        TCP timeout fires, and the server's own timeouts (``statement_timeout``) cannot: it is stopped."""
        self.frozen = self.processes()
        for pid in self.frozen:
            os.kill(pid, signal.SIGSTOP)

    def thaw(self) -> None:
        """SIGCONT to every process ``freeze`` stopped (and to any child there is now)."""
        for pid in dict.fromkeys([*getattr(self, "frozen", []), *self.processes()]):
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
        self.frozen = []

    def close(self) -> None:
        if getattr(self, "frozen", None):  # a stopped server would not hear pg_ctl's signal
            self.thaw()
        try:
            self.stop("immediate")
        except subprocess.CalledProcessError:
            pass  # already stopped
        shutil.rmtree(self.folder, ignore_errors=True)


class NetnsHost:
    """A test host of our own: a network namespace joined to this machine by a veth pair, on a /30 of the
    198.18.0.0/15 benchmarking range (never the machine's own networks).  ``partition()`` drops every
    packet between the two (no RST, no ICMP: what a cut cable or a dead switch looks like), ``heal()``
    lets them through again."""

    def __init__(self):
        import random
        import uuid

        self.name = f"dj{uuid.uuid4().hex[:8]}"
        self.outer, self.inner = f"{self.name}h", f"{self.name}n"
        third = random.randint(0, 255)
        self.host_address, self.address = f"198.18.{third}.1", f"198.18.{third}.2"
        steps = [
            ["ip", "netns", "add", self.name],
            ["ip", "link", "add", self.outer, "type", "veth", "peer", "name", self.inner],
            ["ip", "link", "set", self.inner, "netns", self.name],
            ["ip", "addr", "add", f"{self.host_address}/30", "dev", self.outer],
            ["ip", "link", "set", self.outer, "up"],
            ["ip", "netns", "exec", self.name, "ip", "addr", "add", f"{self.address}/30", "dev", self.inner],
            ["ip", "netns", "exec", self.name, "ip", "link", "set", self.inner, "up"],
            ["ip", "netns", "exec", self.name, "ip", "link", "set", "lo", "up"],
        ]
        try:
            for step in steps:
                subprocess.run(step, check=True, capture_output=True)
        except (subprocess.CalledProcessError, FileNotFoundError) as err:
            self.close()
            import pytest

            message = f"cannot make a network namespace here ({err})"
            pytest.fail(message) if os.environ.get("CI") == "true" else pytest.skip(message)

    def run_inside(self) -> list[str]:
        return ["ip", "netns", "exec", self.name]

    def partition(self) -> None:
        """Everything the test host sends back to this machine is dropped silently (a blackhole route
        inside the namespace): a connection attempt gets no answer, data sent gets no acknowledgement."""
        subprocess.run([*self.run_inside(), "ip", "route", "add", "blackhole", f"{self.host_address}/32"], check=True)

    def heal(self) -> None:
        subprocess.run([*self.run_inside(), "ip", "route", "del", "blackhole", f"{self.host_address}/32"], check=True)

    def close(self) -> None:
        subprocess.run(["ip", "link", "del", self.outer], capture_output=True)
        subprocess.run(["ip", "netns", "del", self.name], capture_output=True)
