"""The HTTP API in tests: a study with an admin, annotators and a judge, each with an API token, and
the API served in-process (``client``: Starlette's TestClient, the real app on the real database) or
as its own uvicorn process on a free port (``LiveApi``), as ``python -m annotate api`` runs it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from annotate import service
from tests.browser_harness import free_port

REPO = Path(__file__).resolve().parent.parent


@dataclass
class ApiStudy:
    study_id: int
    name: str
    admin: str  # tokens
    annotators: list[str] = field(default_factory=list)
    judge: str = ""


def api_study(engine, fixtures, *, kind="satisfaction", overlap=2, annotators=3, name="api-study", sample=None) -> ApiStudy:
    """A study of the fixtures' files, an admin, ``annotators`` annotators and one automatic judge
    ("judge-1"), each with a token made as an admin makes it (``service.add_token``)."""
    paths = {"satisfaction": [fixtures / "fga_human_eval"], "coco": [fixtures / "coco"], "slu": [fixtures / "dstc2"]}[kind]
    options = {"condition": "trade"} if kind == "satisfaction" else {}
    created = service.create_study_from_files(engine, service.CLI, name, kind, paths, overlap=overlap, sample=sample, **options)
    service.add_person(engine, service.CLI, f"{name}-admin", "password-admin", "admin")
    for i in range(annotators):
        service.add_person(engine, service.CLI, f"{name}-a{i}", None)
    service.add_person(engine, service.CLI, "judge-1", None, kind="judge")
    token = lambda who: service.add_token(engine, service.CLI, who)[0]  # noqa: E731
    return ApiStudy(
        created.id,
        name,
        token(f"{name}-admin"),
        [token(f"{name}-a{i}") for i in range(annotators)],
        token("judge-1"),
    )


def bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


def client(engine):
    from fastapi.testclient import TestClient

    from annotate.api.app import create_app

    return TestClient(create_app(engine), raise_server_exceptions=False)


class LiveApi:
    """``python -m annotate --db URL api --port P`` in its own process; ``url`` once it answers."""

    def __init__(self, db_url: str, *, port: int | None = None, log: Path | None = None):
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = open(log or os.devnull, "ab")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "annotate", "--db", db_url, "api", "--port", str(self.port)],
            cwd=REPO,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.time() + 60
        while time.time() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the API exited with {self.process.returncode}")
            try:
                with urllib.request.urlopen(f"{self.url}/api/v1/openapi.json", timeout=2) as response:
                    if response.status == 200:
                        return
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError("the API did not answer within 60 s")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.log.close()

    def __enter__(self) -> LiveApi:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
