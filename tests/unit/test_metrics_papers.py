"""The papers' published numbers, reproduced."""

from __future__ import annotations

import numpy as np
import pytest

from formats import read_file
from metrics.corpus import ScoreSettings, score_dialogues
from metrics.scores import lambda_from_forgetting, score_table, turn_values
from metrics.turnstats import extract
from tests.examples import (
    FGA_FIG1,
    RSA_A6_RSA,
    RSA_A6_SA,
    RSA_T3_GOLD,
    RSA_T3_MODEL_A,
    RSA_T3_MODEL_B,
    dialogue,
)


def fig1_scores(lam: float = 0.5) -> dict:
    return score_table(extract([FGA_FIG1]), [lam], slot_count=30)


def test_fga_fig1_per_turn_weights():
    stats = extract([FGA_FIG1])
    assert stats.exact.tolist() == [True, True, False, False, False, False]
    # Turn match in Fig. 1: turns 3 and 5 are locally correct; 2 and 4 are type-1 errors.
    assert stats.local.tolist() == [True, True, False, True, False, True]
    type2 = stats.type2
    weights = np.where(stats.exact, 1.0, np.where(type2, 1 - np.exp(-0.5 * stats.distance), 0.0))
    assert np.round(weights, 2).tolist() == [1, 1, 0, 0.39, 0, 0.39]


def test_fga_fig1_corpus_numbers():
    scores = fig1_scores(0.5)
    assert float(scores["jga"]) == pytest.approx(1 / 3)
    assert round(100 * float(scores["sa"]), 2) == 94.44
    assert round(100 * float(scores["aga"]), 2) == 76.19
    # The paper's 46.33% adds rounded weights; unrounded it is 46.45%.
    assert round(100 * float(scores["fga"][0]), 2) == 46.45
    assert int(scores["exact_matches"]) == 2 and int(scores["turn_matches"]) == 4


def test_fga_limits_on_fig1():
    stats = extract([FGA_FIG1])
    scores = score_table(stats, [0.0, np.inf, 1e6], slot_count=30)
    assert scores["fga"][0] == pytest.approx(float(scores["jga"]))
    assert scores["fga"][1] == pytest.approx(4 / 6)
    assert scores["fga"][2] == pytest.approx(4 / 6)


def test_sa_turn2_fig1():
    values = turn_values(extract([FGA_FIG1]), 30)
    assert round(values["sa"][2], 4) == round(28 / 30, 4)
    assert values["aga"][2] == pytest.approx(4 / 6)


def test_lambda_from_forgetting():
    assert round(lambda_from_forgetting(6, 0.95), 3) == 0.499
    with pytest.raises(ValueError):
        lambda_from_forgetting(6, 1.0)


@pytest.mark.parametrize("prediction, rsa, aga", [(RSA_T3_MODEL_A, 0.2500, 0.3333), (RSA_T3_MODEL_B, 0.1667, 0.3333)])
def test_rsa_table3(prediction, rsa, aga):
    values = turn_values(extract([dialogue("t3", [RSA_T3_GOLD], [prediction])]), 30)
    assert round(values["rsa"][0], 4) == rsa
    assert round(values["aga"][0], 4) == aga
    assert values["jga"][0] == 0


def test_rsa_table_a6_on_the_real_dialogue(fixtures):
    (pmul4648,) = read_file(fixtures / "fga_human_eval" / "PMUL4648.json.txt")
    values = turn_values(extract([pmul4648]), 30)
    assert np.round(values["sa"], 4).tolist() == RSA_A6_SA
    assert np.round(values["rsa"], 4).tolist() == RSA_A6_RSA
    assert values["jga"].sum() == 0
    macro = score_dialogues([pmul4648], ScoreSettings(rsa="macro"))["corpus"]["rsa"]
    skip = score_dialogues([pmul4648], ScoreSettings(rsa="macro-skip"))["corpus"]["rsa"]
    micro = score_dialogues([pmul4648], ScoreSettings(rsa="micro"))["corpus"]["rsa"]
    assert macro == pytest.approx(sum(RSA_A6_RSA) / 10, abs=1e-3)
    # T* is 1, 1, 2, 2 on turns 0-3 (all wrong): macro-skip keeps them as 0, micro weights by T*.
    assert skip == pytest.approx(macro)
    assert micro == pytest.approx((2 + 3 + 4 * 4) / (1 + 1 + 2 + 2 + 3 + 4 + 5 * 4))
