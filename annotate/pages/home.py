"""Home page: what the tool is, and the metrics of the demo predictions."""

from __future__ import annotations

import streamlit as st

from annotate.demo import demo_scores


def render() -> None:
    st.title("DST Judge")
    st.write("Human evaluation and metric calibration for dialogue state tracking.")
    result = demo_scores()
    if result is None:
        st.info("The shared demo fixtures were not found; set DST_JUDGE_FIXTURES to their folder.")
        return
    st.subheader("Demo predictions (SOM-DST, 10 MultiWOZ 2.1 test dialogues)")
    corpus = result["corpus"]
    row = {key: corpus[key] for key in ("turns", "exact_matches", "turn_matches", "jga", "sa", "aga", "rsa", "f1")}
    row.update({f"fga_{label}": value for label, value in corpus["fga"].items()})
    st.dataframe([row], hide_index=True)
    st.caption(result["signature"])
