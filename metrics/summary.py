"""The answers first, in words: a study's analysis as a few sentences, each with the numbers it states.

A researcher opens an analysis to learn three things (issue 27): do the annotators agree enough to
trust the ratings; which automatic metric tracks people best, and is its lead real; which λ makes FGA
agree most with people.  :func:`summarise` turns an analysis (``annotate.kinds.analyse``: agreement,
majority labels, the CoCo table, correlation, calibration) into a :class:`Summary` of typed
:class:`Sentence` s in that order; :func:`summarise_agreement`, :func:`summarise_correlation` and
:func:`summarise_calibration` do the same for one result of ``python -m metrics agreement |
correlate | calibrate``.  Only the JSON contracts' keys are read (docs/reference/formats.md).

Every number is written by :func:`metrics.present.number` / :func:`metrics.present.interval` (3
decimals, one rounding rule with the tables) and kept unrounded in the sentence's ``numbers``, so a
test can check each one against the JSON.  A closing sentence names the intervals' levels and units
of resampling.  Degenerate cases are said in words: no votes, one annotator, agreement or correlation
undefined, 3 dialogues or fewer, the reference metric not measured, λ* at the grid's end or its
interval open, no human ceiling, no bootstrap.

Words for agreement follow named conventions, and the sentence names them:

- Krippendorff's α: Krippendorff (2004, *Content Analysis*, 2nd ed., p. 241): rely on α ≥ 0.800;
  0.667 ≤ α < 0.800 only for tentative conclusions; below 0.667, not at all.
- Gwet's AC1 / AC2 and κ: Landis & Koch (1977): < 0 poor, to 0.20 slight, to 0.40 fair, to 0.60
  moderate, to 0.80 substantial, above almost perfect (Gwet 2014, ch. 6, benchmarks AC1 on this scale).

Values are read on the scale as shown (3 decimals), so the word always matches the number printed.

>>> LANDIS_KOCH.reading(0.41), LANDIS_KOCH.reading(0.4), LANDIS_KOCH.reading(-0.1)
('moderate', 'fair', 'poor')
>>> KRIPPENDORFF.reading(0.6667), KRIPPENDORFF.reading(0.85), KRIPPENDORFF.reading(0.3)
('tentative', 'reliable', 'unreliable')
>>> s = Summary((Sentence("ceiling", "The human ceiling is 0.620.", {"r_max": 0.62}),))
>>> s.text(), s.strings(), s.markdown()
('The human ceiling is 0.620.', ['The human ceiling is 0.620.'], '- The human ceiling is 0\\\\.620\\\\.')
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from metrics.comparisons import ADJUSTMENT_NAMES
from metrics.correlation import Comparison, HumanCeiling, MetricCorrelation
from metrics.present import RATING_WORDS, interval, lambda_runs, number, p_value
from metrics.registry import JGA, split_key
from metrics.results import (
    Agreement,
    AgreementReport,
    Calibration,
    CocoRow,
    ComparisonFamily,
    CorrelationReport,
    MajorityTable,
    StudyAnalysis,
    SystemLevel,
    majority_tables,
)

TOPICS = (
    "no_votes",  # nothing to summarise yet
    "agreement",  # per question: α (Krippendorff 2004) and AC1/AC2 (Landis & Koch 1977)
    "coco",  # per condition: % human-like and % correct by majority vote
    "majority",  # per question: items per majority label, ties
    "design",  # the unweighted figures describe the judged dialogues only (adaptive design)
    "best_metric",  # the metric with the largest r
    "comparison",  # its lead over the reference (or runner-up), adjusted over the declared family
    "ceiling",  # the human ceiling
    "lambda",  # λ*, its interval, r there and the cross-validated r
    "systems",  # systems as the unit: the metric that ranks them most like people, its cluster
    "note",  # a degenerate case, in words
    "units",  # the intervals' levels and units of resampling
)
MANY_QUESTIONS = 3  # more questions than this: one sentence lists them all (SLU: one question per act)


@dataclass(frozen=True)
class Sentence:
    """One sentence of a summary: its topic (:data:`TOPICS`), its text, and the numbers it states,
    unrounded, by name (a count is an int; ``None`` where the text says a value is missing)."""

    topic: str
    text: str
    numbers: Mapping[str, float | None] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.topic not in TOPICS:
            raise ValueError(f"unknown topic {self.topic!r} (topics: {', '.join(TOPICS)})")
        object.__setattr__(self, "numbers", MappingProxyType(dict(self.numbers)))

    def __hash__(self) -> int:
        return hash((self.topic, self.text, tuple(sorted(self.numbers.items()))))


@dataclass(frozen=True)
class Summary:
    sentences: tuple[Sentence, ...]

    def text(self, separator: str = " ") -> str:
        """The sentences as one paragraph (or one a line with ``separator="\\n"``)."""
        return separator.join(s.text for s in self.sentences)

    def strings(self) -> list[str]:
        """The sentences' texts (the CLIs' JSON ``"summary"``)."""
        return [s.text for s in self.sentences]

    def markdown(self) -> str:
        """A bulleted list, Markdown syntax in the text (question names, metric keys) escaped."""
        return "\n".join(f"- {_md_escape(s.text)}" for s in self.sentences)

    def topic(self, name: str) -> list[Sentence]:
        return [s for s in self.sentences if s.topic == name]


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$])")  # $: Streamlit renders $...$ as LaTeX


def _md_escape(text: str) -> str:
    return _MD_SPECIAL.sub(r"\\\1", text).replace("\n", " ")


# --- conventions ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Convention:
    """A named reading of an agreement coefficient: ``bands`` are (upper bound, word), the first bound
    the value (as shown, 3 decimals) does not exceed gives the word; above the last bound, ``top``."""

    name: str
    bands: tuple[tuple[float, str], ...]
    top: str
    strict: bool = False  # True: a value equal to a bound belongs to the band above (α = 0.8 is reliable)

    def reading(self, value: float) -> str:
        shown = round(value, 3)
        for bound, word in self.bands:
            if shown < bound or (not self.strict and shown == bound):
                return word
        return self.top


LANDIS_KOCH = Convention(
    "Landis & Koch (1977)",
    ((-1e-12, "poor"), (0.2, "slight"), (0.4, "fair"), (0.6, "moderate"), (0.8, "substantial")),
    "almost perfect",
)
KRIPPENDORFF_TENTATIVE, KRIPPENDORFF_RELIABLE = 0.667, 0.8
KRIPPENDORFF = Convention(
    "Krippendorff (2004)",
    ((KRIPPENDORFF_TENTATIVE, "unreliable"), (KRIPPENDORFF_RELIABLE, "tentative")),
    "reliable",
    strict=True,
)
ALPHA_WORDS = {  # (how annotators agree, what α is measured against), by Krippendorff (2004)
    "reliable": ("reliably", f"reaches the {KRIPPENDORFF_RELIABLE:g} that Krippendorff (2004) asks for reliable data"),
    "tentative": (
        "enough for tentative conclusions only",
        f"is between the {KRIPPENDORFF_TENTATIVE:g} that Krippendorff (2004) asks for tentative conclusions and the "
        f"{KRIPPENDORFF_RELIABLE:g} for reliable data",
    ),
    "unreliable": (
        "too little to rely on",
        f"is below the {KRIPPENDORFF_TENTATIVE:g} that Krippendorff (2004) asks for even tentative conclusions",
    ),
}


# --- small helpers -------------------------------------------------------------------------------------


def display(key: str) -> str:
    """A metric key as people read it (``metrics.registry``): ``fga_0.5`` -> ``FGA(0.5)``, ``jga`` -> ``JGA``."""
    metric, lam = split_key(key)
    if metric is None:
        return key
    return metric.display(lam) if metric.takes_lambda else metric.display()


def _ci(pair: Sequence[float | None] | None, name: str, numbers: dict[str, Any]) -> str:
    """The interval as shown, its ends recorded as ``<name>_low`` / ``<name>_high``."""
    if not pair:
        return ""
    numbers[f"{name}_low"], numbers[f"{name}_high"] = pair[0], pair[1]
    return " " + interval(pair)


def _percent(confidence: float) -> str:
    return f"{100 * confidence:.3g}%"


def _quoted(question: str) -> str:
    return f"“{question}”"


def _listing(words: Sequence[str]) -> str:
    words = list(words)
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


# --- agreement ---------------------------------------------------------------------------------------


def _undefined_reason(report: AgreementReport) -> str:
    """Why Krippendorff's α is missing, in a few words."""
    if report.n_annotators < 2:
        return "only one annotator"
    if report.n_pairable_items == 0:
        return "no item has two votes"
    for note in report.notes:
        if note.startswith("all ratings identical"):
            return "every vote has the same answer, so chance agreement is 1 and α is 0/0"
        if note.startswith("Krippendorff's α: "):
            return str(note).removeprefix("Krippendorff's α: ")
    if report.ci and report.interval("krippendorff_alpha") is None and report.bootstrap.resamples <= 0:
        return "not computed"
    return "not computable for these votes"


