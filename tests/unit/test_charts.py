"""Issue 27, items 2-4: the answers in pictures.  Each chart's Vega-Lite spec holds the analysis dict's
own numbers (the forest plot's r and intervals in order of r, the reference and the significant
differences flagged, the human ceiling's band; agreement with its conventional bands; annotators sorted
with a selection named ``annotator``; r(λ) with λ*, its interval and the JGA / turn-match lines), every
chart renders to PNG and SVG through vl-convert within 640 px, and degenerate inputs give a chart with a
note in words instead of an error."""

from __future__ import annotations

import re

import numpy as np
import pytest

from exports import charts

# --- helpers ---------------------------------------------------------------------------------------


def layers(chart) -> list[tuple[dict, list[dict]]]:
    """(mark, rows) of every layer of the chart's spec, nested layers flattened, data resolved."""
    spec = chart.to_dict()
    datasets = spec.get("datasets", {})

    def walk(node, data):
        data = node.get("data", data)
        if "layer" in node:
            out = []
            for child in node["layer"]:
                out += walk(child, data)
            return out
        mark = node["mark"] if isinstance(node["mark"], dict) else {"type": node["mark"]}
        rows = datasets.get(data["name"], []) if data and "name" in data else (data or {}).get("values", [])
        return [({**mark, "encoding": node.get("encoding", {})}, rows)]

    return walk(spec, None)


def marks(chart, kind: str) -> list[list[dict]]:
    return [rows for mark, rows in layers(chart) if mark["type"] == kind]


def subtitle(chart) -> str:
    title = chart.to_dict()["title"]
    lines = title.get("subtitle", [])
    return " ".join([lines] if isinstance(lines, str) else lines)


def rendered_size(chart) -> tuple[float, float]:
    """Render to PNG and SVG (vl-convert, offline) and return the SVG's width and height in px."""
    import vl_convert as vlc

    png = vlc.vegalite_to_png(chart.to_json(), scale=1)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    svg = vlc.vegalite_to_svg(chart.to_json())
    width, height = re.search(r'<svg[^>]*width="([\d.]+)"[^>]*height="([\d.]+)"', svg).groups()
    return float(width), float(height)


# --- a correlation dict in the correlate --json contract (hand-made: every number known) ------------


def correlation_dict(**changes) -> dict:
    rows = [
        ("jga", 0.40, [0.22, 0.55]),
        ("m2", 0.45, [0.28, 0.59]),
        ("fga_0.25", 0.50, [0.34, 0.63]),
        ("fga_0.5", 0.55, [0.40, 0.67]),
        ("sa", 0.20, [0.01, 0.38]),
        ("rsa", 0.10, [-0.10, 0.29]),
    ]
    result = {
        "n_dialogues": 100,
        "metrics": [
            {"metric": m, "n": 100, "pearson": r, "pearson_ci": ci, "ci_method": "fisher: Fisher z (unit: dialogues)"}
            for m, r, ci in rows
        ],
        "williams": [
            {"a": "m2", "b": "jga", "diff": 0.05, "diff_ci": [-0.05, 0.15], "p_value": 0.2, "p_holm": 0.4, "significant": False},
            {
                "a": "fga_0.5",
                "b": "jga",
                "diff": 0.15,
                "diff_ci": [0.03, 0.27],
                "p_value": 0.002,
                "p_holm": 0.008,
                "significant": True,
            },
            {
                "a": "sa",
                "b": "jga",
                "diff": -0.2,
                "diff_ci": [-0.35, -0.05],
                "p_value": 0.004,
                "p_holm": 0.012,
                "significant": True,
            },
            {
                "a": "rsa",
                "b": "jga",
                "diff": -0.3,
                "diff_ci": [-0.5, -0.1],
                "p_value": 0.03,
                "p_holm": 0.06,
                "significant": False,
            },
        ],
        "comparisons": {
            "family": "reference",
            "reference": "jga",
            "fga": "fga_0.5",
            "adjust": "holm",
            "size": 4,
            "text": "each metric against jga (FGA at λ 0.5), 4 comparisons; p: Holm",
        },
        "human_ceiling": {"r_max": 0.71, "ci": [0.63, 0.78]},
        "bootstrap": {"resamples": 100, "seed": 0, "resample": "dialogues"},
        "notes": [],
    }
    result.update(changes)
    return result


