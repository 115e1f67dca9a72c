"""A judge whose answers never vary (issue 24, item 8): its κ is 0 by construction and the bootstrap
interval collapses to [0, 0]; the report says so instead of showing the point as an interval."""

from __future__ import annotations

from formats.tidy import votes_from_rows
from metrics import present
from metrics.judges import judge_report


def tables():
    human, judges = [], []
    for i in range(30):
        truth = "1" if i % 3 else "0"
        human += [(f"d{i}", f"ann{a}", "satisfied", truth) for a in range(3)]
        judges.append((f"d{i}", "yes-man", "satisfied", "1"))  # the same answer to every item
        judges.append((f"d{i}", "coin", "satisfied", "1" if i % 2 else "0"))
    return votes_from_rows(human, "human.csv"), votes_from_rows(judges, "judges.csv")


def test_a_judge_with_constant_answers_gets_a_note_on_its_degenerate_interval():
    report = judge_report(*tables(), "satisfied", resamples=200, seed=1)
    rows = {j["judge"]: j for j in report["judges"]}
    yes = rows["yes-man"]
    assert yes["cohen_kappa"] == 0.0 and yes["kappa_ci"] == [0.0, 0.0] and yes["accuracy"] == 20 / 30
    assert yes["kappa_ci_degenerate"] is True
    assert "the same answer (1) to all 30 items" in yes["note"] and "degenerate" in yes["note"]
    assert rows["coin"]["kappa_ci_degenerate"] is False and "note" not in rows["coin"]
    low, high = rows["coin"]["kappa_ci"]
    assert low < high
    shown = present.judge_table(report).notes
    assert any(n.startswith("yes-man: ") and "degenerate" in n for n in shown), shown  # the page and the CLI show it
    assert not any(n.startswith("coin: ") for n in shown)
