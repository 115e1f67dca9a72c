"""Issue 27 (6): the Progress page flags an annotator whose Dawid-Skene competence is near chance and
excludes them from the analysis, then takes them back (AppTest, on the demo database)."""

from __future__ import annotations

from annotate import service
from annotate.people.sessions import log_in
from annotate.store.db import get_engine
from tests.app.test_app import _vote_everything, page_as, start


def test_progress_flags_a_spammer_and_the_button_excludes_then_includes(app_db):
    engine = get_engine(app_db)
    start()  # the demo database
    admin, token = log_in(engine, "admin", "demo-admin-pw")
    # Annotators 1 and 2 follow the length of the dialogue id; 3 always says 1, whatever the dialogue.
    assert (
        _vote_everything(engine, "satisfaction", lambda n, item: {"satisfied": "1" if n == 3 or len(item.key) % 2 else "0"}) == 30
    )
    study = next(s for s in service.list_studies(engine) if s.kind == "satisfaction")

    probe = page_as("progress_page", token)
    assert not probe.exception, probe.exception
    assert [w.value for w in probe.warning] == ["Near chance (spammer score ≤ 0.1): the annotators below."]
    assert "ann3" in [t.value for t in probe.text]  # the names as text, not Markdown (issue 27 review)
    table = next(d.value for d in probe.dataframe if "spammer score" in d.value.columns)
    assert table["annotator"].tolist()[0] == "ann3"  # lowest competence first
    assert table.set_index("annotator").loc["ann3", "near chance"] == "yes"
    assert set(table.set_index("annotator").loc[["ann1", "ann2"], "near chance"]) == {"no"}
    assert probe.selectbox(key=f"exclude-who-{study.id}").value == "ann3"
    assert probe.text_input(key=f"exclude-why-{study.id}-ann3").value == "spammer"

    probe.button(key=f"exclude-{study.id}").click().run()
    assert not probe.exception, probe.exception
    [gone] = service.analysis_exclusions(engine, admin, study.id)
    assert (gone.annotator, gone.by, gone.reason) == ("ann3", "admin", "spammer")
    assert probe.warning == []  # excluded: no longer flagged as a live problem
    table = next(d.value for d in probe.dataframe if "spammer score" in d.value.columns)
    assert table.set_index("annotator").loc["ann3", "excluded"] == "yes"

    probe.button(key=f"include-{study.id}").click().run()
    assert not probe.exception, probe.exception
    assert service.analysis_exclusions(engine, admin, study.id) == []
    assert [w.value for w in probe.warning] == ["Near chance (spammer score ≤ 0.1): the annotators below."]
    assert "ann3" in [t.value for t in probe.text]  # the names as text, not Markdown (issue 27 review)
