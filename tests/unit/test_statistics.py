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