def _chance_corrected(report: AgreementReport) -> tuple[str, str, str]:
    """(key, label, what it used) of the coefficient read on Landis & Koch's scale: AC2 when weights were
    asked for (an ordinal scale), else AC1 (it stays meaningful when one answer dominates)."""
    if report.has_ac2:
        return "gwet_ac2", f"Gwet's AC2 ({report.weights} weights)", "ac2"
    return "gwet_ac1", "Gwet's AC1", "ac1"


def _interval_words(report: AgreementReport, key: str, name: str, numbers: dict[str, Any]) -> str:
    """`` [lo, hi]``, with a word when the interval collapsed to a point or was not computed."""
    pair = report.interval(key)
    if pair is None:
        return " (no interval: no bootstrap resamples)" if report.bootstrap.resamples <= 0 else " (no interval)"
    text = _ci(pair, name, numbers)
    if key in report.ci_degenerate:
        text += " (a point, not an interval: every bootstrap resample gave the same value, so it measures no uncertainty)"
    return text


def _agreement_sentence(question: str, report: AgreementReport) -> Sentence:
    n = {"n_items": report.n_items, "n_votes": report.n_votes, "n_annotators": report.n_annotators}
    counts = f"{report.n_items} items, {report.n_votes} votes, {report.n_annotators} annotators"
    q = _quoted(question)
    if report.n_annotators < 2:
        return Sentence("note", f"Only one annotator voted on {q} ({report.n_items} items): agreement is not defined.", n)
    if report.n_pairable_items == 0:
        return Sentence("note", f"No item of {q} has two votes yet ({counts}): agreement is not defined.", n)
    alpha = report.krippendorff_alpha
    chance_key, chance_label, short = _chance_corrected(report)
    chance = report.estimate(chance_key)
    numbers: dict[str, Any] = dict(n)
    level = "" if report.level == "nominal" else f" ({report.level})"
    chance_text = ""
    if chance is not None:
        numbers[short] = chance
        chance_text = (
            f"{chance_label} {number(chance)}{_interval_words(report, chance_key, short, numbers)} is "
            f"{LANDIS_KOCH.reading(chance)} by {LANDIS_KOCH.name}"
        )
    if alpha is None:
        numbers["alpha"] = None
        why = _undefined_reason(report)
        if chance is None:
            return Sentence("note", f"Agreement on {q} is undefined ({why}; {counts}).", numbers)
        return Sentence("note", f"On {q}, Krippendorff's α{level} is undefined ({why}); {chance_text} ({counts}).", numbers)
    numbers["alpha"] = alpha
    reading = KRIPPENDORFF.reading(alpha)
    numbers["bar_tentative"], numbers["bar_reliable"] = KRIPPENDORFF_TENTATIVE, KRIPPENDORFF_RELIABLE
    alpha_ci = _interval_words(report, "krippendorff_alpha", "alpha", numbers)
    straddle = ""
    pair = report.interval("krippendorff_alpha")
    if pair and pair[0] != pair[1]:
        crossed = [bar for bar in (KRIPPENDORFF_TENTATIVE, KRIPPENDORFF_RELIABLE) if round(pair[0], 3) < bar <= round(pair[1], 3)]
        if crossed:
            straddle = f", though its interval spans {_listing([f'{bar:g}' for bar in crossed])}"
    how, against = ALPHA_WORDS[reading]
    text = f"On {q}, annotators agree {how}: Krippendorff's α{level} {number(alpha)}{alpha_ci} {against}{straddle}"
    text += f"; {chance_text} ({counts})." if chance_text else f" ({counts})."
    return Sentence("agreement", text, numbers)


