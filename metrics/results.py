"""Every analysis result, typed: what the tables, the sentences, the charts, the exports and the pages read.

The builders in :mod:`metrics` return plain values (``agreement_all`` / ``agreement_report``,
``calibrate_study``, ``majority_table``, ``coco_summary``, ``system_level``, ``judge_report``,
``design_summary``, ``corrected_summary``, ``votes_summary`` / ``model_labels_all``, ``correlate_study``):
the CLI's ``--json``, the API's JSON and the analysis stored in the database keep that form.  The layers
above read them through these frozen dataclasses, built once from the dict (``from_dict``; ``of`` takes a
dict or a view already built) and read by attribute, never by string key.  :class:`StudyAnalysis` is a
study's whole analysis (``annotate.kinds.analyse``).  The correlation report's rows are
:mod:`metrics.correlation.results`' (:class:`MetricCorrelation`, :class:`Comparison`,
:class:`HumanCeiling`), re-exported here beside the report that holds them (:class:`CorrelationReport`).

Fields are named like the JSON keys (``lam`` for ``"lambda"``, a Python keyword); intervals are ``(low,
high)`` tuples (None where there is none), sequences are tuples, notes ``tuple[str, ...]``.  A key missing
from a hand-made dict gets the field's default.  Values are kept as the JSON holds them (no rounding, no
conversion), so a view shows exactly the numbers of the dict it was made from.

>>> report = AgreementReport.from_dict({"n_items": 10, "krippendorff_alpha": 0.41, "notes": ["a note"],
...                                     "ci": {"krippendorff_alpha": [0.2, 0.6]}})
>>> report.krippendorff_alpha, report.interval("krippendorff_alpha"), report.notes, report.has_ac2
(0.41, (0.2, 0.6), ('a note',), False)
>>> StudyAnalysis.from_dict({"n_votes": 0, "questions": []}).design.design
'uniform'
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from metrics.correlation.results import (
    ADJUSTMENTS_STORED,
    Comparison,
    HumanCeiling,
    MetricCorrelation,
    comparisons,
    human_ceiling_of,
    metric_rows,
)

Interval = tuple[float, float]
# λ*'s interval: its upper end None (open) when the bootstrap refits do not bound λ* below the grid's end
OpenInterval = tuple[float, float | None]


def _pair(value: Sequence[Any] | None) -> Any:
    """``[low, high]`` as a tuple, the values as they are; None (or empty): None."""
    return None if not value else (value[0], value[1])


def _texts(value: Iterable[Any] | None) -> tuple[str, ...]:
    return tuple(value or ())


def _adjustment(entry: Mapping[str, Any]) -> str | None:
    """The adjustment whose p an entry holds (``p_holm``, ``p_bonferroni``, ``p_bh``), if any."""
    return next((name for name in ADJUSTMENTS_STORED if f"p_{name}" in entry), None)


@dataclass(frozen=True)
class Bootstrap:
    """How a result's intervals were resampled (its ``bootstrap`` entry): ``resamples`` (0: none), ``seed``,
    the unit ``resample`` (dialogues, or dialogues+annotators; agreement resamples items and names none),
    ``confidence``, and ``ci``: the interval family (agreement: its name; calibration: ``{"lambda": ...,
    "r": ...}``).

    >>> Bootstrap.from_dict({"resamples": 200, "seed": 1}).resample
    'dialogues'
    """

    resamples: int = 0
    seed: int | None = None
    resample: str = "dialogues"
    confidence: float | None = None
    ci: str | Mapping[str, str] | None = None

    @classmethod
    def from_dict(cls, value: Mapping[str, Any] | None) -> Bootstrap:
        value = value or {}
        return cls(
            resamples=value.get("resamples", 0),
            seed=value.get("seed"),
            resample=value.get("resample", "dialogues"),
            confidence=value.get("confidence"),
            ci=value.get("ci"),
        )


# --- agreement (metrics.agreement.agreement_report, metrics.analysis.agreement_all) ---------------------

COEFFICIENT_NAMES = ("percent_agreement", "krippendorff_alpha", "fleiss_kappa", "gwet_ac1", "gwet_ac2")


@dataclass(frozen=True)
class AnnotatorAgreement:
    """One annotator against the majority of the others (``metrics.agreement.annotator_rows``): the votes,
    those compared with a majority (ties skipped), the share agreeing and Cohen's κ with it, and the
    accuracy on the ``n_gold`` gold items (None without any).

    >>> AnnotatorAgreement.from_dict({"annotator": "a", "n_votes": 10, "agree_with_others": 0.8}).n_gold
    0
    """

    annotator: str
    n_votes: int = 0
    n_compared: int = 0
    agree_with_others: float | None = None
    kappa_with_others: float | None = None
    gold_accuracy: float | None = None
    n_gold: int = 0

    @classmethod
    def from_dict(cls, row: Mapping[str, Any]) -> AnnotatorAgreement:
        return cls(
            annotator=row["annotator"],
            n_votes=row.get("n_votes", 0),
            n_compared=row.get("n_compared", 0),
            agree_with_others=row.get("agree_with_others"),
            kappa_with_others=row.get("kappa_with_others"),
            gold_accuracy=row.get("gold_accuracy"),
            n_gold=row.get("n_gold", 0),
        )


@dataclass(frozen=True)
class CohenPair:
    """Cohen's κ of two annotators on the ``n`` items both judged (``note``: why κ is undefined)."""

    a: str
    b: str
    n: int = 0
    kappa: float | None = None
    note: str | None = None

    @classmethod
    def from_dict(cls, pair: Mapping[str, Any]) -> CohenPair:
        return cls(a=pair["a"], b=pair["b"], n=pair.get("n", 0), kappa=pair.get("kappa"), note=pair.get("note"))


