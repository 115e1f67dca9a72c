"""Issue 15, items 1 and 2: pairs mode counts dialogues; differences between metrics get Zou's (2007)
interval and a multiplicity correction over every pair reported."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from metrics.correlation import Ratings, adjust_p, correlation_report, zou_diff_ci
from tests.unit.test_analysis import corpus, ratings_csv, run  # noqa: F401  (fixtures)


def test_zou_2007_example_2_overlapping_correlations():
    """Zou (2007), Example 2: r12 = .396, r13 = .179, r23 = .088, n = 66 -> 95% CI (-.093, .517)."""
    low, high = zou_diff_ci(0.396, 0.179, 0.088, 66)
    assert (round(low, 3), round(high, 3)) == (-0.093, 0.517)


def test_zou_interval_is_the_difference_when_the_metrics_are_identical_in_correlation():
    low, high = zou_diff_ci(0.5, 0.5, 0.9, 100)
    assert low < 0 < high and math.isclose(-low, high, rel_tol=1e-12)


def test_holm_and_benjamini_hochberg_textbook_example():
    """Four p-values (0.01, 0.04, 0.03, 0.005): Holm multiplies the i-th smallest by (m - i + 1) and keeps
    the running maximum -> 0.03, 0.06, 0.06, 0.02; BH multiplies by m / i and keeps the running minimum
    from the top -> 0.02, 0.04, 0.04, 0.02."""
    p = [0.01, 0.04, 0.03, 0.005]
    assert np.allclose(adjust_p(p, "holm"), [0.03, 0.06, 0.06, 0.02])
    assert np.allclose(adjust_p(p, "bh"), [0.02, 0.04, 0.04, 0.02])
    assert adjust_p(p, "none") is None
    with pytest.raises(ValueError, match="adjust"):
        adjust_p(p, "bonferroni-ish")


def pairs_ratings(n_dialogues: int, votes_per_dialogue: int, rng) -> tuple[Ratings, dict]:
    """Every dialogue rated by several annotators: metrics per dialogue, a rating per vote."""
    truth = rng.normal(size=n_dialogues)
    metric_a = truth + rng.normal(scale=1.0, size=n_dialogues)
    metric_b = truth + rng.normal(scale=1.5, size=n_dialogues)
    dialogue = np.repeat(np.arange(n_dialogues), votes_per_dialogue)
    value = truth[dialogue] + rng.normal(scale=1.0, size=dialogue.size)
    ratings = Ratings([f"d{i}" for i in range(n_dialogues)], dialogue, value, "pairs", [])
    return ratings, {"a": metric_a, "b": metric_b}


def test_pairs_mode_counts_dialogues_not_votes():
    ratings, metrics = pairs_ratings(40, 11, np.random.default_rng(3))
    report = correlation_report(metrics, ratings, resamples=0)
    row = report["metrics"][0]
    assert row["n"] == 40 and row["n_votes"] == 440
    z, half = math.atanh(row["pearson"]), 1.959963984540054 / math.sqrt(40 - 3)
    assert np.allclose(row["pearson_ci"], [math.tanh(z - half), math.tanh(z + half)])
    (williams,) = report["williams"]
    assert williams["n"] == 40
    assert "dialogues" in " ".join(report["notes"])


def test_every_williams_entry_has_its_difference_interval_and_adjusted_p(ratings_csv, corpus):  # noqa: F811
    result = run("correlate", "--ratings", str(ratings_csv), "--lambdas", "0.5,1", "--bootstrap", "0", "--json", str(corpus))
    data = json.loads(result.stdout)
    assert len(data["williams"]) == 28
    raw = [w["p_value"] for w in data["williams"]]
    assert np.allclose([w["p_holm"] for w in data["williams"]], adjust_p(raw, "holm"))
    for entry in data["williams"]:
        low, high = entry["diff_ci"]
        assert low <= entry["r_a"] - entry["r_b"] <= high
        assert entry["p_holm"] >= entry["p_value"]
    assert "adjust:holm" in data["signature"]
    bh = json.loads(run("correlate", "--ratings", str(ratings_csv), "--lambdas", "0.5,1", "--bootstrap", "0",
                        "--adjust", "bh", "--json", str(corpus)).stdout)  # fmt: skip
    assert all("p_bh" in w and "p_holm" not in w for w in bh["williams"])
    none = json.loads(run("correlate", "--ratings", str(ratings_csv), "--lambdas", "0.5,1", "--bootstrap", "0",
                          "--adjust", "none", "--json", str(corpus)).stdout)  # fmt: skip
    assert all("p_bh" not in w and "p_holm" not in w for w in none["williams"])


# --- item 3: the human ceiling --------------------------------------------------------------------

SHROUT_FLEISS = [[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]]


def sf_votes():
    from formats.tidy import Vote

    return [Vote(f"t{i}", f"j{j}", "rating", str(v)) for i, row in enumerate(SHROUT_FLEISS) for j, v in enumerate(row)]


def test_icc_of_shrout_and_fleiss_1979():
    """Shrout & Fleiss (1979), Table 4: ICC(1,1) = .17 and ICC(1,4) = .44 for 6 targets x 4 judges."""
    from metrics.correlation import icc_oneway

    single, mean = icc_oneway(np.array([[float(v) for v in row] for row in SHROUT_FLEISS]))
    assert (round(single, 2), round(mean, 2)) == (0.17, 0.44)


def test_the_ceiling_is_the_root_of_the_reliability_of_the_mean_rating():
    from metrics.correlation import human_ceiling

    ceiling = human_ceiling(sf_votes(), [f"t{i}" for i in range(6)], resamples=200, seed=1)
    assert set(ceiling) >= {"r_max", "reliability", "ci", "method", "annotator_vs_rest"}
    assert math.isclose(ceiling["r_max"], math.sqrt(ceiling["reliability"]))
    assert round(ceiling["reliability"], 2) == 0.44 and "ICC(1,k)" in ceiling["method"]
    assert ceiling["ci"][0] <= ceiling["r_max"] <= ceiling["ci"][1]
    assert {"mean_pearson", "annotators"} <= set(ceiling["annotator_vs_rest"])


def test_the_ceiling_recovers_a_known_reliability_in_simulation():
    """Quality t ~ N(0, 1), k = 4 votes with noise N(0, 1): the mean rating's reliability is
    1 / (1 + 1/4) = 0.8, so r_max = sqrt(0.8); the interval covers it."""
    from formats.tidy import Vote
    from metrics.correlation import human_ceiling

    rng = np.random.default_rng(7)
    t = rng.normal(size=400)
    votes = [Vote(f"d{i}", f"a{j}", "rating", repr(float(t[i] + rng.normal()))) for i in range(400) for j in range(4)]
    ceiling = human_ceiling(votes, [f"d{i}" for i in range(400)], resamples=300, seed=2)
    assert ceiling["ci"][0] <= math.sqrt(0.8) <= ceiling["ci"][1]
    assert abs(ceiling["r_max"] - math.sqrt(0.8)) < 0.03


def test_bootstrap_0_says_that_no_interval_was_computed(ratings_csv, corpus):  # noqa: F811
    """Issue 15, item 6: with --bootstrap 0 every command's notes say no CI was computed."""
    agreement = json.loads(run("agreement", str(ratings_csv), "--bootstrap", "0", "--json").stdout)
    assert any("no confidence interval was computed" in n for n in agreement["questions"]["satisfied"]["notes"])
    correlate = json.loads(run("correlate", "--ratings", str(ratings_csv), "--bootstrap", "0", "--json", str(corpus)).stdout)
    assert any("no bootstrap interval was computed" in n for n in correlate["notes"])
    assert all(m["bootstrap_ci"] is None for m in correlate["metrics"]) and correlate["human_ceiling"]["ci"] is None
    calibrate = json.loads(run("calibrate", "--ratings", str(ratings_csv), "--grid", "0:5:51", "--bootstrap", "0",
                               "--json", str(corpus)).stdout)  # fmt: skip
    assert calibrate["ci_lambda"] is None and any("no confidence interval was computed" in n for n in calibrate["notes"])
