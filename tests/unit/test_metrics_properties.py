"""Property tests: the vectorised engine against the plain loop, and FGA's limits."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metrics.reference import corpus_loop, fga_loop
from metrics.scores import dialogue_fga, score_table
from metrics.turnstats import extract
from tests.examples import dialogue

SLOTS = [(d, s) for d in ("hotel", "taxi") for s in ("area", "day", "name")]
# A belief state holds one value per domain-slot.
STATES = st.dictionaries(st.sampled_from(SLOTS), st.sampled_from(["a", "b", "none"]), max_size=5).map(
    lambda slots: frozenset((d, s, v) for (d, s), v in slots.items())
)


@st.composite
def dialogues(draw, max_dialogues: int = 4):
    result = []
    for index in range(draw(st.integers(1, max_dialogues))):
        n = draw(st.integers(1, 7))
        gold = draw(st.lists(STATES, min_size=n, max_size=n))
        # Predictions that often share turns with gold, so all branches are reached.
        pred = [g if draw(st.booleans()) else draw(STATES) for g in gold]
        result.append(dialogue(f"d{index}", gold, pred))
    return result


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(dialogues(), st.sampled_from([0.1, 0.5, 1.0, 3.0]))
def test_vectorised_equals_loop(ds, lam):
    table = score_table(extract(ds), [lam], slot_count=30)
    loop = corpus_loop([([t.gold for t in d.turns], [t.pred for t in d.turns]) for d in ds], [lam], 30)
    for key in ("jga", "sa", "rsa", "f1"):
        assert float(table[key]) == pytest.approx(loop[key])
    if loop["aga"] is None:
        assert np.isnan(table["aga"])
    else:
        assert float(table["aga"]) == pytest.approx(loop["aga"])
    assert float(table["fga"][0]) == pytest.approx(loop["fga"][lam])
    per_dialogue = dialogue_fga(extract(ds), [lam])[:, 0]
    for d, value in zip(ds, per_dialogue):
        weights = fga_loop([t.gold for t in d.turns], [t.pred for t in d.turns], lam)
        assert value == pytest.approx(sum(weights) / len(weights))


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(dialogues())
def test_fga_limits_and_monotone(ds):
    stats = extract(ds)
    grid = np.array([0.0, 0.01, 0.1, 0.5, 1, 2, 5, 50, 1e9])
    table = score_table(stats, grid, slot_count=30)
    fga = table["fga"]
    assert fga[0] == pytest.approx(float(table["jga"]))
    assert np.all(np.diff(fga) >= -1e-12)
    assert fga[-1] == pytest.approx(float(table["turn_matches"]) / stats.n_turns)
    per_dialogue = score_table(stats, grid, slot_count=30, per_dialogue=True)
    assert np.all(np.diff(per_dialogue["fga"], axis=1) >= -1e-12)
    for key in ("jga", "sa", "rsa", "f1", "aga"):
        values = np.concatenate([np.atleast_1d(table[key]), per_dialogue[key]])
        values = values[~np.isnan(values)]
        assert np.all((values >= 0) & (values <= 1)), key
    assert np.all((fga >= 0) & (fga <= 1))


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(STATES)
def test_empty_gold_and_prediction_f1_is_one(s):
    table = score_table(extract([dialogue("x", [frozenset()], [frozenset()])]), [0.5], slot_count=30)
    assert float(table["f1"]) == 1.0 and float(table["jga"]) == 1.0
    table = score_table(extract([dialogue("x", [frozenset()], [s])]), [0.5], slot_count=30)
    assert float(table["f1"]) == (1.0 if not s else 0.0)