@dataclass(frozen=True)
class AgreementReport:
    """One question's agreement (``metrics.agreement.agreement_report``): the counts it rests on, the
    coefficients (None where undefined; ``gwet_ac2`` only with agreement ``weights``, and ``coefficients``
    names those the report carries), their 95% intervals over items (``ci``, by coefficient name; the
    family ``ci_method`` names), those that collapsed to a point (``ci_degenerate``), what each used
    (``labels``), pairwise Cohen's κ, each annotator against the others, and the notes.

    >>> report = AgreementReport.from_dict({"weights": "linear", "gwet_ac2": None, "ci": {"gwet_ac2": None}})
    >>> report.has_ac2, report.estimate("gwet_ac2"), report.interval("gwet_ac2")
    (True, None, None)
    """

    n_items: int = 0
    n_annotators: int = 0
    n_votes: int = 0
    n_pairable_items: int = 0
    level: str = ""
    categories: tuple[str, ...] = ()
    weights: str = "none"
    percent_agreement: float | None = None
    krippendorff_alpha: float | None = None
    fleiss_kappa: float | None = None
    gwet_ac1: float | None = None
    gwet_ac2: float | None = None
    coefficients: tuple[str, ...] = ()
    cohen_kappa_pairwise: tuple[CohenPair, ...] = ()
    annotators: tuple[AnnotatorAgreement, ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict)
    ci: Mapping[str, Interval | None] = field(default_factory=dict)
    ci_degenerate: tuple[str, ...] = ()
    bootstrap: Bootstrap = field(default_factory=Bootstrap)
    ci_method: str | None = None
    notes: tuple[str, ...] = ()

    @property
    def has_ac2(self) -> bool:
        """Whether the report carries Gwet's AC2 (agreement weights were asked for)."""
        return "gwet_ac2" in self.coefficients

    def estimate(self, name: str) -> float | None:
        """A coefficient by its name (:data:`COEFFICIENT_NAMES`); None when undefined or not reported."""
        values = {
            "percent_agreement": self.percent_agreement,
            "krippendorff_alpha": self.krippendorff_alpha,
            "fleiss_kappa": self.fleiss_kappa,
            "gwet_ac1": self.gwet_ac1,
            "gwet_ac2": self.gwet_ac2,
        }
        return values[name]

    def interval(self, name: str) -> Interval | None:
        """A coefficient's 95% interval by its name (None: no interval)."""
        return self.ci.get(name)

    @classmethod
    def from_dict(cls, report: Mapping[str, Any]) -> AgreementReport:
        return cls(
            n_items=report.get("n_items", 0),
            n_annotators=report.get("n_annotators", 0),
            n_votes=report.get("n_votes", 0),
            n_pairable_items=report.get("n_pairable_items", 0),
            level=report.get("level", ""),
            categories=_texts(report.get("categories")),
            weights=report.get("weights", "none"),
            percent_agreement=report.get("percent_agreement"),
            krippendorff_alpha=report.get("krippendorff_alpha"),
            fleiss_kappa=report.get("fleiss_kappa"),
            gwet_ac1=report.get("gwet_ac1"),
            gwet_ac2=report.get("gwet_ac2"),
            coefficients=tuple(name for name in COEFFICIENT_NAMES if name in report),
            cohen_kappa_pairwise=tuple(CohenPair.from_dict(pair) for pair in report.get("cohen_kappa_pairwise") or ()),
            annotators=tuple(AnnotatorAgreement.from_dict(row) for row in report.get("annotators") or ()),
            labels=dict(report.get("labels") or {}),
            ci={name: _pair(pair) for name, pair in (report.get("ci") or {}).items()},
            ci_degenerate=_texts(report.get("ci_degenerate")),
            bootstrap=Bootstrap.from_dict(report.get("bootstrap")),
            ci_method=report.get("ci_method"),
            notes=_texts(report.get("notes")),
        )


@dataclass(frozen=True)
class Agreement:
    """Every question's agreement (``metrics.analysis.agreement_all``; ``python -m metrics agreement
    --json``), in the report's order, with the ``signature`` and the notes on the whole table.

    >>> agreement = Agreement.from_dict({"signature": "s", "questions": {"q": {"n_items": 3}}, "notes": []})
    >>> agreement.questions["q"].n_items, agreement.notes
    (3, ())
    """

    signature: str = ""
    questions: Mapping[str, AgreementReport] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    @classmethod
    def from_dict(cls, agreement: Mapping[str, Any]) -> Agreement:
        return cls(
            signature=agreement.get("signature", ""),
            questions={q: AgreementReport.from_dict(report) for q, report in (agreement.get("questions") or {}).items()},
            notes=_texts(agreement.get("notes")),
        )

    @classmethod
    def of(cls, agreement: Agreement | Mapping[str, Any]) -> Agreement:
        return agreement if isinstance(agreement, Agreement) else cls.from_dict(agreement)


# --- majority labels and the CoCo table ----------------------------------------------------------------


@dataclass(frozen=True)
class MajorityRow:
    """One item of a question (``metrics.aggregate.aggregate_rows``): its votes, majority label (None: no
    majority), tie, mean vote (``soft``; for a 0/1 question the share of 1) and median, and ``counts``,
    the votes each answer got (the JSON's ``n_<answer>`` keys, in their order).

    >>> MajorityRow.from_dict({"item": "d1", "n_votes": 3, "majority": "1", "n_0": 1, "n_1": 2}).counts
    {'0': 1, '1': 2}
    """

    item: str
    condition: str = ""
    question: str = ""
    n_votes: int = 0
    majority: str | None = None
    tie: bool = False
    soft: float | None = None
    median: float | None = None
    counts: Mapping[str, int] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, row: Mapping[str, Any]) -> MajorityRow:
        return cls(
            item=row["item"],
            condition=row.get("condition") or "",
            question=row.get("question", ""),
            n_votes=row.get("n_votes", 0),
            majority=row.get("majority"),
            tie=bool(row.get("tie")),
            soft=row.get("soft"),
            median=row.get("median"),
            counts={key[2:]: value for key, value in row.items() if key.startswith("n_") and key != "n_votes"},
        )

    @classmethod
    def of(cls, row: MajorityRow | Mapping[str, Any]) -> MajorityRow:
        return row if isinstance(row, MajorityRow) else cls.from_dict(row)


@dataclass(frozen=True)
class MajorityTable:
    """One question's majority labels (``metrics.analysis.majority_table``): the tie policy, the ties, and
    one row per item.

    >>> MajorityTable.from_dict({"tie_policy": "none", "n_ties": 1, "rows": [{"item": "d1"}]}).rows[0].majority is None
    True
    """

    tie_policy: str = "none"
    n_ties: int = 0
    rows: tuple[MajorityRow, ...] = ()

    @classmethod
    def from_dict(cls, table: Mapping[str, Any]) -> MajorityTable:
        return cls(
            tie_policy=table.get("tie_policy", "none"),
            n_ties=table.get("n_ties", 0),
            rows=tuple(MajorityRow.from_dict(row) for row in table.get("rows") or ()),
        )


def majority_tables(majority: Mapping[str, Any]) -> dict[str, MajorityTable]:
    """The analysis's ``majority`` entry ({question: table}), typed, in its order (views kept as they are)."""
    return {q: t if isinstance(t, MajorityTable) else MajorityTable.from_dict(t) for q, t in majority.items()}


@dataclass(frozen=True)
class CocoRow:
    """One condition of the CoCo paper's Table 3 (``metrics.analysis.coco_summary``): per question
    (human_like, correct) the % voted 1 by majority over the ``_n`` items with a majority, the ties, and
    Krippendorff's α and Fleiss' κ (κ None when the condition has no vote on the question).

    >>> row = CocoRow.from_dict({"condition": "a", "human_like_pct": 50.0, "human_like_n": 4, "human_like_ties": 1})
    >>> row.share("human_like"), row.share("correct")
    ((50.0, 4, 1), (None, 0, 0))
    """

    condition: str
    human_like_pct: float | None = None
    human_like_n: int = 0
    human_like_ties: int = 0
    human_like_alpha: float | None = None
    human_like_kappa: float | None = None
    correct_pct: float | None = None
    correct_n: int = 0
    correct_ties: int = 0
    correct_alpha: float | None = None
    correct_kappa: float | None = None

    def share(self, question: str) -> tuple[float | None, int, int]:
        """(% by majority, items with a majority, ties) of ``human_like`` or ``correct``."""
        if question == "human_like":
            return self.human_like_pct, self.human_like_n, self.human_like_ties
        if question == "correct":
            return self.correct_pct, self.correct_n, self.correct_ties
        raise ValueError(f"a CoCo question is human_like or correct, not {question!r}")

    @classmethod
    def from_dict(cls, row: Mapping[str, Any]) -> CocoRow:
        return cls(
            condition=row["condition"],
            human_like_pct=row.get("human_like_pct"),
            human_like_n=row.get("human_like_n", 0),
            human_like_ties=row.get("human_like_ties", 0),
            human_like_alpha=row.get("human_like_alpha"),
            human_like_kappa=row.get("human_like_kappa"),
            correct_pct=row.get("correct_pct"),
            correct_n=row.get("correct_n", 0),
            correct_ties=row.get("correct_ties", 0),
            correct_alpha=row.get("correct_alpha"),
            correct_kappa=row.get("correct_kappa"),
        )

    @classmethod
    def of(cls, row: CocoRow | Mapping[str, Any]) -> CocoRow:
        return row if isinstance(row, CocoRow) else cls.from_dict(row)


