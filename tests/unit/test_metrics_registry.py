"""The metric registry and the Signature (issue 25): every place that names metrics reads them from
``metrics.registry``, and ``str(Signature)`` writes the signatures the results have always carried."""

from __future__ import annotations

import csv
import dataclasses
import json
import subprocess
import sys

import numpy as np
import pytest

from formats import load_dialogues
from formats.dialogue import Dialogue, Turn
from metrics import __version__, corpus, registry
from metrics.analysis import per_dialogue_metrics
from metrics.corpus import ScoreSettings
from metrics.reference import corpus_loop
from metrics.registry import FGA, JGA, M2, METRICS, RSA, SCORE_TABLE, split_key
from metrics.scores import RSA_AGGREGATIONS, dialogue_fga, fga, score_table, turn_values
from metrics.signature import KEYS, Signature
from metrics.turnstats import extract
from tests.conftest import REPO
from tests.examples import FGA_FIG1

H = lambda **kw: frozenset(("hotel", k, v) for k, v in kw.items())  # noqa: E731


def _dialogues() -> list[Dialogue]:
    gold = [H(), H(name="a"), H(name="a", area="east"), H(name="a", area="east", day="mon"), H(name="a", area="east", day="mon")]
    pred = [H(), H(name="b"), H(name="b", area="east"), H(name="a", day="mon"), H(name="a", area="east", day="mon", stars="4")]
    other = Dialogue("d2", [Turn(i, gold=g, pred=g) for i, g in enumerate(gold[:3])])
    return [FGA_FIG1, Dialogue("d1", [Turn(i, gold=g, pred=p) for i, (g, p) in enumerate(zip(gold, pred))]), other]


def test_the_names_and_orders_of_the_contracts():
    """The registry's orders give exactly the keys and columns the contracts have always had."""
    assert registry.names() == ("jga", "m2", "fga", "sa", "aga", "rsa", "f1")
    assert corpus.COUNT_KEYS == ("turns", "exact_matches", "turn_matches")
    assert corpus.RATE_KEYS == ("jga", "sa", "aga", "rsa", "f1")
    assert corpus.LAMBDA_KEYS == ("fga",)
    assert [m.column("0.5") if m.takes_lambda else m.column() for m in SCORE_TABLE] == [
        "JGA",
        "SA",
        "AGA",
        "FGA_0.5",
        "RSA",
        "F1",
    ]
    assert [m.count for m in METRICS if m.count] == [("exact_matches", "#M1"), ("turn_matches", "#M2")]
    assert RSA_AGGREGATIONS == RSA.aggregations == ("macro", "macro-skip", "micro")
    assert set(registry.BY_NAME) == set(registry.names()) and all(registry.BY_NAME[m.name] is m for m in METRICS)


def test_every_metric_is_scored_and_correlated_in_registry_order():
    dialogues = _dialogues()
    stats = extract(dialogues)
    table = score_table(stats, [0.5, 1.0], slot_count=30)
    assert set(table) == {"turns", *corpus.COUNT_KEYS, *registry.names()}
    assert list(turn_values(stats, 30)) == [m.name for m in METRICS if not m.takes_lambda]
    ids, values = per_dialogue_metrics(dialogues, ScoreSettings((0.5, 1.0), ("0.5", "1")))
    assert ids == [d.id for d in dialogues]
    assert list(values) == ["jga", "m2", "fga_0.5", "fga_1", "sa", "aga", "rsa", "f1"]
    assert [split_key(key) for key in values][2] == (FGA, "0.5")
    assert all(split_key(key)[0] is not None for key in values)
    per_dialogue = score_table(stats, [0.5], slot_count=30, per_dialogue=True)
    assert np.array_equal(values["m2"], per_dialogue["turn_matches"] / per_dialogue["turns"])  # M2 as it was computed before


def test_the_per_turn_functions_define_the_scores():
    """Each metric without λ is the mean of its per-turn values over the turns it counts (RSA macro:
    every turn); FGA's per-turn weights average to the engine's FGA, corpus and per dialogue, λ = 0
    giving JGA and λ = ∞ giving M2."""
    stats = extract(_dialogues())
    grid = [0.0, 0.3, 1.0, np.inf]
    table = score_table(stats, grid, slot_count=30)
    for metric in METRICS:
        if metric.takes_lambda:
            continue
        values = metric.per_turn(stats, 30)
        counted = np.ones(stats.n_turns, bool) if metric.counted is None else metric.counted(stats)
        assert float(table[metric.name]) == pytest.approx(float(np.mean(values[counted]))), metric.name
    weights = FGA.per_turn(stats, grid)
    assert weights.shape == (stats.n_turns, len(grid))
    assert np.allclose(weights.mean(axis=0), fga(stats, grid), rtol=0, atol=1e-12)
    per_dialogue = np.array([weights[stats.dialogue_index == d].mean(axis=0) for d in range(stats.n_dialogues)])
    assert np.allclose(per_dialogue, dialogue_fga(stats, grid), rtol=0, atol=1e-12)
    assert np.array_equal(weights[:, 0], JGA.per_turn(stats, 30)) and np.array_equal(weights[:, -1], M2.per_turn(stats, 30))


def test_the_oracle_uses_the_same_names():
    pairs = [([t.gold for t in d.turns], [t.pred for t in d.turns]) for d in _dialogues()]
    assert set(corpus_loop(pairs, [0.5])) == {"turns", *corpus.RATE_KEYS, *corpus.LAMBDA_KEYS}