def test_forest_holds_every_r_and_interval_in_order_of_r():
    correlation = correlation_dict()
    chart = charts.forest_chart(correlation)
    points = marks(chart, "point")[0]
    assert [p["metric"] for p in points] == ["fga_0.5", "fga_0.25", "m2", "jga", "sa", "rsa"]  # by r, highest first
    by_name = {row["metric"]: row for row in correlation["metrics"]}
    for p in points:
        assert p["r"] == by_name[p["metric"]]["pearson"]
        assert [p["low"], p["high"]] == by_name[p["metric"]]["pearson_ci"]
    # the y axis is sorted in that order too
    y = next(mark["encoding"]["y"] for mark, _ in layers(chart) if mark["type"] == "point")
    assert y["sort"] == [p["label"] for p in points]
    whiskers = marks(chart, "rule")
    assert any(len(rows) == 6 and {r["metric"] for r in rows} == set(by_name) for rows in whiskers)
    assert "0.550 [0.400, 0.670]" in {p["text"] for p in points}


def test_forest_flags_the_reference_and_the_differences_after_holm():
    chart = charts.forest_chart(correlation_dict())
    status = {p["metric"]: p["status"] for p in marks(chart, "point")[0]}
    assert status == {
        "jga": "reference (jga)",
        "fga_0.5": "differs from jga after Holm",
        "sa": "differs from jga after Holm",
        "m2": "no significant difference from jga",
        "rsa": "no significant difference from jga",  # raw p 0.03, Holm 0.06: not flagged
        "fga_0.25": "not among the declared comparisons",
    }
    labels = {p["metric"]: p["label"] for p in marks(chart, "point")[0]}
    assert labels["jga"] == "jga (reference)"
    spec = chart.to_dict()
    assert "'jga (reference)' ? 'bold'" in str(spec)  # the reference's axis label is bold
    # filled where it differs, hollow where it does not: the fill scale's range
    fill = next(mark["encoding"]["fill"] for mark, _ in layers(chart) if mark["type"] == "point")
    fills = dict(zip(fill["scale"]["domain"], fill["scale"]["range"]))
    assert fills["no significant difference from jga"] == "white" and fills["differs from jga after Holm"] != "white"


def test_forest_shades_the_human_ceiling_with_its_interval():
    chart = charts.forest_chart(correlation_dict())
    band = marks(chart, "rect")[0]
    assert band[0]["low"] == 0.63 and band[0]["high"] == 0.78 and band[0]["r"] == 0.71
    assert any("human ceiling 0.710 [0.630, 0.780]" == row.get("text") for rows in marks(chart, "text") for row in rows)


def test_forest_fits_beside_text_and_renders():
    width, height = rendered_size(charts.forest_chart(correlation_dict()))
    assert width <= charts.MAX_WIDTH and height < 900


def test_forest_all_pairs_family_reads_the_difference_as_metric_minus_reference():
    correlation = correlation_dict()
    correlation["comparisons"] = {"family": "all", "reference": None, "adjust": "bonferroni", "text": "every pair"}
    correlation["williams"] = [
        {
            "a": "jga",
            "b": "fga_0.5",
            "diff": -0.15,
            "diff_ci": [-0.27, -0.03],
            "p_value": 0.001,
            "p_bonferroni": 0.01,
            "significant": True,
        }
    ]
    points = {p["metric"]: p for p in marks(charts.forest_chart(correlation), "point")[0]}
    assert points["jga"]["status"] == "reference (jga)"  # JGA, measured, is the reference of an all-pairs family
    assert points["fga_0.5"]["status"] == "differs from jga after Bonferroni"
    assert points["fga_0.5"]["diff"] == pytest.approx(0.15) and points["fga_0.5"]["diff_ci"] == "[0.030, 0.270]"


def test_forest_degenerate_inputs_render_with_notes():
    correlation = correlation_dict(human_ceiling={"r_max": None, "ci": None, "note": "the ceiling needs at least 2 dialogues"})
    correlation["metrics"][1]["pearson_ci"] = None  # m2: no interval
    correlation["metrics"][5].update(pearson=None, pearson_ci=None, note="constant values: correlation undefined")
    chart = charts.forest_chart(correlation)
    points = {p["metric"]: p for p in marks(chart, "point")[0]}
    assert "rsa" not in points and points["m2"]["low"] is None and points["m2"]["text"] == "0.450 (no interval)"
    text = subtitle(chart)
    assert "No interval for m2" in text and "No human ceiling: the ceiling needs" in text and "rsa: no correlation" in text
    assert not marks(chart, "rect")  # no band without a ceiling
    rendered_size(chart)
    # a ceiling without an interval: the line only, said so
    no_ci = charts.forest_chart(correlation_dict(human_ceiling={"r_max": 0.7, "ci": None}))
    assert not marks(no_ci, "rect") and "has no interval" in subtitle(no_ci)
    rendered_size(no_ci)
    # nothing to draw at all
    empty = correlation_dict(metrics=[{"metric": "jga", "n": 2, "pearson": None, "note": "fewer than 3 observations"}])
    chart = charts.forest_chart(empty)
    assert "No metric has a correlation" in str(chart.to_dict())
    rendered_size(chart)


