"""Study-level analysis shared by ``python -m metrics`` and the app's analysis page.

Inputs are plain: dialogues with predictions (``formats.dialogue``) and votes
(``formats.tidy``).  Outputs are the CLIs' JSON contracts; every result carries a
signature string, ``str(metrics.signature.Signature)``, that states the settings it depends on.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from formats.dialogue import Dialogue
from formats.tidy import Vote, VoteTable, is_unsure
from metrics.aggregate import aggregate_rows, majority_labels, unit_table
from metrics.agreement import LEVELS, agreement_report
from metrics.calibrate import DEFAULT_GRID, FgaTerms, calibrate
from metrics.corpus import ScoreSettings
from metrics.correlation import correlation_report, human_ceiling, ratings_for
from metrics.registry import FGA, METRICS
from metrics.scores import score_table
from metrics.signature import Signature
from metrics.systems import system_level
from metrics.turnstats import extract

if TYPE_CHECKING:
    from metrics.design import Estimate


def choose_question(table: VoteTable, question: str | None, prefer: str = "satisfied") -> str:
    """The question to analyse: the one asked for, the only one, or ``prefer`` if present."""
    if question is not None:
        if question not in table.questions:
            raise ValueError(f"{table.source}: no votes for question {question!r} (found: {', '.join(table.questions)})")
        return question
    if len(table.questions) == 1:
        return table.questions[0]
    if prefer in table.questions:
        return prefer
    raise ValueError(f"{table.source}: several questions ({', '.join(table.questions)}); choose one with --question")


def select_votes(table: VoteTable, question: str | None, condition: str | None = None) -> list[Vote]:
    """The votes on one question (and condition) that rate: "unsure" ones are left out as missing."""
    chosen = choose_question(table, question)
    votes = table.without_unsure().for_question(chosen)
    if condition is not None:
        votes = [v for v in votes if v.condition == condition]
        if not votes:
            raise ValueError(f"{table.source}: no votes for condition {condition!r}")
    return votes


def agreement_all(
    table: VoteTable,
    *,
    question: str | None = None,
    level: str = "nominal",
    resamples: int = 1000,
    seed: int = 0,
    gold: Mapping[tuple[tuple[str, str], str], str] | None = None,
    weights: str = "none",
    categories: Mapping[str, Sequence[str]] | Sequence[str] | None = None,
) -> dict[str, Any]:
    """``{"signature", "questions": {q: report}}`` for one question or every question.

    ``categories``: the declared answers, per question (a mapping; a question not in it gets the answers
    its votes imply) or one list for every question (the CLI's ``--categories`` / ``--scale``)."""
    if level not in LEVELS:
        raise ValueError(f"level must be one of {', '.join(LEVELS)}, got {level!r}")
    questions = [choose_question(table, question)] if question is not None else table.questions
    kept = table.without_unsure()  # "unsure" is missing data, never a category (formats.tidy.UNSURE)
    reports = {}
    notes = [f"{table.n_repeated} repeated vote(s): the last one counted"] if table.n_repeated else []
    for q in questions:
        q_gold = None if gold is None else {unit: value for (unit, gq), value in gold.items() if gq == q}
        declared = categories.get(q) if isinstance(categories, Mapping) else categories
        if declared is not None:
            declared = [c for c in declared if not is_unsure(str(c))]
        votes = kept.for_question(q)
        left_out = len(table.for_question(q)) - len(votes)
        if left_out:
            notes.append(f"{q}: {left_out} 'unsure' vote(s) left out as missing")
        if not votes:
            continue
        reports[q] = agreement_report(
            votes, level=level, resamples=resamples, seed=seed, gold=q_gold, weights=weights, categories=declared
        )
    signature = Signature(
        agreement=level,
        resamples=resamples,
        seed=seed,
        interval="jackknife_atanh_t95",
        weights=None if weights == "none" else weights,
    )
    return {"signature": str(signature), "questions": reports, "notes": notes}


def majority_table(votes: Sequence[Vote], question: str, tie: str = "none", seed: int = 0) -> dict[str, Any]:
    """Majority / soft / median per unit, and the tie count."""
    table = unit_table(votes)
    rows = aggregate_rows(table, question, tie, seed)
    return {"tie_policy": tie, "n_ties": majority_labels(table, tie, seed).n_ties, "rows": rows}


def per_dialogue_metrics(dialogues: Sequence[Dialogue], settings: ScoreSettings) -> tuple[list[str], dict[str, np.ndarray]]:
    """Every registry metric per dialogue, in registry order, a metric with λ once per λ:
    jga, m2 (turn-match rate), fga_<λ>, sa, aga, rsa, f1."""
    stats = extract(dialogues, normalise=settings.normalise)
    table = score_table(stats, settings.lambdas, slot_count=settings.slot_count, rsa=settings.rsa, per_dialogue=True)
    values = {}
    for metric in METRICS:
        if metric.takes_lambda:
            for i, label in enumerate(settings.lambda_labels):
                values[metric.key(label)] = table[metric.name][:, i]
        else:
            values[metric.name] = table[metric.name]
    return stats.dialogue_ids, values


def correlate_study(
    dialogues: Sequence[Dialogue],
    votes: Sequence[Vote],
    settings: ScoreSettings,
    *,
    rating: str = "mean",
    tie: str = "none",
    resamples: int = 1000,
    seed: int = 0,
    adjust: str = "holm",
    resample: str = "dialogues",
    family: str = "reference",
    reference: str = "jga",
    fga_lambda: float = 0.5,
) -> dict[str, Any]:
    """The ``python -m metrics correlate --json`` contract."""
    ids, values = per_dialogue_metrics(dialogues, settings)
    ratings = ratings_for(votes, ids, rating, tie)
    position = {d: i for i, d in enumerate(ids)}
    rows = np.array([position[d] for d in ratings.dialogue_ids])
    report = correlation_report(
        {k: v[rows] for k, v in values.items()},
        ratings,
        resamples=resamples,
        seed=seed,
        adjust=adjust,
        resample=resample,
        family=family,
        reference=reference,
        fga_lambda=fga_lambda,
    )
    n, sy, _ = ratings.sufficient()  # the per-dialogue mean rating, for plots
    rated = set(ratings.dialogue_ids)
    signature = settings.as_signature(
        rating=rating,
        tie=tie,
        resamples=resamples,
        seed=seed,
        resample_unit=resample,
        interval="jackknife_t95+percentile95+bca95",  # pearson_ci: the jackknife-t (issue 26)
        difference="jackknife_t_z_diff",  # the jackknife-t of z_a − z_b, mapped to r; p its t test (DIFF_DEFAULT)
        adjust=adjust,
        family=report["comparisons"]["key"],
    )
    return {
        "signature": str(signature),
        "n_dialogues": ratings.n_dialogues,
        "n_ratings": int(ratings.value.size),  # observations: one per dialogue unless rating is pairs
        "n_votes": sum(v.item in rated for v in votes),  # the votes behind them: a mean of 4 votes is 1 rating, 4 votes
        "rating": rating,
        **report,
        "human_ceiling": human_ceiling(votes, ratings.dialogue_ids, resamples=resamples, seed=seed, rating=rating),
        "notes": ratings.notes + report["notes"],
        "per_dialogue": [
            {
                "id": d,
                "rating": None if n[i] == 0 else float(sy[i] / n[i]),
                **{k: (None if not np.isfinite(v[rows][i]) else float(v[rows][i])) for k, v in values.items()},
            }
            for i, d in enumerate(ratings.dialogue_ids)
        ],
    }


def calibrate_study(
    dialogues: Sequence[Dialogue],
    votes: Sequence[Vote],
    settings: ScoreSettings,
    grid: np.ndarray,
    *,
    rating: str = "mean",
    tie: str = "none",
    resamples: int = 1000,
    folds: int = 5,
    seed: int = 0,
    resample: str = "dialogues",
) -> dict[str, Any]:
    """The ``python -m metrics calibrate --json`` contract."""
    stats = extract(dialogues, normalise=settings.normalise)
    ratings = ratings_for(votes, stats.dialogue_ids, rating, tie)
    terms = FgaTerms.from_statistics(stats, ratings.dialogue_ids)
    result = calibrate(terms, ratings, grid, resamples=resamples, folds=folds, seed=seed, resample=resample)
    # The λ* and r* intervals are bootstrap percentiles; the signature has never said so (no "ci:"), and the
    # calibration JSON's golden file holds it, so that field stays unset here.
    signature = settings.as_signature(
        rating=rating, tie=tie, resamples=resamples, folds=folds, seed=seed, resample_unit=resample, fit="grid+brent"
    )
    return {"signature": str(signature), **result}


# --- a study's analysis: the settings, and the pieces the task kinds compose ---------------------


@dataclass(frozen=True)
class AnalysisSettings:
    """Every analysis option and its default, in one place: the CLIs (``python -m metrics``,
    ``python -m exports``), the app's Analysis page, the exports and the report read them here."""

    level: str = "nominal"  # Krippendorff's α level
    tie: str = "none"  # majority tie policy: none, random, fixed:<label>
    rating: str = "mean"  # human rating per dialogue: mean, majority, pairs
    lambdas: tuple[float, ...] = (0.25, 0.5, 0.75, 1.0)  # FGA λ values in the correlation table
    grid: tuple[float, float, int] = DEFAULT_GRID  # λ grid for calibration (and the designer): linspace(START, STOP, NUM)
    resamples: int = 1000  # bootstrap resamples
    folds: int = 5  # cross-validation folds for λ*
    seed: int = 0
    adjust: str = "holm"  # p-value adjustment over the declared comparisons: holm, bonferroni, bh, none
    weights: str = "none"  # agreement weights for pairwise Cohen κ and Gwet's AC2: none, linear, quadratic
    resample: str = "dialogues"  # bootstrap unit for correlation and calibration: dialogues, dialogues+annotators
    family: str = "reference"  # the declared comparisons: reference (each metric vs ``reference``), all (every pair)
    reference: str = "jga"  # the reference metric of the reference family
    fga_lambda: float = 0.5  # the FGA λ of the reference family (the λ measured nearest to it)
    # automatic judges (annotators of kind "judge", issue 28): kept apart from the humans in agreement,
    # majority labels and correlations (and compared with the human majority) unless this is True
    include_judges: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "level": self.level,
            "tie": self.tie,
            "rating": self.rating,
            "lambdas": list(self.lambdas),
            "grid": list(self.grid),
            "resamples": self.resamples,
            "folds": self.folds,
            "seed": self.seed,
            "adjust": self.adjust,
            "family": self.family,
            "reference": self.reference,
            "fga_lambda": self.fga_lambda,
            "weights": self.weights,
            "resample": self.resample,
            "include_judges": self.include_judges,
        }

    @classmethod
    def from_dict(cls, values: dict[str, Any] | None) -> AnalysisSettings:
        """Stored settings (unknown keys ignored, missing ones at their defaults).

        >>> AnalysisSettings.from_dict({"rating": "majority", "grid": [0, 5, 11], "other": 1}).grid
        (0.0, 5.0, 11)
        """
        values = dict(values or {})
        keys = ("level", "tie", "rating", "resamples", "folds", "seed", "adjust", "weights", "resample", "family", "reference")
        chosen = {k: values[k] for k in keys if k in values}
        if "fga_lambda" in values:
            chosen["fga_lambda"] = float(values["fga_lambda"])
        if "include_judges" in values:
            chosen["include_judges"] = bool(values["include_judges"])
        if "lambdas" in values:
            chosen["lambdas"] = tuple(float(v) for v in values["lambdas"])
        if "grid" in values:
            start, stop, num = values["grid"]
            chosen["grid"] = (float(start), float(stop), int(num))
        return cls(**chosen)

    @property
    def lambdas_text(self) -> str:
        return ",".join(f"{v:g}" for v in self.lambdas)

    @property
    def grid_text(self) -> str:
        return f"{self.grid[0]:g}:{self.grid[1]:g}:{self.grid[2]}"


