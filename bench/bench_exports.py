"""Benchmark: a satisfaction study's exports with the analysis computed once vs once per export.

    python -m bench.bench_exports [--json]

The demo satisfaction study (10 dialogues) with 3 annotators' votes, on SQLite.  "per export"
clears the shared analysis cache before every export, which is what every export cost before the
cache (each redid agreement, correlation and λ calibration with their bootstraps); "shared" runs
the same exports in a row on one cache, as the app does for the page, the exports and the
report (annotate.analysis.analysis_jobs.study_analysis).  Default settings: 1,000 bootstrap resamples, 5 folds,
a 501-point λ grid.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

FORMATS = ("majority-csv", "agreement-csv", "correlation-csv", "calibration-json", "report-html", "report-md")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="dst-bench-exports-"))
    os.environ.setdefault("DST_JUDGE_BCRYPT_ROUNDS", "4")

    from annotate import service
    from annotate.analysis.reports import clear_cache
    from annotate.people.sessions import log_in
    from annotate.store.db import get_engine
    from annotate.studies.demo import ensure_demo

    engine = get_engine(f"sqlite:///{work / 'bench.sqlite'}")
    ensure_demo(engine, announce=False)
    study = next(s for s in service.list_studies(engine) if s.kind == "satisfaction")
    for n in (1, 2, 3):
        user, _ = log_in(engine, f"ann{n}", f"demo-ann{n}-pw")
        while (item := service.next_item(engine, user, study.id)) is not None:
            service.submit(engine, user, item.id, {"satisfied": "1" if n == 3 or len(item.key) % 2 else "0"})
    admin, _ = log_in(engine, "admin", "demo-admin-pw")

    per_export = {}
    for fmt in FORMATS:
        clear_cache(engine)
        start = time.perf_counter()
        service.export(engine, admin, study.id, fmt)
        per_export[fmt] = time.perf_counter() - start
    clear_cache(engine)
    shared = {}
    for fmt in FORMATS:
        start = time.perf_counter()
        service.export(engine, admin, study.id, fmt)
        shared[fmt] = time.perf_counter() - start
    result = {
        "dialogues": study.items,
        "votes": 30,
        "formats": list(FORMATS),
        "per_export_s": {k: round(v, 3) for k, v in per_export.items()},
        "shared_s": {k: round(v, 3) for k, v in shared.items()},
        "per_export_total_s": round(sum(per_export.values()), 3),
        "shared_total_s": round(sum(shared.values()), 3),
        "speedup": round(sum(per_export.values()) / sum(shared.values()), 1),
    }
    if args.json:
        print(json.dumps(result, indent=1))
        return
    print(f"{'format':<18}{'per export (s)':>16}{'shared cache (s)':>18}")
    for fmt in FORMATS:
        print(f"{fmt:<18}{per_export[fmt]:>16.3f}{shared[fmt]:>18.3f}")
    print(f"{'total':<18}{result['per_export_total_s']:>16.3f}{result['shared_total_s']:>18.3f}   x{result['speedup']} faster")


if __name__ == "__main__":
    main()