# --- Dawid-Skene beside the majority (metrics.analysis.model_labels_all, metrics.crowd) --------------------


@dataclass(frozen=True)
class ModelLabelItem:
    """An item whose Dawid-Skene label (``label``, its posterior ``probability``) and majority (None: a
    tie) are compared (``metrics.crowd.ItemLabel``)."""

    item: str
    condition: str = ""
    n_votes: int = 0
    label: str | None = None
    probability: float | None = None
    majority: str | None = None
    agrees: bool | None = None

    @classmethod
    def from_dict(cls, row: Mapping[str, Any]) -> ModelLabelItem:
        return cls(
            item=row["item"],
            condition=row.get("condition") or "",
            n_votes=row.get("n_votes", 0),
            label=row.get("label"),
            probability=row.get("probability"),
            majority=row.get("majority"),
            agrees=row.get("agrees"),
        )


@dataclass(frozen=True)
class AnnotatorCompetence:
    """An annotator's Dawid-Skene estimates (``metrics.crowd.AnnotatorSkill``): competence P(correct) and
    the spammer score with their bootstrap intervals, and the flag (None: too few items)."""

    annotator: str
    n_items: int = 0
    competence: float | None = None
    spammer_score: float | None = None
    spammer: bool | None = None
    competence_ci: Interval | None = None
    spammer_score_ci: Interval | None = None

    @classmethod
    def from_dict(cls, row: Mapping[str, Any]) -> AnnotatorCompetence:
        return cls(
            annotator=row["annotator"],
            n_items=row.get("n_items", 0),
            competence=row.get("competence"),
            spammer_score=row.get("spammer_score"),
            spammer=row.get("spammer"),
            competence_ci=_pair(row.get("competence_ci")),
            spammer_score_ci=_pair(row.get("spammer_score_ci")),
        )


@dataclass(frozen=True)
class ModelLabelReport:
    """Dawid-Skene for one question (``metrics.crowd.ModelLabels.as_json``): ``fitted`` False is a
    degenerate case said in ``notes``; the items labelled differently from the majority
    (``disagreements``), their counts, each annotator's competence, the chance competence and the spammer
    ``threshold``.

    >>> found = ModelLabelReport.from_dict({"fitted": False, "notes": ["too few items"]})
    >>> found.fitted, found.notes, found.disagreements
    (False, ('too few items',), ())
    """

    question: str = ""
    method: str = ""
    fitted: bool = False
    categories: tuple[str, ...] = ()
    chance: float | None = None
    threshold: float | None = None
    resamples: int = 0
    n_items: int = 0
    n_disagree: int = 0
    n_majority_ties: int = 0
    spammers: tuple[str, ...] = ()
    disagreements: tuple[ModelLabelItem, ...] = ()
    annotators: tuple[AnnotatorCompetence, ...] = ()
    notes: tuple[str, ...] = ()

    @classmethod
    def from_dict(cls, found: Mapping[str, Any]) -> ModelLabelReport:
        return cls(
            question=found.get("question", ""),
            method=found.get("method", ""),
            fitted=bool(found.get("fitted")),
            categories=_texts(found.get("categories")),
            chance=found.get("chance"),
            threshold=found.get("threshold"),
            resamples=found.get("resamples", 0),
            n_items=found.get("n_items", 0),
            n_disagree=found.get("n_disagree", 0),
            n_majority_ties=found.get("n_majority_ties", 0),
            spammers=_texts(found.get("spammers")),
            disagreements=tuple(ModelLabelItem.from_dict(row) for row in found.get("disagreements") or ()),
            annotators=tuple(AnnotatorCompetence.from_dict(row) for row in found.get("annotators") or ()),
            notes=_texts(found.get("notes")),
        )


def model_label_reports(model_labels: Mapping[str, Any]) -> dict[str, ModelLabelReport]:
    """The analysis's ``model_labels`` entry ({question: report}), typed, in its order."""
    return {q: m if isinstance(m, ModelLabelReport) else ModelLabelReport.from_dict(m) for q, m in model_labels.items()}


# --- λ calibration (metrics.calibrate.calibrate, metrics.analysis.calibrate_study) --------------------------


@dataclass(frozen=True)
class CurvePoint:
    """r(λ) at one grid value ``lam`` (the JSON's ``lambda``), with its bootstrap band ``ci``."""

    lam: float
    r: float | None = None
    ci: Interval | None = None

    @classmethod
    def from_dict(cls, point: Mapping[str, Any]) -> CurvePoint:
        return cls(lam=point["lambda"], r=point.get("r"), ci=_pair(point.get("ci")))


@dataclass(frozen=True)
class CalibrationFold:
    """One cross-validation fold: λ* fitted without it (``lam``, the JSON's ``lambda``), r on the others and
    the dialogues held out; None where the dict does not say (a hand-made dict may list folds by number only).

    >>> CalibrationFold.from_dict({"fold": 0, "lambda": 0.4, "r_train": 0.5, "n_test": 8}).lam, CalibrationFold.from_dict(0.9)
    (0.4, CalibrationFold(fold=None, lam=None, r_train=None, n_test=None))
    """

    fold: int | None = None
    lam: float | None = None
    r_train: float | None = None
    n_test: int | None = None

    @classmethod
    def from_dict(cls, row: Mapping[str, Any] | object) -> CalibrationFold:
        if not isinstance(row, Mapping):
            return cls()
        return cls(fold=row.get("fold"), lam=row.get("lambda"), r_train=row.get("r_train"), n_test=row.get("n_test"))


@dataclass(frozen=True)
class Forgetting:
    """λ* as a forgetting time: the turns after which a share ``p`` of an old error is forgiven."""

    p: float | None = None
    turns_to_forget: float | None = None

    @classmethod
    def from_dict(cls, value: Mapping[str, Any] | None) -> Forgetting:
        value = value or {}
        return cls(p=value.get("p"), turns_to_forget=value.get("turns_to_forget"))


