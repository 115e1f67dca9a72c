"""The login form is served without the analysis stack (issue 36: start-up as fast as Streamlit allows).

``app.py`` imports, at module level, what the login page needs; the other pages (pandas, Altair, the
statistics) are imported once someone is logged in, and ``annotate.service`` imports the analysis in the
functions that run it.  Importing what the first run of an anonymous visit imports must therefore load none
of numpy, pandas, pyarrow, Altair, SciPy, statsmodels, krippendorff, nor any ``metrics`` module and none of
the modules that compute or draw an analysis.  A fresh interpreter (a subprocess) tells, since this test
process has imported anything already.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys

from tests.conftest import REPO

HEAVY = ("numpy", "pandas", "pyarrow", "altair", "scipy", "statsmodels", "krippendorff")
ANALYSIS = (
    "metrics",  # every metrics module: the login path needs none of the statistics
    "annotate.analysis.reports",
    "annotate.analysis.study_data",
    "exports.report",
    "exports.charts",
    "annotate.pages.admin",
    "annotate.pages.annotators",
    "annotate.pages.progress",
    "annotate.pages.studies",
    "annotate.pages.analysis",
    "annotate.pages.annotate_page",
)
# What the first run of an anonymous visit imports besides app.py's own imports: the analysis warmer is
# started with the app's engine (annotate.pages.context.app_engine -> service.start_background_analysis).
FIRST_RUN = ("import annotate.analysis.analysis_jobs",)

PROBE = """
import json, sys
{imports}
heavy, ours = {heavy!r}, {ours!r}
loaded = sorted(
    {{name.split(".")[0] for name in sys.modules if name.split(".")[0] in heavy}}
    | {{name for name in sys.modules if any(name == m or name.startswith(m + ".") for m in ours)}}
)
print(json.dumps(loaded))
"""


def app_imports() -> list[str]:
    """app.py's module-level import statements, as source (what every run of the app imports first)."""
    tree = ast.parse((REPO / "app.py").read_text(encoding="utf-8"))
    return [
        ast.unparse(node)
        for node in tree.body
        if isinstance(node, (ast.Import, ast.ImportFrom))
        and not (isinstance(node, ast.ImportFrom) and node.module == "__future__")
    ]


def loaded_after(statements: list[str]) -> list[str]:
    probe = PROBE.format(imports="\n".join(statements), heavy=HEAVY, ours=ANALYSIS)
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_app_imports_are_what_the_login_page_needs():
    imports = app_imports()
    assert any("annotate.pages" in line and "login" in line for line in imports)  # the probe below means something
    assert not [
        line
        for line in imports
        if any(page in line for page in ("admin", "analysis", "annotate_page", "studies", "annotators", "progress"))
    ]


def test_the_login_path_imports_no_analysis_stack():
    assert loaded_after([*app_imports(), *FIRST_RUN]) == []


def test_the_service_and_the_kinds_import_no_analysis_stack():
    """What the login page, an annotator's page, the API and the CLIs build on is light to import; the
    analysis is imported where it runs."""
    assert (
        loaded_after(["import annotate.service, annotate.kinds, annotate.judging.loop, annotate.screen, exports.formats"]) == []
    )