def _agreement_listing(questions: Mapping[str, AgreementReport]) -> list[Sentence]:
    """Many questions (an SLU study: one per act): α of each in one sentence, and how many reach the bars."""
    parts: list[str] = []
    numbers: dict[str, Any] = {}
    defined = {}
    for question, report in questions.items():
        alpha = report.krippendorff_alpha
        numbers[f"{question}:n_items"] = report.n_items
        numbers[f"{question}:alpha"] = alpha
        if alpha is None:
            parts.append(f"{_quoted(question)} undefined ({_undefined_reason(report)}; {report.n_items} items)")
            continue
        defined[question] = alpha
        ci = _ci(report.interval("krippendorff_alpha"), f"{question}:alpha", numbers)
        degenerate = "krippendorff_alpha" in report.ci_degenerate
        point = ", the interval a point: every resample gave the same value" if degenerate else ""
        parts.append(f"{_quoted(question)} {number(alpha)}{ci} ({report.n_items} items{point})")
    sentences = [Sentence("agreement", "Krippendorff's α per question: " + "; ".join(parts) + ".", numbers)]
    if defined:
        reliable = sum(KRIPPENDORFF.reading(a) == "reliable" for a in defined.values())
        tentative = sum(KRIPPENDORFF.reading(a) == "tentative" for a in defined.values())
        counts: dict[str, Any] = {"n_defined": len(defined), "n_reliable": reliable, "n_tentative": tentative}
        counts["bar_tentative"], counts["bar_reliable"] = KRIPPENDORFF_TENTATIVE, KRIPPENDORFF_RELIABLE
        sentences.append(
            Sentence(
                "agreement",
                f"By {KRIPPENDORFF.name}, {reliable} of the {len(defined)} questions with a defined α can be relied on "
                f"(α at least {KRIPPENDORFF_RELIABLE:g}) and {tentative} more support tentative conclusions "
                f"(α from {KRIPPENDORFF_TENTATIVE:g}).",
                counts,
            )
        )
    return sentences


def agreement_sentences(agreement: Agreement | Mapping[str, Any]) -> list[Sentence]:
    """Per question (``python -m metrics agreement --json``): α read by Krippendorff (2004), AC1 (AC2 with
    weights) by Landis & Koch (1977), with their intervals and counts; many questions in one listing."""
    questions = Agreement.of(agreement).questions
    if len(questions) > MANY_QUESTIONS:
        return _agreement_listing(questions)
    return [_agreement_sentence(question, report) for question, report in questions.items()]


