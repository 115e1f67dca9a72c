"""Aggregation, agreement, correlation and λ calibration: published vectors, a simulated
study with a known λ, degenerate data, and the three CLIs' JSON contracts."""

from __future__ import annotations

import csv
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import norm, pearsonr

from bench.corpus import write as write_corpus
from formats import load_dialogues
from formats.tidy import votes_from_rows
from metrics import agreement
from metrics.aggregate import majority_labels, unit_table
from metrics.analysis import agreement_all
from metrics.calibrate import FgaTerms, calibrate, parse_grid
from metrics.correlation import Ratings, correlate_one, weighted_pearson, williams_test
from metrics.turnstats import extract
from tests.conftest import REPO

# Krippendorff (2011), "Computing Krippendorff's alpha-reliability", example C (4 observers, 12 units).
KRIPPENDORFF_2011 = {
    "A": "1 2 3 3 2 1 4 1 2 . . .",
    "B": "1 2 3 3 2 2 4 1 2 5 . 3",
    "C": ". 3 3 3 2 3 4 2 2 5 1 .",
    "D": "1 2 3 3 2 4 4 1 2 5 1 .",
}
# Fleiss (1971): 30 patients, 6 psychiatrists each, 5 diagnoses (as in R irr's `diagnoses`).
FLEISS_1971 = [
    "444444",
    "222555",
    "233335",
    "555555",
    "222444",
    "113333",
    "333355",
    "113334",
    "114444",
    "555555",
    "144444",
    "124444",
    "222333",
    "144444",
    "224445",
    "333335",
    "111455",
    "111112",
    "224444",
    "133555",
    "555555",
    "244444",
    "224555",
    "114444",
    "144445",
    "222224",
    "111155",
    "224444",
    "133333",
    "555555",
]
# Wikipedia's Fleiss' kappa example: 10 subjects, 14 raters, counts per category.
WIKIPEDIA_FLEISS = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]


def rows_from_observers(observers: dict[str, str], question: str = "q") -> list[tuple]:
    return [(f"u{u}", name, question, v) for name, line in observers.items() for u, v in enumerate(line.split()) if v != "."]


def rows_from_counts(counts: list[list[int]]) -> list[tuple]:
    rows = []
    for u, row in enumerate(counts):
        rater = 0
        for category, n in enumerate(row):
            for _ in range(n):
                rows.append((f"s{u}", f"r{rater}", "q", str(category + 1)))
                rater += 1
    return rows


# --- agreement: published vectors ---------------------------------------------------------


@pytest.mark.parametrize("level, expected", [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849), ("ratio", 0.797)])
def test_krippendorff_2011(level, expected):
    table = unit_table(votes_from_rows(rows_from_observers(KRIPPENDORFF_2011)).votes)
    assert round(agreement.krippendorff_alpha(table, level), 3) == expected


def test_gwet_ac1_and_generalised_fleiss_on_unequal_votes():
    """Gwet (2014)'s 4 raters × 12 units (irrCAC's raw_4raters): pa .8182, AC1 .7754, Fleiss .7612."""
    gwet = dict(KRIPPENDORFF_2011, B="1 2 3 3 2 2 4 1 2 5 . .", C=". 3 3 3 2 3 4 2 2 5 1 3")
    counts = unit_table(votes_from_rows(rows_from_observers(gwet)).votes).counts
    assert round(agreement.percent_agreement(counts), 4) == 0.8182
    assert round(agreement.gwet_ac1(counts), 4) == 0.7754
    assert round(agreement.fleiss_kappa(counts), 4) == 0.7612


def test_fleiss_1971_and_wikipedia():
    rows = [(f"p{u}", f"r{r}", "q", code) for u, line in enumerate(FLEISS_1971) for r, code in enumerate(line)]
    table = unit_table(votes_from_rows(rows).votes)
    assert round(agreement.fleiss_kappa(table.counts), 4) == 0.4302
    wiki = unit_table(votes_from_rows(rows_from_counts(WIKIPEDIA_FLEISS)).votes)
    assert round(agreement.fleiss_kappa(wiki.counts), 3) == 0.210


