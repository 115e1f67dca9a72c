"""One app server's share of an analysis, in a process of its own (tests/store/test_shared_analysis.py):

    python -m tests.analysis_server URL STUDY_ID RESAMPLES [GO_FILE]

Opens the database at URL, announces ``ready`` on stdout, waits for GO_FILE to exist (so that several
servers ask at the same moment), asks for the study's analysis as the exports do
(``analysis_jobs.study_analysis``, the command line's admin) and prints one JSON line: where the result
came from (``analysis_cache.origin``: computed here, or read from what another server stored), the
SHA-256 of its pickle, and this process's id."""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import sys
import time
from pathlib import Path


def main() -> None:
    url, study_id, resamples = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    go = Path(sys.argv[4]) if len(sys.argv) > 4 else None
    from annotate import service
    from annotate.analysis import analysis_cache, analysis_jobs
    from annotate.store.db import get_engine
    from metrics.analysis import AnalysisSettings

    engine = get_engine(url)
    settings = AnalysisSettings(resamples=resamples, folds=0, grid=(0.0, 2.0, 5))
    print(json.dumps({"ready": os.getpid()}), flush=True)
    while go is not None and not go.exists():
        time.sleep(0.01)
    result = analysis_jobs.study_analysis(engine, service.CLI, study_id, settings)
    digest = hashlib.sha256(pickle.dumps(result, protocol=5)).hexdigest()
    print(json.dumps({"origin": analysis_cache.origin(result), "sha": digest, "pid": os.getpid()}), flush=True)


if __name__ == "__main__":
    main()
