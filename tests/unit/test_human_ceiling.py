"""Issue 26, item 2: the human ceiling with unequal vote counts, against a simulation with known truth.

Normal model: dialogue d has a true rating t_d ~ N(0, σ²_t) and each of its k_d votes is t_d + e with
e ~ N(0, σ²_e), so a single vote's reliability is ICC(1,1) = σ²_t / (σ²_t + σ²_e).  The mean of k votes
has error variance σ²_e / k; over dialogues with different k (t independent of k) the means have variance
σ²_t + σ²_e·mean(1/k) and covariance σ²_t with t, so the best correlation any metric can reach with
them (the correlation of the means with t itself) is

    r_max = sqrt(σ²_t / (σ²_t + σ²_e·mean(1/k))) = sqrt(ICC / (ICC + (1 − ICC)·mean(1/k)))

(Spearman–Brown at the harmonic mean of k).  In pairs mode every vote is an observation and the best r
is corr(t, vote) = sqrt(ICC(1,1)).

Before the fix the ceiling was Spearman–Brown at the mean count of the dialogues with 2 or more votes:
0.77 instead of 0.69 with counts 1-5, 0.82 instead of 0.59 with counts {1, 1, 1, 5}; these tests failed.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from formats.tidy import Vote
from metrics.correlation import human_ceiling, icc_oneway

VAR_TRUE, VAR_NOISE = 0.3, 0.7  # ICC(1,1) = 0.3


def reachable(counts: np.ndarray, var_true: float = VAR_TRUE, var_noise: float = VAR_NOISE) -> float:
    """The closed form: the correlation of the dialogues' mean ratings with their true ratings."""
    return math.sqrt(var_true / (var_true + var_noise * float(np.mean(1.0 / counts))))


def simulate(rng: np.random.Generator, counts: np.ndarray) -> tuple[np.ndarray, list[np.ndarray], list[Vote]]:
    """True ratings, each dialogue's votes, and the votes as ``Vote``s (annotator = the vote's position)."""
    truth = rng.normal(0.0, math.sqrt(VAR_TRUE), size=counts.size)
    ratings = [t + rng.normal(0.0, math.sqrt(VAR_NOISE), size=k) for t, k in zip(truth, counts)]
    votes = [Vote(f"d{d}", f"a{j}", "rating", repr(float(y))) for d, row in enumerate(ratings) for j, y in enumerate(row)]
    return truth, ratings, votes


COUNTS = {
    "uniform 1-5": lambda rng, n: rng.integers(1, 6, size=n),
    "1,1,1,5": lambda rng, n: np.resize([1, 1, 1, 5], n),
}


@pytest.mark.parametrize("design", sorted(COUNTS))
def test_the_closed_form_is_the_correlation_of_the_means_with_the_truth(design):
    """The reference value itself: over 20 simulated studies of 1,000 dialogues, the mean correlation of
    the dialogues' mean ratings with the truth is the closed form (Monte-Carlo SE about 0.005)."""
    rng = np.random.default_rng(1)
    found = []
    for _ in range(20):
        counts = COUNTS[design](rng, 1000)
        truth, ratings, _ = simulate(rng, counts)
        found.append(np.corrcoef(truth, [row.mean() for row in ratings])[0, 1])
    assert abs(np.mean(found) - reachable(counts)) < 3 * np.std(found) / math.sqrt(len(found)) + 0.005