DEFAULTS = AnalysisSettings()
Progress = Callable[[float, str], None]


def _silent(fraction: float, text: str) -> None:
    return None


def votes_summary(
    votes: VoteTable,
    settings: AnalysisSettings,
    *,
    gold: Mapping[tuple[tuple[str, str], str], str] | None = None,
    skip: Sequence[str] = ("transcription",),
    categories: Mapping[str, Sequence[str]] | None = None,
) -> dict[str, Any]:
    """What every study gets: vote count, questions, agreement (with gold accuracy) and majority labels;
    ``categories``: the study's declared answers per question, for agreement (see :func:`agreement_all`)."""
    result: dict[str, Any] = {"n_votes": len(votes.votes), "questions": votes.questions}
    if not votes.votes:
        return result
    result["agreement"] = agreement_all(
        votes,
        level=settings.level,
        resamples=settings.resamples,
        seed=settings.seed,
        gold=gold,
        weights=settings.weights,
        categories=categories,
    )
    kept = votes.without_unsure()  # "unsure": missing data for the labels too (formats.tidy.UNSURE)
    result["majority"] = {
        q: majority_table(kept.for_question(q), q, settings.tie, settings.seed)
        for q in votes.questions
        if q not in skip and kept.for_question(q)
    }
    result["model_labels"] = model_labels_all(kept, settings, skip=skip, categories=categories)
    unsure = unsure_summary(votes)
    if unsure is not None:
        result["unsure"] = unsure
    return result


