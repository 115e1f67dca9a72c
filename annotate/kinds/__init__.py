"""The task kinds: one module each, one registry line each (see ``base`` for what a kind owns).

Importing a kind's module registers it; the order here is the order kinds are offered in.
"""
# ruff: noqa: I001  (the order of the kind imports is the registry's order)

from annotate.kinds.base import KINDS, ItemDraft, Kind, StudyError, analyse, get_kind, register
from annotate.kinds import satisfaction
from annotate.kinds import coco
from annotate.kinds import slu

__all__ = [
    "KINDS",
    "ItemContext",
    "ItemDraft",
    "Kind",
    "StudyError",
    "analyse",
    "coco",
    "get_kind",
    "register",
    "satisfaction",
    "slu",
]
