"""The layers, bottom to top: formats -> metrics -> exports -> annotate -> app.py (docs/architecture.md).

Walks every import (ast, module level and inside functions) of our packages and fails on an
import that runs up the layers, a circle between packages, metrics reaching the store, the app or
Streamlit, Streamlit outside app.py and the pages, and any sys.path edit.  Entry points
(``app.py`` and the ``__main__.py`` of a package) stand above the layers and may reach up.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys

from tests.conftest import REPO

LAYERS = ("formats", "metrics", "exports", "annotate")
OURS = (*LAYERS, "app", "tests", "bench")


def _files():
    for package in LAYERS:
        yield from sorted((REPO / package).rglob("*.py"))
    yield REPO / "app.py"


def _imports(path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


def _package(path) -> str:
    return path.relative_to(REPO).parts[0].removesuffix(".py")


def _entry_point(path) -> bool:
    return path.name == "__main__.py" or path == REPO / "app.py"


def test_imports_point_down_the_layers():
    wrong = []
    for path in _files():
        if _entry_point(path):
            continue
        own = _package(path)
        allowed = LAYERS[: LAYERS.index(own) + 1]
        for name in _imports(path):
            top = name.split(".")[0]
            if top in OURS and top not in allowed:
                wrong.append(f"{path.relative_to(REPO)} imports {name}")
    assert wrong == []


def test_no_circle_between_packages():
    edges: dict[str, set[str]] = {p: set() for p in (*LAYERS, "app")}
    for path in _files():
        if path.name == "__main__.py":
            continue  # an entry point is imported by nobody
        own = _package(path)
        edges[own] |= {n.split(".")[0] for n in _imports(path) if n.split(".")[0] in edges and n.split(".")[0] != own}

    def reaches(start, goal, seen=()):
        return any(nxt == goal or (nxt not in seen and reaches(nxt, goal, (*seen, nxt))) for nxt in edges[start])

    assert [p for p in edges if reaches(p, p)] == []


def test_metrics_and_formats_stay_pure():
    forbidden = ("annotate", "exports", "app", "streamlit", "sqlalchemy", "alembic", "psycopg")
    wrong = [
        f"{path.relative_to(REPO)} imports {name}"
        for path in _files()
        if _package(path) in ("formats", "metrics") and not _entry_point(path)
        for name in _imports(path)
        if name.split(".")[0] in forbidden
    ]
    assert wrong == []
    # and at run time: importing the statistics loads nothing of the store, the app or Streamlit
    probe = (
        "import sys, metrics.agreement, metrics.analysis, metrics.calibrate, metrics.correlation, formats;"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'annotate', 'exports', 'streamlit', 'sqlalchemy'}))"
    )
    loaded = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"


def test_streamlit_only_in_the_app_and_its_pages():
    wrong = [
        str(path.relative_to(REPO))
        for path in _files()
        if any(name.split(".")[0] == "streamlit" for name in _imports(path))
        and path != REPO / "app.py"
        and "pages" not in path.relative_to(REPO).parts
    ]
    assert wrong == []


def test_no_sys_path_edits():
    """The package is installed (pip install -e .); nothing edits the import path, bench and tests included."""
    edit = re.compile(r"sys\.path\.(insert|append|extend)\(|sys\.path\s*=")
    tracked = subprocess.run(["git", "ls-files", "*.py"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    assert [name for name in tracked if edit.search((REPO / name).read_text(encoding="utf-8"))] == []


def test_the_api_and_the_pages_reach_the_store_only_through_the_service():
    """annotate.api (the HTTP routes) and annotate.pages are clients of ``annotate.service``: neither
    imports the other, and the API imports no module that reads or writes the store by itself."""
    store = (
        "annotate.store",
        "annotate.judging.loop",
        "annotate.judging.votes",
        "annotate.studies.assignment",
        "annotate.people.tokens",
    )
    wrong = []
    for path in sorted((REPO / "annotate" / "api").rglob("*.py")):
        for name in _imports(path):
            if name.startswith("annotate.pages") or name.startswith(store):
                wrong.append(f"{path.relative_to(REPO)} imports {name}")
    for path in sorted((REPO / "annotate" / "pages").rglob("*.py")):
        wrong += [f"{path.relative_to(REPO)} imports {n}" for n in _imports(path) if n.startswith("annotate.api")]
    assert wrong == []


def test_the_service_is_one_door():
    """Issue 39, item 3: ``annotate.service`` is a package of wings (judging, people, crowd, studies,
    analysis, downloads, api) behind one door: callers import the package, never a wing, and every
    public name of a wing is in the package's ``__all__`` (so the door lists what it offers)."""
    import annotate.service as service

    wings = sorted(p for p in (REPO / "annotate" / "service").glob("*.py") if p.name != "__init__.py")
    assert {p.stem for p in wings} >= {"judging", "people", "crowd", "studies", "analysis", "downloads", "api"}
    outside = [
        f"{path.relative_to(REPO)} imports {name}"
        for path in [*_files(), *sorted((REPO / "tests").rglob("*.py")), *sorted((REPO / "bench").rglob("*.py"))]
        if "service" not in path.relative_to(REPO).parts
        for name in _imports(path)
        if name.startswith("annotate.service.")
    ]
    assert outside == []
    offered = set(service.__all__)
    assert len(offered) == len(service.__all__)
    missing = []
    for path in wings:
        for node in ast.parse(path.read_text()).body:
            names = [node.name] if isinstance(node, (ast.FunctionDef, ast.ClassDef)) else []
            if isinstance(node, ast.Assign):
                names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            missing += [f"{path.stem}.{n}" for n in names if not n.startswith("_") and n not in offered]
    assert missing == []
    assert all(hasattr(service, name) for name in service.__all__)


