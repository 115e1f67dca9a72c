"""The system level on the Analysis page: a study of six systems' predictions for the same ten dialogues,
judged by three annotators, shows the chart of the metrics' system-level correlation with its clusters,
one system scatter, and the tables (every statistic, the tests, the systems' corpus scores)."""

from __future__ import annotations

import numpy as np

from annotate import service
from annotate.people.auth import add_annotator
from annotate.people.sessions import log_in
from annotate.store.db import get_engine, write_session
from formats import load_dialogues
from formats.fga_text import dialogue_text, file_name
from metrics.analysis import AnalysisSettings
from metrics.results import SystemLevel
from tests.app.test_app import analysis_as

DROPS = (0.0, 0.1, 0.25, 0.45, 0.65, 0.85)


def write_systems(fixtures, folder, drops=DROPS, seed=11) -> dict[tuple[str, str], float]:
    """One folder of FGA text files per system (the folder's name is the system's), made from the shared
    dialogues by dropping ever more predicted slots; returns each (dialogue, system)'s JGA."""
    base = load_dialogues([fixtures / "fga_human_eval"])
    rng = np.random.default_rng(seed)
    jga = {}
    for s, drop in enumerate(drops):
        system = folder / f"sys{s}"
        system.mkdir(parents=True)
        for d in base:
            turns = [
                t.__class__(**{**t.__dict__, "pred": frozenset(x for x in (t.pred or t.gold) if rng.random() >= drop)})
                for t in d.turns
            ]
            copy = d.__class__(**{**d.__dict__, "turns": turns})
            (system / file_name(d.id)).write_text(dialogue_text(copy), encoding="utf-8")
            jga[(d.id, f"sys{s}")] = float(np.mean([t.pred == t.gold for t in turns]))
    return jga


def test_the_analysis_page_shows_six_systems_as_the_unit(app_db, fixtures, tmp_path, monkeypatch):
    monkeypatch.setenv("DST_JUDGE_ANALYSIS_PROCESS", "0")
    engine = get_engine(app_db)
    with write_session(engine) as session:
        add_annotator(session, "boss", "boss-password", "admin")
        for n in range(3):
            add_annotator(session, f"rater{n}", f"rater{n}-password")
    boss, token = log_in(engine, "boss", "boss-password")
    jga = write_systems(fixtures, tmp_path / "systems")
    folders = sorted((tmp_path / "systems").iterdir())
    study = service.create_study_from_files(engine, boss, "six systems", "satisfaction", folders)
    rng = np.random.default_rng(3)
    cast = 0
    for n in range(3):
        rater, _ = log_in(engine, f"rater{n}", f"rater{n}-password")
        while (item := service.next_item(engine, rater, study.id)) is not None:
            service.submit(engine, rater, item.id, {"satisfied": str(int(rng.random() < jga[(item.key, item.condition)]))})
            cast += 1
    assert cast == 3 * 60

    probe = analysis_as(token)
    probe.selectbox(key="analysis-study").set_value(
        next(s for s in probe.selectbox(key="analysis-study").options if "six systems" in s)
    )
    probe.run()
    assert not probe.exception, probe.exception
    assert "System level: 6 systems as the unit" in [s.value for s in probe.subheader]
    charts = [c for c in probe.get("vega_lite_chart") if "Which metric ranks the 6 systems" in c.proto.spec]
    assert len(charts) == 1
    chosen = probe.selectbox(key="analysis-system-metric")
    assert chosen.options[0] == chosen.value  # the best metric first
    scatter = [c for c in probe.get("vega_lite_chart") if "per system" in c.proto.spec]
    assert len(scatter) == 1
    chosen.set_value("jga").run()
    assert not probe.exception, probe.exception
    assert any("jga against the mean rating, per system" in c.proto.spec for c in probe.get("vega_lite_chart"))
    answers = " ".join(m.value for m in probe.markdown)
    assert "Across the 6 systems" in answers and "ranks them most like people" in answers
    texts = " ".join(t.value for t in probe.text)
    assert "Intervals: 95% percentile bootstrap over 1000 draws of systems and dialogues together" in texts
    system = SystemLevel.from_dict(service.study_analysis(engine, boss, study.id, AnalysisSettings())["system_level"])
    assert system is not None and system.n_systems == 6 and {s.n_dialogues for s in system.systems} == {10}
    assert system.ranked()[0].cluster == 1 and system.ranked()[0].pearson_ci is not None
    # the report: the system-level tables and the chart under them
    content, _ = service.export(engine, boss, study.id, "report-md")
    text = content.decode()
    assert "## System level: 6 systems as the unit" in text and "## System scores" in text
    after = text.split("## System level: 6 systems as the unit", 1)[1].split("\n## ", 1)[0]
    assert "](data:image/png;base64," in after and "its cluster" in after