MODEL_RESAMPLES = 200  # the bootstrap of Dawid-Skene's competences refits EM per resample


def model_labels_all(
    votes: VoteTable,
    settings: AnalysisSettings,
    *,
    skip: Sequence[str] = ("transcription",),
    categories: Mapping[str, Sequence[str]] | None = None,
) -> dict[str, Any]:
    """Per question (those with majority labels): Dawid-Skene's posterior labels beside the majority,
    each annotator's competence and spammer flag with bootstrap intervals over items (at most
    ``MODEL_RESAMPLES`` resamples: EM is refitted on each), as JSON (``metrics.crowd``); the majority
    with the study's tie policy.  Declared answers (``categories``) are used when every vote is one of them."""
    from metrics.crowd import dawid_skene

    result = {}
    for q in votes.questions:
        if q in skip:
            continue
        chosen = votes.for_question(q)
        if not chosen:  # every vote on it was "unsure"
            continue
        declared = (categories or {}).get(q)
        if declared is not None and not {v.value for v in chosen} <= set(declared):
            declared = None
        found = dawid_skene(
            chosen,
            q,
            categories=declared,
            tie=settings.tie,
            seed=settings.seed,
            resamples=min(settings.resamples, MODEL_RESAMPLES),
        )
        result[q] = found.as_json()
    return result


