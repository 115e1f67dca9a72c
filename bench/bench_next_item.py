"""Benchmark: server-side time from a judgement to the next item rendered, 1,000-item study.

    python -m bench.bench_next_item [--judgements 100] [--items 1000]

Drives the real app with Streamlit's AppTest (the whole script run, as the server does
it on a click) and, side by side, the same judgement without rendering (service calls
only), so the share of the page itself shows.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def percentile(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q / 100 * (len(values) - 1))))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--judgements", type=int, default=100)
    parser.add_argument("--items", type=int, default=1000)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="dst-bench-next-"))
    os.environ.update(
        {"DST_JUDGE_DB": f"sqlite:///{work / 'bench.sqlite'}", "DST_JUDGE_DEMO": "0", "DST_JUDGE_BCRYPT_ROUNDS": "4"}
    )

    from streamlit.testing.v1 import AppTest

    from annotate import service
    from annotate.people.auth import add_annotator
    from annotate.store.db import get_engine, write_session
    from annotate.studies import create_study
    from bench.corpus import build, dialogue_file

    corpus = work / "corpus.json"
    corpus.write_text(json.dumps(build(args.items)))
    engine = get_engine()
    with write_session(engine) as session:
        study = create_study(session, "bench", "satisfaction", [corpus, dialogue_file(corpus)], overlap=3)
        add_annotator(session, "page", "bench-password")
        other = add_annotator(session, "direct", "bench-password")

    app = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    app.text_input[0].input("page")
    app.text_input[1].input("bench-password")
    app.button[0].click().run()
    page_times = []
    for _ in range(args.judgements):
        start = time.perf_counter()
        next(b for b in app.button if (b.key or "").startswith("sat-1-")).click().run()  # keys carry the item id
        page_times.append(time.perf_counter() - start)
        assert not app.exception, app.exception
    direct_times = []
    for _ in range(args.judgements):
        start = time.perf_counter()
        item = service.next_item(engine, other, study.id)
        service.submit(engine, other, item.id, {"satisfied": "1"})
        direct_times.append(time.perf_counter() - start)
    print(f"study: {args.items} items (≈{args.items * 8} turns), SQLite; {args.judgements} judgements each")
    for label, times in (
        ("judgement -> next item rendered (AppTest run)", page_times),
        ("judgement + next item, no page", direct_times),
    ):
        print(f"  {label:<46} p50 {1e3 * statistics.median(times):7.1f} ms   p95 {1e3 * percentile(times, 95):7.1f} ms")
    print(f"  the page's share: x{statistics.median(page_times) / statistics.median(direct_times):.1f} of the store's time")


if __name__ == "__main__":
    main()
