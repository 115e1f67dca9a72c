"""The demo that ships inside the package: its sample files are documented with source and licence, and
the demo accounts' shipped password hashes are the published passwords' (annotate.studies.demo)."""

from __future__ import annotations

import bcrypt

from annotate.studies.demo import DEMO_ACCOUNTS, DEMO_HASHES
from formats import load_dialogues
from formats.settings import PACKAGE_SAMPLE_DATA


def test_the_shipped_hashes_are_the_published_passwords_at_the_default_cost():
    assert set(DEMO_HASHES) == {name for name, _, _ in DEMO_ACCOUNTS}
    for name, password, _ in DEMO_ACCOUNTS:
        assert DEMO_HASHES[name].startswith("$2b$12$")
        assert bcrypt.checkpw(password.encode(), DEMO_HASHES[name].encode()), name


def test_every_sample_folder_is_documented_and_reads():
    readme = (PACKAGE_SAMPLE_DATA / "README.md").read_text()
    for part in (
        "fga_human_eval/",
        "dst_evaluation_guideline.txt",
        "fga_result_json/",
        "coco/test_dials.json",
        "coco/coco_eval.json",
        "dstc2/",
    ):
        assert part in readme, part
    assert readme.count("| MIT") >= 3 and "licence" in readme
    assert (PACKAGE_SAMPLE_DATA / "fga_human_eval" / "LICENSE").read_text().startswith("MIT License")
    fga = load_dialogues([PACKAGE_SAMPLE_DATA / "fga_human_eval"])
    as_json = load_dialogues([PACKAGE_SAMPLE_DATA / "fga_result_json"])
    assert len(fga) == len(as_json) == 6
    assert {d.id for d in fga} == {d.id for d in as_json}
    calls = sorted(p.name for p in (PACKAGE_SAMPLE_DATA / "dstc2").iterdir())
    assert len(calls) == 3 and all((PACKAGE_SAMPLE_DATA / "dstc2" / c / "label.json").is_file() for c in calls)


def test_the_export_list_the_pages_show_names_no_command_line_flag():
    from exports.formats import FORMATS

    assert [f.name for f in FORMATS.values() if "--" in f.description] == []
