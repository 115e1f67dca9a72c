"""The app starts and its home page shows the demo scores (Streamlit AppTest)."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from tests.conftest import REPO


def test_home_page_shows_demo_scores(fixtures):
    app = AppTest.from_file(str(REPO / "app.py"), default_timeout=60).run()
    assert not app.exception
    assert app.title[0].value == "DST Judge"
    frame = app.dataframe[0].value
    assert int(frame["turns"][0]) == 75 and abs(float(frame["jga"][0]) - 0.36) < 1e-9
    assert app.caption[0].value.startswith("metrics:")
