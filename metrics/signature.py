"""How a number was made, in one line (sacreBLEU's signature, ``nrefs:1|case:mixed|...|version:2.0.0``).

Every result of ``python -m metrics`` (and the app's analysis, the exports and the report) carries
``str(Signature(...))`` under ``"signature"``; the text output prints it as its last line.

>>> scoring = dict(metrics=("jga", "m2", "fga"), lambdas="0.5,1", slots=30, rsa="macro", normalise=False, version="0.1.0")
>>> print(Signature(**scoring))
metrics:jga+m2+fga|lambda:0.5,1|slots:30|rsa:macro|norm:off|t_err0:-1|version:0.1.0
>>> correlation = Signature(**scoring, rating="mean", tie="none", resamples=1000, seed=0, resample_unit="dialogues",
...                         interval="fisher95+percentile95+bca95", difference="zou2007", adjust="holm")
>>> str(correlation).removeprefix(str(Signature(**scoring)))
'|rating:mean|tie:none|boot:1000|seed:0|resample:dialogues|ci:fisher95+percentile95+bca95|diff:zou2007|adjust:holm'

Without metrics (agreement, judges) the head is a bare ``metrics``:

>>> print(Signature(agreement="nominal", resamples=1000, seed=0, interval="percentile95", version="0.1.0"))
metrics|version:0.1.0|agreement:nominal|boot:1000|seed:0|ci:percentile95

An unset field (None) is left out, so a signature states only what its number depends on.  The
keys keep the order of :data:`KEYS` whatever the order of the arguments; these strings are in
stored results and golden files, so a field's key and place never change (a new field goes
where it reads best and changes only the signatures that set it).
"""

from __future__ import annotations

from dataclasses import dataclass

from metrics import __version__

# (field, key in the one-line form), in the order printed after the version.
KEYS = (
    ("rating", "rating"),  # the human rating per dialogue: mean, majority, pairs
    ("tie", "tie"),  # the majority tie policy
    ("agreement", "agreement"),  # Krippendorff's α level
    ("judge", "judge"),  # how automatic judges are compared with people
    ("analysis_unit", "unit"),  # the unit of analysis when not the dialogue (system)
    ("resamples", "boot"),  # bootstrap resamples
    ("folds", "folds"),  # cross-validation folds
    ("seed", "seed"),  # the bootstrap's (and the tie policy's) random seed
    ("resample_unit", "resample"),  # the unit of resampling: dialogues, dialogues+annotators
    ("interval", "ci"),  # the interval method(s) and level
    ("difference", "diff"),  # the interval for a difference of correlations
    ("adjust", "adjust"),  # the p-value adjustment over the declared comparisons
    ("family", "family"),  # the declared comparisons: reference(jga,fga_0.5) or all (metrics.comparisons)
    ("fit", "fit"),  # how λ* is fitted
    ("weights", "weights"),  # agreement weights for Cohen's κ and Gwet's AC2
)


@dataclass(frozen=True)
class Signature:
    """What a number depends on.  The scoring part (``metrics`` and the four fields after it) is
    all or nothing: a signature names its metrics (:mod:`metrics.registry` names) with their λ
    grid (as :meth:`metrics.corpus.ScoreSettings.lambda_text` writes it), |S|, the RSA
    aggregation and the normalisation, or none of them.  ``t_err0:-1`` follows the metrics: FGA's
    error turn starts at -1 (the authors' reference scripts), a constant of this engine, stated so
    that a number is not compared with one made under another start."""

    metrics: tuple[str, ...] = ()
    lambdas: str | None = None
    slots: int | None = None
    rsa: str | None = None
    normalise: bool | None = None
    version: str = __version__
    rating: str | None = None
    tie: str | None = None
    agreement: str | None = None
    judge: str | None = None
    analysis_unit: str | None = None
    resamples: int | None = None
    folds: int | None = None
    seed: int | None = None
    resample_unit: str | None = None
    interval: str | None = None
    difference: str | None = None
    adjust: str | None = None
    family: str | None = None
    fit: str | None = None
    weights: str | None = None

    def __post_init__(self) -> None:
        scoring = (self.lambdas, self.slots, self.rsa, self.normalise)
        if self.metrics and None in scoring:
            raise ValueError("a signature with metrics states their λ grid, |S|, RSA aggregation and normalisation")
        if not self.metrics and any(v is not None for v in scoring):
            raise ValueError("λ grid, |S|, RSA aggregation and normalisation belong to a signature with metrics")

    def __str__(self) -> str:
        head = ["metrics"]
        if self.metrics:
            head = [
                f"metrics:{'+'.join(self.metrics)}",
                f"lambda:{self.lambdas}",
                f"slots:{self.slots}",
                f"rsa:{self.rsa}",
                f"norm:{'lower+ws' if self.normalise else 'off'}",
                "t_err0:-1",
            ]
        options = [f"{key}:{getattr(self, name)}" for name, key in KEYS if getattr(self, name) is not None]
        return "|".join([*head, f"version:{self.version}", *options])