def coco_summary(votes: VoteTable, tie: str = "none", level: str = "nominal", resamples: int = 0) -> list[dict[str, Any]]:
    """CoCo paper Table 3 layout: per condition, % human-like and % correct by majority vote,
    over the items that have a majority, with ties counted and agreement (Krippendorff's α, Fleiss' κ)."""
    rows = []
    conditions = list(dict.fromkeys(v.condition for v in votes.votes))
    for condition in conditions:
        row: dict[str, Any] = {"condition": condition}
        for question in ("human_like", "correct"):
            chosen = [v for v in votes.for_question(question) if v.condition == condition]
            if not chosen:
                row.update({f"{question}_pct": None, f"{question}_n": 0, f"{question}_ties": 0, f"{question}_alpha": None})
                continue
            table = unit_table(chosen)
            majority = majority_labels(table, tie)
            decided = [label for label in majority.labels if label is not None]
            report = agreement_report(chosen, level=level, resamples=resamples)
            row[f"{question}_pct"] = 100 * sum(v == "1" for v in decided) / len(decided) if decided else None
            row[f"{question}_n"] = len(decided)
            row[f"{question}_ties"] = majority.n_ties
            row[f"{question}_alpha"] = report["krippendorff_alpha"]
            row[f"{question}_kappa"] = report["fleiss_kappa"]
        rows.append(row)
    return rows