# --- agreement --------------------------------------------------------------------------------------


def agreement_dict() -> dict:
    def report(alpha, kappa, ac1, ci):
        return {
            "n_items": 50,
            "krippendorff_alpha": alpha,
            "fleiss_kappa": kappa,
            "gwet_ac1": ac1,
            "ci": {"krippendorff_alpha": ci[0], "fleiss_kappa": ci[1], "gwet_ac1": ci[2]},
            "notes": [],
            "annotators": [
                {"annotator": "a1", "n_votes": 50, "n_compared": 48, "agree_with_others": 0.8, "kappa_with_others": 0.6},
                {"annotator": "a2", "n_votes": 50, "n_compared": 47, "agree_with_others": 0.5, "kappa_with_others": 0.05},
                {"annotator": "a3", "n_votes": 50, "n_compared": 49, "agree_with_others": 0.7, "kappa_with_others": 0.45},
            ],
        }

    return {
        "signature": "s",
        "notes": [],
        "questions": {
            "satisfied": report(0.41, 0.40, 0.52, ([0.28, 0.53], [0.27, 0.52], [0.40, 0.63])),
            "correct": report(0.72, 0.71, 0.85, ([0.61, 0.81], [0.60, 0.80], [0.77, 0.91])),
        },
    }


def test_agreement_chart_holds_each_coefficient_with_its_interval():
    agreement = agreement_dict()
    chart = charts.agreement_chart(agreement)
    dots = marks(chart, "circle")[0]
    assert len(dots) == 6
    names = {"krippendorff_alpha": "Krippendorff's α", "fleiss_kappa": "Fleiss' κ", "gwet_ac1": "Gwet's AC1"}
    for q, report in agreement["questions"].items():
        for key, name in names.items():
            (dot,) = [d for d in dots if d["question"] == q and d["coefficient"] == name]
            assert dot["value"] == report[key] and [dot["low"], dot["high"]] == report["ci"][key]


def test_agreement_chart_shades_and_names_the_conventions():
    chart = charts.agreement_chart(agreement_dict())
    bands = [row["band"] for rows in marks(chart, "text") for row in rows if "band" in row]
    assert bands == ["slight", "fair", "moderate", "substantial", "almost perfect"]
    rects = [row for rows in marks(chart, "rect") for row in rows]
    assert sorted((r["low"], r["high"]) for r in rects) == [(0.0, 0.2), (0.2, 0.4), (0.4, 0.6), (0.6, 0.8), (0.8, 1.0)]
    lines = sorted(row["at"] for rows in marks(chart, "rule") for row in rows if "at" in row)
    assert lines == [0.667, 0.8]
    text = subtitle(chart)
    assert "Landis & Koch (1977)" in text and "Krippendorff's (2004) 0.667 / 0.8" in text and "Conventions, not tests" in text
    only_alpha = charts.agreement_chart(agreement_dict(), bands="krippendorff")
    assert not marks(only_alpha, "rect") and "Landis" not in subtitle(only_alpha)
    width, _ = rendered_size(chart)
    assert width <= charts.MAX_WIDTH


def test_agreement_chart_one_question_and_undefined_coefficients_render_with_notes():
    report = agreement_dict()["questions"]["satisfied"]
    report.update(krippendorff_alpha=None, fleiss_kappa=None, notes=["Krippendorff's α: all pairable votes have the same answer"])
    report["ci"] = {"krippendorff_alpha": None, "fleiss_kappa": None, "gwet_ac1": None}
    chart = charts.agreement_chart(report)  # one question's report, not agreement_all's
    dots = marks(chart, "circle")[0]
    assert [(d["coefficient"], d["value"]) for d in dots] == [("Gwet's AC1", 0.52)]
    text = subtitle(chart)
    assert "Krippendorff's α not drawn (all pairable votes have the same answer)" in text
    assert "Fleiss' κ not drawn (undefined)" in text and "Gwet's AC1 has no interval" in text
    rendered_size(chart)
    report.update(gwet_ac1=None)
    assert "No agreement coefficient is defined" in str(charts.agreement_chart(report).to_dict())
    rendered_size(charts.agreement_chart(report))


