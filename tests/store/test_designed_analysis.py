"""Issue 29: a designed study's analysis reports the k-independent target (``metrics.analysis.corrected_summary``):
each metric's correlation with the dialogue's expected rating, corrected for the reliability measured on the
overlap subset, with a jackknife interval over dialogues that re-estimates the ICC, and the corrected
difference FGA − JGA; equal to ``metrics.design.corrected_r`` / ``corrected_difference`` on the votes cast."""

from __future__ import annotations

import numpy as np
import pytest

from annotate import service
from annotate.analysis.reports import load_study
from annotate.kinds import KINDS
from metrics.analysis import CORRECTED_TARGET, AnalysisSettings, per_dialogue_metrics
from metrics.corpus import ScoreSettings
from metrics.design import corrected_difference, corrected_r
from tests.store.test_designed_k import _study

SETTINGS = AnalysisSettings(resamples=50)


def _vote_all(engine, study_id, people, seed=0, floor=0.1) -> dict[str, list[float]]:
    """Simulated annotators: a dialogue's chance of a satisfied vote is ``floor`` + (1 - 2 ``floor``) × its
    JGA; every annotator claims and votes until nothing is left.  The votes cast, per dialogue."""
    rng = np.random.default_rng(seed)
    ids, values = _metrics(engine, study_id, AnalysisSettings(), None)
    latent = dict(zip(ids, floor + (1 - 2 * floor) * values["jga"], strict=True))
    cast: dict[str, list[float]] = {}
    for person in people:
        while (item := service.next_item(engine, person, study_id)) is not None:
            dialogue = item.payload["dialogue_id"]
            p = latent[dialogue]
            value = int(rng.random() < p)
            service.submit(engine, person, item.id, {"satisfied": str(value)})
            cast.setdefault(dialogue, []).append(float(value))
    return cast


def _voted_app_study(app_db, tmp_path, name: str, dialogues: int, voters: int, design: dict):
    """The app's database with its demo accounts, a satisfaction study of ``dialogues`` dialogues under
    ``design``, every place voted by the first ``voters`` demo annotators: (engine, admin, token, study)."""
    import json

    from annotate.people.sessions import log_in
    from annotate.store.db import get_engine
    from bench.corpus import build, dialogue_file
    from tests.app.test_app import start

    engine = get_engine(app_db)
    start()
    admin, token = log_in(engine, "admin", "demo-admin-pw")
    corpus = tmp_path / "pool.json"
    corpus.write_text(json.dumps(build(dialogues)))
    study = service.create_study_from_files(engine, admin, name, "satisfaction", [corpus, dialogue_file(corpus)], overlap=1)
    service.set_designed_k(engine, admin, study.id, design)
    people = [log_in(engine, f"ann{n}", f"demo-ann{n}-pw")[0] for n in range(1, voters + 1)]
    _vote_all(engine, study.id, people)
    return engine, admin, token, study


def _metrics(engine, study_id, settings, condition, lambdas=()):
    data = load_study(engine, study_id)
    systems = KINDS["satisfaction"].dialogues(data.items)
    dialogues = systems[condition if condition is not None else next(iter(systems))]
    chosen = tuple(settings.lambdas) + tuple(lambdas)
    return per_dialogue_metrics(dialogues, ScoreSettings(chosen, tuple(f"{v:g}" for v in chosen)))


