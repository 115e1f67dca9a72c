"""System-level meta-evaluation (``metrics.systems``): corpus scores, four statistics with ties, intervals
resampling systems and dialogues, paired tests between metrics, significance clusters; the CLI's tables,
the chart."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from scipy import stats

from formats import load_dialogues
from formats.tidy import UNSURE, Vote
from metrics import present
from metrics.corpus import ScoreSettings
from metrics.results import SystemLevel
from metrics.scores import ratio_parts, score_table
from metrics.systems import STATISTICS, meta_evaluate, statistics_of, system_level, system_scores
from metrics.turnstats import extract

SETTINGS = ScoreSettings((0.25, 1.0), ("0.25", "1"))


def _systems(fixtures, drops, seed=5, votes_per=3, rated=None):
    """Systems made from the shared FGA dialogues by dropping ever more predicted slots; people rate a
    dialogue satisfied with probability its JGA.  ``rated``: how many dialogues each system has votes on."""
    base = load_dialogues([fixtures / "fga_human_eval"])
    rng = np.random.default_rng(seed)
    systems, votes = {}, []
    for s, drop in enumerate(drops):
        name = f"sys{s}"
        systems[name] = [
            dataclasses.replace(
                d,
                turns=[
                    dataclasses.replace(t, pred=frozenset(x for x in (t.pred or t.gold) if rng.random() >= drop)) for t in d.turns
                ],
            )
            for d in base
        ]
        for d in systems[name][:rated]:
            jga = np.mean([t.pred == t.gold for t in d.turns])
            votes += [Vote(d.id, f"a{k}", "satisfied", str(int(rng.random() < jga)), name) for k in range(votes_per)]
    return systems, votes


@pytest.mark.parametrize("rsa", ["macro", "macro-skip", "micro"])
@pytest.mark.parametrize("folder", ["fga_human_eval", "trade_predictions"])
def test_ratio_parts_sum_to_the_corpus_score_of_every_metric(fixtures, folder, rsa):
    """Σ numerator / Σ denominator is the corpus (turn-weighted) score, and per dialogue the dialogue's."""
    stats_ = extract(load_dialogues([fixtures / folder]))
    corpus = score_table(stats_, [0.25, 0.5, 2.0], slot_count=30, rsa=rsa)
    per_dialogue = score_table(stats_, [0.25, 0.5, 2.0], slot_count=30, rsa=rsa, per_dialogue=True)
    parts = ratio_parts(stats_, [0.25, 0.5, 2.0], slot_count=30, rsa=rsa)
    assert set(parts) == {"jga", "m2", "fga", "sa", "aga", "rsa", "f1"}
    for name, (numerator, denominator) in parts.items():
        np.testing.assert_allclose(numerator.sum(axis=0) / denominator.sum(), corpus[name], rtol=1e-12, err_msg=name)
        with np.errstate(invalid="ignore", divide="ignore"):
            mine = numerator / (denominator[:, None] if numerator.ndim == 2 else denominator)
        np.testing.assert_allclose(mine, per_dialogue[name], rtol=1e-12, equal_nan=True, err_msg=name)


def test_four_statistics_match_scipy_with_ties():
    """Pearson, Spearman (average ranks) and Kendall τ-b equal scipy's on rows full of ties; pairwise
    accuracy counts agreeing pairs, a pair tied in both counting as agreement."""
    rng = np.random.default_rng(3)
    metric = rng.integers(0, 3, size=(40, 7)).astype(float)
    human = rng.integers(0, 4, size=(40, 7)).astype(float)
    found = statistics_of(metric, human, np.tile(np.arange(7), (40, 1)))
    for i in range(40):
        x, y = metric[i], human[i]
        if np.ptp(x) == 0 or np.ptp(y) == 0:
            assert np.isnan(found["pearson"][i])
            continue
        assert found["pearson"][i] == pytest.approx(np.corrcoef(x, y)[0, 1])
        assert found["spearman"][i] == pytest.approx(stats.spearmanr(x, y).statistic)
        assert found["kendall"][i] == pytest.approx(stats.kendalltau(x, y, variant="b").statistic)
        pairs = [(a, b) for a in range(7) for b in range(a + 1, 7)]
        agree = sum(np.sign(x[a] - x[b]) == np.sign(y[a] - y[b]) for a, b in pairs)
        assert found["accuracy"][i] == pytest.approx(agree / len(pairs))


