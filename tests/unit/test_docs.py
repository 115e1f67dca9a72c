"""The front page and the docs as a newcomer meets them: a short README with the two set-up commands, and
documentation that speaks of the product, not of the tracker it was built from."""

from __future__ import annotations

import json
import re

from tests.conftest import REPO

START = "python3 -m venv .venv && . .venv/bin/activate && pip install -e . && dst-judge serve"
TESTS = "python3 -m venv .venv && . .venv/bin/activate && bash scripts/test.sh"


def _documents():
    """README, CHANGELOG, mkdocs.yml and every text file of docs/ (pages, hooks, recorded bench runs)."""
    yield REPO / "README.md"
    yield REPO / "CHANGELOG.md"
    yield REPO / "mkdocs.yml"
    for path in sorted((REPO / "docs").rglob("*")):
        if path.is_file() and path.suffix in (".md", ".py", ".json", ".yml", ".yaml", ".txt"):
            yield path


def test_readme_is_a_front_page_with_the_two_set_up_commands():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 300
    lines = [line.strip().strip("`") for line in readme.splitlines()]
    assert lines.count(START) == 1 and lines.count(TESTS) == 1
    assert "bash scripts/test.sh" in (REPO / ".ci" / "run").read_text()


def test_no_document_names_an_issue_number():
    said = re.compile(r"\bissues?\s+#?\d+", re.IGNORECASE)
    found = [
        f"{path.relative_to(REPO)}:{n}: {line.strip()}"
        for path in _documents()
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if said.search(line)
    ]
    assert found == []


def test_every_recorded_bench_run_says_how_it_was_made():
    """A figure on the benchmarks pages comes from a JSON file that names its command (or whose bench the
    docs' hook knows), never from a table typed by hand."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("docs_generate", REPO / "docs" / "hooks" / "generate.py")
    generate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generate)
    for path in sorted((REPO / "docs" / "benchmarks").glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        assert isinstance(data, dict), path
        assert data.get("command") or path.stem in generate.BENCH_COMMANDS, path