def test_a_designed_studys_analysis_reports_the_corrected_target(engine, tmp_path):
    study, admin, people = _study(engine, tmp_path, n=60, overlap=1, annotators=3, name="corrected")
    service.set_designed_k(engine, admin, study.id, {"n": 50, "m": 20, "k_overlap": 3, "seed": 4})
    cast = _vote_all(engine, study.id, people)
    assert len(cast) == 50 and sorted(len(v) for v in cast.values()).count(3) == 20
    result = service.study_analysis(engine, admin, study.id, SETTINGS)
    design = result["design"]
    assert design["design"] == "designed"
    corrected = design["corrected"]
    assert corrected["target"] == CORRECTED_TARGET
    assert (corrected["n_dialogues"], corrected["n_overlap"], corrected["n_votes"]) == (50, 20, 30 + 60)
    assert corrected["fga_lambda"] == 0.5
    ids, values = _metrics(engine, study.id, SETTINGS, corrected["condition"])
    rated = [d for d in ids if d in cast]
    rows = np.array([ids.index(d) for d in rated])
    ratings = [cast[d] for d in rated]
    reported = {m["metric"]: m for m in corrected["metrics"]}
    # the correlation table's metrics: JGA and FGA at each of the study's λs at least
    assert {"jga", *(f"fga_{v:g}" for v in SETTINGS.lambdas)} <= set(reported)
    for metric, row in reported.items():
        direct = corrected_r(values[metric][rows], ratings)
        assert row["estimate"] == pytest.approx(direct.estimate, abs=1e-12)
        assert row["ci"] == pytest.approx([direct.low, direct.high], abs=1e-12)
        assert row["ci"][0] < row["estimate"] < row["ci"][1]
    direct = corrected_difference(values["fga_0.5"][rows], values["jga"][rows], ratings)
    difference = corrected["difference"]
    assert (difference["a"], difference["b"]) == ("fga_0.5", "jga")
    assert difference["estimate"] == pytest.approx(direct.estimate, abs=1e-12)
    assert difference["ci"] == pytest.approx([direct.low, direct.high], abs=1e-12)
    assert difference["estimate"] == pytest.approx(reported["fga_0.5"]["estimate"] - reported["jga"]["estimate"], abs=1e-12)
    # the ICC measured on the overlap subset: positive (the latent chances differ by dialogue), below 1
    assert 0 < corrected["icc"] < 1 and 0 < corrected["reliability"] < 1
    # the corrected r is the raw r over the means divided by √reliability: larger in size
    means = np.array([np.mean(r) for r in ratings])
    raw = np.corrcoef(values["jga"][rows], means)[0, 1]
    assert reported["jga"]["estimate"] == pytest.approx(raw / np.sqrt(corrected["reliability"]), abs=1e-12)
    assert 0.3 < raw < reported["jga"]["estimate"] < 1  # the votes follow JGA: the correction raises r


def test_the_design_lambda_is_the_difference_even_outside_the_studys_lambdas(engine, tmp_path):
    study, admin, people = _study(engine, tmp_path, n=40, overlap=1, annotators=3, name="corrected-lambda")
    service.set_designed_k(engine, admin, study.id, {"n": 40, "m": 15, "k_overlap": 2, "seed": 1})
    cast = _vote_all(engine, study.id, people, seed=2)
    settings = AnalysisSettings(resamples=50, lambdas=(0.25, 1.0))
    corrected = service.study_analysis(engine, admin, study.id, settings)["design"]["corrected"]
    assert {m["metric"] for m in corrected["metrics"]} >= {"jga", "fga_0.25", "fga_1"}
    assert "fga_0.5" not in {m["metric"] for m in corrected["metrics"]}
    ids, values = _metrics(engine, study.id, settings, corrected["condition"], lambdas=(0.5,))
    rated = [d for d in ids if d in cast]
    rows = np.array([ids.index(d) for d in rated])
    direct = corrected_difference(values["fga_0.5"][rows], values["jga"][rows], [cast[d] for d in rated])
    assert corrected["difference"]["a"] == "fga_0.5"
    assert corrected["difference"]["estimate"] == pytest.approx(direct.estimate, abs=1e-12)


def test_too_small_an_overlap_subset_says_so_instead_of_an_estimate(engine, tmp_path):
    study, admin, people = _study(engine, tmp_path, n=40, overlap=1, annotators=3, name="corrected-small")
    service.set_designed_k(engine, admin, study.id, {"n": 30, "m": 9, "k_overlap": 3, "seed": 0})
    _vote_all(engine, study.id, people)
    corrected = service.study_analysis(engine, admin, study.id, SETTINGS)["design"]["corrected"]
    assert (corrected["n_dialogues"], corrected["n_overlap"]) == (30, 9)
    assert "too small" in corrected["note"] and "9 dialogues with 2 or more votes" in corrected["note"]
    assert corrected["metrics"] == [] and "difference" not in corrected and "icc" not in corrected


