"""Issue 17: the design-weighted estimators (metrics.adaptive)."""

from __future__ import annotations

import numpy as np
import pytest

from metrics import adaptive


def _population(n=2000, seed=0):
    rng = np.random.default_rng(seed)
    jga = rng.beta(2, 2, n)
    fga = np.clip(jga + rng.normal(0, 0.15, n), 0, 1)
    quality = 1.5 * (fga - fga.mean()) / fga.std() + rng.normal(0, 0.8, n)
    return jga, fga, quality


@pytest.mark.slow
def test_equal_probabilities_give_the_ordinary_estimates():
    rng = np.random.default_rng(1)
    a, b, y = rng.random(50), rng.random(50), rng.random(50)
    row = adaptive.compare(a, b, y, np.full(50, 1 / 0.3), resamples=200, seed=0)
    assert row["r_a"] == pytest.approx(np.corrcoef(a, y)[0, 1], abs=1e-12)
    assert row["diff"] == pytest.approx(np.corrcoef(a, y)[0, 1] - np.corrcoef(b, y)[0, 1], abs=1e-12)
    grid = np.linspace(0.1, 1, 10)
    curves = np.column_stack([a * g + b * (1 - g) for g in grid])
    star = adaptive.lambda_star(curves, grid, y, np.full(50, 2.0), resamples=0)
    assert star["lambda_star"] == grid[int(np.argmax([np.corrcoef(curves[:, j], y)[0, 1] for j in range(10)]))]
    report = adaptive.design_report({"a": a, "b": b}, y, np.full(50, 0.4), resamples=100)
    assert [m["pearson"] for m in report["metrics"]] == pytest.approx([np.corrcoef(a, y)[0, 1], np.corrcoef(b, y)[0, 1]])
    assert report["n_effective"] == 50


def test_probabilities_fit_the_budget_and_follow_the_scores():
    jga, fga, _ = _population()
    scores = adaptive.comparison_scores(fga, jga)
    pi = adaptive.inclusion_probabilities(scores, expected=150)
    assert pi.sum() == pytest.approx(150)
    assert pi.min() > 0 and pi.max() <= 1
    assert np.corrcoef(scores, pi)[0, 1] > 0.9  # more where the metrics disagree
    assert adaptive.inclusion_probabilities(scores, expected=5000).tolist() == [1.0] * len(scores)


def test_a_weighted_sample_recovers_the_pool_within_its_interval():
    """Unequal selection with 1/π weights: the pool's r(FGA) - r(JGA) lies in the 95% interval in
    about 95% of draws, and the estimates centre on it (the unweighted ones would not)."""
    jga, fga, quality = _population()
    truth = np.corrcoef(fga, quality)[0, 1] - np.corrcoef(jga, quality)[0, 1]
    pi = adaptive.inclusion_probabilities(adaptive.comparison_scores(fga, jga), expected=200)
    rng = np.random.default_rng(7)
    covered, estimates = [], []
    for rep in range(60):
        rows = np.flatnonzero(adaptive.poisson_sample(pi, rng))
        row = adaptive.compare(fga[rows], jga[rows], quality[rows], 1 / pi[rows], resamples=300, seed=rep)
        covered.append(row["ci"][0] <= truth <= row["ci"][1])
        estimates.append(row["diff"])
    assert np.mean(covered) >= 0.85
    assert abs(np.mean(estimates) - truth) < 0.25 * np.std(estimates) + 0.01


def test_a_dialogue_is_settled_when_its_votes_agree():
    assert adaptive.settled([1, 1, 1], 3, 7)
    assert not adaptive.settled([1, 0, 1], 3, 7)
    assert adaptive.settled([1, 0, 1, 0, 1, 1, 0], 3, 7)  # max k reached
    assert not adaptive.settled([1, 1], 3, 7)
    assert adaptive.projected_judgements(300, 0.4, 0.2) == 1200


@pytest.mark.slow
def test_the_design_table_answers_the_studys_question_first():
    """An adaptive study asks one question (r(FGA_λ) − r(JGA), or λ*): its row leads the Design table,
    named as the question, before the other 45-odd estimates."""
    from metrics import present

    rng = np.random.default_rng(3)
    values = {name: rng.random(40) for name in ("jga", "fga_0.25", "fga_0.5", "sa")}
    grid = np.linspace(0.05, 2, 12)
    curves = np.column_stack([values["jga"] * (1 - g / 2) + values["sa"] * g / 2 for g in grid])
    report = adaptive.design_report(values, rng.random(40), np.full(40, 0.5), fga_grid=curves, grid=grid, resamples=50)
    base = {"design": "adaptive", **report}
    comparison = present.design_table({**base, "allocation": {"policy": "adaptive", "question": "fga_vs_jga", "lambda": 0.5}})
    first = comparison.rows[0]
    assert first[0] == "question: r fga_0.5 - r jga"
    wanted = next(d for d in report["differences"] if {d["a"], d["b"]} == {"fga_0.5", "jga"})
    sign = 1 if wanted["a"] == "fga_0.5" else -1
    assert first[1] == present.number(sign * wanted["diff"])
    assert len(comparison.rows) == len(report["metrics"]) + len(report["differences"]) + 1  # nothing lost or doubled
    by_lambda = present.design_table({**base, "allocation": {"policy": "adaptive", "question": "lambda"}})
    assert by_lambda.rows[0][0] == "question: λ*" and by_lambda.rows[0][1] == present.number(report["lambda"]["lambda_star"])
    assert [r[0] for r in by_lambda.rows].count("λ*") == 0
