"""Issue 24, item 7: one rounding rule, 3 decimals for every r, difference, λ and interval end, on the
Analysis page, the Progress page's design line, the report and the command lines' text."""

from __future__ import annotations

from annotate.analysis.reports import AllocationStatus, allocation_line
from metrics import present


def test_the_progress_line_rounds_as_the_analysis_page():
    # the numbers: Progress showed -0.0178 [-1.8, 0.288] where Analysis showed -0.018 [-1.770, 0.294]
    line = allocation_line(
        AllocationStatus(
            policy="adaptive",
            question="fga_vs_jga",
            budget=15,
            spent=15,
            estimate=-0.0178,
            ci=[-1.77, 0.2939],
            width=2.0639,
            target_width=None,
        )
    )
    assert "now -0.018 [-1.770, 0.294], width 2.064" in line
    assert f"now {present.number(-0.0178)} {present.interval([-1.77, 0.2939])}" in line
    lam = allocation_line(
        AllocationStatus(
            policy="adaptive",
            question="lambda",
            budget=None,
            spent=40,
            estimate=0.5,
            ci=[0.25, 1.0],
            width=0.75,
            target_width=0.5,
            projected=90,
        )
    )
    assert "now 0.500 [0.250, 1.000], width 0.750" in lam


def test_the_calibration_table_rounds_as_the_metrics_above_it():
    calibration = {
        "best_lambda": 0.31234,
        "ci_lambda": [0.1, 0.9],
        "r_best": 0.93237,
        "ci_r": [0.88, 0.99],
        "r_jga": 0.91234,
        "r_turn": 0.49161,
        "cv_r": 0.93281,
        "cv_folds": [0.9, 0.95],
        "at_bound": 0.1,
        "n_dialogues": 10,
        "n_ratings": 10,
        "rating": "mean",
        "notes": [],
        "signature": "s",
    }
    values = {row[0]: row[1] for row in present.calibration_table(calibration).rows}
    assert values["best λ"] == "0.312" and values["r at best λ"] == "0.932" and values["cross-validated r"] == "0.933"
    assert values["r at λ = 0 (JGA)"] == "0.912" and values["r at λ = ∞ (turn match)"] == "0.492"
    assert values["r at best λ"] == present.number(calibration["r_best"])  # the page's metric above the table
