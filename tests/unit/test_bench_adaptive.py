"""Issues 17 and 29: ``python -m bench.bench_adaptive --json [--seeds N]`` keeps its contract (small, quick runs)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from bench.bench_adaptive import DESIGN_GRID, PopulationRaters, assumed_icc
from tests.conftest import REPO

pytestmark = pytest.mark.slow  # a subprocess running a small simulation


def test_the_adaptive_bench_prints_its_contract():
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.bench_adaptive",
            "--json",
            "--replicates",
            "4",
            "--resamples",
            "50",
            "--pool",
            "60",
            "--synthetic",
            "140",
            "--budget",
            "90",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    ).stdout
    result = json.loads(out)
    assert result["replicates"] == 4 and result["budget"] == 90 and result["pool"] == 200
    for question in ("fga_vs_jga", "lambda"):
        block = result[question]
        for design in ("uniform", "adaptive"):
            assert {"ci_width", "rmse", "bias", "coverage"} <= set(block[design])
            assert block[design]["ci_width"] > 0 and block[design]["rmse"] >= 0
        assert block["uniform"]["judgements"] == 90
        assert -1.5 < block["saving"] < 1


def test_the_designer_bench_prints_its_contract():
    """Issue 29: ``--seeds`` reports the designer vs uniform k = 3 (binary and 1-5; r(FGA) − r(JGA) and λ*)
    and vs 11 x 100, per seed and as the median and range over seeds."""
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.bench_adaptive",
            "--json",
            "--seeds",
            "2",
            "--replicates",
            "4",
            "--resamples",
            "30",
            "--pool",
            "60",
            "--synthetic",
            "140",
            "--budget",
            "300",
            "--misspecified-noise",
            "2",
            "--designer-studies",
            "30",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    ).stdout
    result = json.loads(out)
    assert result["seeds"] == 2 and result["replicates"] == 4 and result["budget"] == 300 and result["pool"] == 200
    assert result["misspecified_noise"] == 2
    assert [(row["scale"], row["question"]) for row in result["summary"]] == [
        ("binary", "fga_vs_jga"),
        ("binary", "lambda"),
        ("five", "fga_vs_jga"),
        ("five", "lambda"),
        ("binary", "fga_vs_jga_vs_11x100"),
        ("five", "fga_vs_jga_vs_11x100"),
    ]
    for row in result["summary"]:
        for stat in ("saving", "designer_abs_bias", "designer_coverage", "reference_rmse"):
            spread = row[stat]
            assert spread["median"] is not None and spread["min"] <= spread["median"] <= spread["max"]
        assert 0 <= row["designer_coverage"]["min"] and row["designer_coverage"]["max"] <= 1
    assert [s["seed"] for s in result["per_seed"]] == [0, 1]
    for seed in result["per_seed"]:
        # the 1-5 ratings (rounded normal, noise SD 0.7) agree more than the binary votes (Bernoulli)
        assert 0 < seed["binary"]["icc"] < seed["five"]["icc"] < 1
        for scale in ("binary", "five"):  # the designer was told half the rater noise: a higher ICC
            icc = seed[scale]["icc"]
            assert seed[scale]["icc_assumed"] == pytest.approx(icc / (icc + (1 - icc) / 2))
        for scale in ("binary", "five"):
            block = seed[scale]
            # the λ maximising r(FGA_λ, expected rating), refined between the grid's points
            assert DESIGN_GRID[0] <= block["lambda"]["truth"] <= DESIGN_GRID[-1]
            assert block["fga_vs_jga"]["truth"] == pytest.approx(block["r_fga"] - block["r_jga"])
            assert block["fga_vs_jga"]["reference"]["judgements"] == 300  # uniform: 100 dialogues x 3
            assert block["fga_vs_jga_vs_11x100"]["reference"]["judgements"] == 1100
            for key in ("fga_vs_jga", "lambda", "fga_vs_jga_vs_11x100"):
                budget = 1100 if key.endswith("11x100") else 300
                for cell in block[key]["designer_by_budget"].values():
                    assert cell["judgements"] <= budget + (30 if key == "lambda" else 0)  # λ: Poisson-drawn, n expected
                    assert cell["m"] <= cell["n"] <= 200 and cell["predicted_width"] > 0
        lam = seed["binary"]["lambda"]  # the designer's promise beside the measured saving, with Monte-Carlo SEs
        assert {"predicted_saving", "predicted_saving_by_budget", "saving_se", "predicted_reference_width"} <= set(lam)
        assert all(cell["predicted_width_se"] > 0 for cell in lam["designer_by_budget"].values())


def test_a_pilot_that_sees_less_rater_noise_reports_the_icc_of_that_noise():
    """``--misspecified-noise F``: the designer's ICC is between / (between + within / F), the dialogue
    variance right and the variance of one vote F times too small; F = 1 is the true ICC."""
    between, within = 0.3, 0.9
    icc = between / (between + within)
    assert assumed_icc(icc, 1) == icc  # exactly: with F = 1 the committed figures reproduce
    assert assumed_icc(icc, 2) == pytest.approx(between / (between + within / 2)) == pytest.approx(0.4)
    assert assumed_icc(icc, 0.5) == pytest.approx(between / (between + 2 * within))  # a pessimistic pilot
    with pytest.raises(ValueError):
        assumed_icc(icc, 0)


def test_the_simulated_raters_expected_rating_is_the_mean_over_the_rater_population():
    """The bench's truth: each dialogue's expected rating over the raters, exact; many votes average to it,
    a dialogue never gets more votes than its k, and ICC(1,1) on k = 3 votes estimates the population ICC."""
    from metrics.design import reliability_parts

    quality = np.array([-2.0, -0.5, 0.0, 0.7, 2.5])
    for scale in ("binary", "five"):
        raters = PopulationRaters(quality, scale, np.random.default_rng(3))
        rows = np.repeat(np.arange(5), 4000)
        votes = raters.matrix(rows, np.full(rows.size, 3))
        means = np.nanmean(votes, axis=1).reshape(5, 4000).mean(axis=1)
        assert means == pytest.approx(raters.expected, abs=0.02)
        k = np.array([1, 2, 3, 1, 2])
        small = raters.matrix(np.arange(5), k)
        assert small.shape == (5, 3) and list(np.isfinite(small).sum(axis=1)) == list(k)

    spread = PopulationRaters(np.random.default_rng(4).normal(0, 1.3, 3000), "five", np.random.default_rng(5))
    icc, *_ = reliability_parts(spread.matrix(np.arange(3000), np.full(3000, 3)))
    assert icc == pytest.approx(spread.icc, abs=0.03)
