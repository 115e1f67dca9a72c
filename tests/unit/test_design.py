"""Issue 29: the k-free estimand (corrected correlations) and the study designer (metrics.design)."""

from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest
from scipy.stats import t as student_t

from metrics import design as dz
from metrics.__main__ import main
from metrics.correlation import ceiling_report, icc_oneway
from metrics.planning import spearman_brown

R_A, R_B, R_AB = 0.4, 0.3, 0.8


def _pool(size: int = 2000, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.normal(size=size)
    return {"fga_0.5": a, "jga": R_AB * a + math.sqrt(1 - R_AB**2) * rng.normal(size=size)}


def _study(rng, n: int, m: int, k_o: int, icc: float, r_a=R_A, r_b=R_B, r_ab=R_AB):
    """One study under the latent normal model: (T, A, B) with the given correlations, votes T + rater
    noise (single-vote ICC ``icc``); the first m dialogues get k_o votes, the rest one."""
    cov = np.array([[1, r_a, r_b], [r_a, 1, r_ab], [r_b, r_ab, 1]])
    z = rng.normal(size=(n, 3)) @ np.linalg.cholesky(cov).T
    noise = rng.normal(size=(n, k_o)) * math.sqrt((1 - icc) / icc)
    votes = z[:, :1] + noise
    votes[m:, 1:] = np.nan
    return z[:, 1], z[:, 2], votes


def _simulated_width(n, m, k_o, icc, reps, seed):
    rng = np.random.default_rng(seed)
    estimates = []
    for _ in range(reps):
        a, b, votes = _study(rng, n, m, k_o, icc)
        y = np.nanmean(votes, axis=1)
        _, reliability, _, _ = dz.reliability_parts(votes)
        estimates.append((np.corrcoef(a, y)[0, 1] - np.corrcoef(b, y)[0, 1]) / math.sqrt(reliability))
    estimates = np.asarray(estimates)
    return 2 * student_t.ppf(0.975, n - 1) * estimates.std(ddof=1), estimates.mean()


def test_equal_k_is_todays_estimate_scaled_by_the_ceiling():
    rng = np.random.default_rng(3)
    a, b, votes = _study(rng, 120, 120, 3, 0.3)
    y = votes.mean(axis=1)
    r = float(np.corrcoef(a, y)[0, 1])
    single = icc_oneway(votes)[0]
    expected = r / math.sqrt(spearman_brown(single, 3))
    got = dz.corrected_r(a, votes)
    assert got.estimate == pytest.approx(expected, abs=1e-12)
    ceiling = ceiling_report([f"a{j}" for j in range(3)], votes.T, resamples=0)
    assert got.estimate == pytest.approx(r / ceiling["r_max"], abs=1e-12)
    assert got.unit == "dialogues" and got.n == 120 and got.low < got.estimate < got.high
    diff = dz.corrected_difference(a, b, votes)
    assert diff.estimate == pytest.approx((r - float(np.corrcoef(b, y)[0, 1])) / ceiling["r_max"], abs=1e-12)


def test_unequal_k_uses_the_harmonic_k_and_ragged_input_agrees():
    rng = np.random.default_rng(4)
    a, _, votes = _study(rng, 200, 40, 3, 0.4)
    ragged = [row[np.isfinite(row)] for row in votes]
    single = icc_oneway(votes)[0]
    harmonic = 200 / (160 + 40 / 3)
    y = np.nanmean(votes, axis=1)
    expected = float(np.corrcoef(a, y)[0, 1]) / math.sqrt(spearman_brown(single, harmonic))
    assert dz.corrected_r(a, ragged).estimate == pytest.approx(expected, abs=1e-12)
    assert dz.corrected_r(a, votes).estimate == pytest.approx(expected, abs=1e-12)


def test_leave_one_out_reliabilities_match_recomputation():
    rng = np.random.default_rng(5)
    _, _, votes = _study(rng, 60, 20, 3, 0.3)
    _, _, single_loo, rel_loo = dz.reliability_parts(votes)
    for i in (0, 7, 19, 20, 59):  # overlap dialogues and single-vote ones
        single, rel, _, _ = dz.reliability_parts(np.delete(votes, i, axis=0))
        assert single_loo[i] == pytest.approx(single, abs=1e-12)
        assert rel_loo[i] == pytest.approx(rel, abs=1e-12)


def test_too_small_an_overlap_is_refused():
    rng = np.random.default_rng(6)
    a, b, votes = _study(rng, 100, 9, 2, 0.3)
    with pytest.raises(ValueError, match="9 dialogues with 2 or more votes, at least 10"):
        dz.corrected_r(a, votes)
    with pytest.raises(ValueError, match="not identified"):
        dz.corrected_difference(a, b, votes)


@pytest.mark.parametrize(
    ("icc", "design"),
    [
        (0.3, (1007, 193, 2)),  # the designer's proposal for 1200 judgements at ICC 0.3
        (0.6, (1112, 88, 2)),  # ... at ICC 0.6
        (0.3, (400, 400, 3)),  # uniform k = 3 at 1200 judgements
    ],
)
def test_predicted_width_matches_simulation(icc, design):
    n, m, k_o = design
    predicted = dz.predicted_width("comparison", R_A, R_B, R_AB, icc=icc, n=n, m=m, k_o=k_o)
    simulated, mean = _simulated_width(n, m, k_o, icc, reps=600, seed=29)
    assert simulated == pytest.approx(predicted, rel=0.10)
    assert abs(mean - (R_A - R_B)) < 0.01  # the corrected difference estimates the k-free target


def test_designer_proposals_are_the_ones_simulated():
    pool = _pool()
    assert (lambda p: (p.n, p.m, p.k_overlap, p.judgements))(dz.design("comparison", pool, 1200, icc=0.3).proposal) == (
        1007,
        193,
        2,
        1200,
    )
    assert (lambda p: (p.n, p.m, p.k_overlap))(dz.design("comparison", pool, 1200, icc=0.6).proposal) == (1112, 88, 2)


def test_jackknife_interval_covers_the_k_free_target():
    rng = np.random.default_rng(11)
    hits, reps = 0, 800
    for _ in range(reps):
        a, b, votes = _study(rng, 400, 80, 2, 0.4)
        row = dz.corrected_difference(a, b, votes)
        hits += row.low <= R_A - R_B <= row.high
    assert 0.93 <= hits / reps <= 0.97


def test_designer_beats_uniform_k3_when_rater_noise_dominates():
    pool = _pool()
    savings = {}
    for icc in (0.2, 0.3, 0.5):
        proposal = dz.design("comparison", pool, budget=1200, icc=icc)
        assert proposal.proposal.judgements <= 1200 and proposal.uniform_k3.judgements == 1200
        assert proposal.proposal.width < proposal.uniform_k3.width
        savings[icc] = proposal.saving_vs_uniform()
        # the 11 x 100 design of the FGA study is the widest of the three at a similar budget
        assert proposal.fga_11x100.judgements == 1100 and proposal.fga_11x100.width > proposal.uniform_k3.width
    # rater noise 80% of a vote's variance (ICC 0.2): 0.12 of uniform's judgements saved; more as the ICC grows
    assert savings[0.2] == pytest.approx(0.117, abs=0.01)
    assert savings[0.2] < savings[0.3] < savings[0.5]


def test_target_width_gives_the_fewest_judgements():
    pool = _pool()
    proposal = dz.design("comparison", pool, target_width=0.15, icc=0.3)
    p = proposal.proposal
    assert p.width <= 0.15 and p.judgements == p.n + p.m * (p.k_overlap - 1)
    assert proposal.uniform_needed > p.judgements
    # a budget of the proposal's judgements reaches the same width
    again = dz.design("comparison", pool, budget=p.judgements, icc=0.3).proposal
    assert again.width <= 0.15 + 1e-9


def test_designer_refuses_unidentified_designs():
    pool = _pool()
    with pytest.raises(ValueError, match="no identified design for a budget of 100"):
        dz.design("comparison", pool, budget=100, icc=0.3)
    with pytest.raises(ValueError, match="no identified design"):
        dz.design("comparison", {k: v[:8] for k, v in pool.items()}, budget=1000, icc=0.3)
    with pytest.raises(ValueError, match="'lambda' is not supported"):
        dz.design("lambda", pool, budget=1200, icc=0.3)
    with pytest.raises(ValueError, match="a budget of judgements or a target width"):
        dz.design("comparison", pool, icc=0.3)


def test_design_draw_respects_the_design():
    proposal = dz.design("comparison", _pool(), budget=1200, icc=0.3).proposal
    k = proposal.votes_per_dialogue(seed=1)
    assert k.sum() == proposal.judgements and (k > 0).sum() == proposal.n and (k == proposal.k_overlap).sum() == proposal.m
    assert np.array_equal(k, proposal.votes_per_dialogue(seed=1))


def test_cli_design(tmp_path, capsys):
    pool = _pool()
    path = tmp_path / "scores.csv"
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["dialogue", "fga_0.5", "jga"])
        writer.writerows([f"d{i}", a, b] for i, (a, b) in enumerate(zip(pool["fga_0.5"], pool["jga"], strict=True)))
    assert main(["design", "--scores", str(path), "--budget", "1200", "--icc", "0.3", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["proposal"]["n"], result["proposal"]["m"]) == (1007, 193)
    assert result["uniform_k3"]["judgements"] == 1200 and result["fga_11x100"]["judgements"] == 1100
    assert result["saving_vs_uniform_k3"] == pytest.approx(1 - 1200 / 1539)
    assert main(["design", "--scores", str(path), "--budget", "1200", "--icc", "0.3"]) == 0
    text = capsys.readouterr().out
    assert "uniform k = 3" in text and "FGA study 11 x 100" in text and "1007" in text
    assert main(["design", "--scores", str(path), "--budget", "50", "--icc", "0.3"]) == 2
    assert "no identified design" in capsys.readouterr().err


def test_agreement_width_matches_simulation():
    from metrics.correlation import icc_oneway

    rng = np.random.default_rng(2)
    estimates = [icc_oneway(_study(rng, 400, 400, 3, 0.3)[2])[0] for _ in range(600)]
    simulated = 2 * student_t.ppf(0.975, 399) * np.std(estimates, ddof=1)
    predicted = dz.predicted_width("agreement", R_A, R_B, R_AB, icc=0.3, n=400, m=400, k_o=3)
    assert simulated == pytest.approx(predicted, rel=0.10)
    proposal = dz.design("agreement", _pool(), budget=1200, icc=0.3).proposal
    assert proposal.n == proposal.m and proposal.judgements <= 1200 and proposal.width == pytest.approx(predicted)
