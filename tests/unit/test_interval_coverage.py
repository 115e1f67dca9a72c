"""Issue 26 (1): the correlation intervals that keep 0.95 at 30-100 dialogues (bench.bench_coverage).

The default families' construction on cases small enough to check by hand, the two-way jackknife
(acceleration and variance over dialogues and annotators), a short coverage run, and the bench's rows.
Unit tests by their folder (tests/conftest.py), but the subprocess one, marked slow.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest
from scipy.stats import t as student_t

from bench import bench_coverage
from metrics.correlation import (
    DEFAULT_INTERVAL,
    Ratings,
    acceleration,
    bootstrap_weights,
    ceiling_reliabilities,
    ceiling_reliability,
    correlation_report,
    jackknife_annotators,
    jackknife_components,
    jackknife_votes,
)
from tests.conftest import REPO

X = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
Y = np.array([1.0, 3.0, 2.0, 5.0, 4.0, 6.0])


def mean_ratings(values: np.ndarray, matrix: np.ndarray | None = None) -> Ratings:
    return Ratings([f"d{i}" for i in range(values.size)], np.arange(values.size), values, "mean", [], matrix)


def by_hand_jackknife_t(x: np.ndarray, y: np.ndarray) -> list[float]:
    """z ± t(n − 1) · √((n − 1)/n · Σ (z_(i) − mean)²), z_(i) = atanh r without dialogue i."""
    n = x.size
    z = math.atanh(np.corrcoef(x, y)[0, 1])
    z_i = np.array([math.atanh(np.corrcoef(np.delete(x, i), np.delete(y, i))[0, 1]) for i in range(n)])
    half = student_t.ppf(0.975, n - 1) * math.sqrt((n - 1) / n * np.sum((z_i - z_i.mean()) ** 2))
    return [math.tanh(z - half), math.tanh(z + half)]


def test_the_jackknife_t_interval_is_built_as_written_on_six_dialogues():
    row = correlation_report({"m": X}, mean_ratings(Y), resamples=0, adjust="none", family="all")["metrics"][0]
    expected = by_hand_jackknife_t(X, Y)
    assert np.allclose(row["intervals"]["jackknife_t"], expected)
    assert [round(v, 3) for v in expected] == [0.156, 0.99]  # r = 0.886 on 6 dialogues, t(5) = 2.571


def test_the_reported_mean_mode_interval_is_the_default_family_and_says_so():
    row = correlation_report({"m": X}, mean_ratings(Y), resamples=200, seed=1, adjust="none", family="all")["metrics"][0]
    family = DEFAULT_INTERVAL["mean"]
    assert row["pearson_ci"] == row["intervals"][family]
    assert row["ci_method"].startswith(f"{family}:") and "unit: dialogues" in row["ci_method"]


def test_the_two_way_acceleration_adds_the_dialogue_and_annotator_parts():
    dialogues = np.array([0.50, 0.52, 0.47, 0.58, 0.49])
    annotators = np.array([0.40, 0.55, 0.60])
    u = 4 / 5 * (dialogues.mean() - dialogues)
    v = 2 / 3 * (annotators.mean() - annotators)
    expected = (np.sum(u**3) + np.sum(v**3)) / (6 * (np.sum(u**2) + np.sum(v**2)) ** 1.5)
    assert acceleration(dialogues, annotators) == pytest.approx(expected)
    # dialogues alone: Efron's Σu³ / (6 (Σu²)^1.5), the scale cancels
    w = dialogues.mean() - dialogues
    assert acceleration(dialogues) == pytest.approx(np.sum(w**3) / (6 * np.sum(w**2) ** 1.5))


def test_the_two_way_jackknife_leaves_out_each_annotator_and_each_vote():
    rng = np.random.default_rng(3)
    matrix = rng.normal(size=(3, 8)) + np.arange(8)[None, :] * 0.3
    matrix[0, 1] = matrix[1, 1] = np.nan  # dialogue 1: one vote (annotator 2)
    x = np.arange(8.0) + rng.normal(size=8)
    ratings = mean_ratings(np.nanmean(matrix, axis=0), matrix)
    for j in range(3):
        kept = np.delete(matrix, j, axis=0)
        rated = np.isfinite(kept).any(axis=0)
        means = np.nanmean(np.where(np.isfinite(kept), kept, np.nan)[:, rated], axis=0)
        assert jackknife_annotators(x, ratings)[j] == pytest.approx(np.corrcoef(x[rated], means)[0, 1])
    votes = jackknife_votes(x, ratings)
    assert votes.size == np.isfinite(matrix).sum() == 22
    # the only vote of dialogue 1 (annotator 2) left out: the dialogue drops out
    order = list(zip(*np.nonzero(np.isfinite(matrix))))
    alone = order.index((2, 1))
    others = np.arange(8) != 1
    assert votes[alone] == pytest.approx(np.corrcoef(x[others], np.nanmean(matrix, axis=0)[others])[0, 1])
    # the annotators' variance part is net of the votes' (counted once), never below 0
    dialogues_part, annotators_part, df = jackknife_components(np.array([0.5, 0.6, 0.55]), np.array([0.5, 0.7]), votes)
    z_a = np.arctanh([0.5, 0.7])
    z_v = np.arctanh(votes)
    raw = 1 / 2 * np.sum((z_a - z_a.mean()) ** 2)
    assert annotators_part == pytest.approx(max(raw - (z_v.size - 1) / z_v.size * np.sum((z_v - z_v.mean()) ** 2), 0.0))
    assert 1 <= df <= 3


def test_the_vectorised_ceiling_bootstrap_is_the_loop_it_replaced():
    rng = np.random.default_rng(5)
    by_dialogue = rng.normal(size=(25, 6)) + rng.normal(size=(25, 1))
    counts = rng.integers(1, 7, 25)
    by_dialogue[np.arange(6)[None, :] >= counts[:, None]] = np.nan
    weights = bootstrap_weights(25, 40, np.random.default_rng(9)).astype(float)
    draws = [np.repeat(np.arange(25), w.astype(int)) for w in weights]
    for rating in ("mean", "pairs"):
        loop = np.array([ceiling_reliability(by_dialogue[d], rating)[1] for d in draws])
        assert np.allclose(ceiling_reliabilities(by_dialogue, weights, rating), loop, equal_nan=True)


def test_the_default_interval_covers_in_a_short_simulation():
    """200 studies of 30 dialogues (the normal design, mean ratings of 5 votes): the reported interval
    covers the true ρ in 0.92-0.98 (its Monte-Carlo SE at 0.95 is 0.015)."""
    rng = np.random.default_rng(11)
    rho = bench_coverage.population_truth("normal")["pearson_mean"]
    bootstrap = 0 if DEFAULT_INTERVAL["mean"] in ("fisher", "jackknife_t", "sandwich_t") else 200
    hits = 0
    for _ in range(200):
        metrics, matrix = bench_coverage.draw("normal", 30, rng)
        report = correlation_report(
            {"fga_0.5": metrics["fga_0.5"]},
            bench_coverage._ratings(matrix, "mean"),
            resamples=bootstrap,
            adjust="none",
            family="all",
        )
        low, high = report["metrics"][0]["pearson_ci"]
        hits += low <= rho <= high
    assert 0.92 <= hits / 200 <= 0.98


ROW_KEYS = {"estimate", "design", "n", "family", "coverage", "mc_se", "replicates", "unit", "default"}
WIDTH_KEYS = {"width", "width_ratio", "undefined"}  # the correlation section's rows also carry their widths


def test_the_bench_rows_keep_their_contract():
    rows = bench_coverage.correlation_rows(2, (30,), 30, 0, designs=("normal", "same_4_annotators"))
    assert rows and all(ROW_KEYS | WIDTH_KEYS <= set(row) for row in rows)
    assert all(r["width_ratio"] is not None for r in rows if r["estimate"] == "diff" and r["width"] is not None)
    for row in rows:
        assert row["mc_se"] == pytest.approx(math.sqrt(row["coverage"] * (1 - row["coverage"]) / row["replicates"]))
        assert row["unit"] == ("dialogues+annotators" if row["estimate"] == "pearson_two_way" else "dialogues")
    groups: dict[tuple, int] = {}
    for row in rows:
        key = (row["estimate"], row["design"], row["n"])
        groups[key] = groups.get(key, 0) + row["default"]
    assert set(groups.values()) == {1}  # exactly one default family per estimate, design and n
    assert {"pearson_mean", "pearson_pairs", "pearson_two_way", "diff", "spearman", "kendall", "ceiling"} == {
        r["estimate"] for r in rows
    }
    assert not any(r["estimate"] == "ceiling" and r["design"] == "same_4_annotators" for r in rows)
    assert bench_coverage.correlation_rows in bench_coverage.SECTIONS


@pytest.mark.slow  # a subprocess running every section of the bench once (about 5 s)
def test_the_bench_json_has_rows_and_settings():
    out = subprocess.run(
        [sys.executable, "-m", "bench.bench_coverage", "--json", "--replicates", "1", "--sizes", "30", "--resamples", "20"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    ).stdout
    result = json.loads(out)
    assert set(result) == {"rows", "settings"}
    assert result["settings"]["sizes"] == [30] and result["settings"]["replicates"] == 1
    mine = [r for r in result["rows"] if r["estimate"].startswith(("pearson_", "diff_", "ceiling", "spearman", "kendall"))]
    assert {r["design"] for r in mine} == set(bench_coverage.DESIGNS)
    assert all(ROW_KEYS <= set(r) for r in result["rows"])  # every section's rows keep the contract


def test_the_tied_design_has_heavy_ties_and_its_rank_part_runs_alone():
    """tied_votes: a metric at 1 on ~60% of dialogues, 2-5 binary votes each; the rank-only path of the
    bench gives the intervals of the full one (the same report of metric A)."""
    rng = np.random.default_rng(4)
    at_one = []
    for _ in range(20):
        metrics, matrix = bench_coverage.draw("tied_votes", 100, rng)
        at_one.append(np.mean(metrics["fga_0.5"] == 1))
        assert np.all(metrics["jga"][metrics["fga_0.5"] == 1] == 1)
        votes = np.isfinite(matrix).sum(axis=0)
        assert votes.min() >= 2 and votes.max() <= 5 and set(np.unique(matrix[np.isfinite(matrix)])) <= {0.0, 1.0}
    assert 0.5 < np.mean(at_one) < 0.7
    metrics, matrix = bench_coverage.draw("tied_votes", 30, rng)
    full = bench_coverage.study_intervals(metrics, matrix, 30, 1)
    ranks = bench_coverage.study_intervals(metrics, matrix, 30, 1, bench_coverage.RANK_ESTIMATES)
    assert ranks == {name: full[name] for name in bench_coverage.RANK_ESTIMATES}


def test_the_reported_rank_intervals_are_the_jackknife_t():
    """Kendall's fixed variance is that of untied data (it covered ~0.90 with heavy ties): both reported rank
    intervals are the jackknife-t, the fixed-variance ones stay in rank_intervals."""
    from metrics.correlation import RANK_DEFAULT

    assert RANK_DEFAULT == {"spearman": "jackknife_t", "kendall": "jackknife_t"}
    metrics, matrix = bench_coverage.draw("tied_votes", 40, np.random.default_rng(2))
    row = correlation_report(metrics, bench_coverage._ratings(matrix, "mean"), resamples=0, adjust="none")["metrics"][0]
    for name in ("spearman", "kendall"):
        assert row[f"{name}_ci"] == row["rank_intervals"][name]["jackknife_t"]
    assert row["rank_intervals"]["kendall"]["fisher_fhp"] != row["kendall_ci"]
