"""Dawid-Skene labels beside the majority (metrics.crowd): crowd-kit's own published numbers, simulated
spammers, the bootstrap intervals and their coverage (slow), and the degenerate cases in words.  The
folder gives these tests the ``unit`` mark; the coverage simulation is ``slow`` only."""

from __future__ import annotations

import numpy as np
import pytest

from formats.tidy import Vote, votes_from_rows
from metrics.aggregate import majority_labels, unit_table
from metrics.crowd import competences, dawid_skene, em_batch, em_fit, spammer_score, spammer_scores

# crowd-kit's tests/aggregation/test_ds_aggregation.py (Toloka/crowd-kit, commit 35f0661): the `data`
# fixture (5 tasks, 5 workers; w3 did not answer t1) and the values after one EM step
# (probas_iter_1, priors_iter_1, errors_iter_1, tasks_labels_iter_1), published to ±0.005.
CROWDKIT_STEP = [
    ("t1", "w1", "no"), ("t1", "w2", "yes"), ("t1", "w4", "yes"), ("t1", "w5", "no"),
    ("t2", "w1", "yes"), ("t2", "w2", "yes"), ("t2", "w3", "yes"), ("t2", "w4", "no"), ("t2", "w5", "no"),
    ("t3", "w1", "yes"), ("t3", "w2", "no"), ("t3", "w3", "no"), ("t3", "w4", "yes"), ("t3", "w5", "no"),
    ("t4", "w1", "yes"), ("t4", "w2", "yes"), ("t4", "w3", "yes"), ("t4", "w4", "yes"), ("t4", "w5", "yes"),
    ("t5", "w1", "yes"), ("t5", "w2", "no"), ("t5", "w3", "no"), ("t5", "w4", "no"), ("t5", "w5", "no"),
]  # fmt: skip
PROBAS_ITER_1 = {"t1": ("yes", 0.65), "t2": ("yes", 0.74), "t3": ("no", 0.87), "t4": ("yes", 1.00), "t5": ("no", 0.95)}
PRIORS_ITER_1 = (0.49, 0.51)  # no, yes
# errors_iter_1: P(answer | true) per worker, columns true no / yes
ERRORS_ITER_1 = {
    "w2": {"no": (0.75, 0.07), "yes": (0.25, 0.93)},
    "w4": {"no": (0.50, 0.31), "yes": (0.50, 0.69)},
    "w5": {"no": (1.00, 0.61), "yes": (0.00, 0.39)},
}
# crowd-kit's conftest.py toy YSDA dataset and its ground truth, which DawidSkene reproduces.
TOY_YSDA = [
    ("w1", "t1", "no"), ("w1", "t2", "yes"), ("w1", "t3", "yes"), ("w1", "t4", "yes"), ("w1", "t5", "yes"),
    ("w2", "t1", "yes"), ("w2", "t2", "yes"), ("w2", "t3", "no"), ("w2", "t4", "yes"), ("w2", "t5", "no"),
    ("w3", "t2", "yes"), ("w3", "t3", "no"), ("w3", "t4", "yes"), ("w3", "t5", "no"),
    ("w4", "t1", "yes"), ("w4", "t2", "no"), ("w4", "t3", "yes"), ("w4", "t4", "yes"), ("w4", "t5", "no"),
    ("w5", "t1", "no"), ("w5", "t2", "no"), ("w5", "t3", "no"), ("w5", "t4", "yes"), ("w5", "t5", "no"),
]  # fmt: skip
TOY_TRUTH = {"t1": "yes", "t2": "yes", "t3": "no", "t4": "yes", "t5": "no"}


def _votes(rows):
    return votes_from_rows((task, worker, "q", label) for task, worker, label in rows).votes


def test_one_em_step_reproduces_crowd_kits_published_numbers():
    result = dawid_skene(_votes(CROWDKIT_STEP), "q", n_iter=1, min_items=1, min_annotator_items=1)
    assert result.fitted and result.categories == ("no", "yes")
    assert result.priors == pytest.approx(PRIORS_ITER_1, abs=0.005)
    got = {i.item: (i.label, i.probability) for i in result.items}
    for task, (label, probability) in PROBAS_ITER_1.items():
        assert got[task][0] == label
        assert got[task][1] == pytest.approx(probability, abs=0.005)
    # competence = Σ_c prior(c) P(c | c), from the published matrices and priors
    skills = {s.annotator: s for s in result.annotators}
    for worker, errors in ERRORS_ITER_1.items():
        expected = PRIORS_ITER_1[0] * errors["no"][0] + PRIORS_ITER_1[1] * errors["yes"][1]
        assert skills[worker].competence == pytest.approx(expected, abs=0.01)
        sensitivity, specificity = errors["yes"][1], errors["no"][0]
        assert skills[worker].spammer_score == pytest.approx((sensitivity + specificity - 1) ** 2, abs=0.01)
    assert skills["w2"].competence == pytest.approx(0.842, abs=0.01)  # 0.49 · 0.75 + 0.51 · 0.93
    # after one step the majority's tie on t1 (2 yes, 2 no) is settled as yes, the only difference
    assert [(i.item, i.majority, i.label) for i in result.disagreements] == [("t1", None, "yes")]