@pytest.mark.slow  # 20 simulated studies of 1,000 dialogues each: seconds
@pytest.mark.parametrize("design, expected", [("uniform 1-5", 0.694), ("1,1,1,5", 0.593)])
def test_the_ceiling_with_unequal_counts_is_the_reachable_correlation(design, expected):
    """One study of 10,000 dialogues: r_max has a Monte-Carlo SD of about 0.006 (1-5) and 0.007 ({1,1,1,5})
    around the closed form (measured over 20 seeds), so ±0.03 is more
    than 4 SD; the old ceiling, 0.77 and 0.82, is far outside."""
    rng = np.random.default_rng(2)
    counts = COUNTS[design](rng, 10_000)
    truth, ratings, votes = simulate(rng, counts)
    assert round(reachable(counts), 3) == pytest.approx(expected, abs=0.006)
    observed = np.corrcoef(truth, [row.mean() for row in ratings])[0, 1]  # what this study's means reach
    ceiling = human_ceiling(votes, [f"d{d}" for d in range(counts.size)], resamples=0)
    assert abs(ceiling["r_max"] - reachable(counts)) < 0.03, (ceiling["r_max"], reachable(counts))
    assert abs(ceiling["r_max"] - observed) < 0.04
    assert math.isclose(ceiling["r_max"], math.sqrt(ceiling["reliability"]))
    single = ceiling["reliability_single"]
    harmonic = 1 / np.mean(1 / counts)
    assert math.isclose(ceiling["reliability"], single / (single + (1 - single) / harmonic))


def test_pairs_mode_compares_vote_level_r_with_the_single_vote_ceiling():
    """In pairs mode r is computed over votes: its ceiling is corr(t, one vote) = sqrt(ICC(1,1)),
    whatever the counts, not the ceiling of a mean."""
    rng = np.random.default_rng(3)
    counts = COUNTS["uniform 1-5"](rng, 4000)
    truth, ratings, votes = simulate(rng, counts)
    vote_level = np.corrcoef(np.repeat(truth, counts), np.concatenate(ratings))[0, 1]
    ceiling = human_ceiling(votes, [f"d{d}" for d in range(counts.size)], resamples=0, rating="pairs")
    assert abs(ceiling["r_max"] - math.sqrt(VAR_TRUE)) < 0.03 and abs(ceiling["r_max"] - vote_level) < 0.04
    assert math.isclose(ceiling["r_max"], math.sqrt(ceiling["reliability_single"]))
    assert ceiling["reliability"] == ceiling["reliability_single"] and "ICC(1,1)" in ceiling["method"]


def test_equal_counts_keep_spearman_brown_at_k():
    """With k votes on every dialogue the harmonic mean is k: the ceiling is √ICC(1,k), as before."""
    rng = np.random.default_rng(4)
    counts = np.full(300, 3)
    _, ratings, votes = simulate(rng, counts)
    ceiling = human_ceiling(votes, [f"d{d}" for d in range(300)], resamples=0)
    assert math.isclose(ceiling["reliability"], icc_oneway(np.array(ratings))[1])


def test_the_interval_follows_the_same_formula():
    """The bootstrap over dialogues recomputes ICC(1,1) and mean(1/k) in every resample: with counts
    {1, 1, 1, 5} it covers the reachable 0.59 (the old interval sat around 0.82)."""
    rng = np.random.default_rng(5)
    counts = COUNTS["1,1,1,5"](rng, 1200)
    _, _, votes = simulate(rng, counts)
    ceiling = human_ceiling(votes, [f"d{d}" for d in range(counts.size)], resamples=200, seed=1)
    low, high = ceiling["ci"]
    assert low <= reachable(counts) <= high and low <= ceiling["r_max"] <= high and high - low < 0.2
    pairs = human_ceiling(votes, [f"d{d}" for d in range(counts.size)], resamples=200, seed=1, rating="pairs")
    assert pairs["ci"][0] <= math.sqrt(VAR_TRUE) <= pairs["ci"][1]


def test_the_text_says_whose_reliability_it_is():
    from metrics.present import ceiling_text

    rng = np.random.default_rng(6)
    _, _, votes = simulate(rng, COUNTS["uniform 1-5"](rng, 200))
    ids = [f"d{d}" for d in range(200)]
    assert "reliability of a single vote" in ceiling_text(human_ceiling(votes, ids, resamples=0, rating="pairs"))
    assert "reliability of the mean rating" in ceiling_text(human_ceiling(votes, ids, resamples=0))