# --- majority labels and the CoCo table --------------------------------------------------------------


def majority_sentences(majority: Mapping[str, MajorityTable | Mapping[str, Any]]) -> list[Sentence]:
    """Per question: items per majority label and the ties (one sentence for many questions)."""
    tables = majority_tables(majority)
    parts, numbers = [], {}
    for question, table in tables.items():
        labels: dict[str, int] = {}
        for row in table.rows:
            if row.majority is not None:
                labels[str(row.majority)] = labels.get(str(row.majority), 0) + 1
        for label, count in labels.items():
            numbers[f"{question}:{label}"] = count
        numbers[f"{question}:ties"] = table.n_ties
        shown = ", ".join(f"{label}: {count}" for label, count in sorted(labels.items())) or "none"
        ties = table.n_ties
        parts.append(f"{_quoted(question)} {shown}" + (f" ({ties} tied, no majority)" if ties else ""))
    if not parts:
        return []
    policy = next(iter(tables.values())).tie_policy
    return [Sentence("majority", f"Majority labels (items per label; ties: {policy}): " + "; ".join(parts) + ".", numbers)]


def _coco_part(row: CocoRow, question: str, word: str, numbers: dict[str, Any]) -> str:
    pct, n, ties = row.share(question)
    numbers[f"{question}_pct"], numbers[f"{question}_n"], numbers[f"{question}_ties"] = pct, n, ties
    tied = f", {ties} tied" if ties else ""
    if pct is None:
        return f"no turn has a {word} majority ({n} turns{tied})"
    return f"{number(pct, 1)}% {word} ({n} turns with a majority{tied})"


def coco_sentences(rows: Sequence[CocoRow | Mapping[str, Any]]) -> list[Sentence]:
    """The CoCo paper's Table 3 in words: per condition, % human-like and % correct by majority vote."""
    sentences = []
    for row in (CocoRow.of(found) for found in rows):
        numbers: dict[str, Any] = {}
        human = _coco_part(row, "human_like", "human-like", numbers)
        correct = _coco_part(row, "correct", "correct", numbers)
        sentences.append(Sentence("coco", f"Under {_quoted(row.condition)}: {human}; {correct}.", numbers))
    return sentences


# --- correlation ------------------------------------------------------------------------------------------


def _entry(correlation: CorrelationReport, a: str, b: str) -> tuple[Comparison | None, int]:
    """The comparison of ``a`` with ``b``, and the sign that turns its diff into r_a − r_b."""
    for entry in correlation.williams:
        if (entry.a, entry.b) == (a, b):
            return entry, 1
        if (entry.a, entry.b) == (b, a):
            return entry, -1
    return None, 1


def _adjustment_words(comparisons: ComparisonFamily) -> str:
    size = comparisons.size
    if comparisons.adjust == "none":
        return f"at α {comparisons.alpha:g} without adjustment over the {size} declared comparisons"
    name = ADJUSTMENT_NAMES[comparisons.adjust or "none"]
    return f"after {name} over the {size} declared comparisons"


def _difference(correlation: CorrelationReport, a: str, b: str, subject: str, b_words: str = "") -> Sentence | None:
    """``a`` against ``b``: r_a − r_b with its interval at the family's level and the adjusted verdict;
    ``subject`` names ``a``'s side ("Its", "FGA(0.5)'s"), ``b_words`` introduces ``b`` ("the runner-up")."""
    comparisons = correlation.comparisons or ComparisonFamily()
    entry, sign = _entry(correlation, a, b)
    if entry is None:
        return None
    numbers: dict[str, Any] = {"size": comparisons.size}
    if entry.p_value is None or entry.diff_ci is None or entry.diff is None:
        why = entry.note or "no test"
        return Sentence("note", f"{display(a)} and {display(b)} were not compared ({why}).", numbers)
    diff = sign * entry.diff
    low, high = sorted(sign * v for v in entry.diff_ci)
    numbers.update(diff=diff, diff_low=low, diff_high=high)
    p = entry.p_adjusted if entry.adjust else entry.p_value
    numbers["p"] = p
    verdict = "is significant" if entry.significant else "is not significant"
    how = "lead over" if diff > 0 else "difference from"
    level = _percent(comparisons.interval_confidence)
    other = f"{b_words} {display(b)}" if b_words else display(b)
    text = (
        f"{subject} {how} {other} ({number(diff)} {interval([low, high])}, {level} interval) {verdict} "
        f"{_adjustment_words(comparisons)} (p {p_value(p)})"
    )
    if entry.note:
        text += f"; {entry.note}"
    return Sentence("comparison", text + ".", numbers)


