"""Issue 25: ``python -m bench.bench_browser`` keeps its arguments and its JSON contract (no browser here:
the figures are made up; the bench itself runs Chromium against two servers for minutes)."""

from __future__ import annotations

import json

import pytest

from bench import bench_browser
from bench.bench_browser import parse_args, report, summary, text

ROW_KEYS = {"items", "judged", "p50_ms", "p95_ms", "max_ms", "mean_ms", "wall_p50_ms", "wall_p95_ms"}


def test_the_defaults():
    args = parse_args([])
    assert args.items == [1000, 20000]
    assert args.judgements == 60
    assert args.warmup == 3
    assert args.before is None and args.after is None
    assert args.json is False


def test_the_options():
    args = parse_args(["--items", "1000, 20000,50", "--judgements", "20", "--before", "32ad90d", "--warmup", "0", "--json"])
    assert args.items == [1000, 20000, 50]
    assert (args.judgements, args.before, args.warmup, args.json) == (20, "32ad90d", 0, True)


@pytest.mark.parametrize(
    "argv",
    [
        ["--items", "1000,x"],
        ["--items", "0"],
        ["--items", ""],
        ["--judgements", "0"],
        ["--warmup", "-1"],
        ["--items", "50", "--judgements", "60"],  # a study too small for warm-up + judgements
    ],
)
def test_wrong_arguments_are_refused(argv, capsys):
    with pytest.raises(SystemExit) as exit_:
        parse_args(argv)
    assert exit_.value.code == 2
    assert "error" in capsys.readouterr().err


def test_a_summary_has_its_keys_and_nearest_rank_percentiles():
    shown = [float(v) for v in range(1, 101)]  # 1..100 ms
    row = summary(1000, shown, [v + 5 for v in shown])
    assert set(row) == ROW_KEYS
    assert row["items"] == 1000 and row["judged"] == 100
    assert (row["p50_ms"], row["p95_ms"], row["max_ms"], row["mean_ms"]) == (50.5, 95.0, 100.0, 50.5)
    assert (row["wall_p50_ms"], row["wall_p95_ms"]) == (55.5, 100.0)
    assert all(isinstance(row[key], float) for key in ROW_KEYS - {"items", "judged"})
    assert json.dumps(summary(10, [873], [880])["max_ms"]) == "873.0"  # whole numbers from the page stay floats


def test_the_report_side_by_side_and_alone():
    after = {"1000": summary(1000, [80.0, 100.0, 120.0], [90.0, 110.0, 130.0])}
    before = {"1000": summary(1000, [200.0, 250.0, 400.0], [210.0, 260.0, 410.0])}
    setup = {"viewport": "1400x900", "judgements": 3, "warmup": 3, "after": "the working tree"}
    both = json.loads(json.dumps(report(after, before, setup, "32ad90d", "a" * 40)))  # JSON all the way
    assert set(both) == {"after", "before", "ratio", "before_ref", "before_commit", "setup"}
    assert set(both["after"]["1000"]) == ROW_KEYS and set(both["before"]["1000"]) == ROW_KEYS
    assert both["ratio"] == {"1000": {"p50": 0.4, "p95": 0.3}}
    assert (both["before_ref"], both["before_commit"]) == ("32ad90d", "a" * 40)
    assert "after / before" in text(both) and "before (32ad90d)" in text(both)
    alone = report(after, None, setup)
    assert alone["before"] is None and alone["ratio"] is None and alone["before_ref"] is None
    assert "this tree" in text(alone) and "after / before" not in text(alone)


def test_the_page_probe_looks_for_the_answer_button_by_its_label():
    assert json.dumps(bench_browser.ANSWER) in bench_browser.PROBE and "__ANSWER__" not in bench_browser.PROBE
    assert bench_browser.KEYS == ("1", "0")  # the satisfaction kind's shortcuts