def test_a_system_drawn_twice_is_not_a_pair_of_pairwise_accuracy():
    metric = np.array([[0.9, 0.9, 0.1]])
    human = np.array([[0.8, 0.8, 0.2]])
    drawn = np.array([[0, 0, 1]])  # system 0 twice: its pair with itself is tied in both by construction
    assert statistics_of(metric, human, drawn)["accuracy"][0] == 1.0
    assert statistics_of(metric, np.array([[0.8, 0.7, 0.9]]), np.array([[0, 1, 2]]))["accuracy"][0] == 0.0


def test_system_scores_are_corpus_scores_on_the_rated_dialogues(fixtures):
    """A system's JGA is Σ correct turns / Σ turns over its rated dialogues (papers' corpus score), not the
    mean of its dialogues' JGA; the human score is the mean of the dialogues' mean ratings."""
    systems, votes = _systems(fixtures, (0.0, 0.3, 0.6, 0.9), rated=7)
    result = system_level(systems, votes, SETTINGS, resamples=0)
    for row in result["systems"]:
        rated = systems[row["system"]][:7]
        corpus = score_table(extract(rated), [0.25, 1.0], slot_count=30)
        assert row["n_dialogues"] == 7
        assert row["jga"] == pytest.approx(float(corpus["jga"]))
        assert row["fga_0.25"] == pytest.approx(float(corpus["fga"][0]))
        mine = [v for v in votes if v.condition == row["system"]]
        means = [np.mean([int(v.value) for v in mine if v.item == d.id]) for d in rated]
        assert row["rating"] == pytest.approx(float(np.mean(means)))
    # the dialogues have different lengths, so the corpus score is not the mean of the dialogues' scores
    worst = result["systems"][-1]
    per = [np.mean([t.pred == t.gold for t in d.turns]) for d in systems[worst["system"]][:7]]
    assert worst["jga"] != pytest.approx(float(np.mean(per)))


def test_intervals_tests_and_clusters_tell_one_story(fixtures):
    systems, votes = _systems(fixtures, (0.0, 0.15, 0.3, 0.5, 0.7, 0.9), seed=8)
    result = system_level(systems, votes, SETTINGS, resamples=400, seed=2)
    again = system_level(systems, votes, SETTINGS, resamples=400, seed=2)
    assert result == again  # a seed reproduces every number
    assert result["bootstrap"] == {"resamples": 400, "seed": 2, "resample": "systems+dialogues", "confidence": 0.95}
    jga = next(m for m in result["metrics"] if m["metric"] == "jga")
    assert jga["n"] == 6 and jga["pearson"] > 0.8
    for m in result["metrics"]:
        for name in STATISTICS:
            if m[f"{name}_ci"] is not None:
                low, high = m[f"{name}_ci"]
                assert low <= high and -1 <= low and high <= 1
    assert len(result["comparisons"]) == len(result["metrics"]) * (len(result["metrics"]) - 1) // 2
    for c in result["comparisons"]:
        assert c["p_holm"] >= c["p"]
        low, high = c["ci"]
        assert (c["p"] < 0.05) == (low > 0 or high < 0)  # p is the interval's own test (up to the draws' ties)
    view = SystemLevel.from_dict(result)
    ranked = view.ranked()
    clusters = [m.cluster for m in ranked]
    assert clusters[0] == 1 and clusters == sorted(clusters)
    for m in ranked:  # a metric in cluster 1 is not beaten significantly by the best
        test = view.comparison(ranked[0].metric, m.metric)
        if m.cluster == 1 and test is not None:
            assert test.p_holm >= 0.05


def test_three_systems_get_statistics_but_no_interval_said_in_words(fixtures):
    systems, votes = _systems(fixtures, (0.0, 0.4, 0.8), seed=6)
    result = system_level(systems, votes, SETTINGS)
    jga = next(m for m in result["metrics"] if m["metric"] == "jga")
    assert jga["pearson"] is not None and jga["pearson_ci"] is None and jga["kendall_ci"] is None
    assert result["comparisons"] == [] and "no interval" in result["note"] and "at least 5 systems" in result["note"]
    table = present.system_table(result)
    assert table.rows[0][1] == "—"  # no cluster without tests