def test_the_analysis_path_runs_one_way():
    """Issue 39, item 2: page -> service -> analysis_jobs -> analysis_cache -> study_data -> metrics, never
    back: the cache imports nothing that computes or reports, the jobs nothing of the reports, and
    the reports, the study data and the cache nothing of the jobs (at module level or inside a function)."""
    below = {
        "analysis_cache": {
            "annotate.analysis.analysis_jobs",
            "annotate.analysis.reports",
            "annotate.analysis.study_data",
            "annotate.service",
        },
        "analysis_jobs": {"annotate.analysis.reports", "annotate.service"},
        "reports": {"annotate.analysis.analysis_jobs", "annotate.service"},
        "study_data": {
            "annotate.analysis.analysis_jobs",
            "annotate.analysis.analysis_cache",
            "annotate.analysis.reports",
            "annotate.service",
        },
    }
    wrong = [
        f"annotate/analysis/{name}.py imports {module}"
        for name, banned in below.items()
        for module, _ in _module_imports(REPO / "annotate" / "analysis" / f"{name}.py")
        if any(module == b or module.startswith(b + ".") for b in banned)
    ]
    assert wrong == []


def _module_imports(path) -> list[tuple[str, list[str]]]:
    """(module, names) of every ``from X import a, b`` (module level and inside functions) of ``path``;
    ``from metrics import adaptive`` is module ``metrics.adaptive``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                candidate = REPO / (node.module.replace(".", "/") + f"/{alias.name}.py")
                if candidate.exists():
                    found.append((f"{node.module}.{alias.name}", []))
                else:
                    found.append((node.module, [alias.name]))
        elif isinstance(node, ast.Import):
            found += [(alias.name, []) for alias in node.names]
    return found


def _module_name(path) -> str:
    return ".".join(path.relative_to(REPO).with_suffix("").parts)


def test_no_circle_between_the_modules_of_metrics():
    """Issue 39, item 5: no two modules of ``metrics/`` import each other, at module level or inside a
    function (a function-local import hides a circle; it does not remove it)."""
    graph: dict[str, set[str]] = {}
    for path in sorted((REPO / "metrics").rglob("*.py")):
        if path.name == "__main__.py":
            continue
        own = _module_name(path)
        graph[own] = {m for m, _ in _module_imports(path) if m.startswith("metrics.") and m != own}
    circles = []

    def visit(node, trail):
        for nxt in sorted(graph.get(node, ())):
            if nxt in trail:
                circles.append(" -> ".join([*trail[trail.index(nxt) :], nxt]))
            elif len(trail) < 12:
                visit(nxt, [*trail, nxt])

    for start in graph:
        visit(start, [start])
    assert sorted(set(circles)) == []


def test_no_private_name_is_imported_from_another_module():
    """Issue 39, item 5: a name with a leading underscore stays in its module (a name another module
    needs is public, documented, and part of its module's contract)."""
    wrong = []
    private = lambda name: name.startswith("_") and not name.endswith("__")  # noqa: E731
    for path in _files():
        for module, names in _module_imports(path):
            if module.split(".")[0] in LAYERS:
                wrong += [f"{path.relative_to(REPO)}: {module}.{name}" for name in names if private(name)]
        # and through a module imported whole: ``from annotate import reports`` ... ``reports._analyse``
        modules = {}
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and node.module.split(".")[0] in LAYERS:
                for alias in node.names:
                    if (REPO / node.module.replace(".", "/") / f"{alias.name}.py").exists():
                        modules[alias.asname or alias.name] = f"{node.module}.{alias.name}"
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname and alias.name.split(".")[0] in LAYERS:
                        modules[alias.asname] = alias.name
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules:
                if private(node.attr) and modules[node.value.id] != _module_name(path):
                    wrong.append(f"{path.relative_to(REPO)}: {modules[node.value.id]}.{node.attr}")
    assert sorted(set(wrong)) == []


# Where a task kind may be named (issue 39, item 4): its own module (annotate/kinds/), its page view
# (annotate/pages/views/, one per kind, registered by name) and the demo that makes one study of each
# kind.  Anywhere else a kind is asked for what it does (a ``Kind`` attribute), never compared by name.
KIND_NAMES = ("satisfaction", "coco", "slu")
MAY_NAME_KINDS = ("annotate/kinds/", "annotate/pages/views/", "annotate/studies/demo.py", "annotate/store/migrations/")


def test_task_kinds_are_named_only_in_their_own_modules():
    named = []
    for path in (REPO / "annotate").rglob("*.py"):
        where = path.relative_to(REPO).as_posix()
        if where.startswith(MAY_NAME_KINDS):
            continue
        tree = ast.parse(path.read_text())
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and node.body
            and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)
        }
        named += [
            f"{where}:{node.lineno} {node.value!r}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and node.value in KIND_NAMES and id(node) not in docstrings
        ]
    assert named == []