def test_a_uniform_study_with_an_overlap_gets_the_corrected_target_beside_the_raw_r(engine, tmp_path):
    """Not only designed studies: a uniform study whose dialogues have 2 votes each reports each metric's
    corrected ρ and the corrected difference (the estimand the designer plans for), beside the raw r."""
    from metrics import present

    study, admin, people = _study(engine, tmp_path, n=30, overlap=3, annotators=3, name="corrected-uniform")
    ids, values = _metrics(engine, study.id, AnalysisSettings(), None)
    high = dict(zip(ids, values["jga"] >= np.median(values["jga"]), strict=True))
    cast: dict[str, list[float]] = {}
    for n, person in enumerate(people):  # satisfied when JGA is high; the third annotator differs on a third
        while (item := service.next_item(engine, person, study.id)) is not None:
            dialogue = item.payload["dialogue_id"]
            value = int(high[dialogue]) ^ int(n == 2 and item.position % 3 == 0)
            service.submit(engine, person, item.id, {"satisfied": str(value)})
            cast.setdefault(dialogue, []).append(float(value))
    result = service.study_analysis(engine, admin, study.id, SETTINGS)
    design = result["design"]
    assert design["design"] == "uniform"
    corrected = design["corrected"]
    assert (corrected["n_dialogues"], corrected["n_overlap"]) == (30, 30) and "note" not in corrected
    assert corrected["icc_p"] < 0.05  # the votes follow JGA: the overlap tells the dialogues apart
    ids, values = _metrics(engine, study.id, SETTINGS, corrected["condition"])
    rated = [d for d in ids if d in cast]
    rows = np.array([ids.index(d) for d in rated])
    ratings = [cast[d] for d in rated]
    jga = next(m for m in corrected["metrics"] if m["metric"] == "jga")
    assert jga["estimate"] == pytest.approx(corrected_r(values["jga"][rows], ratings).estimate, abs=1e-12)
    direct = corrected_difference(values["fga_0.5"][rows], values["jga"][rows], ratings)
    assert corrected["difference"]["estimate"] == pytest.approx(direct.estimate, abs=1e-12)
    table = present.corrected_table(result)
    raw = {m["metric"]: m["pearson"] for m in result["correlation"]["metrics"]}
    by_metric = {row[0]: row for row in table.rows}
    assert by_metric["jga"][1:3] == [present.number(raw["jga"]), present.number(jga["estimate"])]
    assert table.rows[0][0] == "fga_0.5 - jga"  # the question's difference first
    assert table.rows[0][1] == present.number(raw["fga_0.5"] - raw["jga"])
    assert table in present.analysis_tables(result, "none")  # the report and the CLI show it too


def test_votes_that_do_not_tell_dialogues_apart_get_no_corrected_target(engine, tmp_path):
    """Votes independent of the dialogue (ICC 0 in truth): the estimated ICC may come out a little above 0,
    and dividing by the square root of so small a reliability gave ρ of 2.5 and -1.3 on the page.  The
    overlap's one-way ANOVA does not reject ICC = 0, so the analysis says so and reports no ρ."""
    from scipy import stats

    study, admin, people = _study(engine, tmp_path, n=30, overlap=3, annotators=3, name="corrected-noise")
    # 5 dialogues all 1, 5 all 0, 10 with two 1s, 10 with one: ICC(1,1) 0.12 > 0, F 1.42 on (29, 60) df, p 0.125
    patterns = [(1, 1, 1)] * 5 + [(0, 0, 0)] * 5 + [(1, 1, 0)] * 10 + [(1, 0, 0)] * 10
    cast: dict[str, list[float]] = {}
    for n, person in enumerate(people):
        while (item := service.next_item(engine, person, study.id)) is not None:
            value = patterns[item.position % 30][n]
            service.submit(engine, person, item.id, {"satisfied": str(value)})
            cast.setdefault(item.payload["dialogue_id"], []).append(float(value))
    direct = stats.f_oneway(*cast.values())
    assert direct.statistic > 1 and direct.pvalue >= 0.05  # the ICC estimate is positive, not told from 0
    from metrics import present

    result = service.study_analysis(engine, admin, study.id, SETTINGS)
    summary = result["design"]["corrected"]
    assert summary["icc_f"] == pytest.approx(direct.statistic, rel=1e-9)
    assert summary["icc_p"] == pytest.approx(direct.pvalue, rel=1e-9)
    assert "not distinguishable from 0" in summary["note"] and summary["metrics"] == []
    table = present.corrected_table(result)  # the page, the report and the CLI say why there is no ρ
    assert table.rows == [] and table.notes[0].startswith("no corrected ρ: the ratings' reliability is not")


