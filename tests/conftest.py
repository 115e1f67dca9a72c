"""Shared test helpers: where the shared fixtures live."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(os.environ.get("DST_JUDGE_FIXTURES", REPO.parent / "shared" / "fixtures"))


@pytest.fixture(scope="session")
def fixtures() -> Path:
    if not FIXTURES.is_dir():
        pytest.fail(f"shared fixtures not found at {FIXTURES} (set DST_JUDGE_FIXTURES)")
    return FIXTURES

os.environ.setdefault("DST_JUDGE_BCRYPT_ROUNDS", "4")  # fast hashing in tests; production default is 12

from tests.databases import db_url, engine  # noqa: E402,F401  (fixtures for every test module)


@pytest.fixture(autouse=True)
def _keep_main_module():
    """AppTest swaps sys.modules['__main__'] for its temporary script and leaves it there; a later
    multiprocessing 'spawn' child would then try to run that deleted file and die on start."""
    import sys

    main = sys.modules.get("__main__")
    yield
    if main is not None:
        sys.modules["__main__"] = main


@pytest.fixture
def app_db(tmp_path, monkeypatch, fixtures):
    """A fresh demo database for the app (AppTest), as DST_JUDGE_DB."""
    import streamlit as st

    url = f"sqlite:///{tmp_path / 'app.sqlite'}"
    monkeypatch.setenv("DST_JUDGE_DB", url)
    monkeypatch.setenv("DST_JUDGE_FIXTURES", str(fixtures))
    st.cache_resource.clear()
    st.cache_data.clear()
    yield url
    st.cache_resource.clear()
    st.cache_data.clear()


LAYER_FOLDERS = ("unit", "store", "app", "browser", "scaleout")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Each test folder is a marker (tests/unit -> unit, ...); doctests in the packages are unit tests.
    A test that drives Chromium from another folder says so with its own ``browser`` mark."""
    for item in items:
        parts = Path(str(item.path)).resolve().relative_to(REPO).parts
        folder = parts[1] if parts[0] == "tests" and len(parts) > 2 else "unit"
        if folder in LAYER_FOLDERS and not any(item.get_closest_marker(name) for name in LAYER_FOLDERS):
            item.add_marker(getattr(pytest.mark, folder))