def test_the_wings_of_annotate_point_one_way():
    """Issue 39, item 3: ``annotate/`` in wings, people <- studies <- judging <- analysis (then the service,
    the screen, the pages, the API and the CLIs above them): a wing imports only ``annotate.store``,
    ``annotate.kinds``, itself and the wings before it (at module level or inside a function)."""
    order = ["people", "studies", "judging", "analysis"]
    wrong = []
    for position, wing in enumerate(order):
        allowed = {"annotate.store", "annotate.kinds", *(f"annotate.{w}" for w in order[: position + 1])}
        for path in sorted((REPO / "annotate" / wing).glob("*.py")):
            for module, names in _module_imports(path):
                if module == "annotate":  # ``from annotate import X``: X is the module
                    module = f"annotate.{names[0]}" if names else module
                if not module.startswith("annotate.") or module == "annotate.__main__":
                    continue
                if not any(module == a or module.startswith(a + ".") for a in allowed):
                    wrong.append(f"{path.relative_to(REPO)} imports {module}")
    assert wrong == []


def test_pages_and_reports_write_no_command_line_flag():
    """Issue 39: the words people read are made from values, not from the CLI's wording: no string in a page,
    a page's view, the report or the presentation layer spells a ``--flag`` (what they show when rendered
    is checked in ``tests/app/test_no_flags.py``)."""
    import re

    flag = re.compile(r"(?<![\w-])--[a-z][a-z-]+")
    files = [*(REPO / "annotate" / "pages").rglob("*.py"), REPO / "exports" / "report.py", REPO / "metrics" / "present.py"]
    files.append(REPO / "metrics" / "summary.py")
    wrong = []
    for path in files:
        tree = ast.parse(path.read_text())
        docstrings = {
            id(parent.body[0].value)
            for parent in ast.walk(tree)
            if isinstance(getattr(parent, "body", None), list) and parent.body and isinstance(parent.body[0], ast.Expr)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                wrong += [f"{path.relative_to(REPO)}:{node.lineno}: {m}" for m in flag.findall(node.value)]
    assert wrong == []