@dataclass(frozen=True)
class LambdaSet:
    """λ*'s confidence set by test inversion (``metrics.calibrate.lambda_confidence_set``): its hull
    ``low`` / ``high``, its ``runs`` of consecutive grid points, the ``share`` of the grid it keeps, whether
    λ* is ``identified`` (at most half the grid), and about how many dialogues would identify it.

    >>> LambdaSet.from_dict({"low": 0.0, "high": 6.0, "runs": [[0.0, 6.0]], "share": 0.64}).runs
    ((0.0, 6.0),)
    """

    low: float | None = None
    high: float | None = None
    runs: tuple[Interval, ...] = ()
    share: float = 0.0
    identified: bool = True
    dialogues_to_identify: int | None = None
    confidence: float = 0.95
    method: str = ""

    @classmethod
    def from_dict(cls, value: Mapping[str, Any] | None) -> LambdaSet | None:
        if not value:
            return None
        return cls(
            low=value.get("low"),
            high=value.get("high"),
            runs=tuple((float(a), float(b)) for a, b in value.get("runs") or ()),
            share=float(value.get("share", 0.0)),
            identified=bool(value.get("identified", True)),
            dialogues_to_identify=value.get("dialogues_to_identify"),
            confidence=float(value.get("confidence", 0.95)),
            method=value.get("method", ""),
        )


@dataclass(frozen=True)
class Calibration:
    """The λ calibration for FGA (``python -m metrics calibrate --json``): λ* (``best_lambda``, refined
    off the grid; ``best_at_bound`` when the best grid point is an end) with its interval ``ci_lambda``
    (its upper end None when open: ``ci_lambda_open`` says why) and its confidence set by test inversion
    (``lambda_set``, which says whether λ* is identified at all), r there (``r_best``, ``ci_r``), r at λ = 0
    (JGA) and λ → ∞ (turn match), the cross-validated r and its folds, the r(λ) ``curve``, the share of
    bootstrap refits at a grid end (``at_bound``), the counts it rests on and the notes.  A calibration
    counts no votes: ``n_votes`` is None.

    >>> k = Calibration.from_dict({"best_lambda": 0.5, "ci_lambda": [0.25, None], "curve": [{"lambda": 0.0, "r": 0.4}]})
    >>> k.ci_lambda, k.curve[0].lam, k.bootstrap.resamples
    ((0.25, None), 0.0, 0)
    """

    signature: str = ""
    best_lambda: float | None = None
    r_best: float | None = None
    best_at_bound: bool = False
    r_jga: float | None = None
    r_turn: float | None = None
    n_dialogues: int | None = None
    n_ratings: int | None = None
    rating: str = ""
    forgetting: Forgetting = field(default_factory=Forgetting)
    ci_lambda: OpenInterval | None = None
    ci_lambda_open: str | None = None
    ci_r: Interval | None = None
    at_bound: float | None = None
    bootstrap: Bootstrap = field(default_factory=Bootstrap)
    lambda_set: LambdaSet | None = None
    curve: tuple[CurvePoint, ...] = ()
    cv_r: float | None = None
    cv_folds: tuple[CalibrationFold, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def n_votes(self) -> int | None:
        """Votes behind the ratings: the calibration's JSON does not count them."""
        return None

    @classmethod
    def from_dict(cls, calibration: Mapping[str, Any]) -> Calibration:
        return cls(
            signature=calibration.get("signature", ""),
            best_lambda=calibration.get("best_lambda"),
            r_best=calibration.get("r_best"),
            best_at_bound=bool(calibration.get("best_at_bound")),
            r_jga=calibration.get("r_jga"),
            r_turn=calibration.get("r_turn"),
            n_dialogues=calibration.get("n_dialogues"),
            n_ratings=calibration.get("n_ratings"),
            rating=calibration.get("rating", ""),
            forgetting=Forgetting.from_dict(calibration.get("forgetting")),
            ci_lambda=_pair(calibration.get("ci_lambda")),
            ci_lambda_open=calibration.get("ci_lambda_open"),
            ci_r=_pair(calibration.get("ci_r")),
            at_bound=calibration.get("at_bound"),
            bootstrap=Bootstrap.from_dict(calibration.get("bootstrap")),
            lambda_set=LambdaSet.from_dict(calibration.get("lambda_set")),
            curve=tuple(CurvePoint.from_dict(point) for point in calibration.get("curve") or ()),
            cv_r=calibration.get("cv_r"),
            cv_folds=tuple(CalibrationFold.from_dict(row) for row in calibration.get("cv_folds") or ()),
            notes=_texts(calibration.get("notes")),
        )

    @classmethod
    def of(cls, calibration: Calibration | Mapping[str, Any]) -> Calibration:
        return calibration if isinstance(calibration, Calibration) else cls.from_dict(calibration)


# --- the correlation report (metrics.analysis.correlate_study) ------------------------------------------


@dataclass(frozen=True)
class ComparisonFamily:
    """The declared comparisons of metrics (``metrics.comparisons``) as a report states them: the
    ``family`` (reference or all) with its ``key``, ``reference`` metric and FGA λ (``fga``), ``size``,
    how many were ``tested``, the ``adjust`` ment and its ``alpha``, the level of the differences'
    intervals (``interval_confidence``), the level a planned comparison uses (``planning_alpha``) and the
    family in words (``text``).  The design's report (:class:`DesignSummary`) states fewer of them."""

    family: str = ""
    key: str | None = None
    reference: str | None = None
    fga: str | None = None
    size: int = 0
    tested: int | None = None
    adjust: str | None = None
    alpha: float = 0.05
    interval_confidence: float = 0.95
    planning_alpha: float = 0.05
    text: str | None = None

    @classmethod
    def from_dict(cls, family: Mapping[str, Any]) -> ComparisonFamily:
        return cls(
            family=family.get("family", ""),
            key=family.get("key"),
            reference=family.get("reference"),
            fga=family.get("fga"),
            size=family.get("size", 0),
            tested=family.get("tested"),
            adjust=family.get("adjust"),
            alpha=family.get("alpha", 0.05),
            interval_confidence=family.get("interval_confidence", 0.95),
            planning_alpha=family.get("planning_alpha", 0.05),
            text=family.get("text"),
        )


@dataclass(frozen=True)
class DialogueRating:
    """One rated dialogue of a correlation (its ``per_dialogue`` row): the mean rating (None: no vote) and
    each metric's value (None: undefined), by metric key."""

    id: str
    rating: float | None = None
    values: Mapping[str, float | None] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, row: Mapping[str, Any]) -> DialogueRating:
        return cls(id=row["id"], rating=row.get("rating"), values={k: v for k, v in row.items() if k not in ("id", "rating")})


