"""Issue 36: ``python -m bench.bench_startup`` keeps its arguments and its JSON contract (no browser here:
the figures are made up; the bench itself starts servers and Chromium for minutes)."""

from __future__ import annotations

import json

import pytest

from bench.bench_startup import BASELINE_APP, parse_args, report, serve_command, text

SETUP = {"viewport": "1400x900", "runs": 3, "cpus": 2, "load_average_at_start": [0.5, 0.4, 0.3]}


def sample(http_200: float, login: float) -> dict:
    return {"http_200_s": http_200, "login_s": login}


def test_the_defaults_and_the_options():
    args = parse_args([])
    assert (args.runs, args.before, args.json) == (3, None, False)
    args = parse_args(["--runs", "5", "--before", "HEAD", "--json"])
    assert (args.runs, args.before, args.json) == (5, "HEAD", True)


@pytest.mark.parametrize("argv", [["--runs", "0"], ["--runs", "x"]])
def test_wrong_arguments_are_refused(argv, capsys):
    with pytest.raises(SystemExit) as exit_:
        parse_args(argv)
    assert exit_.value.code == 2
    assert "error" in capsys.readouterr().err


def test_the_commands():
    assert serve_command(8123)[1:] == [
        "-m",
        "annotate",
        "serve",
        "--api-port",
        "0",
        "--server.port",
        "8123",
        "--server.headless",
        "true",
    ]
    assert BASELINE_APP.count("\n") == 3 and 'type="password"' in BASELINE_APP  # three lines, with the password field


def test_medians_and_ratios_alone_and_side_by_side():
    samples = {
        "fresh": [sample(2.0, 4.0), sample(3.0, 5.0), sample(2.5, 4.5)],
        "restart": [sample(1.0, 3.0), sample(1.2, 3.3), sample(1.1, 3.6)],
        "baseline": [sample(0.5, 2.0), sample(0.4, 2.2), sample(0.6, 2.4), sample(0.5, 2.2), sample(0.5, 2.0), sample(0.5, 2.2)],
    }
    alone = report(samples, SETUP)
    assert (alone["fresh"]["http_200_s"], alone["fresh"]["login_s"]) == (2.5, 4.5)
    assert (alone["baseline"]["http_200_s"], alone["baseline"]["login_s"]) == (0.5, 2.2)
    assert alone["ratio"] == {"fresh": {"http_200": 5.0, "login": 2.05}, "restart": {"http_200": 2.2, "login": 1.5}}
    assert alone["before"] is None and len(alone["restart"]["samples"]) == 3
    json.dumps(alone)
    assert "x1.50" in text(alone) and "before" not in text(alone)

    both = report({**samples, "before_fresh": samples["fresh"], "before_restart": [sample(2.2, 6.6)] * 3}, SETUP)
    assert both["before"]["restart"]["login_s"] == 6.6
    assert both["before"]["after_over_before"]["restart"] == {"http_200": 0.5, "login": 0.5}
    assert both["before"]["after_over_before"]["fresh"] == {"http_200": 1.0, "login": 1.0}
    assert "this tree / before, restart" in text(both)