def unsure_summary(table: VoteTable, top: int = 5) -> dict[str, Any] | None:
    """How often "unsure" was answered (``formats.tidy.UNSURE``; left out as missing everywhere else), per
    question: the votes, the unsure ones and their rate, and the items and annotators with the highest
    rates (``top`` of each; ties by name).  None when no vote is unsure.

    >>> t = VoteTable([Vote("d1", "a", "q", "1"), Vote("d1", "b", "q", "unsure"), Vote("d2", "a", "q", "unsure"),
    ...                Vote("d2", "b", "q", "0")], questions=["q"])
    >>> found = unsure_summary(t)["questions"]["q"]
    >>> found["votes"], found["unsure"], found["rate"], found["items"][0]
    (4, 2, 0.5, {'item': 'd1', 'condition': '', 'votes': 2, 'unsure': 1, 'rate': 0.5})
    >>> [(r["annotator"], r["unsure"], r["votes"]) for r in found["annotators"]]
    [('a', 1, 2), ('b', 1, 2)]
    """
    if not any(is_unsure(v.value) for v in table.votes):
        return None
    questions: dict[str, Any] = {}
    for question in table.questions:
        votes = table.for_question(question)
        unsure = [v for v in votes if is_unsure(v.value)]
        if not unsure:
            continue

        def rates(key: Callable[[Vote], tuple[str, ...]], votes: list[Vote] = votes) -> list[tuple[tuple[str, ...], int, int]]:
            counts: dict[tuple[str, ...], list[int]] = {}
            for vote in votes:
                counted = counts.setdefault(key(vote), [0, 0])
                counted[0] += 1
                counted[1] += is_unsure(vote.value)
            ranked = sorted(counts.items(), key=lambda kv: (-kv[1][1] / kv[1][0], kv[0]))
            return [(k, n, u) for k, (n, u) in ranked if u][:top]

        questions[question] = {
            "votes": len(votes),
            "unsure": len(unsure),
            "rate": len(unsure) / len(votes),
            "items": [
                {"item": k[0], "condition": k[1], "votes": n, "unsure": u, "rate": u / n}
                for k, n, u in rates(lambda v: (v.item, v.condition))
            ],
            "annotators": [
                {"annotator": k[0], "votes": n, "unsure": u, "rate": u / n} for k, n, u in rates(lambda v: (v.annotator,))
            ],
        }
    return {"policy": "missing", "top": top, "questions": questions}


