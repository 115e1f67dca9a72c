"""Every table on the app's pages: ``st.dataframe`` without Streamlit's own export, and next to it a
download button whose CSV went through the project's spreadsheet safety (issue 23, item 5).

Streamlit's toolbar "Download as CSV" (and its clipboard copy) writes cells as they are, so an
annotator's comment ``=2+5`` would run as a formula in the admin's spreadsheet.  Streamlit 1.67 has
no per-table switch for it; ``client.disableDataExport = true`` in ``.streamlit/config.toml`` (next to
app.py, so it applies whatever directory the app is started from) removes it from every table and
chart.  What a table download gives instead comes from here: the cells the table shows, written by
``exports.tables.csv_bytes`` (``formats.safety.neutralise`` on every cell and on the header).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import streamlit as st

from exports.tables import csv_bytes
from formats.safety import neutralise

if TYPE_CHECKING:
    import pandas as pd  # imported where a table is drawn: the login page's import path stays without it (issue 36)


def table_csv(frame: pd.DataFrame) -> bytes:
    """The frame as spreadsheet-safe CSV: missing cells empty, numbers as numbers, text neutralised."""
    columns = [neutralise(str(column)) for column in frame.columns]
    cells = frame.astype(object).where(frame.notna(), None)
    rows = [dict(zip(columns, values, strict=True)) for values in cells.itertuples(index=False, name=None)]
    return csv_bytes(rows, columns)


def slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "table"


def show_table(data, name: str, *, download: bool = True, **dataframe_args) -> None:
    """``data`` (a DataFrame, or rows as Streamlit takes them) as a table, index hidden, with a
    "Download as CSV" button (file ``<slug of name>.csv``) unless ``download`` is off or the table is
    empty.  ``name`` must be unique on the page: it keys the button and the container, whose CSS class
    ``st-key-table-<slug>`` lets tests find both."""
    import pandas as pd

    frame = data if isinstance(data, pd.DataFrame) else pd.DataFrame(data if data is not None else [])
    with st.container(key=f"table-{slug(name)}"):
        st.dataframe(frame, hide_index=True, **dataframe_args)
        if download and not frame.empty:
            st.download_button(
                "Download as CSV",
                table_csv(frame),
                file_name=f"{slug(name)}.csv",
                mime="text/csv",
                key=f"table-download-{slug(name)}",
                on_click="ignore",
                type="tertiary",
                icon=":material/download:",
                help="Spreadsheet-safe: a cell that could run as a formula gets a leading apostrophe.",
            )