def test_annotator_chart_sorts_so_the_outlier_stands_out_and_is_selectable():
    agreement = agreement_dict()
    chart = charts.annotator_chart(agreement, "satisfied")
    bars = marks(chart, "bar")[0]
    assert [b["annotator"] for b in bars] == ["a2", "a3", "a1"]  # least agreeing first
    assert [b["value"] for b in bars] == [0.05, 0.45, 0.6]
    spec = chart.to_dict()
    (param,) = spec["params"]
    assert param["name"] == "annotator" and param["select"]["type"] == "point" and param["select"]["fields"] == ["annotator"]
    y = next(mark["encoding"]["y"] for mark, _ in layers(chart) if mark["type"] == "bar")
    assert y["sort"] == ["a2", "a3", "a1"]
    median = [row["median"] for rows in marks(chart, "rule") for row in rows]
    assert median == [0.45]
    share = charts.annotator_chart(agreement, "satisfied", measure="agree_with_others")
    assert [b["value"] for b in marks(share, "bar")[0]] == [0.5, 0.7, 0.8]
    width, _ = rendered_size(chart)
    assert width <= charts.MAX_WIDTH


def test_annotator_chart_degenerate_inputs_render_with_notes():
    agreement = agreement_dict()
    agreement["questions"]["satisfied"]["annotators"][0]["kappa_with_others"] = None
    chart = charts.annotator_chart(agreement, "satisfied")
    assert [b["annotator"] for b in marks(chart, "bar")[0]] == ["a2", "a3"] and "Not drawn" in subtitle(chart)
    rendered_size(chart)
    missing = charts.annotator_chart(agreement, "nope")
    assert "no agreement report for question 'nope'" in str(missing.to_dict())
    rendered_size(missing)


# --- r(λ) -------------------------------------------------------------------------------------------


def calibration_dict(**changes) -> dict:
    grid = np.linspace(0, 10, 101)
    r = 0.4 + 0.2 * grid * np.exp(1 - grid / 0.5) / 0.5 / np.e * 0.5
    result = {
        "best_lambda": 0.5,
        "r_best": float(r.max()),
        "best_at_bound": False,
        "ci_lambda": [0.25, 1.3],
        "ci_r": [0.4, 0.6],
        "r_jga": 0.4,
        "r_turn": 0.42,
        "cv_r": 0.48,
        "curve": [{"lambda": float(x), "r": float(y), "ci": [float(y) - 0.1, float(y) + 0.1]} for x, y in zip(grid, r)],
        "notes": [],
    }
    result.update(changes)
    return result


def test_r_lambda_chart_marks_lambda_star_its_interval_and_the_two_limits():
    calibration = calibration_dict()
    chart = charts.r_lambda_chart(calibration)
    line = marks(chart, "line")[0]
    assert [p["r"] for p in line] == [p["r"] for p in calibration["curve"]]
    area = marks(chart, "area")[0]
    assert [[p["low"], p["high"]] for p in area] == [p["ci"] for p in calibration["curve"]]
    (span,) = marks(chart, "rect")
    assert (span[0]["lo"], span[0]["hi"]) == (0.25, 1.3)
    rules = [row for rows in marks(chart, "rule") for row in rows]
    assert {"lambda": 0.5, "r": calibration["r_best"], "text": "λ* 0.500"} in rules
    labels = {row["text"]: row["r"] for rows in marks(chart, "text") for row in rows if "lambda" not in row}
    assert labels == {"JGA (λ = 0) 0.400": 0.4, "turn match (λ → ∞) 0.420": 0.42}
    assert "λ* = 0.500 [0.250, 1.300]" in subtitle(chart) and "Cross-validated r 0.480" in subtitle(chart)
    width, _ = rendered_size(chart)
    assert width <= charts.MAX_WIDTH
    linear = charts.r_lambda_chart(calibration, scale="linear")
    assert "symlog" not in str(linear.to_dict())
    rendered_size(linear)