def _comparison_sentences(
    correlation: CorrelationReport, best: MetricCorrelation, rows: Sequence[MetricCorrelation]
) -> list[Sentence]:
    """Is the best metric's lead real: against the reference metric in a ``reference`` family (against
    its closest challenger when the reference is best), against the runner-up when all pairs are compared."""
    comparisons = correlation.comparisons or ComparisonFamily()
    reference = comparisons.reference or ""
    found: Sentence | None
    if comparisons.family == "all":
        sentences = [
            Sentence("note", note[0].upper() + note[1:] + ".")
            for note in correlation.notes
            if note.startswith("the reference metric")
        ]
        others = sorted((r for r in rows if r.metric != best.metric), key=lambda r: -(r.pearson or 0.0))
        found = _difference(correlation, best.metric, others[0].metric, "Its", "the runner-up") if others else None
        return sentences + ([found] if found else [])
    ref_row = next((r for r in correlation.metrics if r.metric == reference), None)
    if ref_row is None or ref_row.pearson is None:
        why = "not measured" if ref_row is None else f"undefined ({ref_row.note or 'constant values'})"
        text = f"The reference metric {display(reference)}'s correlation is {why}: no metric is compared with it."
        return [Sentence("note", text)]
    if best.metric == reference:
        challengers = [e for e in correlation.williams if e.b == reference and e.r_a is not None]
        if not challengers:
            return []
        closest = max(challengers, key=lambda e: e.r_a or 0.0)
        found = _difference(correlation, reference, closest.a, "Its", "its closest challenger")
        return [found] if found else []
    found = _difference(correlation, best.metric, reference, "Its")
    if found:
        return [found]
    declared = comparisons.fga
    if declared and split_key(best.metric)[0] is split_key(declared)[0]:
        text = (
            f"{display(best.metric)} against {display(reference)} is not among the declared comparisons (FGA is "
            f"compared at λ {split_key(declared)[1]} only; choosing λ is the calibration's question)."
        )
        found = _difference(correlation, declared, reference, f"The declared {display(declared)}'s")
        return [Sentence("note", text), *([found] if found else [])]
    not_compared = [note for note in correlation.notes if note.startswith("not compared")]
    why = f" ({not_compared[0]})" if not_compared else ""
    return [Sentence("note", f"{display(best.metric)} was not compared with {display(reference)}{why}.")]


def _rating_words(correlation: CorrelationReport) -> str:
    mode = str(correlation.rating)
    return RATING_WORDS.get(mode, mode)


def correlation_sentences(correlation: CorrelationReport | Mapping[str, Any], condition: str | None = None) -> list[Sentence]:
    """The best metric with its r and interval, its lead over the reference metric (or, comparing all
    pairs, the runner-up) adjusted over the declared family, and the human ceiling."""
    view = CorrelationReport.of(correlation)
    where = f"For system {_quoted(condition)}, " if condition else ""
    rows = [r for r in view.metrics if r.defined]
    undefined = [r for r in view.metrics if not r.defined]
    sentences = []
    base = {"n_dialogues": view.n_dialogues}
    if not rows:
        reasons = sorted({r.note or "undefined" for r in undefined})
        dialogues = view.n_dialogues
        text = f"{where}no metric's correlation with the ratings is defined ({'; '.join(reasons)}; {dialogues} dialogues)."
        return [Sentence("note", text[0].upper() + text[1:], base), *ceiling_sentences(view.human_ceiling)]
    best = max(rows, key=lambda r: r.pearson or 0.0)
    numbers: dict[str, Any] = {**base, "r": best.pearson, "n_metrics": len(rows)}
    votes = f", {view.n_votes} votes" if view.n_votes is not None else ""
    if view.n_votes is not None:
        numbers["n_votes"] = view.n_votes
    few = (best.n or 0) <= 3
    ci = "" if few else _ci(best.pearson_ci, "r", numbers)
    lead = f"{where}{display(best.metric)}"
    text = (
        f"{lead[0].upper() + lead[1:]} tracks the ratings best of the {len(rows)} metrics: r {number(best.pearson)}{ci} "
        f"({view.n_dialogues} dialogues{votes}; rating: {_rating_words(view)})."
    )
    sentences.append(Sentence("best_metric", text, numbers))
    if few:
        sentences.append(
            Sentence(
                "note",
                f"With {best.n} dialogues there is no interval and no test: Fisher's interval and Williams' test need "
                "more than 3, so these r values describe the data and estimate nothing.",
                {"n": best.n},
            )
        )
    if undefined:
        listed = _listing([f"{display(r.metric)} ({r.note or 'undefined'})" for r in undefined])
        sentences.append(Sentence("note", f"The correlation of {listed} with the ratings is undefined."))
    if not few:
        sentences += _comparison_sentences(view, best, rows)
    ceiling = view.human_ceiling
    sentences += ceiling_sentences(ceiling)
    r_best = best.pearson or 0.0
    if not few and ceiling.r_max is not None and round(r_best, 3) > round(ceiling.r_max, 3):
        pair = ceiling.ci
        inside = pair is not None and round(r_best, 3) <= round(pair[1], 3)
        where_ci = (
            "within the ceiling's interval"
            if inside
            else "above even the ceiling's interval"
            if pair is not None
            else "and the ceiling has no interval here"
        )
        sentences.append(
            Sentence(
                "note",
                f"{display(best.metric)}'s r {number(best.pearson)} is above the ceiling's estimate "
                f"{number(ceiling.r_max)}, {where_ci}: both are estimates from the same votes.",
                {"r": best.pearson, "r_max": ceiling.r_max},
            )
        )
    return sentences


