"""A toy fourth task kind, as a study author would add one: this module, with the kind (no Streamlit)
and its view (``render``), and their registry calls.

Items come from plain text files, one sentence a line (key ``<file stem>/<line number>``); the
question ``fluent`` takes 1 or 0; the page shows the sentence and two buttons.
"""

from __future__ import annotations

from pathlib import Path

from annotate.kinds import ItemDraft, Kind
from annotate.pages.views import ItemContext
from formats import ReaderError
from formats.errors import read_text

QUESTIONS = ({"name": "fluent", "type": "binary", "required": True, "label": "Is the sentence fluent?"},)


def build_items(paths, condition=None) -> list[ItemDraft]:
    drafts = []
    for path in map(Path, paths):
        lines = [line.strip() for line in read_text(path).splitlines()]
        if not any(lines):
            raise ReaderError(path, "line 1", "no sentence in the file")
        for number, sentence in enumerate(lines, start=1):
            if sentence:
                key = f"{path.stem}/{number}"
                drafts.append(ItemDraft(key, condition or "", key, ["fluent"], {"sentence": sentence}, {"source": str(path)}))
    return drafts


def render(st, ctx: ItemContext) -> None:
    st.text(ctx.item.payload["sentence"])
    left, right = st.columns(2)
    if left.button("Fluent (1)", shortcut="1", key=ctx.key("toy-1")):
        ctx.vote({"fluent": "1"}, True)
    if right.button("Not fluent (0)", shortcut="0", key=ctx.key("toy-0")):
        ctx.vote({"fluent": "0"}, True)
    ctx.skip_button()


KIND = Kind(
    name="toy",
    label="sentence fluency",
    inputs="text files, one sentence a line",
    questions=QUESTIONS,
    build_items=build_items,
)
