"""Issue 26, item 1: agreement and λ* intervals that keep 0.95 at 30-100 items / dialogues.

The coefficients as functions of per-item sums (one matrix product per set of resamples) must be the
coefficients; the default interval must be the one written down (checked against a plain loop over the
same resamples); the coverage benches keep their row contract; and a small coverage run of each default
lands in 0.92-0.98 (slow).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from metrics.agreement import (
    DEFAULT_FAMILY,
    LEVELS,
    CountStatistics,
    agreement_weights,
    alpha_from_counts,
    bootstrap_cis,
    fleiss_kappa,
    gwet_ac1,
    gwet_ac2,
    percent_agreement,
)

ROW_KEYS = {"estimate", "design", "n", "family", "coverage", "mc_se", "replicates", "unit", "default"}


def random_counts(rng, n: int, q: int) -> np.ndarray:
    votes = rng.integers(1, 6, n)
    return np.array([rng.multinomial(k, rng.dirichlet(np.ones(q))) for k in votes], dtype=float)


@pytest.mark.parametrize("q", [2, 5])
def test_coefficients_from_sums_are_the_coefficients(q):
    rng = np.random.default_rng(q)
    values = np.arange(1, q + 1, dtype=float)
    weights = agreement_weights(values, "quadratic")
    for _ in range(3):
        counts = random_counts(rng, 25, q)
        for level in LEVELS:
            stats = CountStatistics(counts, values, level, weights)
            got = stats.evaluate(stats.features.sum(axis=0))
            expected = {
                "percent_agreement": percent_agreement(counts),
                "krippendorff_alpha": alpha_from_counts(counts, values, level),
                "fleiss_kappa": fleiss_kappa(counts),
                "gwet_ac1": gwet_ac1(counts),
                "gwet_ac2": gwet_ac2(counts, weights),
            }
            for name, value in expected.items():
                assert float(got[name]) == pytest.approx(value, abs=1e-12), (level, name)


def reference_jackknife_z(counts: np.ndarray, coefficient) -> list[float]:
    """The default written out: delete each item in turn, the jackknife standard error of atanh of the
    coefficient (Efron & Tibshirani 1993, eq. 11.5), atanh(θ̂) ± t(n − 1) × it, back through tanh."""
    from scipy.stats import t

    n = counts.shape[0]
    z = np.arctanh([coefficient(np.delete(counts, i, axis=0)) for i in range(n)])
    se = math.sqrt((n - 1) / n * ((z - z.mean()) ** 2).sum())
    half = t.ppf(0.975, n - 1) * se
    centre = math.atanh(coefficient(counts))
    return [math.tanh(centre - half), math.tanh(centre + half)]


def test_default_interval_is_the_jackknife_on_fisher_z_on_a_small_case():
    """12 items, 3 binary votes each: the reported interval is atanh ± t(11) × jackknife SE over items."""
    from formats.tidy import Vote
    from metrics.agreement import answer_table

    pattern = ["111", "110", "000", "100", "111", "011", "000", "001", "111", "010", "000", "110"]
    votes = [Vote(f"i{u}", f"a{k}", "q", v) for u, row in enumerate(pattern) for k, v in enumerate(row)]
    table = answer_table(votes, ["0", "1"])
    assert DEFAULT_FAMILY == "jackknife_atanh_t"
    cis, notes = bootstrap_cis(table, "nominal", resamples=400, seed=7)
    counts = table.counts
    assert fleiss_kappa(counts) == pytest.approx(1 / 3)  # p̄ = 2/3 of pairs agree, π = (1/2, 1/2): (2/3 − 1/2)/(1/2)
    assert cis["fleiss_kappa"] == pytest.approx(reference_jackknife_z(counts, fleiss_kappa), abs=1e-12)
    assert cis["gwet_ac1"] == pytest.approx(reference_jackknife_z(counts, gwet_ac1), abs=1e-12)
    assert cis["fleiss_kappa"] == pytest.approx([-0.1719, 0.6997], abs=1e-4)
    assert notes == []
    percentile, _ = bootstrap_cis(table, "nominal", resamples=400, seed=7, family="percentile")
    assert cis["fleiss_kappa"] != percentile["fleiss_kappa"]


def reference_bca(counts: np.ndarray, coefficient, resamples: int, seed: int) -> list[float]:
    """BCa (Efron 1987) written out: a loop over resamples drawn as the tool draws them, the jackknife over
    items by deleting each row, z0 and the acceleration by their textbook formulas."""
    rng = np.random.default_rng(seed)
    n = counts.shape[0]
    estimate = coefficient(counts)
    drawn = np.array([coefficient(counts[rng.integers(0, n, n)]) for _ in range(resamples)])
    jack = np.array([coefficient(np.delete(counts, i, axis=0)) for i in range(n)])
    tie = np.isclose(drawn, estimate, rtol=0, atol=1e-12)
    z0 = norm.ppf(np.mean((drawn < estimate) & ~tie) + 0.5 * np.mean(tie))
    u = jack.mean() - jack
    a = (u**3).sum() / (6 * (u**2).sum() ** 1.5)
    levels = [norm.cdf(z0 + (z0 + z) / (1 - a * (z0 + z))) for z in norm.ppf([0.025, 0.975])]
    return [float(np.quantile(drawn, p)) for p in levels]


def test_bca_family_is_bca_over_the_same_resamples():
    from formats.tidy import Vote
    from metrics.agreement import answer_table

    pattern = ["111", "110", "000", "100", "111", "011", "000", "001", "111", "010", "000", "110"]
    votes = [Vote(f"i{u}", f"a{k}", "q", v) for u, row in enumerate(pattern) for k, v in enumerate(row)]
    table = answer_table(votes, ["0", "1"])
    cis, _ = bootstrap_cis(table, "nominal", resamples=400, seed=7, family="bca")
    assert cis["fleiss_kappa"] == pytest.approx(reference_bca(table.counts, fleiss_kappa, 400, 7), abs=1e-12)


def test_complete_agreement_stays_a_point():
    from formats.tidy import Vote
    from metrics.agreement import answer_table

    votes = [Vote(f"i{u}", f"a{k}", "q", v) for u, v in enumerate("101") for k in range(3)]
    cis, _ = bootstrap_cis(answer_table(votes, ["0", "1"]), "nominal", resamples=200, seed=0)
    assert cis["gwet_ac1"] == [1.0, 1.0] and cis["percent_agreement"] == [1.0, 1.0]


def check_rows(rows: list[dict], unit: str, sizes: list[int]) -> None:
    assert rows and all(set(row) == ROW_KEYS for row in rows)
    for row in rows:
        assert row["unit"] == unit and row["n"] in sizes and isinstance(row["default"], bool)
        assert 0.0 <= row["coverage"] <= 1.0
        c, r = row["coverage"], row["replicates"]
        assert row["mc_se"] == pytest.approx(math.sqrt(c * (1 - c) / r))
    groups: dict[tuple, int] = {}
    for row in rows:
        groups[row["estimate"], row["design"], row["n"]] = (
            groups.get((row["estimate"], row["design"], row["n"]), 0) + row["default"]
        )
    assert set(groups.values()) == {1}  # exactly one default family per estimate, design and n


def test_agreement_rows_contract():
    from bench import coverage_agreement

    rows = coverage_agreement.rows(replicates=4, sizes=[30], resamples=60, seed=1)
    check_rows(rows, "items", [30])
    designs = {row["design"] for row in rows}
    assert designs == {"normal", "fixture_fga", "rater_bias", "two_raters", "unbalanced"}
    assert {row["estimate"] for row in rows if row["design"] == "two_raters"} >= {"cohen_kappa"}


def test_lambda_rows_contract():
    from bench import coverage_lambda

    rows = coverage_lambda.rows(replicates=3, sizes=[30], resamples=60, seed=1)
    check_rows(rows, "dialogues", [30])
    assert {row["estimate"] for row in rows} == {"lambda_star", "r_star"}


def test_agreement_default_covers_at_30_items():
    """200 studies of 30 items (design ``fixture_fga``): the default interval of Fleiss' κ, α and AC1 covers
    the truth in 0.92-0.98 (± 2 Monte-Carlo standard errors of 0.95 is 0.92-0.98)."""
    from bench import coverage_agreement

    coverage_agreement.DESIGNS, designs = (coverage_agreement.FixtureFga,), coverage_agreement.DESIGNS
    try:
        rows = coverage_agreement.rows(replicates=200, sizes=[30], resamples=500, seed=3, studentized=False)
    finally:
        coverage_agreement.DESIGNS = designs
    defaults = [row for row in rows if row["default"]]
    assert len(defaults) == 3
    for row in defaults:
        assert 0.92 <= row["coverage"] <= 0.98, row


def test_r_star_default_is_fisher_z_moved_back_by_the_bootstrap_bias():
    """r* = 0.6 from 40 dialogues; bootstrap maxima whose atanh has mean atanh(0.6) + 0.05 and SD 0.1:
    the interval is tanh(atanh 0.6 − 0.05 ± t(39) · 0.1), by hand."""
    from scipy.stats import t

    from metrics.calibrate import DEFAULT_LAMBDA_FAMILY, DEFAULT_R_FAMILY, r_intervals

    assert (DEFAULT_LAMBDA_FAMILY, DEFAULT_R_FAMILY) == ("percentile", "atanh_t_bc")
    z = np.array([-1.0, 1.0] * 50) * 0.1 * math.sqrt(99 / 100)  # SD (ddof 1) exactly 0.1
    drawn = np.tanh(math.atanh(0.6) + 0.05 + z)
    low, high = r_intervals(0.6, drawn, np.array([]), families=("atanh_t_bc",), n=40)["atanh_t_bc"]
    half = t.ppf(0.975, 39) * 0.1
    assert (low, high) == pytest.approx((math.tanh(math.atanh(0.6) - 0.05 - half), math.tanh(math.atanh(0.6) - 0.05 + half)))
    assert (low, high) == pytest.approx((0.4144, 0.6887), abs=1e-4)


def test_calibrate_names_its_interval_families():
    from metrics.calibrate import FgaTerms, calibrate, parse_grid
    from metrics.correlation import Ratings

    rng = np.random.default_rng(0)
    d, u = 40, 3
    counts = rng.integers(0, 3, (d, u)).astype(float)
    terms = FgaTerms(rng.integers(0, 4, d).astype(float), np.full(d, 8.0), np.array([1.0, 2.0, 4.0]), counts)
    y = terms.fga([0.5])[:, 0] + rng.normal(0, 0.05, d)
    result = calibrate(
        terms, Ratings([f"d{i}" for i in range(d)], np.arange(d), y, "mean", []), parse_grid("0:5:51"), resamples=200
    )
    assert result["bootstrap"]["ci"] == {"lambda": "percentile", "r": "atanh_t_bc"}
    assert result["ci_r"][0] < result["r_best"] < result["ci_r"][1] or result["ci_r"][1] < result["r_best"]
    with pytest.raises(ValueError, match="r_family"):
        calibrate(terms, Ratings([f"d{i}" for i in range(d)], np.arange(d), y, "mean", []), parse_grid("0:5:51"), r_family="x")


def test_lambda_defaults_cover_at_30_dialogues():
    """200 studies of 30 dialogues (design ``perturbed_gauss``): the default λ* and r* intervals cover λ0 and
    the population r* in 0.92-0.98."""
    from bench import coverage_lambda

    coverage_lambda.DESIGNS, designs = (("perturbed_gauss", "perturbed", "gauss", 0.8),), coverage_lambda.DESIGNS
    try:
        rows = coverage_lambda.rows(replicates=200, sizes=[30], resamples=500, seed=4)
    finally:
        coverage_lambda.DESIGNS = designs
    defaults = [row for row in rows if row["default"]]
    assert {row["estimate"] for row in defaults} == {"lambda_star", "r_star"}
    for row in defaults:
        assert 0.92 <= row["coverage"] <= 0.98, row


def test_the_percent_agreement_interval_stays_between_0_and_1():
    """Seen on the SLU demo (issue 27 review): % agreement [-0.002, 0.883] and [-1.000, 1.000], an interval
    built on the atanh scale of -1..1 for a share.  Few items, most in full agreement, one split."""
    from formats.tidy import Vote
    from metrics.agreement import agreement_report

    votes = [
        Vote(item=f"i{i}", annotator=f"a{k}", question="q", value="1" if i or k == 0 else "0") for i in range(5) for k in range(3)
    ]
    low, high = agreement_report(votes, resamples=200)["ci"]["percent_agreement"]
    assert 0.0 <= low <= high <= 1.0


def test_one_bca_with_one_edge_rule():
    """Issue 39, item 5: agreement's BCa is the package's one BCa (``metrics.correlation.bca_interval``):
    ties with the estimate count half (a coefficient on two categories is tied often), and where every
    draw lies on one side of the estimate there is no BCa interval (the agreement branch used to clip
    the bias correction and report an interval there)."""
    from metrics.agreement import interval_families
    from metrics.correlation import bca_interval

    rng = np.random.default_rng(3)
    drawn = np.round(rng.normal(0.4, 0.1, 1000), 2)  # rounded: many draws equal the estimate
    jackknife = rng.normal(0.4, 0.02, 30)
    ours = interval_families(0.4, drawn, jackknife, families=("bca",))["bca"]
    assert list(ours) == bca_interval(0.4, drawn, jackknife)
    assert 0.15 < ours[0] < 0.25 and 0.55 < ours[1] < 0.65
    assert "bca" not in interval_families(0.9, drawn, jackknife, families=("bca",))  # all draws below 0.9
