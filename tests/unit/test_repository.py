"""The repository as a newcomer meets it, and what the code may and may not do."""

from __future__ import annotations

import pytest


def test_one_timeout_constant():
    import inspect

    from annotate import __main__ as cli
    from annotate import studies
    from annotate.pages import admin, annotators, progress
    from annotate.pages import studies as studies_page
    from annotate.store.models import DEFAULT_TIMEOUT_MINUTES
    from annotate.studies import assignment

    assert studies.create_study.__kwdefaults__["timeout_minutes"] == DEFAULT_TIMEOUT_MINUTES
    assert cli.build_parser().parse_args(["study", "create", "x", "p", "--kind", "slu"]).timeout == DEFAULT_TIMEOUT_MINUTES
    for module in (assignment, admin, studies_page, annotators, progress, cli, studies):
        assert "30" not in inspect.getsource(module).replace("300", ""), module.__name__


def test_requirements_are_split_and_the_tree_agrees_with_gitignore():
    import subprocess

    from tests.conftest import REPO

    runtime = (REPO / "requirements.txt").read_text().lower()
    for tool in ("pytest", "playwright", "hypothesis", "ruff", "jsonschema"):
        assert tool not in runtime, tool
    dev = (REPO / "requirements-dev.txt").read_text().lower()
    assert "-r requirements.txt" in dev and all(tool in dev for tool in ("pytest", "playwright", "hypothesis", "ruff"))
    assert "requirements-dev.txt" in (REPO / "scripts" / "test.sh").read_text()
    ignored = subprocess.run(["git", "ls-files", "-ci", "--exclude-standard"], cwd=REPO, capture_output=True, text=True).stdout
    assert ignored == ""  # nothing tracked that .gitignore says to ignore
    readme = (REPO / "README.md").read_text()
    assert "Python 3.10" in readme and "127.0.0.1" in readme


def test_page_scripts_are_ours_alone():
    """The login token is readable by page scripts (docs/security.md: threat model), so the only scripts are
    our own fixed ones: every unsafe_allow_* use is listed here, by the function that makes it."""
    import ast

    from tests.conftest import REPO

    uses = []
    for path in [REPO / "app.py", *REPO.glob("annotate/**/*.py")]:
        tree = ast.parse(path.read_text())
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef):
                continue
            for call in ast.walk(function):
                if isinstance(call, ast.Call) and any(
                    (k.arg or "").startswith("unsafe_allow") and isinstance(k.value, ast.Constant) and k.value.value is True
                    for k in call.keywords
                ):
                    uses.append(f"{path.relative_to(REPO)}:{function.name}")
    assert sorted(uses) == [
        "annotate/pages/context.py:scroll_to_top",
        "annotate/pages/context.py:sync_cookie",
        "annotate/pages/context.py:tab_events",
    ], uses
    assert "HttpOnly" in (REPO / "docs" / "security.md").read_text()  # the threat model says why it is not


@pytest.mark.slow
def test_the_package_installs_and_runs_outside_the_checkout(tmp_path, fixtures):
    """pip install . (here into a target folder, with the dependencies already present) gives packages
    that work from anywhere: python -m metrics score, and the store's migrations are in the package."""
    import os
    import shutil
    import subprocess
    import sys

    from tests.conftest import REPO

    source, target = tmp_path / "checkout", tmp_path / "site"  # a copy: setuptools builds inside the source tree
    shutil.copytree(
        REPO,
        source,
        ignore=shutil.ignore_patterns(".git", "test-output", "data", "build", "*.egg-info", "__pycache__", "*.sqlite*"),
    )
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--target", str(target), str(source)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    assert (target / "annotate" / "store" / "migrations" / "versions" / "0003_login_failure_client.py").is_file()
    env = {**os.environ, "PYTHONPATH": str(target)}
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    scored = subprocess.run(
        [sys.executable, "-m", "metrics", "score", str(fixtures / "fga_human_eval")],
        cwd=outside,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert scored.returncode == 0, scored.stderr
    assert "corpus      75   27   57  36.00" in scored.stdout
    where = subprocess.run(
        [sys.executable, "-c", "import metrics, annotate.kinds; print(metrics.__file__)"],
        cwd=outside,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert where.startswith(str(target))


def test_no_module_defines_a_top_level_function_twice():
    """A second ``def`` of the same name silently replaces the first for every caller (a settings box named
    like the page's number formatter once broke the λ* sentence of the Analysis page)."""
    import ast
    from collections import Counter

    from tests.conftest import REPO

    twice = []
    for path in [REPO / "app.py", *REPO.glob("annotate/**/*.py"), *REPO.glob("metrics/**/*.py"), *REPO.glob("formats/**/*.py")]:
        defs = [n for n in ast.parse(path.read_text()).body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
        # typing.overload stubs declare one function's signatures for the type checker: not a second definition
        names = Counter(n.name for n in defs if not any(ast.unparse(d).endswith("overload") for d in n.decorator_list))
        twice += [f"{path.relative_to(REPO)}:{name}" for name, count in names.items() if count > 1]
    assert twice == []