def test_five_systems_get_intervals_but_no_tests(fixtures):
    """From 5 systems the intervals cover in the simulation; the paired tests need 6 (docs/statistics/systems.md)."""
    systems, votes = _systems(fixtures, (0.0, 0.2, 0.4, 0.6, 0.8), seed=6)
    result = system_level(systems, votes, SETTINGS, resamples=200)
    jga = next(m for m in result["metrics"] if m["metric"] == "jga")
    assert jga["pearson_ci"] is not None and jga["accuracy_ci"] is not None and "cluster" not in jga
    assert result["comparisons"] == [] and "no test between metrics" in result["note"]
    assert present.system_tests_table(result) is None


def test_unsure_votes_are_left_out_of_the_system_scores(fixtures):
    systems, votes = _systems(fixtures, (0.0, 0.4, 0.8, 0.9), seed=6)
    with_unsure = votes + [Vote(v.item, "unsure-rater", v.question, UNSURE, v.condition) for v in votes[::3]]
    assert system_level(systems, with_unsure, SETTINGS, resamples=0) == system_level(systems, votes, SETTINGS, resamples=0)


def test_resampling_draws_dialogues_jointly_for_every_system(fixtures):
    """One draw of dialogues is shared by the systems (they ran on the same dialogues): with one
    dialogue weighted, every system's score is its score on that dialogue."""
    systems, votes = _systems(fixtures, (0.0, 0.4, 0.8), seed=6)
    data = system_scores(systems, votes, SETTINGS)
    weights = np.zeros((1, len(data.dialogues)))
    weights[0, 2] = 3.0
    metric, human = data.scores(weights)
    for s, name in enumerate(data.systems):
        dialogue = next(d for d in systems[name] if d.id == data.dialogues[2])
        assert metric["jga"][0, s] == pytest.approx(np.mean([t.pred == t.gold for t in dialogue.turns]))
        mine = [int(v.value) for v in votes if v.condition == name and v.item == dialogue.id]
        assert human[0, s] == pytest.approx(np.mean(mine))


def test_tables_and_chart_say_the_same(fixtures):
    from exports.charts import system_chart, system_rows, system_scatter_chart

    systems, votes = _systems(fixtures, (0.0, 0.15, 0.3, 0.5, 0.7, 0.85), seed=9)
    result = meta_evaluate(system_scores(systems, votes, SETTINGS), resamples=300, seed=1, statistic="kendall")
    view = SystemLevel.from_dict(result)
    tables = present.system_tables(view)
    assert [t.title for t in tables] == [
        "System level: 6 systems as the unit",
        "System level: Kendall τ-b of the best metric against the others",
        "System scores",
    ]
    assert tables[0].columns[1] == "cluster (Kendall τ-b)"
    best = view.ranked()[0]
    frame = system_rows(view)
    assert frame["metric"].iloc[0] == best.metric and frame["value"].iloc[0] == best.kendall
    assert present.interval(best.kendall_ci) in frame["text"].iloc[0]
    spec = system_chart(view).to_dict()
    assert "Which metric ranks the 6 systems as people do" in str(spec)
    assert "cluster 1" in str(spec)
    scatter = system_scatter_chart(view, "jga").to_dict()
    assert {row["system"] for row in scatter["datasets"][next(iter(scatter["datasets"]))]} == set(systems)
    assert "--" not in " ".join(" ".join(t.notes) + t.title for t in tables)  # no command-line flag in the words


def test_a_chart_of_too_few_systems_says_why(fixtures):
    from exports.charts import system_chart

    spec = str(system_chart(system_level({}, [], SETTINGS)).to_dict())
    assert "needs votes on at least 3 systems" in spec


def test_the_summary_names_the_best_metric_and_its_cluster(fixtures):
    from metrics.summary import system_sentences

    systems, votes = _systems(fixtures, (0.0, 0.15, 0.3, 0.5, 0.7, 0.85), seed=9)
    view = SystemLevel.from_dict(system_level(systems, votes, SETTINGS, resamples=300, seed=1))
    (sentence,) = system_sentences(view)
    best = view.ranked()[0]
    assert sentence.text.startswith("Across the 6 systems, ")
    assert present.number(best.pearson) in sentence.text and present.interval(best.pearson_ci) in sentence.text
    assert sentence.numbers["cluster_size"] == sum(m.cluster == 1 for m in view.ranked())
    few = SystemLevel.from_dict(system_level(*_systems(fixtures, (0.0, 0.4, 0.8), seed=6), SETTINGS))
    assert "no two metrics are tested" in system_sentences(few)[0].text