def test_keys_and_labels():
    assert FGA.key("0.25") == "fga_0.25" and FGA.display("0.25") == "FGA(0.25)" and JGA.display() == "JGA"
    assert split_key("fga_") == (FGA, "") and split_key("jga") == (JGA, None)
    assert split_key("fga") == (None, None) and split_key("jga_0.5") == (None, None) and split_key("") == (None, None)
    with pytest.raises(ValueError, match="takes λ"):
        FGA.key()
    with pytest.raises(ValueError, match="takes no λ"):
        JGA.key("0.5")
    assert repr(JGA).startswith("Metric(name='jga', label='JGA'") and "function" not in repr(JGA)


def test_importing_the_registry_imports_no_numpy():
    """metrics.reference (the pure-Python oracle the benchmarks time as a whole process) reads the names."""
    code = "import sys, metrics.reference, metrics.registry, metrics.signature; print('numpy' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


# --- Signature --------------------------------------------------------------------------------------


SCORING = "metrics:jga+m2+fga+sa+aga+rsa+f1|lambda:0.5,1|slots:30|rsa:macro|norm:off|t_err0:-1"


def test_the_signatures_stay_as_they_were():
    """The strings the CLIs, the exports and the golden files have carried since before the Signature type."""
    settings = ScoreSettings((0.5, 1.0), ("0.5", "1"))
    v = f"version:{__version__}"
    assert settings.signature() == f"{SCORING}|{v}"
    correlate = settings.as_signature(
        rating="mean",
        tie="none",
        resamples=1000,
        seed=0,
        resample_unit="dialogues",
        interval="fisher95+percentile95+bca95",
        difference="zou2007",
        adjust="holm",
    )
    expected = f"{SCORING}|{v}|rating:mean|tie:none|boot:1000|seed:0|resample:dialogues|ci:fisher95+percentile95+bca95"
    assert str(correlate) == expected + "|diff:zou2007|adjust:holm"
    calibrate = settings.as_signature(
        rating="mean", tie="none", resamples=200, folds=3, seed=0, resample_unit="dialogues", fit="grid+brent"
    )
    assert str(calibrate) == f"{SCORING}|{v}|rating:mean|tie:none|boot:200|folds:3|seed:0|resample:dialogues|fit:grid+brent"
    assert str(settings.as_signature(analysis_unit="system")) == f"{SCORING}|{v}|unit:system"
    agreement = Signature(agreement="ordinal", resamples=100, seed=1, interval="percentile95", weights="linear")
    assert str(agreement) == f"metrics|{v}|agreement:ordinal|boot:100|seed:1|ci:percentile95|weights:linear"
    assert (
        str(Signature(judge="majority-ties-out", resamples=10, seed=0)) == f"metrics|{v}|judge:majority-ties-out|boot:10|seed:0"
    )
    long = ScoreSettings(tuple(np.linspace(0, 5, 51)), tuple(f"{x:g}" for x in np.linspace(0, 5, 51)), 37, "micro", True)
    assert long.signature().startswith(
        "metrics:jga+m2+fga+sa+aga+rsa+f1|lambda:linspace:0:5:51|slots:37|rsa:micro|norm:lower+ws|"
    )


def test_a_signature_is_frozen_and_whole():
    signature = Signature(resamples=5)
    with pytest.raises(dataclasses.FrozenInstanceError):
        signature.resamples = 6  # type: ignore[misc]
    assert Signature(resamples=5) == signature and hash(Signature(resamples=5)) == hash(signature)
    with pytest.raises(ValueError, match="states their λ grid"):
        Signature(metrics=("jga",), lambdas="0.5")
    with pytest.raises(ValueError, match="belong to a signature with metrics"):
        Signature(slots=30)
    fields = [f.name for f in dataclasses.fields(Signature)]
    assert [name for name, _ in KEYS] == fields[fields.index("version") + 1 :]  # every option is printed, in field order
    assert len({key for _, key in KEYS}) == len(KEYS)


@pytest.mark.slow
def test_the_cli_signatures_come_from_the_type(tmp_path, fixtures):
    """``python -m metrics correlate`` and ``calibrate``: the JSON's "signature" (compared whole in the
    golden files, so no key is added) and the text footer are ``str(Signature)``."""
    corpus_path = fixtures / "fga_human_eval"
    ids = extract(load_dialogues([corpus_path])).dialogue_ids
    ratings = tmp_path / "votes.csv"
    with ratings.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["item", "annotator", "value"])
        writer.writerows([d, f"a{k}", int((i + k) % 3 > 0)] for i, d in enumerate(ids) for k in range(2))
    run = lambda *args: subprocess.run(  # noqa: E731
        [sys.executable, "-m", "metrics", *args], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    common = ["--ratings", str(ratings), "--bootstrap", "5", "--seed", "2"]
    correlate = json.loads(run("correlate", *common, "--lambdas", "0.5,1", "--json", str(corpus_path)).stdout)
    expected = ScoreSettings((0.5, 1.0), ("0.5", "1")).as_signature(
        rating="mean",
        tie="none",
        resamples=5,
        seed=2,
        resample_unit="dialogues",
        interval="jackknife_t95+percentile95+bca95",
        difference="jackknife_t_z_diff",
        adjust="holm",
        family="reference(jga,fga_0.5)",  # the declared comparisons (issue 26)
    )
    assert correlate["signature"] == str(expected)
    text = run("calibrate", *common, "--grid", "0:2:5", "--folds", "2", str(corpus_path)).stdout
    grid = np.linspace(0, 2, 5)
    expected = ScoreSettings(tuple(grid), tuple(f"{x:g}" for x in grid)).as_signature(
        rating="mean", tie="none", resamples=5, folds=2, seed=2, resample_unit="dialogues", fit="grid+brent"
    )
    assert text.splitlines()[-1] == f"note: signature: {expected}"
