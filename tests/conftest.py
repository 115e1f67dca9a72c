"""Shared test helpers: where the shared fixtures live."""

from __future__ import annotations

import os
import re
from itertools import combinations
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
# Where the shared fixtures are. Tests reach them only through the ``fixtures`` fixture below, never at
# import or collection time (no module-level glob or read, no parametrize list built from the folder): without
# the folder, collection still succeeds and each test that needs it fails with the message below
# (tests/unit/test_missing_fixtures.py).
FIXTURES = Path(os.environ.get("DST_JUDGE_FIXTURES", REPO.parent / "shared" / "fixtures"))


@pytest.fixture(scope="session")
def fixtures() -> Path:
    if not FIXTURES.is_dir():
        pytest.fail(f"shared fixtures not found at {FIXTURES} (set DST_JUDGE_FIXTURES)")
    return FIXTURES


from annotate.analysis.analysis_jobs import NUMERIC_THREADS  # noqa: E402  (numpy is not imported yet)

# One BLAS thread per process, as the app runs (set before numpy loads here, in the xdist workers and in
# every server a test starts): three workers on 2 cores with OpenBLAS's spinning threads once spent 4x the
# CPU on the λ designer's simulations (``python -m bench.bench_blas_threads``).
for _name, _value in NUMERIC_THREADS.items():
    os.environ.setdefault(_name, _value)
os.environ.setdefault("DST_JUDGE_BCRYPT_ROUNDS", "4")  # fast hashing in tests; production default is 12
os.environ.setdefault(
    "DST_JUDGE_BACKGROUND_ANALYSIS", "0"
)  # no analysis a test did not ask for (annotate.analysis.analysis_jobs)
os.environ.setdefault("DST_JUDGE_ANALYSIS_WAIT", "600")  # pages wait for their analysis (AppTest runs no timers)

from tests.databases import copy_sqlite, db_url, engine, pg_template, sqlite_template  # noqa: E402,F401  (fixtures for every test module)


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
def app_db(tmp_path, monkeypatch, fixtures, sqlite_template):  # noqa: F811 (the fixture imported above)
    """A fresh demo database for the app (AppTest), as DST_JUDGE_DB: a copy of the migrated template (the
    app's own start-up migration finds nothing to do), the demo made by the app on its first run."""
    import streamlit as st

    url = copy_sqlite(sqlite_template, tmp_path / "app.sqlite")
    monkeypatch.setenv("DST_JUDGE_DB", url)
    monkeypatch.setenv("DST_JUDGE_FIXTURES", str(fixtures))
    st.cache_resource.clear()
    st.cache_data.clear()
    yield url
    st.cache_resource.clear()
    st.cache_data.clear()


LAYER_FOLDERS = ("unit", "store", "app", "browser", "scaleout")


def only_unit(markexpr: str) -> bool:
    """True when the ``-m`` expression cannot select a test without the ``unit`` mark. ``unit`` comes only
    from the folder (tests/unit and the packages' doctests; tests/unit/test_markers.py checks that no test
    elsewhere is marked unit by hand), so then tests/store, app, browser and scaleout need not be collected.
    Judged by trying the expression on every set of the other marks it names or a test could carry;
    anything it cannot judge (keyword matching, a bad expression, too many names) means: collect everything."""
    if not markexpr.strip() or "=" in markexpr:
        return False
    try:
        from _pytest.mark.expression import Expression

        expression = Expression.compile(markexpr)
    except Exception:  # a private API of pytest's, or an expression pytest itself will refuse
        return False
    names = set(re.findall(r"(?:\w|:|\+|-|\.|\[|\]|\\|/)+", markexpr)) - {"and", "or", "not", "unit"}
    names |= {*LAYER_FOLDERS[1:], "slow"}
    if len(names) > 12:
        return False
    return not any(
        expression.evaluate(lambda name, chosen=set(chosen), **_: name in chosen)
        for size in range(len(names) + 1)
        for chosen in combinations(sorted(names), size)
    )


def pytest_ignore_collect(collection_path, config):
    """Under ``-m unit`` (or ``-m "unit and not slow"``, ...) the other test folders are not collected:
    importing them (Streamlit, SQLAlchemy, Playwright) would cost the quick loop seconds for tests it drops."""
    if collection_path.parent == REPO / "tests" and collection_path.name in LAYER_FOLDERS[1:]:
        return True if only_unit(config.getoption("markexpr", "") or "") else None
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Each test folder is a marker (tests/unit -> unit, ...); doctests in the packages are unit tests.
    A test that drives Chromium from another folder says so with its own ``browser`` mark. A test
    marked ``slow`` (a statistical check or a subprocess that takes seconds) gets no folder marker:
    ``-m unit`` stays the quick loop, ``-m slow`` runs those, plain ``pytest`` runs everything."""
    for item in items:
        parts = Path(str(item.path)).resolve().relative_to(REPO).parts
        folder = parts[1] if parts[0] == "tests" and len(parts) > 2 else "unit"
        if folder in LAYER_FOLDERS and not any(item.get_closest_marker(name) for name in (*LAYER_FOLDERS, "slow")):
            item.add_marker(getattr(pytest.mark, folder))
        if folder in BY_MODULE_FOLDERS or item.get_closest_marker("browser"):
            item.add_marker(pytest.mark.xdist_group(Path(str(item.path)).resolve().relative_to(REPO).as_posix()))


# The full test command runs pytest-xdist workers (``-n 3 --dist loadgroup``, scripts/test.sh). The tests
# that drive Chromium and the two-server scale-out test mostly wait (for a page to settle, a server to start,
# a background analysis): on this machine kind's two cores one browser module at a time used a third of a
# core. Each of their modules is one group, run whole on one worker (its server and its Chromium are made
# once, as without xdist), so the waits of three modules overlap, and the tests that compute (store, unit,
# app) fill the cores around them.
BY_MODULE_FOLDERS = ("browser", "scaleout")