def test_r_lambda_chart_open_interval_runs_to_the_grid_end_with_a_note():
    chart = charts.r_lambda_chart(calibration_dict(ci_lambda=[0.25, None]))
    (span,) = marks(chart, "rect")
    assert (span[0]["lo"], span[0]["hi"]) == (0.25, 10.0)
    assert "upper end of λ*'s interval is open: beyond the grid's end λ = 10" in subtitle(chart)
    assert any(row.get("text") == "open →" for rows in marks(chart, "text") for row in rows)
    assert "λ* = 0.500 [0.250, open]" in subtitle(chart)
    rendered_size(chart)


def test_r_lambda_chart_without_bootstrap_or_limits_renders_with_notes():
    calibration = calibration_dict(ci_lambda=None, ci_r=None, r_turn=None, best_at_bound=True)
    for point in calibration["curve"]:
        point["ci"] = None
    chart = charts.r_lambda_chart(calibration)
    assert not marks(chart, "rect") and not marks(chart, "area")
    text = subtitle(chart)
    assert "No interval for λ*" in text and "No band" in text and "widen the grid" in text
    labels = [row["text"] for rows in marks(chart, "text") for row in rows if "lambda" not in row]
    assert labels == ["JGA (λ = 0) 0.400"]
    rendered_size(chart)
    flat = calibration_dict(curve=[{"lambda": 0.0, "r": None, "ci": None}])
    assert "No r(λ) curve" in str(charts.r_lambda_chart(flat).to_dict())
    rendered_size(charts.r_lambda_chart(flat))


# --- the real contracts: a simulated study through the analysis functions ---------------------------


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    from bench.corpus import write as write_corpus
    from formats import load_dialogues
    from formats.tidy import votes_from_rows
    from metrics.analysis import AnalysisSettings, metrics_summary, per_dialogue_metrics, votes_summary
    from metrics.corpus import ScoreSettings

    path = tmp_path_factory.mktemp("charts") / "corpus.json"
    write_corpus(path, 60)
    dialogues = load_dialogues([path])
    ids, values = per_dialogue_metrics(dialogues, ScoreSettings((0.5,), ("0.5",)))
    rng = np.random.default_rng(1)
    z = (values["fga_0.5"] - values["fga_0.5"].mean()) / values["fga_0.5"].std()
    rows = []
    for i, d in enumerate(ids):
        truth = 3 + z[i] + rng.normal(0, 0.7)
        for a in range(4):
            value = int(rng.integers(1, 6)) if a == 3 else int(np.clip(round(truth + rng.normal(0, 0.6)), 1, 5))
            rows.append((d, f"ann{a + 1}", "satisfied", str(value), "sys"))
    table = votes_from_rows(rows)
    settings = AnalysisSettings(resamples=60, grid=(0.0, 10.0, 101))
    result = votes_summary(table, settings)
    result.update(metrics_summary({"sys": dialogues}, table, settings, question="satisfied"))
    return result


def test_charts_of_a_simulated_study_hold_its_numbers_and_render(study):
    correlation = study["correlation"]
    forest = charts.forest_chart(correlation)
    points = marks(forest, "point")[0]
    rs = [p["r"] for p in points]
    assert rs == sorted(rs, reverse=True) and len(points) == len(correlation["metrics"])
    assert {p["metric"]: p["r"] for p in points} == {m["metric"]: m["pearson"] for m in correlation["metrics"]}
    flagged = {p["metric"] for p in points if p["differs"]}
    assert flagged == {w["a"] for w in correlation["williams"] if w.get("significant")}
    assert marks(forest, "rect")[0][0]["r"] == correlation["human_ceiling"]["r_max"]
    annotators = marks(charts.annotator_chart(study["agreement"], "satisfied"), "bar")[0]
    assert annotators[0]["annotator"] == "ann4"  # the one voting at random is the outlier, drawn first
    for chart in (
        forest,
        charts.agreement_chart(study["agreement"]),
        charts.annotator_chart(study["agreement"], "satisfied"),
        charts.r_lambda_chart(study["calibration"]),
    ):
        width, height = rendered_size(chart)
        assert width <= charts.MAX_WIDTH and height < 900


def test_existing_chart_functions_keep_working(study):
    assert charts.png_bytes(charts.r_lambda_chart(study["calibration"]))[:4] == b"\x89PNG"
    scatter = charts.metric_rating_chart(study["correlation"], "jga")
    assert len(marks(scatter, "circle")[0]) == len(study["correlation"]["per_dialogue"])
    assert charts.svg_text(scatter).startswith("<svg")
