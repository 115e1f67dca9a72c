"""One story for every metric row: its p-value is the test its reported interval inverts.

A metric's ``p_value`` was the normal-theory t-test of r = 0 while ``pearson_ci`` was the jackknife-t, so a
row could print p < 0.05 beside an interval that holds 0.  Now, over many small simulated studies (with
heavy ties, binary votes, every rating mode and unit of resampling), p < 0.05 exactly when the 95% interval
excludes 0; each family's test is checked against its interval, and the p column says which test it is.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import t as student_t

from bench import bench_coverage
from metrics import present
from metrics.correlation import (
    INTERVAL_FAMILIES,
    Ratings,
    bootstrap_weights,
    correlate_one,
    correlation_report,
    jackknife_pearson,
    pearson_intervals,
    pearson_p_value,
    pearson_se,
    weighted_pearson,
)


def _excludes_zero(interval) -> bool:
    return interval[0] > 0 or interval[1] < 0


@pytest.mark.parametrize("mode", ["mean", "pairs"])
@pytest.mark.parametrize("resample", ["dialogues", "dialogues+annotators"])
def test_p_below_005_exactly_when_the_reported_interval_excludes_0(mode, resample):
    """120 small studies per mode and unit (6-40 dialogues; heavy ties, 2-5 binary votes; normal votes),
    with and without a bootstrap: every defined row's p and interval agree, and both sides occur."""
    rng = np.random.default_rng([7, len(mode), len(resample)])
    seen = {True: 0, False: 0}
    for study in range(120):
        design = ("tied_votes", "fixture_binary", "normal")[study % 3]
        n = int(rng.integers(6, 41))
        metrics, matrix = bench_coverage.draw(design, n, rng)
        report = correlation_report(
            metrics,
            bench_coverage._ratings(matrix, mode),
            resamples=(0, 60)[study % 2],
            seed=study,
            adjust="none",
            family="all",
            resample=resample,
        )
        for row in report["metrics"]:
            if row["pearson_ci"] is None:
                assert row["p_value"] is None
                continue
            excludes = _excludes_zero(row["pearson_ci"])
            assert excludes == (row["p_value"] < 0.05), (design, n, row)
            seen[excludes] += 1
    assert min(seen.values()) >= 20  # both outcomes were tested


def _inputs(x: np.ndarray, y: np.ndarray, resamples: int, rng: np.random.Generator) -> dict:
    """Everything pearson_intervals takes for r of x with one rating per dialogue y."""
    n, sy, syy = np.ones_like(x), y.copy(), y**2
    out = {"se": float(pearson_se(x, n, sy, syy)), "jackknife": jackknife_pearson(x, n, sy, syy)}
    if resamples:
        weights = bootstrap_weights(x.size, resamples, rng).astype(float)
        out["boot"] = weighted_pearson(x, n, sy, syy, weights)
        out["boot_se"] = pearson_se(x, n, sy, syy, weights)
    return out


def test_every_familys_p_is_the_test_its_interval_inverts():
    """Each family of INTERVAL_FAMILIES on 60 small studies with ties: p < 0.05 exactly when its 95% interval
    excludes 0, and at the level 1 − p the interval's nearer end is 0."""
    rng = np.random.default_rng(3)
    checked = dict.fromkeys(INTERVAL_FAMILIES, 0)
    for _ in range(60):
        n = int(rng.integers(8, 30))
        metrics, matrix = bench_coverage.draw("tied_votes", n, rng)
        x, y = metrics["fga_0.5"], np.nanmean(matrix, axis=0)
        if np.ptp(x) == 0 or np.ptp(y) == 0:
            continue
        r = float(np.corrcoef(x, y)[0, 1])
        inputs = _inputs(x, y, 200, rng)
        intervals = pearson_intervals(r, n, **inputs)
        for family, interval in intervals.items():
            p = pearson_p_value(family, r, n, **inputs)
            if interval is None:
                assert p is None
                continue
            assert _excludes_zero(interval) == (p < 0.05), (family, interval, p)
            if 1e-9 < p < 1 - 1e-9:
                at = pearson_intervals(r, n, **inputs, confidence=1 - p)[family]
                assert at is not None and min(abs(at[0]), abs(at[1])) < 1e-6, (family, at, p)
            checked[family] += 1
    assert all(count >= 30 for count in checked.values()), checked


def test_the_jackknife_t_p_is_written_as_its_interval():
    """Six dialogues: t = atanh(r) / SE_jack with 5 df, p = 2·(1 − F_t(|t|))."""
    x = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    y = np.array([1.0, 3.0, 2.0, 5.0, 4.0, 6.0])
    row = correlation_report({"m": x}, Ratings([f"d{i}" for i in range(6)], np.arange(6), y, "mean", []), resamples=0)
    row = row["metrics"][0]
    z = math.atanh(np.corrcoef(x, y)[0, 1])
    z_i = np.array([math.atanh(np.corrcoef(np.delete(x, i), np.delete(y, i))[0, 1]) for i in range(6)])
    se = math.sqrt(5 / 6 * np.sum((z_i - z_i.mean()) ** 2))
    assert row["ci_method"].startswith("jackknife_t:")
    assert row["p_value"] == pytest.approx(2 * student_t.sf(abs(z) / se, 5), rel=1e-9)


def test_pairs_mode_bootstrap_se_interval_and_its_t_test_agree():
    """correlate_one in pairs mode with a bootstrap: Fisher z with the bootstrap SE and t(dialogues − 1), p
    that interval's t test; with 3 dialogues or fewer, in any mode, neither."""
    rng = np.random.default_rng(5)
    agree = 0
    for _ in range(200):
        dialogues = int(rng.integers(5, 20))
        x = np.repeat(rng.normal(size=dialogues), 3)
        y = 0.3 * x + rng.normal(size=x.size)
        boot = np.tanh(np.arctanh(np.corrcoef(x, y)[0, 1]) + rng.normal(scale=0.3, size=100))
        row = correlate_one(x, y, boot, n_units=dialogues)
        assert row["ci_method"].startswith("fisher z, bootstrap SE")
        agree += _excludes_zero(row["pearson_ci"]) == (row["p_value"] < 0.05)
    assert agree == 200
    three = correlate_one(np.array([0.1, 0.5, 0.9]), np.array([1.0, 2.0, 4.0]), None)
    assert three["pearson"] is not None and three["pearson_ci"] is None and three["p_value"] is None


def test_the_p_column_names_the_test_done():
    rng = np.random.default_rng(1)
    metrics, matrix = bench_coverage.draw("tied_votes", 30, rng)
    report = correlation_report(metrics, bench_coverage._ratings(matrix, "mean"), resamples=0, adjust="none")
    table = present.correlation_table(report)
    assert "p (r = 0)" in table.columns  # the header stays short (the table fits a laptop's screen) ...
    assert not any("Pearson r = 0" in c for c in table.columns)
    # ... and its note names the test done
    assert any(n.startswith("p: the two-sided test of r = 0") and "(jackknife t on Fisher z)" in n for n in table.notes)