@dataclass(frozen=True)
class CorrelationReport:
    """Every metric against the human rating (``python -m metrics correlate --json``): the dialogues,
    ratings and votes it rests on and the ``rating`` mode, one row per metric (``metrics``), the declared
    comparisons (``williams``; the family in ``comparisons``, None when the report has none), the human
    ceiling, the notes, the ``bootstrap`` and each dialogue's values (``per_dialogue``).

    >>> report = CorrelationReport.from_dict({"n_dialogues": 40, "rating": "mean", "metrics": [{"metric": "jga"}],
    ...     "williams": [], "comparisons": {"family": "reference", "reference": "jga", "adjust": "holm"}})
    >>> report.metrics[0].metric, report.comparisons.reference, report.human_ceiling.r_max, report.bootstrap.resample
    ('jga', 'jga', None, 'dialogues')
    """

    signature: str = ""
    n_dialogues: int | None = None
    n_ratings: int | None = None
    n_votes: int | None = None
    rating: str = ""
    metrics: tuple[MetricCorrelation, ...] = ()
    williams: tuple[Comparison, ...] = ()
    comparisons: ComparisonFamily | None = None
    human_ceiling: HumanCeiling = field(default_factory=HumanCeiling)
    notes: tuple[str, ...] = ()
    bootstrap: Bootstrap = field(default_factory=Bootstrap)
    per_dialogue: tuple[DialogueRating, ...] = ()

    @classmethod
    def from_dict(cls, correlation: Mapping[str, Any]) -> CorrelationReport:
        family = correlation.get("comparisons")
        return cls(
            signature=correlation.get("signature", ""),
            n_dialogues=correlation.get("n_dialogues"),
            n_ratings=correlation.get("n_ratings"),
            n_votes=correlation.get("n_votes"),
            rating=correlation.get("rating", ""),
            metrics=tuple(metric_rows(correlation)),
            williams=tuple(comparisons(correlation)),
            comparisons=ComparisonFamily.from_dict(family) if family else None,
            human_ceiling=human_ceiling_of(correlation),
            notes=_texts(correlation.get("notes")),
            bootstrap=Bootstrap.from_dict(correlation.get("bootstrap")),
            per_dialogue=tuple(DialogueRating.from_dict(row) for row in correlation.get("per_dialogue") or ()),
        )

    @classmethod
    def of(cls, correlation: CorrelationReport | Mapping[str, Any]) -> CorrelationReport:
        return correlation if isinstance(correlation, CorrelationReport) else cls.from_dict(correlation)


# --- systems as the unit (metrics.systems) -----------------------------------------------------------------


@dataclass(frozen=True)
class SystemMeans:
    """One system (condition): its rated dialogues, mean rating, and each metric's corpus score over those
    dialogues (turn-weighted; by key).  The name stays from when the scores were means of dialogue scores."""

    system: str
    n_dialogues: int = 0
    rating: float | None = None
    means: Mapping[str, float] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, row: Mapping[str, Any]) -> SystemMeans:
        kept = ("system", "n_dialogues", "rating")
        return cls(
            system=row["system"],
            n_dialogues=row.get("n_dialogues", 0),
            rating=row.get("rating"),
            means={k: v for k, v in row.items() if k not in kept},
        )


@dataclass(frozen=True)
class SystemCorrelation:
    """One metric's system scores against the systems' human scores, over ``n`` systems: Pearson,
    Spearman, Kendall τ-b and pairwise accuracy, each with its interval (resampling systems and dialogues;
    None with too few systems or no resampling), the draws where ``statistic`` was undefined, and the
    metric's significance ``cluster`` (1 = the best; None when not ranked)."""

    metric: str
    n: int = 0
    pearson: float | None = None
    pearson_ci: Interval | None = None
    spearman: float | None = None
    spearman_ci: Interval | None = None
    kendall: float | None = None
    kendall_ci: Interval | None = None
    accuracy: float | None = None
    accuracy_ci: Interval | None = None
    undefined_draws: int = 0
    cluster: int | None = None

    @classmethod
    def from_dict(cls, row: Mapping[str, Any]) -> SystemCorrelation:
        return cls(
            metric=row["metric"],
            n=row.get("n", 0),
            pearson=row.get("pearson"),
            pearson_ci=_pair(row.get("pearson_ci")),
            spearman=row.get("spearman"),
            spearman_ci=_pair(row.get("spearman_ci")),
            kendall=row.get("kendall"),
            kendall_ci=_pair(row.get("kendall_ci")),
            accuracy=row.get("accuracy"),
            accuracy_ci=_pair(row.get("accuracy_ci")),
            undefined_draws=row.get("undefined_draws", 0),
            cluster=row.get("cluster"),
        )

    def value(self, statistic: str) -> float | None:
        """The estimate of one of ``metrics.systems.STATISTICS``."""
        found: float | None = getattr(self, statistic)
        return found

    def interval(self, statistic: str) -> Interval | None:
        found: Interval | None = getattr(self, f"{statistic}_ci")
        return found


@dataclass(frozen=True)
class SystemComparison:
    """Metric ``a`` against metric ``b`` on the system-level statistic: the difference, its paired
    bootstrap interval, the interval's own p and Holm's p over every pair of metrics."""

    a: str
    b: str
    difference: float
    ci: Interval | None = None
    p: float | None = None
    p_holm: float | None = None

    @classmethod
    def from_dict(cls, row: Mapping[str, Any]) -> SystemComparison:
        return cls(
            a=row["a"],
            b=row["b"],
            difference=row["difference"],
            ci=_pair(row.get("ci")),
            p=row.get("p"),
            p_holm=row.get("p_holm"),
        )


@dataclass(frozen=True)
class SystemLevel:
    """Systems as the unit (``python -m metrics systems --json``; the analysis's ``system_level``): each
    system's corpus scores, each metric's statistics over them, the tests between metrics on
    ``statistic``, how it was resampled, and the ``note`` (too few systems, or how to read so few).

    >>> found = SystemLevel.from_dict({"n_systems": 2, "systems": [{"system": "a", "n_dialogues": 5, "rating": 0.5,
    ...     "jga": 0.3}], "metrics": [], "note": "too few"})
    >>> found.systems[0].means, found.note, found.statistic
    ({'jga': 0.3}, 'too few', 'pearson')
    """

    signature: str | None = None
    n_systems: int = 0
    n_dialogues: int = 0
    score: str = "corpus"
    statistic: str = "pearson"
    systems: tuple[SystemMeans, ...] = ()
    metrics: tuple[SystemCorrelation, ...] = ()
    comparisons: tuple[SystemComparison, ...] = ()
    bootstrap: Bootstrap = field(default_factory=Bootstrap)
    method: str | None = None
    note: str | None = None

    @classmethod
    def from_dict(cls, system: Mapping[str, Any]) -> SystemLevel:
        return cls(
            signature=system.get("signature"),
            n_systems=system.get("n_systems", 0),
            n_dialogues=system.get("n_dialogues", 0),
            score=system.get("score", "corpus"),
            statistic=system.get("statistic", "pearson"),
            systems=tuple(SystemMeans.from_dict(row) for row in system.get("systems") or ()),
            metrics=tuple(SystemCorrelation.from_dict(row) for row in system.get("metrics") or ()),
            comparisons=tuple(SystemComparison.from_dict(row) for row in system.get("comparisons") or ()),
            bootstrap=Bootstrap.from_dict(system.get("bootstrap")),
            method=system.get("method"),
            note=system.get("note"),
        )

    def ranked(self) -> tuple[SystemCorrelation, ...]:
        """The metrics with a value of ``statistic``, best first (ties in the metrics' order)."""
        known = [m for m in self.metrics if m.value(self.statistic) is not None]
        return tuple(sorted(known, key=lambda m: -(m.value(self.statistic) or 0.0)))

    def comparison(self, a: str, b: str) -> SystemComparison | None:
        """The test of ``a`` against ``b`` (either order given; the difference is the stored one's)."""
        return next((c for c in self.comparisons if {c.a, c.b} == {a, b}), None)

    @classmethod
    def of(cls, system: SystemLevel | Mapping[str, Any]) -> SystemLevel:
        return system if isinstance(system, SystemLevel) else cls.from_dict(system)


