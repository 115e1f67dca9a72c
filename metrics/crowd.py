"""Model-based labels beside the majority: Dawid-Skene, fitted by the project's own EM (numpy).

Dawid & Skene (1979) model each annotator by a confusion matrix, P(answer k | true class c), and the
classes by their priors; EM estimates both and gives every item a posterior distribution over the
classes.  The fit is :func:`em_fit`, the project's own vectorised EM: the algorithm of crowd-kit's
``DawidSkene`` (Ustalov et al. 2021; initialised from the majority vote's shares, at most ``n_iter`` EM
steps, stopped once the evidence lower bound gains less than ``tol``, error rates floored at ``EPS``),
checked against crowd-kit in the tests (labels equal, probabilities and error matrices within 1e-8;
crowd-kit is a test dependency only, so that the app's install pulls in no NLP stack).  The classes are
the answers given.  From its estimates, per question:

- each item's posterior label (the most probable class; an exact tie in the posterior gives no label)
  and that label's posterior probability;
- each annotator's **competence**: the probability of answering correctly, Σ_c prior(c) ·
  P(answer c | true c), the diagonal of their confusion matrix weighted by the class priors;
- each annotator's **spammer score** (Raykar & Yu 2012, "Eliminating spammers and ranking annotators
  for crowdsourced labeling tasks", JMLR 13): S = 1/(K(K−1)) · Σ_{c<c'} Σ_k (P(k|c) − P(k|c'))², 0 when
  the answer does not depend on the true class (a random clicker, or one who always gives the same
  answer, whatever the priors), 1 for a perfect annotator; for a 0/1 question S = (sensitivity +
  specificity − 1)².  **Rule:** an annotator is flagged ``spammer`` when S ≤ ``SPAMMER_SCORE`` (0.1:
  on a balanced 0/1 question, sensitivity + specificity ≤ 1.32, i.e. accuracy ≤ 0.66) and they answered
  at least ``MIN_ANNOTATOR_ITEMS`` items; with fewer the flag is None (too few items to judge);
- the items where the posterior label and the majority (``metrics.aggregate``) differ, ties of the
  majority included (the majority gives them no label).

Intervals: competence and spammer score get a 95% percentile bootstrap interval over **items**
(``resamples`` resamples of the items with replacement, each annotator keeping their votes on the items
drawn).  Each resample is refitted by the same EM (the majority-vote start, the number of steps the
fit took), run for all resamples at once in numpy (:func:`em_batch`); on the items as they are it is
the fit.  The posterior probabilities are the model's own and get
no interval.  Coverage of the competence interval by simulation (40 studies of 240 items, 8 annotators
right with probability 0.85 and 2 at random, 200 resamples): 0.944 and 0.95 with 5 votes per item, 0.928
and 0.95 with 3 (``tests/unit/test_crowd_labels.py``, slow).

Degenerate cases give no fit and a note in words: no votes, one annotator, one answer used, fewer than
``MIN_ITEMS`` items.

>>> rows = [(f"t{i}", a, "q", "1" if (i + (a == "c")) % 2 else "0") for i in range(12) for a in "abc"]
>>> from formats.tidy import votes_from_rows
>>> result = dawid_skene(votes_from_rows(rows).votes, "q")
>>> [(s.annotator, round(s.competence, 3), s.spammer) for s in result.annotators]  # c always says the opposite
[('a', 1.0, False), ('b', 1.0, False), ('c', 0.0, False)]
>>> len(result.disagreements)
0

(c is wrong every time, yet informative: their answer tells the class, so the spammer score is 1, not 0.)
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, cast

import numpy as np

from formats.tidy import Vote
from metrics.aggregate import majority_labels, unit_table

SPAMMER_SCORE = 0.1  # flagged at or below (Raykar & Yu 2012's score; see the module docstring)
MIN_ITEMS = 10  # items a question needs for a fit: K×K confusion matrices per annotator need data
MIN_ANNOTATOR_ITEMS = 10  # items an annotator needs before they can be flagged
MAX_CATEGORIES = 20  # beyond this the answers are free text, not classes
METHOD = "Dawid-Skene (the project's own EM from the majority vote, as crowd-kit's DawidSkene)"


@dataclass(frozen=True)
class ItemLabel:
    """One item (unit: item and condition) of a question: the posterior label and its probability,
    the majority label (None: a tie, or no majority), and whether the two agree."""

    item: str
    condition: str
    n_votes: int
    label: str | None
    probability: float
    majority: str | None
    agrees: bool

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class AnnotatorSkill:
    """One annotator's estimates: competence (P(correct), prior-weighted), spammer score (Raykar & Yu
    2012) and the flag (None: fewer than ``MIN_ANNOTATOR_ITEMS`` items, or no estimate)."""

    annotator: str
    n_items: int
    competence: float | None
    spammer_score: float | None
    spammer: bool | None
    competence_ci: tuple[float, float] | None = None  # 95% percentile bootstrap over items
    spammer_score_ci: tuple[float, float] | None = None

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ModelLabels:
    """Dawid-Skene for one question (``fitted`` False: a degenerate case, said in ``notes``)."""

    question: str
    method: str
    categories: tuple[str, ...]
    priors: tuple[float, ...]
    items: tuple[ItemLabel, ...]
    annotators: tuple[AnnotatorSkill, ...]
    chance: float  # 1/K, the competence of a random clicker on balanced classes
    threshold: float  # the spammer score at or below which an annotator is flagged
    iterations: int
    fitted: bool
    notes: tuple[str, ...] = field(default_factory=tuple)
    resamples: int = 0  # bootstrap resamples of the items behind the intervals (0: none)

    @property
    def disagreements(self) -> tuple[ItemLabel, ...]:
        """The items where the posterior label and the majority differ (majority ties included)."""
        return tuple(i for i in self.items if not i.agrees)

    @property
    def spammers(self) -> tuple[str, ...]:
        return tuple(a.annotator for a in self.annotators if a.spammer)

    def as_json(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "method": self.method,
            "fitted": self.fitted,
            "categories": list(self.categories),
            "priors": list(self.priors),
            "chance": self.chance,
            "threshold": self.threshold,
            "iterations": self.iterations,
            "resamples": self.resamples,
            "interval": "95% percentile bootstrap over items" if self.resamples else None,
            "n_items": len(self.items),
            "n_disagree": sum(1 for i in self.items if not i.agrees and i.majority is not None),
            "n_majority_ties": sum(1 for i in self.items if i.majority is None),
            "spammers": list(self.spammers),
            "items": [i.as_json() for i in self.items],
            "disagreements": [i.as_json() for i in self.disagreements],
            "annotators": [a.as_json() for a in self.annotators],
            "notes": list(self.notes),
        }


def spammer_score(confusion: np.ndarray) -> float:
    """Raykar & Yu (2012): 1/(K(K−1)) Σ_{c<c'} Σ_k (A[c,k] − A[c',k])², rows of ``confusion`` the true
    class, columns the answer.  0 for a spammer (identical rows), 1 for a perfect annotator.

    >>> spammer_score(np.eye(3)), spammer_score(np.array([[0.5, 0.5], [0.5, 0.5]]))
    (1.0, 0.0)
    >>> round(spammer_score(np.array([[0.9, 0.1], [0.2, 0.8]])), 3)  # (0.9 + 0.8 - 1)²
    0.49
    """
    k = confusion.shape[0]
    differences = confusion[:, None, :] - confusion[None, :, :]
    return float((differences**2).sum() / 2 / (k * (k - 1)))


EPS = 1e-10  # floor on an error probability and on a prior (crowd-kit's ``dawid_skene._EPS``, the same)


def _em_steps(
    annotator: np.ndarray, unit: np.ndarray, answer: np.ndarray, shape: tuple[int, int, int], weights: np.ndarray
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Dawid-Skene's EM for B weightings of the units at once: yields (posteriors B × units × K,
    priors B × K, error rates B × annotators × K (answer) × K (true)) after the start (the majority
    vote's shares and one M step), then after every E and M step, for ever.  See :func:`em_fit`."""
    n_annotators, n_units, k = shape
    order = np.argsort(unit, kind="stable")
    annotator, unit, answer = annotator[order], unit[order], answer[order]
    starts = np.flatnonzero(np.r_[True, unit[1:] != unit[:-1]])  # votes sorted by unit
    cell = annotator * k + answer  # (annotator, answer)
    by_cell = np.argsort(cell, kind="stable")
    cell_starts = np.flatnonzero(np.r_[True, cell[by_cell][1:] != cell[by_cell][:-1]])
    present = cell[by_cell][cell_starts]
    used = np.zeros(n_annotators * k, bool)
    used[present] = True
    used = used.reshape(n_annotators, k)[None, :, :, None]
    unit_by_cell = unit[by_cell]
    b = weights.shape[0]
    counts = np.zeros((n_units, k))
    np.add.at(counts, (unit, answer), 1.0)
    posterior = np.broadcast_to(counts / counts.sum(axis=1, keepdims=True), (b, n_units, k))
    total = weights.sum(axis=1)[:, None]

    def m_step(posterior: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        priors = (weights[:, :, None] * posterior).sum(axis=1) / total
        sums = np.add.reduceat(weights[:, unit_by_cell, None] * posterior[:, unit_by_cell, :], cell_starts, axis=1)
        errors = np.zeros((b, n_annotators * k, k))
        errors[:, present, :] = sums
        errors = np.where(used, np.maximum(errors.reshape(b, n_annotators, k, k), EPS), 0.0)
        return priors, errors / errors.sum(axis=2, keepdims=True)

    priors, errors = m_step(posterior)
    yield posterior, priors, errors
    while True:
        log_errors = np.log(np.where(errors > 0, errors, 1.0)).reshape(b, n_annotators * k, k)
        log_likelihood = np.add.reduceat(log_errors[:, cell, :], starts, axis=1) + np.log(np.maximum(priors, EPS))[:, None, :]
        posterior = np.exp(log_likelihood - log_likelihood.max(axis=2, keepdims=True))
        posterior /= posterior.sum(axis=2, keepdims=True)
        priors, errors = m_step(posterior)
        yield posterior, priors, errors


def em_batch(
    annotator: np.ndarray,
    unit: np.ndarray,
    answer: np.ndarray,
    shape: tuple[int, int, int],
    weights: np.ndarray,
    n_iter: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`em_fit`'s EM run for exactly ``n_iter`` E and M steps (no stopping rule) for B weightings
    of the units at once: ``weights`` B × units (bootstrap counts; ones: the data as they are).
    ``annotator``, ``unit``, ``answer``: one entry per vote (indices); ``shape``: (annotators, units,
    classes).  Returns posteriors B × units × K, priors B × K and error rates B × annotators × K
    (answer) × K (true).  With ones and the number of steps :func:`em_fit` took, it is that fit."""
    steps = _em_steps(annotator, unit, answer, shape, weights)
    state = next(steps)
    for _ in range(n_iter):
        state = next(steps)
    return state


def evidence_lower_bound(
    annotator: np.ndarray, unit: np.ndarray, answer: np.ndarray, posterior: np.ndarray, priors: np.ndarray, errors: np.ndarray
) -> float:
    """The loss :func:`em_fit` stops on, per vote: Σ_votes Σ_c q(c) (log P(answer | c) + log prior(c))
    + Σ_units H(q), q the unit's posterior (floored at ``EPS`` in the entropy), priors floored at
    ``EPS``, divided by the number of votes.  The prior term is counted once per vote, not once per unit,
    as crowd-kit counts it: the stopping rule (and so the number of steps) is crowd-kit's.
    ``posterior`` units × K, ``priors`` K, ``errors`` annotators × K (answer) × K (true)."""
    log_errors = np.log(np.where(errors > 0, errors, 1.0))[annotator, answer, :]  # votes × K
    joint = (posterior[unit] * (log_errors + np.log(np.maximum(priors, EPS)))).sum()
    floored = np.maximum(posterior, EPS)
    return float((joint - (floored * np.log(floored)).sum()) / len(annotator))


@dataclass(frozen=True)
class EMFit:
    """A Dawid-Skene fit (:func:`em_fit`): posteriors units × K, priors K, error rates annotators × K
    (answer) × K (true; 0 for an answer the annotator never gave) and the loss after every step."""

    posterior: np.ndarray
    priors: np.ndarray
    errors: np.ndarray
    loss_history: tuple[float, ...]

    @property
    def iterations(self) -> int:
        return len(self.loss_history)


def em_fit(
    annotator: np.ndarray,
    unit: np.ndarray,
    answer: np.ndarray,
    shape: tuple[int, int, int],
    *,
    n_iter: int = 100,
    tol: float = 1e-5,
) -> EMFit:
    """Dawid & Skene (1979) fitted by EM, in numpy; the same algorithm as crowd-kit's ``DawidSkene``
    (Ustalov et al. 2021), which the tests check it against (``tests/unit/test_crowd_labels.py``).

    **Model.** Every unit has a true class c with prior probability prior(c); annotator a answers k on a
    unit of class c with probability P_a(k | c) (their error matrix), independently of the others given
    c.  ``annotator``, ``unit``, ``answer``: one entry per vote (indices, at most one vote per annotator
    and unit); ``shape``: (annotators, units, classes K).  Every class should be some vote's answer (a
    class nobody gave gets a prior and a posterior of about ``EPS``, not 0: leave it out and add its
    zeros, as :func:`dawid_skene` does).

    **Start.** Each unit's posterior is the majority vote's shares (3 votes yes, 1 no: 0.75, 0.25);
    one M step gives the first priors and error matrices.

    **Steps.** E step: each unit's posterior ∝ prior(c) Π_votes P_a(answer | c), in logs, with the
    priors floored at ``EPS``.  M step: prior(c) is the mean posterior over units; P_a(k | c) is the
    posterior mass of class c on the units where a answered k, floored at ``EPS`` (1e-10) for an answer
    a gave, 0 for one they never gave, normalised over k.  The floor keeps a log finite: an annotator
    who never answered k on a class-c unit is not certain never to.

    **Stopping rule.** After each E and M step the loss :func:`evidence_lower_bound` (per vote) is
    recorded; EM stops when it gains less than ``tol`` on the step before, or after ``n_iter`` steps.
    The last step's estimates are returned, and its loss is the last of ``loss_history`` (its length is
    the number of steps; ``n_iter`` = 0: the start alone).

    **Ties.** The fit gives distributions, not labels: a unit whose top posterior is shared is left to
    the caller (:func:`dawid_skene` gives it no label; crowd-kit's ``labels_`` takes the first class).

    Two careful annotators and one who answers at random on five units:

    >>> annotator = np.array([0, 1, 2] * 5)
    >>> unit = np.repeat(np.arange(5), 3)
    >>> answer = np.array([0, 0, 1, 1, 1, 1, 0, 0, 0, 1, 1, 0, 0, 0, 1])
    >>> fit = em_fit(annotator, unit, answer, (3, 5, 2))
    >>> fit.posterior.argmax(axis=1).tolist(), fit.iterations
    ([0, 1, 0, 1, 0], 5)
    >>> np.round(fit.errors[2], 2).tolist()  # annotator 2: P(answer | true), rows the answer
    [[0.33, 0.5], [0.67, 0.5]]
    >>> em_fit(annotator, unit, answer, (3, 5, 2), n_iter=0).posterior[0].tolist()  # the start: 2 of 3 said 0
    [0.6666666666666666, 0.3333333333333333]
    """
    steps = _em_steps(annotator, unit, answer, shape, np.ones((1, shape[1])))
    posterior, priors, errors = (x[0] for x in next(steps))
    history: list[float] = []
    loss = -np.inf
    for _ in range(n_iter):
        posterior, priors, errors = (x[0] for x in next(steps))
        new_loss = evidence_lower_bound(annotator, unit, answer, posterior, priors, errors)
        history.append(new_loss)
        if new_loss - loss < tol:
            break
        loss = new_loss
    return EMFit(np.array(posterior), priors, errors, tuple(history))


def competences(priors: np.ndarray, errors: np.ndarray) -> np.ndarray:
    """Σ_c prior(c) P(c | c): B × annotators, from priors B × K and errors B × A × K × K."""
    return cast(np.ndarray, np.einsum("bc,bacc->ba", priors, errors))


def spammer_scores(errors: np.ndarray) -> np.ndarray:
    """:func:`spammer_score` of every annotator in every weighting: B × annotators."""
    k = errors.shape[-1]
    confusion = np.swapaxes(errors, 2, 3)  # rows the true class
    differences = confusion[:, :, :, None, :] - confusion[:, :, None, :, :]
    return cast(np.ndarray, (differences**2).sum(axis=(2, 3, 4)) / 2 / (k * (k - 1)))


def _empty(question: str, categories: Sequence[str], notes: list[str], threshold: float) -> ModelLabels:
    k = max(len(categories), 1)
    return ModelLabels(question, METHOD, tuple(categories), (), (), (), 1 / k, threshold, 0, False, tuple(notes))


def dawid_skene(
    votes: Sequence[Vote],
    question: str,
    *,
    categories: Sequence[str] | None = None,
    tie: str = "none",
    seed: int = 0,
    n_iter: int = 100,
    tol: float = 1e-5,
    threshold: float = SPAMMER_SCORE,
    min_items: int = MIN_ITEMS,
    min_annotator_items: int = MIN_ANNOTATOR_ITEMS,
    resamples: int = 0,
) -> ModelLabels:
    """Dawid-Skene posterior labels, competences and spammer flags for one question's votes, beside
    the majority (``tie``/``seed``: its tie policy, as in ``metrics.aggregate``); ``resamples`` > 0:
    bootstrap intervals over items for competence and spammer score (``seed`` seeds the draw)."""
    votes = [v for v in votes if v.question == question]
    if not votes:
        return _empty(question, categories or (), ["no votes"], threshold)
    table = unit_table(votes, categories)
    k = len(table.categories)
    annotators = table.annotators
    used = np.flatnonzero(table.counts.sum(axis=0) > 0)
    if k > MAX_CATEGORIES:
        return _empty(question, table.categories, [f"{k} different answers: free text, not classes; no model labels"], threshold)
    if len(annotators) < 2:
        note = f"one annotator ({annotators[0]}): Dawid-Skene needs at least 2 to estimate anyone's errors; no model labels"
        return _empty(question, table.categories, [note], threshold)
    if len(used) < 2:
        note = (
            f"every vote is {table.categories[int(used[0])]!r}: one answer used, nothing to separate; "
            "no model labels and no competence"
        )
        return _empty(question, table.categories, [note], threshold)
    if len(table.units) < min_items:
        note = f"{len(table.units)} items: too few for Dawid-Skene's confusion matrices (at least {min_items}); no model labels"
        return _empty(question, table.categories, [note], threshold)

    worker, task = np.nonzero(~np.isnan(table.codes))
    # the classes are the answers given (as crowd-kit takes them): a declared answer nobody gave is no
    # class of the fit, and gets 0 in the posteriors, the priors and the error matrices
    position = np.full(k, -1)
    position[used] = np.arange(len(used))
    given = position[table.codes[worker, task].astype(int)]
    shape = (len(annotators), len(table.units), len(used))
    fit = em_fit(worker, task, given, shape, n_iter=n_iter, tol=tol)
    probas = np.zeros((len(table.units), k))
    probas[:, used] = fit.posterior
    priors = np.zeros(k)
    priors[used] = fit.priors

    majority = majority_labels(table, tie, seed).labels
    items = []
    for u, (item, condition) in enumerate(table.units):
        top = np.sort(probas[u])[::-1]
        label = None if np.isclose(top[0], top[1], rtol=0, atol=1e-12) else table.categories[int(np.argmax(probas[u]))]
        items.append(
            ItemLabel(item, condition, int(table.counts[u].sum()), label, float(top[0]), majority[u], label == majority[u])
        )
    iterations = fit.iterations
    n_items = (~np.isnan(table.codes)).sum(axis=1)
    competence_ci: list[tuple[float, float] | None]
    score_ci: list[tuple[float, float] | None]
    competence_ci = score_ci = [None] * len(annotators)
    if resamples > 0:
        rng = np.random.default_rng(seed)
        n_units = len(table.units)
        weights = rng.multinomial(n_units, np.full(n_units, 1 / n_units), size=resamples).astype(float)
        _, boot_priors, boot_errors = em_batch(worker, task, given, shape, weights, iterations)
        answered = weights @ (~np.isnan(table.codes)).T > 0  # B × annotators: the annotator is in the resample
        competence_ci = _percentile(competences(boot_priors, boot_errors), answered)
        score_ci = _percentile(spammer_scores(boot_errors), answered)
    skills = []
    notes = []
    few = []
    for w, name in enumerate(annotators):
        confusion = fit.errors[w].T  # rows the true class, columns the answer; 0 for an answer w never gave
        competence = float(fit.priors @ np.diag(confusion))
        # over the answers somebody gave: an answer nobody chose is no class to tell apart (issue 27 review:
        # SLU's 5 declared statuses with 2 used lifted a 72%-accurate annotator's score from 0.07 to 0.17)
        score = spammer_score(confusion)
        enough = n_items[w] >= min_annotator_items
        if not enough:
            few.append(name)
        flag = bool(score <= threshold) if enough else None
        skills.append(AnnotatorSkill(name, int(n_items[w]), competence, score, flag, competence_ci[w], score_ci[w]))
    if few:
        notes.append(f"fewer than {min_annotator_items} items, not flagged either way: {', '.join(few)}")
    if iterations >= n_iter:
        notes.append(f"EM stopped after {n_iter} iterations before the tolerance {tol:g} was met")
    spam = [s.annotator for s in skills if s.spammer]
    if spam:
        notes.append(
            f"near chance (spammer score ≤ {threshold:g}, Raykar & Yu 2012): {', '.join(spam)}; an admin can exclude "
            "them from the analysis"
        )
    return ModelLabels(
        question,
        METHOD,
        tuple(table.categories),
        tuple(float(p) for p in priors),
        tuple(items),
        tuple(skills),
        1 / k,
        threshold,
        iterations,
        True,
        tuple(notes),
        resamples,
    )


def _percentile(values: np.ndarray, present: np.ndarray) -> list[tuple[float, float] | None]:
    """Per annotator (column), the 2.5 and 97.5 percentiles over the resamples they are in (None: in
    fewer than 20)."""
    out = []
    for column, keep in zip(values.T, present.T):
        chosen = column[keep]
        out.append(None if chosen.size < 20 else (float(np.percentile(chosen, 2.5)), float(np.percentile(chosen, 97.5))))
    return out
