"""The difference r_a − r_b between two metrics' correlations with the same ratings: its jackknife-t interval
and test (``metrics.correlation.diff_ci`` / ``diff_test``), the degenerate cases said in words, and the
comparison rows of ``correlation_report`` built on them."""

from __future__ import annotations

import numpy as np
import pytest

from metrics.correlation import Ratings, correlation_report, diff_ci, diff_test


def _study(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    truth = rng.normal(size=n)
    y = np.round(np.clip(truth + rng.normal(size=n), -2, 2))  # tied ratings, as means of few votes are
    a = np.where(truth > 0.3, 1.0, np.clip(truth + rng.normal(scale=0.5, size=n), 0, 1))  # ties at 1
    b = np.where(a == 1.0, 1.0, a * rng.uniform(0.6, 1.0, size=n))
    return y, a, b


@pytest.mark.parametrize("seed", range(40))
def test_the_interval_at_the_level_one_minus_p_touches_zero(seed):
    """One story: p < α exactly when the 1 − α interval leaves 0 out, on tied data at 30 dialogues."""
    y, a, b = _study(30, seed)
    diff, p = diff_test(y, a, b)
    assert p is not None and 0 < p <= 1
    low, high = diff_ci(y, a, b, 1 - p)
    assert min(abs(low), abs(high)) < 1e-9
    for alpha in (0.05, 0.05 / 6):
        low, high = diff_ci(y, a, b, 1 - alpha)
        assert low <= diff <= high
        assert (p < alpha) == (low > 0 or high < 0)


def test_two_metrics_equal_up_to_scale_are_equal_not_an_error():
    """The defect: with r(A, B) = 1 (metric B a rescaled metric A) Williams' t raised and the whole comparison
    lost its p and interval; the difference is exactly 0, and the row says so (p 1, interval [0, 0])."""
    y, a, _ = _study(30, 1)
    b = 2 * a + 1
    assert diff_test(y, a, b) == (pytest.approx(0.0, abs=1e-12), 1.0)
    assert diff_ci(y, a, b) == (0.0, 0.0)
    ids = [f"d{i}" for i in range(30)]
    report = correlation_report({"a": a, "b": b}, Ratings(ids, np.arange(30), y, "mean", []), resamples=0, family="all")
    (row,) = report["williams"]
    assert row["p_value"] == 1.0 and row["diff_ci"] == [0.0, 0.0]
    assert row["t"] is None and row["p_williams"] is None
    assert "the same up to scale" in row["note"]


def test_correlations_equal_up_to_rounding_give_a_p_not_a_crash():
    """The defect: when r_a = r_b up to rounding (the metrics differ on one dialogue whose removal leaves
    both correlations equal) the old test's root-finding raised ValueError."""
    y, a, _ = _study(30, 2)
    b = a.copy()
    b[0] = a[0] + 1e-13
    diff, p = diff_test(y, a, b)
    assert abs(diff) < 1e-10 and p is not None and p > 0.5


def test_a_study_with_too_few_dialogues_has_no_interval():
    y, a, b = _study(30, 3)
    assert diff_ci(y[:3], a[:3], b[:3]) is None and diff_test(y[:3], a[:3], b[:3])[1] is None


def test_the_family_bench_runs_the_analysis_family():
    """bench_family's studies go through correlation_report's declared family: 6 comparisons against JGA
    at the Bonferroni level 1 − 0.05/6, under both nulls."""
    from bench.bench_family import NULLS, run

    rows = run(3, sizes=(30,), nulls=NULLS)
    assert [r["null"] for r in rows] == list(NULLS)
    for row in rows:
        assert row["comparisons"] == [6] and row["interval_level"] == [round(1 - 0.05 / 6, 6)]
        assert 0 <= row["fwer_holm"] <= 1 and row["fwer_holm"] == row["fwer_intervals"]


def test_a_metric_that_varies_on_one_dialogue_only_gets_no_interval():
    """Review finding: leaving out the one dialogue where a metric varies leaves it constant; the jackknife
    then dropped that dialogue, the very one carrying the metric's variation, and the test rejected a true
    null in 16% of studies.  No interval and no p instead."""
    rng = np.random.default_rng(4)
    y, b = rng.normal(size=30), rng.normal(size=30)
    a = np.zeros(30)
    a[7] = 1.0
    assert diff_ci(y, a, b) is None and diff_test(y, a, b)[1] is None


def test_a_correlation_of_one_up_to_rounding_gets_no_interval():
    """Review finding: r(y, 2y + 1) is 0.9999999999999999 in floating point; half the leave-one-out values
    clipped to 1 and the test said p ≈ 0 with an interval reaching 1.17.  A correlation of ±1 has none."""
    rng = np.random.default_rng(1)
    a = rng.normal(size=40)
    y, b = 2 * a + 1, a + rng.normal(size=40)
    assert np.corrcoef(y, a)[0, 1] < 1  # the case: 0.9999999999999999
    assert diff_ci(y, a, b) is None and diff_test(y, a, b)[1] is None


def test_the_vectorised_planner_finds_the_bisections_n():
    """``dialogues_needed`` evaluates many sizes per scipy call; its n is the smallest with enough power, the
    one a plain bisection over ``difference_power`` finds, for correlations across the valid range."""
    from metrics.planning import N_MAX, check, dialogues_needed, difference_power

    def bisected(r_a, r_b, r_ab, alpha):
        if r_a == r_b or difference_power(r_a, r_b, r_ab, N_MAX, alpha) < 0.8:
            return None
        low, high = 4, 5
        while difference_power(r_a, r_b, r_ab, high, alpha) < 0.8:
            low, high = high, high * 2
        while high - low > 1:
            middle = (low + high) // 2
            low, high = (middle, high) if difference_power(r_a, r_b, r_ab, middle, alpha) < 0.8 else (low, middle)
        return high

    rng = np.random.default_rng(0)
    found = 0
    for r_a, r_b, r_ab in [(0.4, 0.3, 0.8), (0.9, 0.85, 0.95), (0.7, 0.69, 0.999), *rng.uniform(-0.9, 0.95, (40, 3))]:
        try:
            check(r_a, r_b, r_ab)
        except ValueError:
            continue
        for alpha in (0.05, 0.05 / 6):
            assert dialogues_needed(r_a, r_b, r_ab, alpha) == bisected(r_a, r_b, r_ab, alpha), (r_a, r_b, r_ab, alpha)
            found += 1
    assert found > 40