def test_generalised_fleiss_equals_statsmodels_when_counts_are_equal():
    from statsmodels.stats.inter_rater import fleiss_kappa

    counts = np.array(WIKIPEDIA_FLEISS, dtype=float)
    pa = agreement.percent_agreement(counts)
    pi = counts.sum(axis=0) / counts.sum()
    generalised = (pa - (pi**2).sum()) / (1 - (pi**2).sum())
    assert generalised == pytest.approx(fleiss_kappa(counts)) == pytest.approx(agreement.fleiss_kappa(counts))


def test_cohen_wikipedia_in_the_report():
    """Wikipedia's Cohen example: 20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no gives κ = 0.4."""
    pairs = [("1", "1")] * 20 + [("1", "0")] * 5 + [("0", "1")] * 10 + [("0", "0")] * 15
    rows = [(f"i{k}", who, "ok", value) for k, pair in enumerate(pairs) for who, value in zip(("a", "b"), pair)]
    report = agreement_all(votes_from_rows(rows), resamples=0)["questions"]["ok"]
    assert report["cohen_kappa_pairwise"] == [{"a": "a", "b": "b", "n": 50, "kappa": 0.4}]
    assert report["percent_agreement"] == pytest.approx(0.7)


def test_interval_alpha_closed_form_matches_the_package(monkeypatch):
    rng = np.random.default_rng(0)
    rows = [(f"u{u}", f"a{a}", "q", str(int(rng.integers(1, 8)))) for u in range(40) for a in range(3) if rng.random() < 0.9]
    table = unit_table(votes_from_rows(rows).votes)
    package = agreement.krippendorff_alpha(table, "interval")
    monkeypatch.setattr(agreement, "ALPHA_MAX_BYTES", 0)  # force the many-values path
    assert agreement.krippendorff_alpha(table, "interval") == pytest.approx(package)
    with pytest.raises(agreement.Undefined, match="MB"):
        agreement.krippendorff_alpha(table, "nominal")


# --- agreement: annotators, gold, bootstrap, degenerate data -------------------------------


def test_annotator_rows_and_gold():
    rows = [
        ("i1", "a", "q", "1"),
        ("i1", "b", "q", "1"),
        ("i1", "c", "q", "0"),
        ("i2", "a", "q", "0"),
        ("i2", "b", "q", "0"),
        ("i2", "c", "q", "0"),
        ("i3", "a", "q", "1"),
        ("i3", "b", "q", "0"),
        ("i3", "c", "q", "1"),
    ]
    gold = {(("i1", ""), "q"): "1", (("i2", ""), "q"): "1"}
    report = agreement_all(votes_from_rows(rows), resamples=0, gold=gold)["questions"]["q"]
    by_name = {row["annotator"]: row for row in report["annotators"]}
    # c vs the majority of a and b: i1 others (1,1) -> 1, c says 0; i2 -> 0 agrees; i3 others tie -> skipped.
    assert by_name["c"]["n_compared"] == 2 and by_name["c"]["agree_with_others"] == 0.5
    assert by_name["a"]["gold_accuracy"] == 0.5 and by_name["a"]["n_gold"] == 2


@pytest.mark.slow
def test_bootstrap_ci_brackets_the_estimate():
    rows = [(f"i{u}", f"a{a}", "q", str(int((u * 7 + a * (u % 3 == 0)) % 2))) for u in range(60) for a in range(3)]
    report = agreement_all(votes_from_rows(rows), resamples=300, seed=1)["questions"]["q"]
    for key in ("percent_agreement", "krippendorff_alpha", "fleiss_kappa", "gwet_ac1"):
        low, high = report["ci"][key]
        assert low <= report[key] <= high, key
    again = agreement_all(votes_from_rows(rows), resamples=300, seed=1)["questions"]["q"]
    assert again["ci"] == report["ci"]  # seeded: reproducible


