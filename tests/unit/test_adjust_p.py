"""p-values adjusted over a family (``metrics.correlation.adjust_p``): the same numbers as statsmodels'
``multipletests``, without the full garbage collection its Holm branch runs on every call (0.3 s per call
in a test process, more in a server holding many objects: paid by every analysis)."""

from __future__ import annotations

import gc

import numpy as np
import pytest

from metrics.correlation import adjust_p


def test_holm_runs_no_garbage_collection():
    collections = []

    def seen(phase, info):
        if phase == "start" and info["generation"] == 2:
            collections.append(info)

    gc.callbacks.append(seen)
    try:
        adjust_p([0.01, 0.04, 0.03, 0.2, 0.5, 0.011], "holm")
    finally:
        gc.callbacks.remove(seen)
    assert collections == []


@pytest.mark.parametrize("method, name", [("holm", "holm"), ("bonferroni", "bonferroni"), ("bh", "fdr_bh")])
def test_the_same_numbers_as_statsmodels(method, name):
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(5)
    for size in (1, 2, 3, 6, 10, 45):
        for _ in range(2):  # statsmodels runs gc.collect on each holm call: few calls
            p = rng.uniform(size=size) ** rng.uniform(0.5, 4)
            if size > 2:
                p[1] = p[0]  # ties
            assert adjust_p(list(p), method) == pytest.approx(list(multipletests(p, method=name)[1]), abs=1e-15)
    assert adjust_p([], method) == []
    assert adjust_p([0.3], "none") is None
