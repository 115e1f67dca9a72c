"""Issue 39: no page and no report shows a command-line flag (``--bootstrap``, ``--level`` ...): the words
people read are made from the results' values, not from the CLI's wording.  Every admin page and both
reports of the three demo studies, each with every item voted, are read whole."""

from __future__ import annotations

import re

from streamlit.testing.v1 import AppTest

from annotate import service
from annotate.people.sessions import log_in
from annotate.store.db import get_engine
from tests.app.test_app import _vote_everything, start

FLAG = re.compile(r"(?<![\w-])--[a-z][a-z-]+")

ANSWERS = {
    "satisfaction": lambda n, item: {"satisfied": "1" if n == 3 or len(item.key) % 2 else "0"},
    "coco": lambda n, item: {"human_like": "1", "correct": "1" if item.condition == "original" or n > 1 else "0"},
    # each recognised act judged (ann2 rejects the acts of odd positions); the transcription left as it is
    "slu": lambda n, item: {
        q: "0" if n == 2 and item.position % 2 else "1" for q in item.questions if not q.startswith("transcription")
    },
}


def everything_shown(probe: AppTest) -> str:
    """Every string the page shows: its elements' protos as text (labels, captions, notes, help) and its
    tables' cells."""
    parts: list[str] = []

    def walk(node) -> None:
        proto = getattr(node, "proto", None)
        if proto is not None and node.type not in ("arrow_data_frame", "vega_lite_chart"):
            parts.append(str(proto))
        for child in getattr(node, "children", {}).values():
            walk(child)

    walk(probe._tree)
    parts += [frame.value.to_string() for frame in probe.dataframe]
    parts += [str(table.value) for table in probe.table]
    return "\n".join(parts)


def page(path: str, render: str, token: str) -> AppTest:
    probe = AppTest.from_string(f"from annotate.pages import {path}\n{path}.{render}()\n", default_timeout=180)
    probe.session_state["token"] = token
    probe.run()
    assert not probe.exception, probe.exception
    return probe


def test_no_page_or_report_shows_a_command_line_flag(app_db, monkeypatch):
    monkeypatch.setenv("DST_JUDGE_ANALYSIS_PROCESS", "0")
    engine = get_engine(app_db)
    start()
    admin, token = log_in(engine, "admin", "demo-admin-pw")
    for kind, answer in ANSWERS.items():
        assert _vote_everything(engine, kind, answer) > 0
    studies = service.list_studies(engine)
    assert {s.kind for s in studies} >= {"satisfaction", "coco", "slu"}
    found: dict[str, list[str]] = {}
    analysis = page("analysis", "render", token)
    box = analysis.selectbox(key="analysis-study")
    for index, label in enumerate(box.options):
        analysis.selectbox(key="analysis-study").select_index(index).run()
        assert not analysis.exception, analysis.exception
        shown = everything_shown(analysis)
        assert "Krippendorff" in shown, label  # the page was read, tables and notes with it
        found[f"Analysis page, {label}"] = FLAG.findall(shown)
    for path, render in (("progress", "progress_page"), ("studies", "studies_page"), ("annotators", "annotators_page")):
        found[f"{path} page"] = FLAG.findall(everything_shown(page(path, render, token)))
    for study in studies:
        for fmt in ("report-md", "report-html"):
            text = service.export(engine, admin, study.id, fmt)[0].decode()
            assert study.name in text
            found[f"{fmt} of {study.name}"] = FLAG.findall(text)
    assert {where: flags for where, flags in found.items() if flags} == {}


def test_the_login_page_says_how_to_make_the_first_admin_without_a_flag(tmp_path, monkeypatch):
    """A database with nobody who can log in as an admin (the demo off): the login page says how to make the
    first admin, as a command with no option flag, and that command makes one who can log in."""
    import os
    import subprocess
    import sys

    from annotate.store.db import make_engine, upgrade
    from annotate.studies.demo import FIRST_ADMIN
    from tests.conftest import REPO

    url = f"sqlite:///{tmp_path / 'judge.sqlite'}"
    upgrade(make_engine(url))
    monkeypatch.setenv("DST_JUDGE_DB", url)
    monkeypatch.setenv("DST_JUDGE_DEMO", "0")
    probe = AppTest.from_string("from annotate.pages import login\nlogin.render()\n", default_timeout=60)
    probe.run()
    assert not probe.exception, probe.exception
    shown = everything_shown(probe)
    assert "No admin account yet" in shown and "dst-judge admin add NAME" in shown
    assert shown.lower().count("no admin account") == 1  # said once (the hint under it once said it again)
    assert FLAG.findall(shown) == []
    command = FIRST_ADMIN.split("dst-judge ", 1)[1].replace("NAME", "first-admin").split()
    env = {**os.environ, "DST_JUDGE_PASSWORD": "a long password", "DST_JUDGE_DB": url}
    done = subprocess.run([sys.executable, "-m", "annotate", *command], cwd=REPO, env=env, capture_output=True, text=True)
    assert done.returncode == 0 and "added admin first-admin" in done.stdout, done.stderr
    assert log_in(get_engine(url), "first-admin", "a long password")[0].role == "admin"