# --- automatic judges (metrics.judges.judge_report) ------------------------------------------------------


@dataclass(frozen=True)
class JudgeRow:
    """One judge against the human majority on the ``n`` items it shares with it: accuracy, Cohen's κ with
    its bootstrap interval (``kappa_ci_degenerate``: a point), the confusion table {human label: {judge
    label: items}} and the ``note``."""

    judge: str
    n: int = 0
    accuracy: float | None = None
    cohen_kappa: float | None = None
    kappa_ci: Interval | None = None
    kappa_ci_degenerate: bool = False
    confusion: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    note: str | None = None

    @classmethod
    def from_dict(cls, row: Mapping[str, Any]) -> JudgeRow:
        return cls(
            judge=row["judge"],
            n=row.get("n", 0),
            accuracy=row.get("accuracy"),
            cohen_kappa=row.get("cohen_kappa"),
            kappa_ci=_pair(row.get("kappa_ci")),
            kappa_ci_degenerate=bool(row.get("kappa_ci_degenerate")),
            confusion={human: dict(counts) for human, counts in (row.get("confusion") or {}).items()},
            note=row.get("note"),
        )


@dataclass(frozen=True)
class JudgeReport:
    """Every judge against the human majority on one question (``python -m metrics judge --json``).

    >>> report = JudgeReport.from_dict({"question": "q", "n_items_with_majority": 9, "judges": [{"judge": "llm",
    ...     "n": 9, "kappa_ci": [0.1, 0.5]}], "notes": [], "method": "m"})
    >>> report.judges[0].kappa_ci, report.signature
    ((0.1, 0.5), None)
    """

    question: str = ""
    n_items_with_majority: int = 0
    categories: tuple[str, ...] = ()
    judges: tuple[JudgeRow, ...] = ()
    notes: tuple[str, ...] = ()
    method: str = ""
    signature: str | None = None

    @classmethod
    def from_dict(cls, report: Mapping[str, Any]) -> JudgeReport:
        return cls(
            question=report.get("question", ""),
            n_items_with_majority=report.get("n_items_with_majority", 0),
            categories=_texts(report.get("categories")),
            judges=tuple(JudgeRow.from_dict(row) for row in report.get("judges") or ()),
            notes=_texts(report.get("notes")),
            method=report.get("method", ""),
            signature=report.get("signature"),
        )

    @classmethod
    def of(cls, report: JudgeReport | Mapping[str, Any]) -> JudgeReport:
        return report if isinstance(report, JudgeReport) else cls.from_dict(report)


@dataclass(frozen=True)
class StudyJudges:
    """The judges that voted in a study (the analysis's ``judges``,
    ``annotate.analysis.study_data.judges_against_humans``): their names and one report per question."""

    judges: tuple[str, ...] = ()
    questions: Mapping[str, JudgeReport] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, value: Mapping[str, Any]) -> StudyJudges:
        return cls(
            judges=_texts(value.get("judges")),
            questions={q: JudgeReport.from_dict(report) for q, report in (value.get("questions") or {}).items()},
        )

    @classmethod
    def of(cls, value: StudyJudges | Mapping[str, Any]) -> StudyJudges:
        return value if isinstance(value, StudyJudges) else cls.from_dict(value)


# --- the allocation design (metrics.analysis.design_summary, corrected_summary) --------------------------


@dataclass(frozen=True)
class DesignedDraw:
    """A designer's design as stored (``annotate.studies.allocation``): ``n`` dialogues judged (``drawn``
    of them when drawn with π by their λ scores, ``weighting`` ``lambda``) out of the ``pool``, ``m`` of
    them with ``k_overlap`` votes, the others one; the ``seed``, the inclusion probabilities and the
    ``judgements`` it has."""

    n: int | None = None
    m: int | None = None
    k_overlap: int | None = None
    seed: int | None = None
    weighting: str | None = None
    pool: int | None = None
    drawn: int | None = None
    pi_dialogue: float | None = None
    pi_overlap: float | None = None
    judgements: int | None = None

    @classmethod
    def from_dict(cls, design: Mapping[str, Any]) -> DesignedDraw:
        return cls(
            n=design.get("n"),
            m=design.get("m"),
            k_overlap=design.get("k_overlap"),
            seed=design.get("seed"),
            weighting=design.get("weighting"),
            pool=design.get("pool"),
            drawn=design.get("drawn"),
            pi_dialogue=design.get("pi_dialogue"),
            pi_overlap=design.get("pi_overlap"),
            judgements=design.get("judgements"),
        )


@dataclass(frozen=True)
class DesignAllocation:
    """A study's allocation settings (``annotate.studies.allocation.design_of``): the ``policy``
    (uniform, adaptive, designed), the main ``question``, the FGA λ (``lam``, the JSON's ``lambda``), the
    budget, target width and max k, and a designed study's draw (``design``); None where the settings do
    not say.  ``stored``: every setting as stored, in order (the design table lists them).

    >>> chosen = DesignAllocation.from_dict({"policy": "adaptive", "lambda": 0.5, "budget": 300})
    >>> chosen.lam, chosen.question, chosen.design, chosen.stored[-1]
    (0.5, None, None, ('budget', 300))
    """

    policy: str | None = None
    question: str | None = None
    lam: float | None = None
    budget: int | None = None
    target_width: float | None = None
    max_k: int | None = None
    design: DesignedDraw | None = None
    stored: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def from_dict(cls, allocation: Mapping[str, Any] | None) -> DesignAllocation:
        allocation = allocation or {}
        design = allocation.get("design")
        return cls(
            policy=allocation.get("policy"),
            question=allocation.get("question"),
            lam=allocation.get("lambda"),
            budget=allocation.get("budget"),
            target_width=allocation.get("target_width"),
            max_k=allocation.get("max_k"),
            design=DesignedDraw.from_dict(design) if design else None,
            stored=tuple(allocation.items()),
        )


@dataclass(frozen=True)
class DesignMetric:
    """One metric's 1/π-weighted correlation with the mean rating over the ``n`` judged dialogues
    (``n_effective`` after the weights), with its percentile bootstrap interval."""

    metric: str
    n: int = 0
    n_effective: float | None = None
    pearson: float | None = None
    bootstrap_ci: Interval | None = None

    @classmethod
    def from_dict(cls, row: Mapping[str, Any]) -> DesignMetric:
        return cls(
            metric=row["metric"],
            n=row.get("n", 0),
            n_effective=row.get("n_effective"),
            pearson=row.get("pearson"),
            bootstrap_ci=_pair(row.get("bootstrap_ci")),
        )