def ceiling_sentences(ceiling: HumanCeiling | Mapping[str, Any]) -> list[Sentence]:
    """The human ceiling r_max = √reliability with its interval, or why there is none."""
    c = ceiling if isinstance(ceiling, HumanCeiling) else HumanCeiling.from_dict(ceiling)
    single = c.of_single_vote
    if c.r_max is None:
        return [Sentence("note", f"No human ceiling: {c.note or 'not computed'}.", {"r_max": None})]
    numbers: dict[str, Any] = {"r_max": c.r_max, "reliability": c.reliability}
    ci = _ci(c.ci, "r_max", numbers)
    of = "a single vote" if single else "the mean rating"
    icc = "ICC(1,1)" if single else "ICC(1,k)"
    text = (
        f"The human ceiling, the largest r a metric can reach against {of}, is {number(c.r_max)}{ci} "
        f"(√ of its reliability {icc} {number(c.reliability)}"
    )
    if not single and c.k_harmonic is not None:
        numbers["k"] = c.k_harmonic
        text += f", k = {c.k_harmonic:.3g} votes per dialogue"
    text += ")"
    if c.note:
        text += f"; {c.note}"
    return [Sentence("ceiling", text + ".", numbers)]


# --- λ calibration --------------------------------------------------------------------------------------


def calibration_sentences(calibration: Calibration | Mapping[str, Any]) -> list[Sentence]:
    """λ* with its interval (open above when the data do not bound it), r there, the cross-validated r,
    and JGA's (λ = 0) and the turn match's (λ → ∞) r beside them; λ* at a grid end said in words."""
    k = Calibration.of(calibration)
    grid = [p.lam for p in k.curve]
    numbers: dict[str, Any] = {"lambda": k.best_lambda, "r_best": k.r_best, "cv_r": k.cv_r}
    ci_lambda = k.ci_lambda
    lam_ci = ""
    if ci_lambda:
        numbers["lambda_low"], numbers["lambda_high"] = ci_lambda[0], ci_lambda[1]
        lam_ci = " " + interval(ci_lambda)
    r_ci = _ci(k.ci_r, "r_best", numbers)
    cv = f"cross-validated r {number(k.cv_r)}" if k.cv_r is not None else "no cross-validated r"
    beside = []
    if k.r_jga is not None:
        numbers["r_jga"] = k.r_jga
        beside.append(f"{JGA.label} (λ = 0) {number(k.r_jga)}")
    if k.r_turn is not None:
        numbers["r_turn"] = k.r_turn
        beside.append(f"turn match (λ → ∞) {number(k.r_turn)}")
    text = f"Best λ {number(k.best_lambda)}{lam_ci}, where FGA's r is {number(k.r_best)}{r_ci}; {cv}"
    text += f" (r of {' and '.join(beside)})." if beside else "."
    found = k.lambda_set
    if found is not None and found.low is not None and found.high is not None:
        numbers.update(lambda_set_low=found.low, lambda_set_high=found.high, lambda_set_share=found.share)
        if not found.identified:  # said first: the best λ is then one of many the data cannot tell apart
            more = found.dialogues_to_identify
            numbers["dialogues_to_identify"] = more
            runs = lambda_runs(found.runs, " to ")
            first = (
                f"λ* is not identified with {k.n_dialogues} dialogues: every λ in {runs} "
                f"({found.share:.0%} of the grid) fits the ratings about as well as the best ({found.confidence:.0%} "
                "confidence set by test inversion); "
                + (
                    f"about {more:,} dialogues would narrow it to half the grid if r(λ) kept this shape."
                    if more is not None
                    else "more than a million dialogues would be needed to narrow it to half the grid."
                )
            )
            text = f"{first} {text}"
        else:
            runs = lambda_runs(found.runs)
            text += f" Its {found.confidence:.0%} confidence set by test inversion: λ in {runs}."
    sentences = [Sentence("lambda", text, numbers)]
    if ci_lambda is None:
        sentences.append(
            Sentence(
                "note",
                "No interval for λ* or its r: no bootstrap resamples." if k.bootstrap.resamples <= 0 else "No interval for λ*.",
            )
        )
    best = k.best_lambda
    if k.best_at_bound and grid and best is not None:  # the best grid point is the first or the last (Brent refines next to it)
        start = abs(best - grid[0]) <= abs(best - grid[-1])
        bound = grid[0] if start else grid[-1]
        if start and bound == 0:
            text = (
                f"The best grid point is the grid's start, λ = 0, where FGA is {JGA.label}: forgiving an old error does "
                "not raise the correlation here."
            )
        else:
            side, way = ("start", "down") if start else ("end", "up")
            text = f"The best grid point is the grid's {side} (λ = {bound:g}): widen the grid {way} to find λ*."
        sentences.append(Sentence("note", text, {"grid_bound": bound}))
    if ci_lambda and ci_lambda[1] is None:
        end = f" (λ = {grid[-1]:g})" if grid else ""
        sentences.append(
            Sentence(
                "note",
                f"λ*'s interval is open above: more than 2.5% of the bootstrap refits end at the grid's end{end}, so the "
                "data do not bound λ* from above.",
                {"grid_end": grid[-1] if grid else None},
            )
        )
    if k.cv_r is None:
        why = next((n for n in k.notes if n.startswith("cross-validation:")), "cross-validation: not run")
        sentences.append(Sentence("note", why[0].upper() + why[1:] + "."))
    for note in k.notes:
        if note.startswith("r does not depend on λ"):
            sentences.append(Sentence("note", note[0].upper() + note[1:] + "."))
    return sentences