@pytest.mark.parametrize("n_iter", [10, 100])
def test_converged_labels_are_crowd_kits_toy_ground_truth(n_iter):
    result = dawid_skene(
        _votes([(t, w, label) for w, t, label in TOY_YSDA]), "q", n_iter=n_iter, tol=0.0 if n_iter == 10 else 1e-5, min_items=1
    )
    assert {i.item: i.label for i in result.items} == TOY_TRUTH


def _simulated(n_items=240, per_item=5, seed=7):
    """8 annotators right with probability 0.85 and 2 answering at random, 5 of the 10 per item."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 2, n_items)
    accuracy = np.array([0.85] * 8 + [0.5] * 2)
    chosen = np.argsort(rng.random((n_items, 10)), axis=1)[:, :per_item]  # items × annotators asked
    right = rng.random((n_items, per_item)) < accuracy[chosen]
    answers = np.where(right, truth[:, None], 1 - truth[:, None])
    votes = [Vote(f"d{i}", f"ann{chosen[i, j]}", "ok", str(answers[i, j])) for i in range(n_items) for j in range(per_item)]
    return votes, {f"d{i}": str(t) for i, t in enumerate(truth)}


def test_simulated_spammers_are_flagged_and_the_posterior_beats_the_majority():
    """Five simulated studies (240 items, 5 of the 10 annotators each): in every one both random
    annotators are flagged and no good one; over the five, the posterior labels are right more often
    than the majority (over 20 such studies: 0.941 against 0.927)."""
    posterior_right = majority_right = 0
    for seed in range(1, 6):
        votes, truth = _simulated(seed=seed)
        result = dawid_skene(votes, "ok")
        skills = {s.annotator: s for s in result.annotators}
        assert sorted(result.spammers) == ["ann8", "ann9"]
        assert all(skills[f"ann{a}"].spammer is False for a in range(8))
        assert all(0.65 < skills[f"ann{a}"].competence < 1.0 for a in range(8))
        assert all(abs(skills[name].competence - 0.5) < 0.15 for name in ("ann8", "ann9"))
        assert any("spammer score" in note and "ann8" in note for note in result.notes)
        posterior_right += sum(truth[i.item] == i.label for i in result.items)
        table = unit_table(votes)
        majority_right += sum(truth[item] == label for (item, _), label in zip(table.units, majority_labels(table).labels))
        disagree = result.as_json()["disagreements"]
        assert disagree and all(row["label"] != row["majority"] for row in disagree)
    assert posterior_right / 1200 > majority_right / 1200 + 0.005
    assert posterior_right / 1200 == pytest.approx(0.939, abs=0.001)


def test_the_spammer_score_ignores_the_priors():
    """An annotator who always answers 1 is right on every 1 item, often more than chance, yet says nothing."""
    assert spammer_score(np.array([[0.0, 1.0], [0.0, 1.0]])) == 0.0
    assert spammer_score(np.array([[0.0, 1.0], [1.0, 0.0]])) == 1.0  # always wrong: informative, not a spammer


@pytest.mark.parametrize(
    ("rows", "words"),
    [
        ([], "no votes"),
        ([(f"t{i}", "w1", "1") for i in range(20)], "one annotator (w1)"),
        ([(f"t{i}", w, "1") for i in range(20) for w in ("a", "b")], "one answer used"),
        ([(f"t{i}", w, str(i % 2)) for i in range(4) for w in ("a", "b")], "4 items: too few"),
    ],
)
def test_degenerate_cases_say_so_in_words(rows, words):
    result = dawid_skene(_votes(rows), "q")
    assert not result.fitted and result.items == ()
    assert any(words in note for note in result.notes), result.notes
    assert result.as_json()["fitted"] is False


def test_an_annotator_on_few_items_is_not_flagged_either_way():
    votes, _ = _simulated()
    votes = [*votes, *(Vote(f"d{i}", "late", "ok", "1") for i in range(3))]
    skill = {s.annotator: s for s in dawid_skene(votes, "ok").annotators}["late"]
    assert skill.n_items == 3 and skill.spammer is None


def test_the_bootstrap_em_on_the_items_as_they_are_is_crowd_kits_fit():
    """metrics.crowd.em_batch (all resamples at once, in numpy) with every item once reproduces
    crowd-kit's estimates (same start, same number of steps), so the intervals are about crowd-kit's fit."""
    votes, _ = _simulated(seed=3)
    result = dawid_skene(votes, "ok")
    table = unit_table(votes)
    annotator, unit = np.nonzero(~np.isnan(table.codes))
    answer = table.codes[annotator, unit].astype(int)
    shape = (len(table.annotators), len(table.units), 2)
    posterior, priors, errors = em_batch(annotator, unit, answer, shape, np.ones((1, len(table.units))), result.iterations)
    assert priors[0] == pytest.approx(result.priors, abs=1e-12)
    assert competences(priors, errors)[0] == pytest.approx([s.competence for s in result.annotators], abs=1e-12)
    assert spammer_scores(errors)[0] == pytest.approx([s.spammer_score for s in result.annotators], abs=1e-12)
    assert posterior[0].max(axis=1) == pytest.approx([i.probability for i in result.items], abs=1e-12)


def test_intervals_over_items_hold_the_estimate_and_are_reproducible():
    votes, _ = _simulated(seed=4)
    first = dawid_skene(votes, "ok", resamples=200, seed=1)
    assert first.resamples == 200 and first.as_json()["interval"] == "95% percentile bootstrap over items"
    for skill in first.annotators:
        low, high = skill.competence_ci
        assert low < skill.competence < high and high - low < 0.3
        assert skill.spammer_score_ci[0] <= skill.spammer_score <= skill.spammer_score_ci[1] + 0.02
    spam = {s.annotator: s for s in first.annotators}["ann8"]
    assert (
        spam.spammer_score_ci[1]
        < 0.1
        < min(s.spammer_score_ci[0] for s in first.annotators if s.annotator not in ("ann8", "ann9"))
    )
    again = dawid_skene(votes, "ok", resamples=200, seed=1)
    assert [s.competence_ci for s in again.annotators] == [s.competence_ci for s in first.annotators]


@pytest.mark.slow
def test_the_competence_interval_covers_the_true_accuracy():
    """Coverage by simulation: 20 studies (240 items, 5 of the 10 annotators per item, 8 right with
    probability 0.85, 2 at random), 200 intervals; the 95% bootstrap interval over items holds the
    annotator's true accuracy about 95% of the time (measured over 40 studies: 0.944 for the good
    annotators, 0.95 for the random ones; with 3 per item 0.928 and 0.95)."""
    covered = []
    for seed in range(300, 320):
        votes, _ = _simulated(seed=seed)
        for skill in dawid_skene(votes, "ok", resamples=200, seed=seed).annotators:
            truth = 0.5 if skill.annotator in ("ann8", "ann9") else 0.85
            covered.append(skill.competence_ci[0] <= truth <= skill.competence_ci[1])
    assert 0.90 <= np.mean(covered) <= 0.99


def test_answers_nobody_gave_do_not_lift_the_spammer_score():
    """Review of issue 27: the declared answers were the classes of Raykar & Yu's score, so on SLU's
    5-option transcription status with 2 used a 72%-accurate annotator scored 0.172 (not flagged)
    instead of 0.071.  The score is over the answers given: the same with or without the declared ones."""
    import random

    from formats.tidy import Vote
    from metrics.crowd import dawid_skene

    rng = random.Random(4)
    truth = [rng.random() < 0.5 for _ in range(60)]
    votes = []
    for k, accuracy in enumerate((0.9, 0.9, 0.9, 0.9, 0.6)):
        for i, t in enumerate(truth):
            answer = t if rng.random() < accuracy else not t
            votes.append(Vote(item=f"i{i}", annotator=f"a{k}", question="q", value="good" if answer else "bad"))
    plain = dawid_skene(votes, "q")
    declared = dawid_skene(votes, "q", categories=("good", "bad", "noise", "empty", "other"))
    assert [round(a.spammer_score, 9) for a in plain.annotators] == [round(a.spammer_score, 9) for a in declared.annotators]


# The project's own EM (metrics.crowd.em_fit) against crowd-kit's DawidSkene, which is a test dependency
# only (requirements-dev.txt): same labels, same number of steps, probabilities and error matrices to 1e-8
# (crowd-kit floors its returned probabilities and priors at 1e-10; the two differ by rounding otherwise).
TIGHT = 1e-8


def _crowdkit(annotator, unit, answer, k, n_iter=100, tol=1e-5):
    """crowd-kit's DawidSkene on the same votes, as arrays: posteriors units × K, priors K, errors
    annotators × K (answer) × K (true; 0 for an answer never given), number of steps, labels."""
    import pandas as pd
    from crowdkit.aggregation import DawidSkene

    model = DawidSkene(n_iter=n_iter, tol=tol).fit(pd.DataFrame({"task": unit, "worker": annotator, "label": answer}))
    n_units, n_annotators = unit.max() + 1, annotator.max() + 1
    probas = model.probas_.reindex(index=range(n_units), columns=range(k)).to_numpy(float)
    priors = model.priors_.reindex(range(k)).to_numpy(float)
    errors = np.zeros((n_annotators, k, k))
    for (worker, given), row in model.errors_.iterrows():
        errors[worker, given] = row.reindex(range(k)).to_numpy(float)
    labels = model.labels_.reindex(range(n_units)).to_numpy(int)
    return probas, priors, errors, len(model.loss_history_), labels, np.array(model.loss_history_)


def _assert_same_fit(annotator, unit, answer, k, n_iter=100, tol=1e-5):
    fit = em_fit(annotator, unit, answer, (annotator.max() + 1, unit.max() + 1, k), n_iter=n_iter, tol=tol)
    probas, priors, errors, iterations, labels, losses = _crowdkit(annotator, unit, answer, k, n_iter, tol)
    assert fit.iterations == iterations
    assert np.array(fit.loss_history) == pytest.approx(losses, abs=1e-10)
    top = np.sort(fit.posterior, axis=1)
    clear = top[:, -1] - top[:, -2] > 1e-6  # crowd-kit takes the first class on a tie; dawid_skene gives none
    assert clear.mean() > 0.9
    assert (fit.posterior.argmax(axis=1) == labels)[clear].all()
    assert fit.posterior == pytest.approx(probas, abs=TIGHT)
    assert fit.priors == pytest.approx(priors, abs=TIGHT)
    assert fit.errors == pytest.approx(errors, abs=TIGHT)
    assert ((fit.errors == 0) == (errors == 0)).all()  # the answers an annotator never gave, and only those
    return fit


def _arrays(rows):
    """(task, worker, label) rows as index arrays and the number of classes."""
    tasks, workers, labels = (sorted(set(column)) for column in zip(*rows))
    index = [{name: i for i, name in enumerate(names)} for names in (tasks, workers, labels)]
    unit, annotator, answer = (np.array([index[c][row[c]] for row in rows]) for c in range(3))
    return annotator, unit, answer, len(labels)


@pytest.mark.parametrize("n_iter", [1, 3, 100])
def test_the_own_em_is_crowd_kits_fit_on_its_published_example(n_iter):
    annotator, unit, answer, k = _arrays(CROWDKIT_STEP)
    fit = _assert_same_fit(annotator, unit, answer, k, n_iter=n_iter)
    if n_iter == 1:  # and crowd-kit's published numbers after one step (classes no, yes)
        assert fit.priors == pytest.approx(PRIORS_ITER_1, abs=0.005)
        assert fit.errors[1].T == pytest.approx(np.array([[0.75, 0.25], [0.07, 0.93]]), abs=0.005)  # w2, rows true
    toy = _arrays([(t, w, label) for w, t, label in TOY_YSDA])
    fit = _assert_same_fit(*toy, n_iter=n_iter)
    if n_iter == 100:  # tasks t1..t5, classes no, yes
        assert [("no", "yes")[c] for c in fit.posterior.argmax(axis=1)] == list(TOY_TRUTH.values())


def _random_votes(seed, n_units, n_annotators, k):
    """Votes of annotators of every kind (accuracy 0.95 to chance, one who always answers the same),
    taking part unevenly (15% to 90% of the units), a fifth of the units with a single vote, classes
    unbalanced (priors from a Dirichlet)."""
    rng = np.random.default_rng(seed)
    truth = rng.choice(k, n_units, p=rng.dirichlet(np.full(k, 2.0)))
    accuracy = rng.uniform(1 / k, 0.95, n_annotators)
    share = rng.uniform(0.15, 0.9, n_annotators)
    asked = rng.random((n_units, n_annotators)) < share
    single = rng.random(n_units) < 0.2
    asked[single] = False
    asked[np.arange(n_units), rng.integers(0, n_annotators, n_units)] = True  # every unit gets a vote
    asked[rng.integers(0, n_units, n_annotators), np.arange(n_annotators)] = True  # every annotator votes
    unit, annotator = np.nonzero(asked)
    right = rng.random(unit.size) < accuracy[annotator]
    answer = np.where(right, truth[unit], (truth[unit] + rng.integers(1, k, unit.size)) % k)
    answer[annotator == n_annotators - 1] = 0  # the last one always answers the first class
    assert set(answer) == set(range(k))
    return annotator, unit, answer


RANDOM_CASES = [
    *((seed, n_units, n_annotators, k) for seed in (1, 2, 3) for n_units, n_annotators in ((15, 3), (60, 6)) for k in (2, 3)),
    (3, 250, 10, 2),  # 46 steps
    (3, 250, 10, 3),  # 46 steps (crowd-kit takes about 10 ms a step: the larger cases are the slow ones)
]


@pytest.mark.parametrize(("seed", "n_units", "n_annotators", "k"), RANDOM_CASES)
def test_the_own_em_is_crowd_kits_fit_on_random_votes(seed, n_units, n_annotators, k):
    annotator, unit, answer = _random_votes(seed, n_units, n_annotators, k)
    assert np.bincount(unit).min() == 1 and np.bincount(unit).max() > 2  # single votes, and more
    fit = _assert_same_fit(annotator, unit, answer, k)
    assert fit.posterior.sum(axis=1) == pytest.approx(1.0) and fit.errors.sum(axis=1) == pytest.approx(1.0)
    if seed == 1:  # the same steps, fixed in number (no stopping rule): the two follow one trajectory
        _assert_same_fit(annotator, unit, answer, k, n_iter=7, tol=-np.inf)


def test_dawid_skene_reports_crowd_kits_fit():
    """Through dawid_skene: the labels, their probabilities, the priors and the competences of
    crowd-kit's fit, on votes with a declared answer nobody gave (no class of the fit, 0 everywhere)."""
    annotator, unit, answer = _random_votes(5, 80, 6, 3)
    votes = [Vote(f"d{u}", f"a{a}", "q", str(c)) for a, u, c in zip(annotator, unit, answer)]
    result = dawid_skene(votes, "q", categories=("0", "1", "2", "unused"), min_items=1)
    table = unit_table(votes, ("0", "1", "2", "unused"))
    worker, task = np.nonzero(~np.isnan(table.codes))
    probas, priors, errors, iterations, labels, _ = _crowdkit(worker, task, table.codes[worker, task].astype(int), 3)
    assert result.iterations == iterations and result.priors == pytest.approx([*priors, 0.0], abs=TIGHT)
    assert [i.label for i in result.items] == [table.categories[c] for c in labels]
    assert [i.probability for i in result.items] == pytest.approx(probas.max(axis=1), abs=TIGHT)
    expected = [priors @ np.diag(errors[w]) for w in range(len(table.annotators))]
    assert [s.competence for s in result.annotators] == pytest.approx(expected, abs=TIGHT)
    assert [s.spammer_score for s in result.annotators] == pytest.approx([spammer_score(e.T) for e in errors], abs=TIGHT)