def test_degenerate_data_gets_stated_results():
    one = agreement_all(votes_from_rows([("i1", "a", "q", "1"), ("i2", "a", "q", "0")]), resamples=50)["questions"]["q"]
    assert one["krippendorff_alpha"] is None and one["fleiss_kappa"] is None and one["percent_agreement"] is None
    assert any("only one annotator" in n for n in one["notes"])
    assert any("no item has two or more votes" in n for n in one["notes"])
    same = [(f"i{u}", a, "q", "1") for u in range(5) for a in ("a", "b", "c")]
    same_report = agreement_all(votes_from_rows(same), resamples=50)["questions"]["q"]
    assert same_report["percent_agreement"] == 1.0 and same_report["gwet_ac1"] == 1.0
    assert same_report["fleiss_kappa"] is None and same_report["krippendorff_alpha"] is None
    assert any("chance agreement is 1" in n for n in same_report["notes"])
    assert same_report["cohen_kappa_pairwise"][0]["kappa"] is None
    # items with a single vote are left out and counted
    mixed = [("i1", "a", "q", "1"), ("i1", "b", "q", "1"), ("i2", "a", "q", "0"), ("i3", "b", "q", "1"), ("i3", "a", "q", "0")]
    mixed_report = agreement_all(votes_from_rows(mixed), resamples=0)["questions"]["q"]
    assert mixed_report["n_pairable_items"] == 2 and mixed_report["percent_agreement"] == 0.5
    assert any("1 item(s) with a single vote" in n for n in mixed_report["notes"])
    json.dumps(same_report, allow_nan=False)  # never a NaN in the JSON


def test_tie_policies():
    rows = [("i1", "a", "q", "1"), ("i1", "b", "q", "0"), ("i2", "a", "q", "1"), ("i2", "b", "q", "1")]
    table = unit_table(votes_from_rows(rows).votes)
    none = majority_labels(table)
    assert none.labels == [None, "1"] and none.n_ties == 1
    assert majority_labels(table, "fixed:0").labels == ["0", "1"]
    picks = {majority_labels(table, "random", seed).labels[0] for seed in range(20)}
    assert picks == {"0", "1"}
    assert majority_labels(table, "random", 5).labels == majority_labels(table, "random", 5).labels
    with pytest.raises(ValueError, match="tie policy"):
        majority_labels(table, "fixed:maybe")


# --- correlation -------------------------------------------------------------------------


def test_pearson_scipy_docstring_example_with_fisher_ci():
    x, y = np.array([1, 2, 3, 4, 5, 6, 7.0]), np.array([10, 9, 2.5, 6, 4, 3, 2])
    row = correlate_one(x, y, None)
    assert row["pearson"] == pytest.approx(-0.828503883588428)
    assert pearsonr(x, y).pvalue == pytest.approx(0.021280260007523286)  # scipy's t-test (n − 2 df)
    z, se = math.atanh(row["pearson"]), 1 / math.sqrt(len(x) - 3)
    assert row["pearson_ci"] == pytest.approx([math.tanh(z - 1.959963984540054 * se), math.tanh(z + 1.959963984540054 * se)])
    # The row's p was scipy's t-test above; it is now the test its Fisher interval inverts (z·√(n − 3) against
    # the normal), so that interval and p tell one story (the t-test could say p < 0.05 beside an interval
    # that holds 0)
    assert row["p_value"] == pytest.approx(2 * norm.sf(abs(z) / se))
    assert row["p_value"] == pytest.approx(0.01795, abs=1e-5)


def test_williams_published_examples():
    t, p = williams_test(0.65, 0.55, 0.3, 50)
    assert p / 2 == pytest.approx(0.20928617286753592, rel=1e-9)  # nlp-williams (Graham & Baldwin 2014) README
    t, p = williams_test(0.4, 0.5, 0.1, 103)
    assert round(t, 2) == -0.89 and round(p, 2) == 0.37  # psych::r.test(103, .4, .5, .1)


def test_weighted_pearson_equals_pearson_on_the_resample():
    rng = np.random.default_rng(2)
    x, y = rng.random(30), rng.random(30)
    draws = rng.integers(0, 30, 30)
    weights = np.bincount(draws, minlength=30)[None, :].astype(float)
    r = weighted_pearson(x, np.ones(30), y, y**2, weights)[0]
    assert r == pytest.approx(np.corrcoef(x[draws], y[draws])[0, 1])


# --- calibration: a simulated study with a known λ ------------------------------------------


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("corpus") / "corpus.json"
    write_corpus(path, 300)
    return path