def test_a_uniform_study_without_an_overlap_has_no_corrected_section(engine, tmp_path):
    study, admin, people = _study(engine, tmp_path, n=20, overlap=1, annotators=2, name="corrected-single")
    _vote_all(engine, study.id, people)
    result = service.study_analysis(engine, admin, study.id, SETTINGS)
    assert result["design"] == {"design": "uniform"}


def test_the_analysis_page_shows_the_corrected_target(app_db, tmp_path):
    """The Analysis page of a designed study: the corrected r of each metric with its interval, the
    difference row and the sentence that says which target is reported."""
    from tests.app.test_app import analysis_as

    engine, admin, token, study = _voted_app_study(
        app_db, tmp_path, "designed pool", 40, 3, {"n": 36, "m": 16, "k_overlap": 3, "seed": 2}
    )
    corrected = service.study_analysis(engine, admin, study.id, AnalysisSettings())["design"]["corrected"]
    probe = analysis_as(token)
    box = probe.selectbox(key="analysis-study")
    box.select(next(s for s in box.options if "designed pool" in str(s))).run()
    assert not probe.exception, probe.exception
    table = next(d.value for d in probe.dataframe if "corrected r" in d.value.columns).set_index("metric")
    jga = next(m for m in corrected["metrics"] if m["metric"] == "jga")
    assert table.loc["jga", "corrected r"] == f"{jga['estimate']:.3f}"
    assert table.loc["jga", "95% interval (jackknife over dialogues)"] == f"[{jga['ci'][0]:.3f}, {jga['ci'][1]:.3f}]"
    assert table.loc["fga_0.5 - jga (difference)", "corrected r"] == f"{corrected['difference']['estimate']:.3f}"
    shown = "\n".join(t.value for t in probe.text)
    assert CORRECTED_TARGET in shown and "36 dialogues rated, 16 with 2 or more votes" in shown


def test_the_report_says_designed_and_gives_the_corrected_target(engine, tmp_path):
    """The report and the analysis exports (``present.design_table``) named a designed study "uniform"."""
    from metrics.present import design_table

    study, admin, people = _study(engine, tmp_path, n=120, annotators=12, name="designed-report")
    service.set_designed_k(engine, service.CLI, study.id, {"n": 120, "m": 60, "k_overlap": 3})
    _vote_all(engine, study.id, people)
    design = service.study_analysis(engine, service.CLI, study.id, AnalysisSettings(resamples=100))["design"]
    table = design_table(design)
    assert "designed" in table.title and not any("uniform" in note for note in table.notes)
    assert CORRECTED_TARGET in table.notes
    question = table.rows[0]
    assert question[0].startswith("question: ρ fga_0.5 - ρ jga")
    assert float(question[1]) == pytest.approx(design["corrected"]["difference"]["estimate"], abs=5e-4)


def test_the_analysis_page_of_a_lambda_design_leads_with_its_weighted_lambda(app_db, tmp_path):
    """A designer's λ design (π by λ score): the Analysis page's design section says how the dialogues
    were drawn and gives the question's answer, the 1/π-weighted λ* with its interval."""
    from tests.app.test_app import analysis_as

    design = {"n": 40, "m": 12, "k_overlap": 2, "seed": 3, "weighting": "lambda"}
    engine, admin, token, study = _voted_app_study(app_db, tmp_path, "lambda pool", 60, 2, design)
    found = service.study_analysis(engine, admin, study.id, AnalysisSettings())["design"]["lambda"]
    probe = analysis_as(token)
    box = probe.selectbox(key="analysis-study")
    box.select(next(s for s in box.options if "lambda pool" in str(s))).run()
    assert not probe.exception, probe.exception
    shown = "\n".join(t.value for t in probe.text)
    assert "drawn with π by their λ scores, each weighted 1/π" in shown
    low, high = found["ci"]
    assert f"λ* = {found['lambda_star']:.3f}, 95% interval [{low:.3f}, {high:.3f}]" in shown