def test_a_declared_answer_nobody_gave_changes_no_interval():
    """The bootstrap refits the fit's own classes, the answers given: a declared answer nobody gave is
    no class there either (it used to be one, and grew a phantom class of prior 0.07 over the steps)."""
    annotator, unit, answer = _random_votes(0, 80, 6, 2)
    votes = [Vote(f"d{u}", f"a{a}", "q", str(c)) for a, u, c in zip(annotator, unit, answer)]
    plain = dawid_skene(votes, "q", resamples=60, seed=2)
    declared = dawid_skene(votes, "q", categories=("0", "1", "unused"), resamples=60, seed=2)
    for a, b in zip(plain.annotators, declared.annotators):
        assert a.competence == pytest.approx(b.competence, abs=1e-12)
        assert a.competence_ci == pytest.approx(b.competence_ci, abs=1e-12)
        assert a.spammer_score_ci == pytest.approx(b.spammer_score_ci, abs=1e-12)


def test_the_runtime_neither_imports_nor_requires_crowd_kit():
    """Issue 36, a light install: crowd-kit (and the transformers, tokenizers, nltk and scikit-learn it
    pulls in) is a test dependency only."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    sources = [
        root / "app.py",
        *(p for folder in ("formats", "metrics", "exports", "annotate") for p in (root / folder).rglob("*.py")),
    ]
    importing = [p.relative_to(root) for p in sources if re.search(r"^\s*(from|import)\s+crowdkit\b", p.read_text(), re.M)]
    assert importing == []
    assert "crowd-kit" not in (root / "requirements.txt").read_text()
    assert "crowd-kit" not in (root / "pyproject.toml").read_text().split("[project]")[1].split("\n[")[0]
    assert re.search(r"^crowd-kit\b", (root / "requirements-dev.txt").read_text(), re.M)