@dataclass(frozen=True)
class DesignDifference:
    """One declared comparison under the design: ``diff`` = r_a − r_b (weighted) with its interval at the
    family's level, the bootstrap p and ``p_adjusted`` (``adjust`` names how; None when not adjusted)."""

    a: str
    b: str
    diff: float | None = None
    diff_ci: Interval | None = None
    p_value: float | None = None
    adjust: str | None = None
    p_adjusted: float | None = None

    @classmethod
    def from_dict(cls, entry: Mapping[str, Any]) -> DesignDifference:
        adjust = _adjustment(entry)
        return cls(
            a=entry["a"],
            b=entry["b"],
            diff=entry.get("diff"),
            diff_ci=_pair(entry.get("diff_ci")),
            p_value=entry.get("p_value"),
            adjust=adjust,
            p_adjusted=None if adjust is None else entry[f"p_{adjust}"],
        )


@dataclass(frozen=True)
class LambdaStar:
    """λ* under the design (``metrics.adaptive.lambda_star``): the weighted argmax of r(FGA_λ, mean rating)
    with its percentile bootstrap interval over ``n`` judged dialogues."""

    lambda_star: float | None = None
    r: float | None = None
    n: int = 0
    ci: Interval | None = None
    ci_width: float | None = None
    method: str = ""

    @classmethod
    def from_dict(cls, row: Mapping[str, Any]) -> LambdaStar:
        return cls(
            lambda_star=row.get("lambda_star"),
            r=row.get("r"),
            n=row.get("n", 0),
            ci=_pair(row.get("ci")),
            ci_width=row.get("ci_width"),
            method=row.get("method", ""),
        )


@dataclass(frozen=True)
class CorrectedEstimate:
    """A corrected correlation ρ(metric, T) with its jackknife interval (``metrics.design``)."""

    metric: str
    estimate: float | None = None
    ci: Interval | None = None
    method: str = ""

    @classmethod
    def from_dict(cls, row: Mapping[str, Any]) -> CorrectedEstimate:
        return cls(metric=row["metric"], estimate=row.get("estimate"), ci=_pair(row.get("ci")), method=row.get("method", ""))


@dataclass(frozen=True)
class CorrectedDifference:
    """The corrected difference ρ(a, T) − ρ(b, T) with its jackknife interval."""

    a: str
    b: str
    estimate: float | None = None
    ci: Interval | None = None
    method: str = ""

    @classmethod
    def from_dict(cls, row: Mapping[str, Any]) -> CorrectedDifference:
        return cls(a=row["a"], b=row["b"], estimate=row.get("estimate"), ci=_pair(row.get("ci")), method=row.get("method", ""))


@dataclass(frozen=True)
class CorrectedSummary:
    """The k-independent target of a designed study (``metrics.analysis.corrected_summary``): the
    ``target`` in words, each metric's corrected correlation, the corrected difference (FGA at
    ``fga_lambda`` − JGA), the dialogues, the overlap subset and votes it rests on, the single-rating ICC
    and the reliability of the dialogue means; ``note`` when nothing is reported (why), ``notes`` on parts.

    >>> found = CorrectedSummary.from_dict({"target": "t", "metrics": [{"metric": "jga", "estimate": 0.3,
    ...     "ci": [0.1, 0.5]}], "difference": {"a": "fga_0.5", "b": "jga", "estimate": 0.1}, "notes": []})
    >>> found.metrics[0].ci, found.difference.b, found.note
    ((0.1, 0.5), 'jga', None)
    """

    target: str | None = None
    condition: str | None = None
    fga_lambda: float | None = None
    metrics: tuple[CorrectedEstimate, ...] = ()
    difference: CorrectedDifference | None = None
    notes: tuple[str, ...] = ()
    n_dialogues: int | None = None
    n_overlap: int | None = None
    n_votes: int | None = None
    icc: float | None = None
    reliability: float | None = None
    note: str | None = None

    @classmethod
    def from_dict(cls, corrected: Mapping[str, Any]) -> CorrectedSummary:
        difference = corrected.get("difference")
        return cls(
            target=corrected.get("target"),
            condition=corrected.get("condition"),
            fga_lambda=corrected.get("fga_lambda"),
            metrics=tuple(CorrectedEstimate.from_dict(row) for row in corrected.get("metrics") or ()),
            difference=CorrectedDifference.from_dict(difference) if difference else None,
            notes=_texts(corrected.get("notes")),
            n_dialogues=corrected.get("n_dialogues"),
            n_overlap=corrected.get("n_overlap"),
            n_votes=corrected.get("n_votes"),
            icc=corrected.get("icc"),
            reliability=corrected.get("reliability"),
            note=corrected.get("note"),
        )


@dataclass(frozen=True)
class DesignSummary:
    """How a study spent its judgements (the analysis's ``design``): ``uniform``; ``adaptive``, with every
    correlation, difference and λ* recomputed with 1/π weights (``metrics.analysis.design_summary``; ``lam``
    is the JSON's ``lambda``); or ``designed``, with the k-independent target (``corrected``).  ``note``:
    why there are no estimates yet.

    >>> design = DesignSummary.from_dict({"design": "adaptive", "allocation": {"policy": "adaptive"},
    ...     "differences": [{"a": "fga_0.5", "b": "jga", "diff": 0.1, "p_value": 0.2, "p_holm": 0.4}],
    ...     "lambda": {"lambda_star": 0.7, "ci": [0.5, 1.0]}})
    >>> design.differences[0].adjust, design.differences[0].p_adjusted, design.lam.ci, design.corrected
    ('holm', 0.4, (0.5, 1.0), None)
    """

    design: str = "uniform"
    allocation: DesignAllocation = field(default_factory=DesignAllocation)
    condition: str | None = None
    note: str | None = None
    n_judged: int | None = None
    n_effective: float | None = None
    metrics: tuple[DesignMetric, ...] = ()
    differences: tuple[DesignDifference, ...] = ()
    method: str | None = None
    comparisons: ComparisonFamily | None = None
    lam: LambdaStar | None = None
    notes: tuple[str, ...] = ()
    corrected: CorrectedSummary | None = None

    @classmethod
    def from_dict(cls, design: Mapping[str, Any]) -> DesignSummary:
        family, found, corrected = design.get("comparisons"), design.get("lambda"), design.get("corrected")
        return cls(
            design=design.get("design", "uniform"),
            allocation=DesignAllocation.from_dict(design.get("allocation")),
            condition=design.get("condition"),
            note=design.get("note"),
            n_judged=design.get("n_judged"),
            n_effective=design.get("n_effective"),
            metrics=tuple(DesignMetric.from_dict(row) for row in design.get("metrics") or ()),
            differences=tuple(DesignDifference.from_dict(entry) for entry in design.get("differences") or ()),
            method=design.get("method"),
            comparisons=ComparisonFamily.from_dict(family) if family else None,
            lam=LambdaStar.from_dict(found) if found else None,
            notes=_texts(design.get("notes")),
            corrected=CorrectedSummary.from_dict(corrected) if corrected else None,
        )

    @classmethod
    def of(cls, design: DesignSummary | Mapping[str, Any]) -> DesignSummary:
        return design if isinstance(design, DesignSummary) else cls.from_dict(design)


# --- a study's whole analysis (annotate.kinds.analyse) ----------------------------------------------------