# --- units ---------------------------------------------------------------------------------------------------

SHORT_INTERVALS = {
    "fisher": "Fisher z (n = dialogues)",
    "percentile": "percentile bootstrap over {unit}",
    "bca": "BCa bootstrap over {unit}",
    "boot_se_t": "Fisher z with a bootstrap standard error over {unit}",
    "studentized": "studentized bootstrap over {unit}",
    "sandwich_t": "Fisher z with a sandwich standard error over dialogues",
    "jackknife_t": "Fisher z with a jackknife standard error over dialogues",
}


SYSTEM_STATISTIC_WORDS = {
    "pearson": "Pearson r",
    "spearman": "Spearman ρ",
    "kendall": "Kendall τ-b",
    "accuracy": "pairwise accuracy",
}


def system_sentences(system: SystemLevel | Mapping[str, Any]) -> list[Sentence]:
    """Systems as the unit in words: the metric whose system scores follow people's best, with its
    interval, and which metrics the data cannot tell apart from it (its significance cluster); or why
    there is no system-level answer.

    >>> [s.text for s in system_sentences({"n_systems": 2, "note": "needs votes on at least 3 systems (found 2)"})]
    ['No system-level answer: needs votes on at least 3 systems (found 2).']
    """
    view = SystemLevel.of(system)
    ranked = view.ranked()
    if not ranked:
        return [Sentence("systems", f"No system-level answer: {view.note or 'no metric varies across the systems'}.")]
    best = ranked[0]
    statistic = SYSTEM_STATISTIC_WORDS.get(view.statistic, view.statistic)
    numbers: dict[str, Any] = {"n_systems": view.n_systems, "value": best.value(view.statistic)}
    text = (
        f"Across the {view.n_systems} systems, {display(best.metric)} ranks them most like people "
        f"({statistic} {number(best.value(view.statistic))}{_ci(best.interval(view.statistic), 'value', numbers)}; "
        f"each system's corpus score against its mean rating)."
    )
    if best.cluster is None:
        text += " With so few systems no two metrics are tested against each other."
    else:
        peers = [display(m.metric) for m in ranked[1:] if m.cluster == 1]
        numbers["cluster_size"] = 1 + len(peers)
        if peers:
            text += f" These data do not tell it apart from {_listing(peers)} (one significance cluster, Holm)."
        else:
            text += " Every other metric ranks the systems significantly worse (Holm)."
    return [Sentence("systems", text, numbers)]


def method_words(method: str | None) -> str | None:
    """A row's ``ci_method`` in a few words: ``fisher: ... (unit: dialogues)`` -> ``Fisher z (n = dialogues)``."""
    if not method:
        return None
    family, _, rest = method.partition(":")
    found = re.search(r"\(unit: ([^)]+)\)", rest)
    unit = found.group(1) if found else "dialogues"
    if family in SHORT_INTERVALS:
        return SHORT_INTERVALS[family].format(unit=unit)
    return method


# The words for calibrate's interval families (metrics.calibrate: LAMBDA_FAMILIES, R_FAMILIES), as its
# ``bootstrap.ci`` names them: λ*'s default is the percentile bootstrap, r*'s the bias-corrected Fisher z
CALIBRATION_INTERVALS = {
    "percentile": "percentile bootstrap over {unit}",
    "bca": "BCa bootstrap over {unit}",
    "profile": "the profile of the bootstrap curves over {unit}",
    "profile_pointwise": "the pointwise profile of the bootstrap curves over {unit}",
    "m_out_of_n": "m-out-of-n bootstrap over {unit}",
    "atanh_t": "Fisher z with a bootstrap SE over {unit}, t",
    "atanh_t_bc": "Fisher z with a bootstrap SE over {unit}, bias-corrected, t",
}


