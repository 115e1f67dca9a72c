"""The views of the task kinds: how the annotator's page draws one item of each kind (one module per
kind, one ``register_view`` call each).  The kinds themselves (``annotate/kinds/``) hold no Streamlit."""
# ruff: noqa: I001  (importing a view module registers it)

from annotate.pages.views.base import (
    COMMON_KEYS,
    KEYS,
    UNSURE_KEYS,
    VIEWS,
    ItemContext,
    context_turns,
    key_rows,
    question_specs,
    register_view,
)
from annotate.pages.views import satisfaction
from annotate.pages.views import coco
from annotate.pages.views import slu

__all__ = [
    "COMMON_KEYS",
    "KEYS",
    "UNSURE_KEYS",
    "VIEWS",
    "ItemContext",
    "coco",
    "context_turns",
    "key_rows",
    "question_specs",
    "register_view",
    "satisfaction",
    "slu",
]