@pytest.mark.slow
def test_calibration_recovers_a_known_lambda(corpus):
    stats = extract(load_dialogues([corpus]))
    terms = FgaTerms.from_statistics(stats, stats.dialogue_ids)
    truth = terms.fga([0.5])[:, 0]
    ratings = truth + np.random.default_rng(1).normal(0, 0.03, truth.size)
    result = calibrate(
        terms,
        Ratings(stats.dialogue_ids, np.arange(truth.size), ratings, "mean", []),
        parse_grid("0:10:501"),
        resamples=200,
        folds=5,
        seed=0,
    )
    low, high = result["ci_lambda"]
    assert low <= 0.5 <= high and high - low < 0.2
    assert result["r_best"] > result["r_jga"] and result["r_best"] > result["r_turn"]
    assert result["ci_r"][0] <= result["r_best"] <= result["ci_r"][1]
    assert result["cv_r"] == pytest.approx(result["r_best"], abs=0.01)
    assert result["at_bound"] == 0.0 and not result["best_at_bound"]
    assert len(result["curve"]) == 501 and result["curve"][0]["lambda"] == 0.0
    assert result["curve"][0]["r"] == pytest.approx(result["r_jga"])
    assert result["forgetting"]["turns_to_forget"] == pytest.approx(-math.log(0.05) / result["best_lambda"])


@pytest.mark.slow
def test_calibration_with_jga_like_ratings_lands_on_the_lower_bound(corpus):
    stats = extract(load_dialogues([corpus]))
    terms = FgaTerms.from_statistics(stats, stats.dialogue_ids)
    jga = terms.fga([0.0])[:, 0]
    result = calibrate(
        terms, Ratings(stats.dialogue_ids, np.arange(jga.size), jga, "mean", []), parse_grid("0:5:51"), resamples=50, folds=3
    )
    assert result["best_lambda"] < 0.01 and result["r_best"] == pytest.approx(1.0)
    assert result["best_at_bound"] and result["at_bound"] == 1.0


def test_grid_parsing():
    assert parse_grid("0:10:1001").size == 1001
    for bad in ("0:1", "1:0:5", "0:1:1", "a:b:c", "-1:1:3"):
        with pytest.raises(ValueError, match="grid"):
            parse_grid(bad)


# --- the three CLIs ------------------------------------------------------------------------


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "metrics", *args], cwd=REPO, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def ratings_csv(corpus, tmp_path_factory) -> Path:
    """Three annotators' 1/0 satisfaction votes, more likely 1 the higher FGA(0.5) — a votes export's columns."""
    stats = extract(load_dialogues([corpus]))
    fga = FgaTerms.from_statistics(stats, stats.dialogue_ids).fga([0.5])[:, 0]
    rng = np.random.default_rng(3)
    path = tmp_path_factory.mktemp("ratings") / "votes.csv"
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["item", "condition", "annotator", "question", "value", "comment"])
        for i, dialogue_id in enumerate(stats.dialogue_ids):
            for a in range(3):
                writer.writerow([dialogue_id, "somdst", f"ann{a}", "satisfied", int(rng.random() < fga[i]), "=cmd"])
    return path


@pytest.mark.slow
def test_agreement_cli_contract(ratings_csv):
    result = run("agreement", str(ratings_csv), "--json", "--bootstrap", "100")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    report = data["questions"]["satisfied"]
    for key in (
        "n_items",
        "n_annotators",
        "percent_agreement",
        "krippendorff_alpha",
        "fleiss_kappa",
        "gwet_ac1",
        "cohen_kappa_pairwise",
        "annotators",
        "notes",
    ):
        assert key in report
    assert report["n_items"] == 300 and report["n_annotators"] == 3 and len(report["cohen_kappa_pairwise"]) == 3
    assert "agreement:nominal" in data["signature"]
    text = run("agreement", str(ratings_csv), "--bootstrap", "0")
    assert "Krippendorff's alpha" in text.stdout and text.returncode == 0


@pytest.mark.slow
def test_correlate_cli_contract(ratings_csv, corpus):
    result = run("correlate", "--ratings", str(ratings_csv), "--lambdas", "0.5,1", "--bootstrap", "200", "--json", str(corpus))
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert {"signature", "n_dialogues", "metrics", "williams", "human_ceiling"} <= set(data)
    names = [row["metric"] for row in data["metrics"]]
    assert names == ["jga", "m2", "fga_0.5", "fga_1", "sa", "aga", "rsa", "f1"]
    fga = next(row for row in data["metrics"] if row["metric"] == "fga_0.5")
    assert {"pearson", "pearson_ci", "p_value", "bootstrap_ci", "spearman", "kendall"} <= set(fga)
    assert fga["pearson_ci"][0] < fga["pearson"] < fga["pearson_ci"][1] and fga["p_value"] < 0.001
    assert fga["pearson"] > next(row["pearson"] for row in data["metrics"] if row["metric"] == "jga")
    assert len(data["williams"]) == 6 and data["n_dialogues"] == 300  # the declared family: 6 metrics against jga
    assert data["human_ceiling"]["annotator_vs_rest"]["mean_pearson"] is not None and "rating:mean" in data["signature"]
    assert 0 < data["human_ceiling"]["r_max"] <= 1
    pairs = json.loads(
        run("correlate", "--ratings", str(ratings_csv), "--rating", "pairs", "--bootstrap", "0", "--json", str(corpus)).stdout
    )
    assert pairs["n_ratings"] == 900 and pairs["metrics"][0]["bootstrap_ci"] is None


