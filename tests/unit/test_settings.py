"""One typed settings object (formats.settings) reads every DST_JUDGE_* variable the code uses, in one
place; `dst-judge config` shows each value and where it came from; the default database is never
inside the installed package."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from dataclasses import fields

import pytest

from formats.settings import PACKAGE_SAMPLE_DATA, Settings, SettingsError, describe_settings, effective, load
from tests.conftest import REPO

RUNTIME = ("formats", "metrics", "exports", "annotate")
# Read by the test harness and the benches only, never by the app.
TEST_ONLY = {"DST_JUDGE_LOG", "DST_JUDGE_UPDATE_GOLDEN", "DST_JUDGE_API_LOAD_SECONDS"}


def _runtime_files():
    for package in RUNTIME:
        yield from sorted((REPO / package).rglob("*.py"))
    yield REPO / "app.py"


def test_no_module_but_settings_reads_the_environment_for_a_setting():
    readers = []
    for path in _runtime_files():
        if path == REPO / "formats" / "settings.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            # os.environ.get("DST_JUDGE_..."), os.getenv("DST_JUDGE_..."), os.environ["DST_JUDGE_..."] read
            func = node.func if isinstance(node, ast.Call) else None
            environ_get = isinstance(func, ast.Attribute) and (
                func.attr == "getenv" or (func.attr == "get" and getattr(func.value, "attr", "") == "environ")
            )  # not st.secrets.get("DST_JUDGE_DB"): Streamlit's secrets file is a source of its own (pages/context.py)
            if environ_get:
                if node.args and isinstance(node.args[0], ast.Constant) and str(node.args[0].value).startswith("DST_JUDGE_"):
                    readers.append(f"{path.relative_to(REPO)}:{node.lineno}")
            if (
                isinstance(node, ast.Subscript)
                and isinstance(node.ctx, ast.Load)
                and getattr(node.value, "attr", "") == "environ"
            ):
                key = node.slice
                if isinstance(key, ast.Constant) and str(key.value).startswith("DST_JUDGE_"):
                    readers.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert readers == []


def test_every_variable_the_code_or_tests_name_is_a_setting():
    known = {row.env for row in describe_settings()}
    named = set()
    for path in [*REPO.rglob("*.py")]:
        if ".git" in path.parts or "site-packages" in path.parts:
            continue
        named |= set(re.findall(r"DST_JUDGE_[A-Z_]*[A-Z]", path.read_text(errors="replace")))
    assert named - known - TEST_ONLY == set()
    code = "".join(path.read_text() for path in _runtime_files() if path.name != "settings.py")
    code += (REPO / "tests" / "databases.py").read_text() + (REPO / "tests" / "browser_harness.py").read_text()
    unread = [f.name for f in fields(Settings) if f.metadata.get("env") and f".{f.name}" not in code]
    assert unread == []  # no setting nobody reads
    assert len(known) >= 23


def test_values_parse_by_type_and_a_bad_one_names_the_variable():
    s = load({"DST_JUDGE_SESSION_HOURS": "1.5", "DST_JUDGE_MAX_JSON_VALUES": "10", "DST_JUDGE_BACKGROUND_ANALYSIS": "off"})
    assert (s.session_hours, s.max_json_values, s.background_analysis) == (1.5, 10, False)
    assert load({"DST_JUDGE_DB_POOL_TIMEOUT": "0"}).db_pool_timeout == 0.0
    assert load({"DST_JUDGE_DEMO": "  "}).demo is True  # empty: unset
    with pytest.raises(SettingsError, match=r"^DST_JUDGE_DB_STATEMENT_TIMEOUT='-1': give a number of seconds"):
        load({"DST_JUDGE_DB_STATEMENT_TIMEOUT": "-1"})
    with pytest.raises(SettingsError, match=r"^DST_JUDGE_DEMO='maybe': give 1 \(on\) or 0 \(off\)$"):
        load({"DST_JUDGE_DEMO": "maybe"})
    with pytest.raises(SettingsError) as refused:
        load({"DST_JUDGE_PASSWORD": "x", "DST_JUDGE_MAX_FILE_MB": "lots"})
    assert "lots" in str(refused.value)


def test_the_default_database_is_in_the_per_user_data_folder_never_in_the_package(tmp_path):
    s = load({"XDG_DATA_HOME": str(tmp_path)})
    assert s.database_url == f"sqlite:///{tmp_path / 'dst-judge' / 'dst_judge.sqlite'}"
    home = load({"HOME": str(tmp_path)})  # XDG_DATA_HOME unset: ~/.local/share
    assert home.data_dir == Settings().data_dir or str(home.data_dir).endswith(".local/share/dst-judge")
    package = REPO / "annotate"
    for url in (s.database_url, load({}).database_url):
        assert not url.removeprefix("sqlite:///").startswith(str(package))
    assert load({"DST_JUDGE_DB": "postgresql://u@h/db"}).database_url == "postgresql://u@h/db"
    assert load({}).fixtures == PACKAGE_SAMPLE_DATA and PACKAGE_SAMPLE_DATA.is_dir()


def test_effective_says_where_each_value_came_from_and_hides_the_password():
    rows = {r.env: r for r in effective({"DST_JUDGE_SESSION_HOURS": "3", "DST_JUDGE_PASSWORD": "hunter2"})}
    assert (rows["DST_JUDGE_SESSION_HOURS"].value, rows["DST_JUDGE_SESSION_HOURS"].source) == ("3", "environment")
    assert (rows["DST_JUDGE_DEVICE_DAYS"].value, rows["DST_JUDGE_DEVICE_DAYS"].source) == ("30", "default")
    assert rows["DST_JUDGE_PASSWORD"].value == "(set)" and "hunter2" not in repr(list(rows.values()))


def _cli(*args, env=None):
    return subprocess.run(
        [sys.executable, "-m", "annotate", *args],
        cwd=REPO,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.slow
def test_config_prints_the_settings_and_a_bad_value_is_one_line(tmp_path):
    shown = _cli("config", env={"DST_JUDGE_SESSION_HOURS": "7", "XDG_DATA_HOME": str(tmp_path), "DST_JUDGE_DB": ""})
    assert shown.returncode == 0, shown.stderr
    lines = {line.split()[0]: line for line in shown.stdout.splitlines() if line.startswith("DST_JUDGE_")}
    assert lines["DST_JUDGE_SESSION_HOURS"].split()[1:] == ["7", "(environment)"]
    assert f"database: sqlite:///{tmp_path / 'dst-judge' / 'dst_judge.sqlite'}" in shown.stdout
    assert not (tmp_path / "dst-judge").exists()  # config reads no database, makes none
    bad = _cli("study", "list", env={"DST_JUDGE_SESSION_HOURS": "soon", "XDG_DATA_HOME": str(tmp_path)})
    assert bad.returncode == 2
    assert bad.stderr.strip() == "error: DST_JUDGE_SESSION_HOURS='soon': give a number"