def _units_sentence(
    agreement: Agreement | None, correlation: CorrelationReport | None, calibration: Calibration | None
) -> Sentence | None:
    parts = []
    numbers: dict[str, Any] = {}
    if agreement is not None and any(r.ci and any(v for v in r.ci.values()) for r in agreement.questions.values()):
        methods = sorted({r.ci_method or "percentile bootstrap over items" for r in agreement.questions.values()})
        parts.append(f"agreement's by {' or '.join(methods)}")
    if correlation is not None:
        defined = [r for r in correlation.metrics if r.defined and r.pearson_ci and (r.n or 0) > 3]
        methods = sorted({w for w in (method_words(r.ci_method) for r in defined) if w})
        if defined and not methods:
            methods = ["Fisher z (n = dialogues)"]
        if methods:
            parts.append(f"r's by {' or '.join(methods)}")
        ceiling = correlation.human_ceiling
        if ceiling.ci:
            parts.append(f"the ceiling's by {method_words(ceiling.ci_method) or 'percentile bootstrap over dialogues'}")
    if calibration is not None and (calibration.ci_lambda or calibration.ci_r):
        unit = calibration.bootstrap.resample.replace("+", " and ")
        chosen = calibration.bootstrap.ci if isinstance(calibration.bootstrap.ci, Mapping) else {}
        lam, r_star = (
            CALIBRATION_INTERVALS.get(chosen.get(what, "percentile"), CALIBRATION_INTERVALS["percentile"]).format(unit=unit)
            for what in ("lambda", "r")
        )
        parts.append(f"λ*'s and its r's by {lam}" if r_star == lam else f"λ*'s by {lam}; its r's by {r_star}")
    if not parts and not (correlation is not None and correlation.williams):
        return None
    text = f"Intervals are 95%: {'; '.join(parts)}." if parts else ""
    tested = [w for w in (correlation.williams if correlation is not None else ()) if w.tested]
    if tested and correlation is not None:
        comparisons = correlation.comparisons or ComparisonFamily()
        level = _percent(comparisons.interval_confidence)
        how = {
            "holm": "simultaneous over the family (Bonferroni)",
            "bonferroni": "simultaneous over the family (Bonferroni)",
            "bh": "FCR-adjusted (Benjamini & Yekutieli 2005)",
            "none": "each on its own, unadjusted",
        }[comparisons.adjust or "none"]
        numbers["difference_level"] = comparisons.interval_confidence
        text += f" Differences of r are at {level} (jackknife-t of z_A − z_B over dialogues), {how}."
    return Sentence("units", text.strip(), numbers)


# --- entry points ---------------------------------------------------------------------------------------------


def summarise_agreement(agreement: Agreement | Mapping[str, Any]) -> Summary:
    """``python -m metrics agreement --json`` in words."""
    view = Agreement.of(agreement)
    sentences = agreement_sentences(view)
    units = _units_sentence(view, None, None)
    return Summary(tuple([*sentences, *([units] if units else [])]))


def summarise_correlation(
    correlation: CorrelationReport | Mapping[str, Any],
    calibration: Calibration | Mapping[str, Any] | None = None,
    condition: str | None = None,
) -> Summary:
    """``python -m metrics correlate --json`` in words (and a calibration's, when given)."""
    view = CorrelationReport.of(correlation)
    lam = None if calibration is None else Calibration.of(calibration)
    sentences = correlation_sentences(view, condition)
    if lam is not None:
        sentences += calibration_sentences(lam)
    units = _units_sentence(None, view, lam)
    return Summary(tuple([*sentences, *([units] if units else [])]))


def summarise_calibration(calibration: Calibration | Mapping[str, Any]) -> Summary:
    """``python -m metrics calibrate --json`` in words."""
    view = Calibration.of(calibration)
    sentences = calibration_sentences(view)
    units = _units_sentence(None, None, view)
    return Summary(tuple([*sentences, *([units] if units else [])]))


def summarise(analysis: StudyAnalysis | Mapping[str, Any]) -> Summary:
    """A study's analysis (``annotate.kinds.analyse``) in words: agreement per question; the CoCo table or
    the majority labels when the study has no correlation; the best metric, its lead and the human
    ceiling; λ*; and what could not be computed, in words."""
    view = StudyAnalysis.of(analysis)
    if view.agreement is None:
        nothing = Sentence("no_votes", "No votes yet: there is nothing to summarise.", {"n_votes": view.votes})
        return Summary((nothing,))
    sentences = agreement_sentences(view.agreement)
    if view.coco is not None:
        sentences += coco_sentences(view.coco)
    elif view.correlation is None and view.majority:
        sentences += majority_sentences(view.majority)
    if view.design.design == "adaptive" and view.correlation is not None:
        sentences.append(
            Sentence(
                "design",
                "Under the study's adaptive design the figures below describe the judged dialogues; the design-weighted "
                "estimates for the whole pool are in the Design table.",
            )
        )
    condition = view.condition if len(view.conditions) > 1 else None
    if view.correlation is not None:
        sentences += correlation_sentences(view.correlation, condition)
    elif view.correlation_note is not None:
        sentences.append(Sentence("note", f"No correlation with the metrics: {view.correlation_note}."))
    if view.calibration is not None:
        sentences += calibration_sentences(view.calibration)
    if view.system_level is not None:
        sentences += system_sentences(view.system_level)
    units = _units_sentence(view.agreement, view.correlation, view.calibration)
    return Summary(tuple([*sentences, *([units] if units else [])]))


__all__ = [
    "Sentence",
    "Summary",
    "Convention",
    "LANDIS_KOCH",
    "KRIPPENDORFF",
    "summarise",
    "summarise_agreement",
    "summarise_correlation",
    "summarise_calibration",
]