@pytest.mark.slow
def test_calibrate_cli_contract_and_plot(ratings_csv, corpus, tmp_path):
    plot = tmp_path / "r_lambda.png"
    result = run(
        "calibrate",
        "--ratings",
        str(ratings_csv),
        "--grid",
        "0:10:101",
        "--bootstrap",
        "100",
        "--folds",
        "4",
        "--plot",
        str(plot),
        "--json",
        str(corpus),
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    for key in (
        "best_lambda",
        "r_best",
        "ci_lambda",
        "ci_r",
        "cv_r",
        "at_bound",
        "curve",
        "r_jga",
        "r_turn",
        "n_dialogues",
        "signature",
    ):
        assert key in data, key
    assert [p["lambda"] for p in data["curve"]] == pytest.approx(np.linspace(0, 10, 101).tolist())
    assert data["r_best"] >= max(p["r"] for p in data["curve"]) - 1e-12
    assert "lambda:linspace:0:10:101" in data["signature"] and "folds:4" in data["signature"]
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and plot.stat().st_size > 10_000


@pytest.mark.slow
def test_cli_errors_are_one_line(ratings_csv, corpus, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("item,annotator,question,value\nd1,a,q,1\nd2,,q,1\n")
    result = run("agreement", str(bad))
    assert result.returncode == 2 and result.stderr.strip() == f"error: {bad}:line 3: empty annotator"
    missing = tmp_path / "missing.csv"
    missing.write_text("item,value\nd1,1\n")
    result = run("correlate", "--ratings", str(missing), str(corpus))
    assert result.returncode == 2 and "missing column(s) annotator" in result.stderr and "Traceback" not in result.stderr
    other = tmp_path / "other.csv"
    other.write_text("item,annotator,value\nnot-a-dialogue,a,1\n")
    result = run("calibrate", "--ratings", str(other), str(corpus))
    assert result.returncode == 2 and "no rated item matches" in result.stderr
    constant = tmp_path / "constant.csv"
    ids = [row["item"] for row in csv.DictReader(ratings_csv.open())][:30]
    constant.write_text("item,annotator,value\n" + "".join(f"{d},a,1\n" for d in ids))
    result = run("calibrate", "--ratings", str(constant), str(corpus))
    assert result.returncode == 2 and "not all the same" in result.stderr
    result = run("calibrate", "--ratings", str(ratings_csv), "--grid", "5:1:3", str(corpus))
    assert result.returncode == 2 and "grid" in result.stderr


@pytest.mark.slow
def test_one_presentation_for_the_cli_the_report_and_the_page(ratings_csv, corpus):
    """The CLI's text is the metrics.present tables of its own JSON, which the report and the page lay out too."""
    from metrics import present

    for command, table in (
        ("agreement", present.agreement_table),
        ("correlate", present.correlation_table),
        ("calibrate", present.calibration_table),
    ):
        args = (
            [command, str(ratings_csv), "--bootstrap", "20"]
            if command == "agreement"
            else [
                command,
                "--ratings",
                str(ratings_csv),
                "--bootstrap",
                "20",
                "--lambdas",
                "0.5",
                "--grid",
                "0:5:11",
                str(corpus),
            ]
        )
        if command == "correlate":
            args.remove("--grid"), args.remove("0:5:11")
        if command == "calibrate":
            args.remove("--lambdas"), args.remove("0.5")
        as_json, as_text = json.loads(run(*args, "--json").stdout), run(*args).stdout
        expected = table(as_json).to_text()
        assert expected in as_text and expected.splitlines()[0] in (
            "Agreement",
            "Metrics against human ratings",
            "λ calibration for FGA",
        )
