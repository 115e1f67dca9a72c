"""Which metric comparisons a study makes, and the one multiplicity story for all of them.

A study compares metrics with people to answer one question: does a metric track the ratings
better than the field's reference, JGA?  Its *family* of comparisons is declared before the data
are seen (``AnalysisSettings.family``, ``--family``):

- ``reference`` (the default): each metric against the reference metric (JGA), with FGA at one λ
  (``fga_lambda``, default 0.5; the other λ values are still correlated with the ratings, but a
  choice among λ is the calibration's question, not a comparison with JGA);
- ``all``: every pair of metrics, FGA at every λ (what the tool did before issue 26: 45 pairs for
  the default metrics, so Holm's bar is far higher).

One ``adjust`` governs the tests *and* the intervals of that family, so that an interval and its
adjusted test never tell different stories (issue 26: an unadjusted interval that excluded 0 stood
beside a Holm p of 0.65):

======== ============================== ==========================================================
adjust   p-values (the interval's test)  interval for r_A − r_B (jackknife-t)
======== ============================== ==========================================================
holm     Holm (1979), family-wise        Bonferroni level 1 − α/m, simultaneous for the m
                                         comparisons: an interval that excludes 0 is a difference
                                         Holm finds too (Holm rejects whatever Bonferroni does; it
                                         can reject more, and such a row says so)
bonferroni  Bonferroni                   the same 1 − α/m: interval and test agree
bh       Benjamini-Hochberg (1995), FDR  FCR-adjusted level 1 − R·α/m, R = the number BH rejects
                                         (Benjamini & Yekutieli 2005)
none     raw                             1 − α, each comparison on its own (not simultaneous)
======== ============================== ==========================================================

The planner plans for the same family: the dialogues needed for 80% power of the difference test at the
family's level α/m (with Holm this is a lower bound of the power; the comparison with the smallest
p-value is tested at exactly α/m).

>>> family = declare(["jga", "m2", "fga_0.25", "fga_0.5", "fga_1", "sa"])
>>> family.pairs
(('m2', 'jga'), ('fga_0.5', 'jga'), ('sa', 'jga'))
>>> family.size, round(family.test_alpha, 4), round(family.interval_confidence(), 4)
(3, 0.0167, 0.9833)
>>> print(family)
each metric against jga (FGA at λ 0.5), 3 comparisons; p: Holm; intervals: 98.3% (Bonferroni, simultaneous)
>>> from metrics.registry import METRICS
>>> keys = [m.key(lam) for m in METRICS for lam in (("0.25", "0.5", "0.75", "1") if m.takes_lambda else (None,))]
>>> declare(keys).size == DEFAULT_FAMILY_SIZE, declare(keys, kind="all").size
(True, 45)
>>> all_pairs = declare(["jga", "m2", "fga_0.5"], kind="all", adjust="none")
>>> all_pairs.pairs, all_pairs.interval_confidence()
((('jga', 'm2'), ('jga', 'fga_0.5'), ('m2', 'fga_0.5')), 0.95)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from metrics.registry import FGA, JGA, split_key

FAMILIES = ("reference", "all")
ADJUSTMENTS = ("holm", "bonferroni", "bh", "none")
ADJUSTMENT_NAMES = {"holm": "Holm", "bonferroni": "Bonferroni", "bh": "Benjamini-Hochberg", "none": "none"}
DEFAULT_FGA_LAMBDA = 0.5
DEFAULT_FAMILY_SIZE = 6  # the default family: m2, fga_0.5, sa, aga, rsa, f1 against jga (a doctest checks it)


@dataclass(frozen=True)
class Family:
    """The declared comparisons (``pairs``: (A, B), the difference is r_A − r_B) and their adjustment."""

    kind: str
    pairs: tuple[tuple[str, str], ...]
    adjust: str = "holm"
    reference: str | None = None
    fga: str | None = None  # the FGA key in a reference family (fga_0.5)
    alpha: float = 0.05

    @property
    def size(self) -> int:
        return len(self.pairs)

    @property
    def test_alpha(self) -> float:
        """The level one comparison is planned at: α/m for every adjustment but ``none``."""
        return self.alpha if self.adjust == "none" else self.alpha / max(self.size, 1)

    def interval_confidence(self, rejected: int = 0, tested: int | None = None) -> float:
        """The level of each difference's interval (see the module's table); ``rejected`` is the
        number of comparisons Benjamini-Hochberg rejects (for ``bh`` only); ``tested`` the comparisons
        the p-values were adjusted over (a declared one that cannot be tested, a constant metric's,
        does not count; default: all declared)."""
        m = max(self.size if tested is None else tested, 1)
        if self.adjust == "none":
            return 1 - self.alpha
        if self.adjust == "bh":
            return 1 - self.alpha * max(rejected, 1) / m
        return 1 - self.alpha / m

    def interval_method(self, rejected: int = 0, tested: int | None = None) -> str:
        level = f"{100 * self.interval_confidence(rejected, tested):.3g}%"
        return {
            "holm": f"{level} (Bonferroni, simultaneous)",
            "bonferroni": f"{level} (Bonferroni, simultaneous)",
            "bh": f"{level} (FCR-adjusted, Benjamini-Yekutieli)",
            "none": f"{level} (unadjusted, each on its own)",
        }[self.adjust]

    @property
    def key(self) -> str:
        """The family in the signature: ``reference(jga,fga_0.5)`` or ``all``."""
        if self.kind == "all":
            return "all"
        return f"reference({self.reference}{',' + self.fga if self.fga else ''})"

    def describe(self, rejected: int = 0, tested: int | None = None) -> str:
        if self.kind == "all":
            head = f"every pair of metrics, {self.size} comparisons"
        else:
            lam = f" (FGA at λ {self.fga.split('_', 1)[1]})" if self.fga else ""
            head = f"each metric against {self.reference}{lam}, {self.size} comparisons"
        if tested is not None and tested != self.size:
            head += f" ({tested} tested)"
        return f"{head}; p: {ADJUSTMENT_NAMES[self.adjust]}; intervals: {self.interval_method(rejected, tested)}"

    def __str__(self) -> str:
        return self.describe()


def _fga_key(names: Sequence[str], fga_lambda: float) -> str | None:
    """The FGA metric of the family: at ``fga_lambda`` if measured, else the measured λ nearest to it."""
    measured = [(float(lam), name) for name in names for metric, lam in [split_key(name)] if metric is FGA and lam]
    if not measured:
        return None
    return min(measured, key=lambda pair: (abs(pair[0] - fga_lambda), pair[0]))[1]


def declare(
    names: Sequence[str],
    *,
    kind: str = "reference",
    reference: str = JGA.name,
    fga_lambda: float = DEFAULT_FGA_LAMBDA,
    adjust: str = "holm",
    alpha: float = 0.05,
) -> Family:
    """The family of comparisons among ``names`` (metric keys, in table order).  A ``reference``
    family whose reference metric was not measured falls back to ``all`` pairs: there is nothing
    else to compare against (the family says so)."""
    if kind not in FAMILIES:
        raise ValueError(f"--family must be one of {', '.join(FAMILIES)}, got {kind!r}")
    if adjust not in ADJUSTMENTS:
        raise ValueError(f"--adjust must be one of {', '.join(ADJUSTMENTS)}, got {adjust!r}")
    names = list(names)
    if kind == "reference" and reference in names:
        fga = _fga_key(names, fga_lambda)
        others = [n for n in names if n != reference and (split_key(n)[0] is not FGA or n == fga)]
        return Family("reference", tuple((n, reference) for n in others), adjust, reference, fga, alpha)
    pairs = tuple((a, b) for i, a in enumerate(names) for b in names[i + 1 :])
    return Family("all", pairs, adjust, alpha=alpha)