def metrics_summary(
    dialogues: dict[str, list[Dialogue]],
    votes: VoteTable,
    settings: AnalysisSettings,
    *,
    question: str = "satisfied",
    condition: str | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Correlation of every metric with the ratings and λ calibration, for one system (condition):
    ``condition``, ``conditions``, and ``correlation`` + ``calibration`` or a ``correlation_note``."""
    report = progress or _silent
    if not dialogues:
        return {}
    if condition is not None and condition not in dialogues:
        raise ValueError(f"no condition {condition!r} (conditions: {', '.join(dialogues)})")
    chosen = condition if condition is not None else next(iter(dialogues))
    rated = [v for v in votes.for_question(question) if v.condition == chosen]
    result: dict[str, Any] = {"condition": chosen, "conditions": list(dialogues)}
    if len(dialogues) > 1:  # several systems rated: systems as the unit too
        scoring_all = ScoreSettings(settings.lambdas, tuple(f"{v:g}" for v in settings.lambdas))
        try:
            result["system_level"] = system_level(
                dialogues, votes.for_question(question), scoring_all, resamples=settings.resamples, seed=settings.seed
            )
        except ValueError as why:
            result["system_level"] = {"n_systems": 0, "systems": [], "metrics": [], "note": str(why)}
    if len({v.item for v in rated}) < 3:
        result["correlation_note"] = "correlation needs votes on at least 3 dialogues of this system"
        return result
    try:
        report(0.4, "correlation")
        scoring = ScoreSettings(settings.lambdas, tuple(f"{v:g}" for v in settings.lambdas))
        result["correlation"] = correlate_study(
            dialogues[chosen],
            rated,
            scoring,
            rating=settings.rating,
            tie=settings.tie,
            resamples=settings.resamples,
            seed=settings.seed,
            adjust=settings.adjust,
            resample=settings.resample,
            family=settings.family,
            reference=settings.reference,
            fga_lambda=settings.fga_lambda,
        )
        report(0.7, "λ calibration")
        grid = np.linspace(*settings.grid)
        grid_scoring = ScoreSettings(tuple(grid), tuple(f"{v:g}" for v in grid))
        result["calibration"] = calibrate_study(
            dialogues[chosen],
            rated,
            grid_scoring,
            grid,
            rating=settings.rating,
            tie=settings.tie,
            resamples=settings.resamples,
            folds=settings.folds,
            seed=settings.seed,
            resample=settings.resample,
        )
    except ValueError as why:
        result["correlation_note"] = str(why)
    return result


def gold_answers(items: Iterable[Any]) -> dict[tuple[tuple[str, str], str], str]:
    """Attention-check answers of items (``key``, ``condition``, ``gold``): {((key, condition), question): value}."""
    return {((i.key, i.condition or ""), q): v for i in items if i.gold for q, v in i.gold.items()}


def design_summary(
    dialogues: dict[str, list[Dialogue]],
    votes: VoteTable,
    settings: AnalysisSettings,
    pi: Mapping[tuple[str, str], float | None],
    *,
    question: str = "satisfied",
    condition: str | None = None,
    allocation: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A study's estimates under its allocation design (``metrics.adaptive.design_report``): every
    metric's correlation, every difference and λ*, each judged dialogue weighted by 1/π.  ``pi`` maps
    (dialogue id, condition) to the dialogue's inclusion probability."""
    from metrics import adaptive

    if not dialogues:
        return {}
    chosen = condition if condition is not None else next(iter(dialogues))
    rated = [v for v in votes.for_question(question) if v.condition == chosen]
    base = {"design": (allocation or {}).get("policy", "adaptive"), "allocation": allocation or {}, "condition": chosen}
    if len({v.item for v in rated}) < 3:
        return {**base, "note": "the design's estimates need votes on at least 3 dialogues"}
    scoring = ScoreSettings(settings.lambdas, tuple(f"{v:g}" for v in settings.lambdas))
    ids, values = per_dialogue_metrics(dialogues[chosen], scoring)
    ratings = ratings_for(rated, ids, "mean", settings.tie)
    n, sy, _ = ratings.sufficient()
    position = {d: i for i, d in enumerate(ids)}
    rows = np.array([position[d] for d in ratings.dialogue_ids], dtype=int)
    judged = n > 0
    rows, mean = rows[judged], sy[judged] / n[judged]
    probabilities = np.array([pi.get((d, chosen), 1.0) or 1.0 for d in np.array(ratings.dialogue_ids)[judged]], dtype=float)
    if rows.size < 3:
        return {**base, "note": "the design's estimates need votes on at least 3 dialogues"}
    grid = np.linspace(*settings.grid)
    _, on_grid = per_dialogue_metrics(dialogues[chosen], ScoreSettings(tuple(grid), tuple(f"{v:g}" for v in grid)))
    fga_grid = np.column_stack([on_grid[FGA.key(f"{v:g}")] for v in grid])[rows]
    report = adaptive.design_report(
        {k: v[rows] for k, v in values.items()},
        mean,
        probabilities,
        fga_grid=fga_grid,
        grid=[float(v) for v in grid],
        resamples=settings.resamples,
        seed=settings.seed,
        adjust=settings.adjust,
        family=settings.family,
        reference=settings.reference,
        fga_lambda=float((allocation or {}).get("lambda", settings.fga_lambda)),  # the λ the design was chosen for
        refine=(allocation or {}).get("policy") == "designed",  # the designer's λ*: between grid points, as predicted
    )
    return {**base, **report}


CORRECTED_TARGET = (
    "the correlation with a dialogue's expected rating over the rater population, corrected for the reliability "
    "measured on the overlap subset; the interval is a jackknife over dialogues that re-estimates the ICC"
)


def _estimate_row(estimate: Estimate) -> dict[str, Any]:
    ci = None if estimate.low is None else [estimate.low, estimate.high]
    return {"estimate": estimate.estimate, "ci": ci, "method": estimate.method}


ICC_ALPHA = 0.05  # a study not designed for it: the corrected ρ only when the overlap's ICC is > 0 at this level


def _between_dialogues_test(groups: list[list[float]]) -> tuple[float, float]:
    """One-way ANOVA of the votes by dialogue on the overlap subset (H0: ICC(1,1) = 0): (F, p).  Votes
    that agree within every dialogue and differ between dialogues: (inf, 0); no variation at all: (nan, 1).

    >>> _between_dialogues_test([[1, 1], [0, 0], [1, 1]])
    (inf, 0.0)
    >>> f, p = _between_dialogues_test([[1, 0], [0, 1], [1, 0], [0, 1]]); round(f, 3), round(p, 3)
    (0.0, 1.0)
    """
    from scipy import stats

    values = np.concatenate([np.asarray(g, dtype=float) for g in groups])
    within = sum(float(np.sum((np.asarray(g, dtype=float) - np.mean(g)) ** 2)) for g in groups)
    between = sum(len(g) * (float(np.mean(g)) - float(values.mean())) ** 2 for g in groups)
    df_between, df_within = len(groups) - 1, values.size - len(groups)
    if df_between < 1 or df_within < 1:
        return float("nan"), 1.0
    if within == 0:
        return (float("inf"), 0.0) if between > 0 else (float("nan"), 1.0)
    f_stat = (between / df_between) / (within / df_within)
    return float(f_stat), float(stats.f.sf(f_stat, df_between, df_within))


def corrected_summary(
    dialogues: dict[str, list[Dialogue]],
    votes: VoteTable,
    settings: AnalysisSettings,
    *,
    question: str = "satisfied",
    condition: str | None = None,
    allocation: dict[str, Any] | None = None,
    icc_alpha: float | None = None,
) -> dict[str, Any]:
    """The k-independent target of a designed study (issue 29, ``metrics.design``): for each metric of the
    correlation table the corrected correlation ρ(metric, T) with its jackknife interval, and the corrected
    difference ρ(FGA at the design's λ, default 0.5) − ρ(JGA), with the ICC and reliability they use.
    Fewer than ``metrics.design.MIN_OVERLAP`` dialogues with two or more votes: a ``note`` instead.

    ``icc_f``, ``icc_p``: the overlap's one-way ANOVA of the votes by dialogue (H0: ICC = 0).  With
    ``icc_alpha`` (the analysis of a study that was not designed for the target: ``ICC_ALPHA``), a study
    whose ANOVA does not reject ICC = 0 at that level gets a ``note`` instead of estimates: dividing by the
    square root of a reliability that may be 0 inflates r without bound (votes independent of the dialogue
    gave ρ of 2.5).  A designed study's overlap was sized for the target, and is reported as before."""
    from metrics.design import MIN_OVERLAP, corrected_difference, corrected_r, rating_matrix, reliability_parts

    if not dialogues:
        return {}
    chosen = condition if condition is not None else next(iter(dialogues))
    design = (allocation or {}).get("design") or {}
    fga_lambda = float(design.get("lambda", (allocation or {}).get("lambda", 0.5)))
    out: dict[str, Any] = {"target": CORRECTED_TARGET, "condition": chosen, "fga_lambda": fga_lambda, "metrics": [], "notes": []}
    scoring = ScoreSettings(settings.lambdas, tuple(f"{v:g}" for v in settings.lambdas))
    ids, values = per_dialogue_metrics(dialogues[chosen], scoring)
    fga_key = FGA.key(f"{fga_lambda:g}")
    if fga_key not in values:
        _, extra = per_dialogue_metrics(dialogues[chosen], ScoreSettings((fga_lambda,), (f"{fga_lambda:g}",)))
        values_all = {**values, fga_key: extra[fga_key]}
    else:
        values_all = values
    by_dialogue: dict[str, list[float]] = {}
    for vote in votes.for_question(question):
        if vote.condition == chosen:
            by_dialogue.setdefault(vote.item, []).append(float(vote.value))
    position = {d: i for i, d in enumerate(ids)}
    rated = [d for d in ids if d in by_dialogue]
    unknown = sorted(set(by_dialogue) - set(position))
    if unknown:
        out["notes"].append(f"{len(unknown)} rated item(s) have no predictions and are left out (e.g. {unknown[0]!r})")
    rows = np.array([position[d] for d in rated], dtype=int)
    ratings = [by_dialogue[d] for d in rated]
    overlap = sum(len(r) >= 2 for r in ratings)
    if design.get("weighting"):
        out["notes"].append(
            "the dialogues were drawn with π by their λ scores: these corrected correlations are unweighted and describe "
            "the judged dialogues; λ* and the design's weighted estimates hold for the pool"
        )
    out.update({"n_dialogues": len(rated), "n_overlap": overlap, "n_votes": sum(len(r) for r in ratings)})
    if overlap < MIN_OVERLAP:
        out["note"] = (
            f"the overlap subset is too small: {overlap} dialogues with 2 or more votes, at least {MIN_OVERLAP} are "
            "needed to estimate the ICC, so the corrected correlations are not reported"
        )
        return out
    matrix = rating_matrix(ratings)
    single, reliability, _, _ = reliability_parts(matrix)
    out.update({"icc": single, "reliability": reliability})
    if not reliability > 0:
        out["note"] = f"ICC(1,1) = {single:.3f} is not positive: the corrected correlations are not identified"
        return out
    f_stat, f_p = _between_dialogues_test([r for r in ratings if len(r) >= 2])
    out.update({"icc_f": f_stat, "icc_p": f_p})
    if icc_alpha is not None and not f_p < icc_alpha:
        out["note"] = (
            f"the ratings' reliability is not distinguishable from 0 on the overlap subset (ICC(1,1) {single:.3f}; "
            f"one-way ANOVA of the votes by dialogue: F {f_stat:.2f}, p {f_p:.2g}): dividing by its square root "
            "would inflate the correlations without bound, so the corrected correlations are not reported"
        )
        return out
    for metric, x in values.items():
        x = x[rows]
        if not np.all(np.isfinite(x)) or np.ptp(x) == 0:
            out["notes"].append(f"{metric}: undefined or constant on the rated dialogues, no corrected r")
            continue
        out["metrics"].append({"metric": metric, **_estimate_row(corrected_r(x, matrix))})
    a, b = values_all[fga_key][rows], values_all["jga"][rows]
    if np.all(np.isfinite(a)) and np.all(np.isfinite(b)) and np.ptp(a) > 0 and np.ptp(b) > 0:
        out["difference"] = {"a": fga_key, "b": "jga", **_estimate_row(corrected_difference(a, b, matrix))}
    else:
        out["notes"].append(f"{fga_key} - jga: a metric is undefined or constant on the rated dialogues")
    return out
