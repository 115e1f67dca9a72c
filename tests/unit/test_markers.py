"""The layer markers (tests/conftest.py): each test folder is a marker, and a test marked ``slow`` gets
none, so ``pytest -m unit`` stays the quick loop while plain ``pytest`` (scripts/test.sh) still runs the
slow checks (issue 24, item 9)."""

from __future__ import annotations

import pytest

from tests.conftest import REPO, pytest_collection_modifyitems


class Item:
    """What the collection hook reads of a pytest item: its path and its marks."""

    def __init__(self, relative: str, *marks: str):
        self.path = REPO / relative
        self.marks = set(marks)

    def get_closest_marker(self, name: str):
        return getattr(pytest.mark, name) if name in self.marks else None

    def add_marker(self, mark) -> None:
        self.marks.add(mark.name)


def test_folders_are_markers_and_slow_tests_leave_the_layer(pytestconfig):
    items = [
        Item("tests/unit/test_x.py"),
        Item("tests/unit/test_x.py", "slow"),
        Item("tests/store/test_x.py"),
        Item("tests/store/test_x.py", "browser"),
        Item("metrics/scores.py"),  # a doctest
        Item("tests/browser/test_x.py"),
        Item("tests/scaleout/test_x.py"),
    ]
    pytest_collection_modifyitems(None, items)
    serial = "xdist_group"  # a browser or scale-out module runs whole on one xdist worker
    assert [item.marks for item in items] == [
        {"unit"},
        {"slow"},
        {"store"},
        {"browser", serial},
        {"unit"},
        {"browser", serial},
        {"scaleout", serial},
    ]
    assert any(line.startswith("slow:") for line in pytestconfig.getini("markers"))  # registered for --strict-markers


class Config:
    """What the collection hooks read of pytest's config: the -m expression."""

    def __init__(self, markexpr: str):
        self.markexpr = markexpr

    def getoption(self, name: str, default=None):
        return self.markexpr if name == "markexpr" else default


@pytest.mark.parametrize(
    "markexpr, skipped",
    [
        ("unit", True),
        ("unit and not slow", True),
        ("(unit)", True),
        ("", False),
        ("not browser and not scaleout", False),
        ("unit or store", False),
        ("not unit", False),
        ("slow", False),
        ("unit or slow", False),
        ("unit or parametrize", False),  # a mark of pytest's own could be on any test: collect everything
        ("unit and timeout(seconds=5)", False),  # keyword matching: not judged here, collect everything
    ],
)
def test_only_the_unit_layer_collects_only_the_unit_folder(markexpr, skipped):
    """``unit`` comes only from the folder (no test elsewhere is marked unit by hand), so an expression that
    needs it leaves tests/store, app, browser and scaleout uncollected: their imports cost seconds."""
    from tests.conftest import pytest_ignore_collect

    others = [REPO / "tests" / folder for folder in ("store", "app", "browser", "scaleout")]
    assert [pytest_ignore_collect(path, Config(markexpr)) for path in others] == [skipped or None] * 4
    for kept in (
        REPO / "tests" / "unit",
        REPO / "tests" / "unit" / "test_markers.py",
        REPO / "metrics",
        REPO / "tests" / "golden",
    ):
        assert pytest_ignore_collect(kept, Config(markexpr)) is None


def test_no_test_outside_the_unit_folder_is_marked_unit_by_hand():
    """What skipping those folders under ``-m unit`` relies on."""
    marked = [
        path.relative_to(REPO).as_posix()
        for folder in ("store", "app", "browser", "scaleout")
        for path in sorted((REPO / "tests" / folder).rglob("*.py"))
        if "mark.unit" in path.read_text(encoding="utf-8")
    ]
    assert marked == []


@pytest.mark.slow  # a collection of the unit tree in a subprocess: seconds, outside the quick loop
def test_on_the_collected_items_no_slow_test_is_in_the_quick_loop():
    """The rule on the real test tree (issue 39): ``-m unit`` and ``-m slow`` select apart, and the quick loop
    holds no slow test (a module-level ``pytestmark = pytest.mark.unit`` once pulled two simulations of
    a minute into it: no test module sets a layer mark of its own).  One collection tells it: under
    ``-m "unit and slow"`` every item of the unit tree is deselected (no item is both)."""
    import re
    import subprocess
    import sys

    def collected(markexpr: str) -> tuple[int, int]:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-n",
                "0",
                "--collect-only",
                "-q",
                "-p",
                "no:randomly",
                "-m",
                markexpr,
                "tests/unit",
            ],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode in (0, 5), done.stdout[-2000:] + done.stderr[-2000:]  # 5: nothing selected
        selected = sum("::" in line for line in done.stdout.splitlines())
        deselected = re.search(r"(\d+) deselected", done.stdout)
        return selected, int(deselected.group(1)) if deselected else 0

    both, others = collected("unit and slow")
    assert both == 0 and others > 0, (both, others)  # the tree was collected, and no item of it is both
    layer_marks = re.compile(r"^pytestmark\s*=.*mark\.unit\b", re.MULTILINE)  # the folder gives it
    assert [p.name for p in (REPO / "tests").rglob("test_*.py") if layer_marks.search(p.read_text())] == []