# --- "unsure" answers (metrics.analysis.unsure_summary) ---------------------------------------------------


@dataclass(frozen=True)
class UnsureRate:
    """How often one item (``key``: item, or item [condition]) or one annotator answered "unsure": of
    ``votes`` on the question, ``unsure`` were, ``rate`` = unsure / votes."""

    key: str
    votes: int
    unsure: int
    rate: float


@dataclass(frozen=True)
class UnsureQuestion:
    """One question's "unsure" answers: counts and rate, and the items and annotators with the highest
    rates (at most ``UnsureSummary.top`` of each)."""

    question: str
    votes: int
    unsure: int
    rate: float
    items: tuple[UnsureRate, ...] = ()
    annotators: tuple[UnsureRate, ...] = ()


@dataclass(frozen=True)
class UnsureSummary:
    """The "unsure" answers of a study, under its one ``policy`` ("missing": left out of agreement, labels
    and correlation before they are computed).

    >>> found = UnsureSummary.from_dict({"policy": "missing", "top": 5, "questions": {"q": {"votes": 4, "unsure": 1,
    ...     "rate": 0.25, "items": [{"item": "d1", "condition": "", "votes": 2, "unsure": 1, "rate": 0.5}],
    ...     "annotators": [{"annotator": "a", "votes": 2, "unsure": 1, "rate": 0.5}]}}})
    >>> found.questions[0].items[0].key, found.questions[0].annotators[0].rate
    ('d1', 0.5)
    """

    policy: str = "missing"
    top: int = 5
    questions: tuple[UnsureQuestion, ...] = ()

    @classmethod
    def from_dict(cls, found: Mapping[str, Any]) -> UnsureSummary:
        def item_key(row: Mapping[str, Any]) -> str:
            return f"{row['item']} [{row['condition']}]" if row.get("condition") else str(row["item"])

        return cls(
            policy=found.get("policy", "missing"),
            top=found.get("top", 5),
            questions=tuple(
                UnsureQuestion(
                    question=question,
                    votes=row["votes"],
                    unsure=row["unsure"],
                    rate=row["rate"],
                    items=tuple(UnsureRate(item_key(r), r["votes"], r["unsure"], r["rate"]) for r in row.get("items") or ()),
                    annotators=tuple(
                        UnsureRate(str(r["annotator"]), r["votes"], r["unsure"], r["rate"]) for r in row.get("annotators") or ()
                    ),
                )
                for question, row in (found.get("questions") or {}).items()
            ),
        )


@dataclass(frozen=True)
class StudyAnalysis:
    """A study's analysis (``metrics.analysis.votes_summary`` and what its kind adds): the votes and
    questions; agreement, majority labels and Dawid-Skene (None / empty without votes); the design; the
    CoCo table; the system (``condition``) of the correlation, the λ calibration and systems as the unit,
    or why there is no correlation (``correlation_note``); the automatic judges.

    ``votes`` is the JSON's ``n_votes`` (the votes counted; 0: none yet), under another name: a class's
    namespace, field registry and annotations are dicts, and one with both ``n_votes`` and ``agreement``
    keys would be taken for an analysis by the checks that count the analyses a process holds
    (``tests/store/test_analysis_memory.py``).

    >>> view = StudyAnalysis.from_dict({"n_votes": 3, "questions": ["q"], "agreement": {"questions": {}},
    ...     "majority": {"q": {"tie_policy": "none", "n_ties": 0, "rows": []}}})
    >>> view.agreement is not None, view.majority["q"].tie_policy, view.correlation, view.design.design
    (True, 'none', None, 'uniform')
    """

    kind: str | None = None
    votes: int = 0
    questions: tuple[str, ...] = ()
    agreement: Agreement | None = None
    majority: Mapping[str, MajorityTable] = field(default_factory=dict)
    model_labels: Mapping[str, ModelLabelReport] = field(default_factory=dict)
    design: DesignSummary = field(default_factory=DesignSummary)
    coco: tuple[CocoRow, ...] | None = None
    condition: str | None = None
    conditions: tuple[str, ...] = ()
    correlation: CorrelationReport | None = None
    correlation_note: str | None = None
    calibration: Calibration | None = None
    system_level: SystemLevel | None = None
    judges: StudyJudges | None = None
    unsure: UnsureSummary | None = None

    @classmethod
    def from_dict(cls, analysis: Mapping[str, Any]) -> StudyAnalysis:
        agreement, coco, correlation = analysis.get("agreement"), analysis.get("coco"), analysis.get("correlation")
        calibration, system, judges = analysis.get("calibration"), analysis.get("system_level"), analysis.get("judges")
        return cls(
            kind=analysis.get("kind"),
            votes=analysis.get("n_votes", 0),
            questions=_texts(analysis.get("questions")),
            agreement=None if agreement is None else Agreement.from_dict(agreement),
            majority=majority_tables(analysis.get("majority") or {}),
            model_labels=model_label_reports(analysis.get("model_labels") or {}),
            design=DesignSummary.from_dict(analysis.get("design") or {"design": "uniform"}),
            coco=None if coco is None else tuple(CocoRow.from_dict(row) for row in coco),
            condition=analysis.get("condition"),
            conditions=_texts(analysis.get("conditions")),
            correlation=None if correlation is None else CorrelationReport.from_dict(correlation),
            correlation_note=analysis.get("correlation_note"),
            calibration=None if calibration is None else Calibration.from_dict(calibration),
            system_level=None if system is None else SystemLevel.from_dict(system),
            judges=None if judges is None else StudyJudges.from_dict(judges),
            unsure=None if analysis.get("unsure") is None else UnsureSummary.from_dict(analysis["unsure"]),
        )

    @classmethod
    def of(cls, analysis: StudyAnalysis | Mapping[str, Any]) -> StudyAnalysis:
        return analysis if isinstance(analysis, StudyAnalysis) else cls.from_dict(analysis)


__all__ = [
    "Interval",
    "OpenInterval",
    "Bootstrap",
    "COEFFICIENT_NAMES",
    "AnnotatorAgreement",
    "CohenPair",
    "AgreementReport",
    "Agreement",
    "MajorityRow",
    "MajorityTable",
    "majority_tables",
    "CocoRow",
    "ModelLabelItem",
    "AnnotatorCompetence",
    "ModelLabelReport",
    "model_label_reports",
    "CurvePoint",
    "CalibrationFold",
    "Forgetting",
    "Calibration",
    "ComparisonFamily",
    "DialogueRating",
    "CorrelationReport",
    "MetricCorrelation",
    "Comparison",
    "HumanCeiling",
    "metric_rows",
    "comparisons",
    "human_ceiling_of",
    "SystemMeans",
    "SystemCorrelation",
    "SystemLevel",
    "JudgeRow",
    "JudgeReport",
    "StudyJudges",
    "DesignedDraw",
    "DesignAllocation",
    "DesignMetric",
    "DesignDifference",
    "LambdaSet",
    "LambdaStar",
    "CorrectedEstimate",
    "CorrectedDifference",
    "CorrectedSummary",
    "DesignSummary",
    "UnsureRate",
    "UnsureQuestion",
    "UnsureSummary",
    "StudyAnalysis",
]
