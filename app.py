"""DST Judge: the Streamlit entry point.  Routes only; pages live in annotate/pages."""

from __future__ import annotations

import streamlit as st

from annotate.pages import home

st.set_page_config(page_title="DST Judge", layout="wide")
navigation = st.navigation([st.Page(home.render, title="Home", url_path="home", default=True)])
navigation.run()
