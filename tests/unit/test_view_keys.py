"""The annotator's page's keys, per task kind: the answer keys, the "unsure" keys of a study that offers
it, and the keys of every kind (skip, undo, the overview) never clash, nor use a key Streamlit keeps for
itself; the key overview lists the "unsure" keys only for a study that offers "unsure"."""

from __future__ import annotations

import pytest

from annotate.kinds import KINDS
from annotate.pages.views import COMMON_KEYS, KEYS, UNSURE_KEYS, key_rows

STREAMLIT_KEYS = {"c", "r"}  # Streamlit refuses them as shortcuts (clear the cache, run again)


def _keys(name: str) -> list[str]:
    """A key overview's key as single keys: ``1-9`` is nine keys."""
    if len(name) == 3 and name[1] == "-" and name[0].isdigit() and name[2].isdigit():
        return [str(n) for n in range(int(name[0]), int(name[2]) + 1)]
    return [name.lower()]


@pytest.mark.parametrize("kind", list(KINDS))
def test_no_key_of_a_kind_clashes_with_another_of_its_page(kind):
    named = [*KEYS[kind], *UNSURE_KEYS.get(kind, {}).values(), *COMMON_KEYS]
    keys = [key for name, _what in named for key in _keys(name)]
    assert len(keys) == len(set(keys)), sorted(keys)
    assert not set(keys) & STREAMLIT_KEYS


def test_the_unsure_keys_are_those_of_the_kinds_yes_no_questions():
    assert UNSURE_KEYS["satisfaction"] == {"satisfied": ("n", "Unsure")}
    assert UNSURE_KEYS["coco"] == {"human_like": ("n", "Human-like: unsure"), "correct": ("m", "Correct: unsure")}
    for kind, keys in UNSURE_KEYS.items():  # every one names a yes/no question of its kind
        binary = {q["name"] for q in KINDS[kind].questions if q["type"] == "binary"}
        assert set(keys) <= binary, kind


def test_the_overview_lists_an_unsure_key_only_where_the_study_offers_it():
    plain = [{"name": "satisfied", "type": "binary"}]
    offered = [{"name": "satisfied", "type": "binary", "unsure": True}]
    assert key_rows("satisfaction", plain) == [*KEYS["satisfaction"], *COMMON_KEYS]
    assert key_rows("satisfaction", offered) == [*KEYS["satisfaction"], ("n", "Unsure"), *COMMON_KEYS]
    coco = [{"name": "human_like", "type": "binary", "unsure": True}, {"name": "correct", "type": "binary"}]
    assert ("n", "Human-like: unsure") in key_rows("coco", coco) and ("m", "Correct: unsure") not in key_rows("coco", coco)
    assert key_rows("slu", []) == [*KEYS["slu"], *COMMON_KEYS]
