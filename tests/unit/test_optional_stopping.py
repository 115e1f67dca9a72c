"""Optional stopping in adaptive designs (issue 26, item 7).

The ``max_k`` rule (``annotate.studies.allocation.after_judgement``) gives a dialogue one more vote while
``metrics.adaptive.settled`` says its votes are split; an admin's re-open adds places too.  Both are
decided from the votes so far, so the mean of all a dialogue's votes is biased towards the answer
that stops early.  The correlations, differences and λ* therefore rate each dialogue from its fixed
part, its first ``overlap`` annotators (``metrics.adaptive.fixed_part``, ``annotate.analysis.study_data``).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from annotate.analysis.study_data import bind_analyser
from annotate.kinds import get_kind
from bench.corpus import build, dialogue_file
from exports.study import ItemRecord, StudyData
from formats.tidy import Vote
from metrics.adaptive import fixed_part, settled, stopping_mean
from metrics.analysis import AnalysisSettings


@pytest.mark.parametrize(("max_k", "bias"), [(4, 0.024), (7, 0.055), (11, 0.072)])
def test_the_settled_rule_biases_the_mean_of_all_votes_exactly_as_the_issue_says(max_k, bias):
    assert stopping_mean(0.8, 3, max_k) - 0.8 == pytest.approx(bias, abs=0.001)
    assert stopping_mean(0.8, 3, 3) == pytest.approx(0.8, abs=1e-12)  # no growth: no bias


def test_a_simulated_study_has_the_bias_and_the_first_k_rating_has_none():
    """Binary votes with p = 0.8, overlap 3, max_k 7, the rule as the allocation runs it: the mean of
    every vote is off by the exact amount; the mean of each dialogue's first 3 is not (within 4 SE)."""
    rng = np.random.default_rng(26)
    p, overlap, max_k, dialogues = 0.8, 3, 7, 6000
    votes, extra, all_means = [], {}, []
    for d in range(dialogues):
        values = [float(v) for v in rng.random(overlap) < p]
        while not settled(values, overlap, max_k, 0.5):
            values.append(float(rng.random() < p))
        extra[(f"d{d}", "")] = len(values) - overlap
        all_means.append(np.mean(values))
        votes += [Vote(f"d{d}", f"a{d}-{i}", "satisfied", f"{v:g}") for i, v in enumerate(values)]
    se = np.sqrt(p * (1 - p) / dialogues)  # the SE of the mean over dialogues, at most this (a mean of >= 1 vote)
    assert np.mean(all_means) - p == pytest.approx(stopping_mean(p, overlap, max_k) - p, abs=4 * se)
    assert np.mean(all_means) - p > 0.04
    kept = fixed_part(votes, overlap, extra)
    first = {}
    for v in kept:
        first.setdefault(v.item, []).append(float(v.value))
    assert {len(values) for values in first.values()} == {overlap}
    assert abs(np.mean([np.mean(values) for values in first.values()]) - p) < 4 * se / np.sqrt(overlap) + 1e-9


def test_the_first_k_are_the_earliest_annotators_whatever_order_the_current_votes_are_in():
    """A changed vote puts an annotator's current answer later in the list; the order is by the first
    vote event on the item.  Votes imported beyond the overlap (no extra places) all stay."""
    votes = [Vote("d", a, "satisfied", "1") for a in ("b", "c", "a", "d")]
    first_seen = {(("d", ""), a): i for i, a in enumerate("abcd")}
    assert [v.annotator for v in fixed_part(votes, 3, {("d", ""): 1}, first_seen)] == ["b", "c", "a"]
    imported = [Vote("e", f"r{i}", "satisfied", "1") for i in range(11)]
    assert len(fixed_part(imported, 3, {("e", ""): 1})) == 10  # 11 imported, one re-opened place: its vote drops
    assert len(fixed_part(imported, 3, {("x", ""): 1})) == 11


def _study(tmp_path, votes, extra):
    corpus = tmp_path / "s.json"
    corpus.write_text(json.dumps(build(8)))
    kind = get_kind("satisfaction")
    drafts = kind.build_items([corpus, dialogue_file(corpus)], None)
    items = [
        ItemRecord(d.key, d.condition, d.questions, d.payload, None, 3 + extra.get(i, 0), None, extra.get(i, 0))
        for i, d in enumerate(drafts)
    ]
    rows = [
        {"item": items[i].key, "condition": items[i].condition, "annotator": a, "question": "satisfied", "value": v}
        for i, a, v in votes
    ]
    data = StudyData("s", "satisfaction", "", 3, {}, items, rows, dialogues=kind.dialogues(items))
    first_seen = {((r["item"], r["condition"]), r["annotator"]): n for n, r in enumerate(rows)}
    data.analyser = bind_analyser(data, kind, first_seen)
    return data


def test_extra_votes_do_not_change_a_dialogues_rating_in_the_correlations_but_count_in_agreement(tmp_path):
    rng = np.random.default_rng(7)
    base = [(i, f"a{j}", str(int(rng.random() < 0.6))) for i in range(8) for j in range(3)]
    settings = AnalysisSettings(resamples=0, grid=(0.0, 2.0, 5))
    plain = _study(tmp_path, base, {}).analyser(settings)
    grown = _study(tmp_path, base + [(0, "a7", "1"), (0, "a8", "1"), (1, "a9", "0")], {}).analyser(settings)
    settled_study = _study(tmp_path, base + [(0, "a7", "1"), (0, "a8", "1"), (1, "a9", "0")], {0: 2, 1: 1}).analyser(settings)
    assert [d["rating"] for d in settled_study["correlation"]["per_dialogue"]] == [
        d["rating"] for d in plain["correlation"]["per_dialogue"]
    ]
    assert settled_study["correlation"]["metrics"] == plain["correlation"]["metrics"]
    assert [d["rating"] for d in grown["correlation"]["per_dialogue"]] != [
        d["rating"] for d in plain["correlation"]["per_dialogue"]
    ]
    assert settled_study["n_votes"] == len(base) + 3  # agreement and majority labels take every vote
    assert any("first 3 annotators" in note for note in settled_study["correlation"]["notes"])
    assert not any("first 3 annotators" in note for note in plain["correlation"]["notes"])
