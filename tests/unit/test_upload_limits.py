"""Uploads and input files bounded in memory, not only in bytes (issue 23).

A 195 MB ``[{},{},...]`` JSON took 4.5 GB before it was refused; a zip whose headers claim 100
bytes for a member that inflates to 1 GB took 2.0 GB.  The bounds stated (docs/security.md, threat model):
reading a JSON file takes its bytes and its text (twice its size for ASCII text) and a little more
before a document of too many values is refused, and unpacking an archive takes the upload and a
chunk or two (``annotate.studies.uploads.CHUNK``, 1 MB) whatever its members inflate to.
"""

from __future__ import annotations

import io
import struct
import tracemalloc
import zipfile

import pytest

from annotate.studies import build_items
from annotate.studies.uploads import unpacked
from formats import ReaderError, read_file

MB = 1 << 20


def peak_of(function):
    """(what ``function`` raised or returned, the peak of Python's allocations while it ran, in bytes)."""
    tracemalloc.start()
    try:
        try:
            outcome = function()
        except ReaderError as err:
            outcome = err
        return outcome, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def empty_objects(path, megabytes: int) -> int:
    """``[{},{},...]`` of about ``megabytes`` MB (the 195 MB attack, smaller); its size."""
    count = megabytes * MB // 3
    with path.open("w") as out:
        out.write("[")
        for _ in range(count // 100_000):
            out.write("{}," * 100_000)
        out.write("{}]")
    return path.stat().st_size


def test_many_empty_objects_are_refused_before_they_are_parsed(tmp_path):
    path = tmp_path / "PMUL4648.json"
    size = empty_objects(path, 24)  # 8.4 million objects: parsed, some 600 MB
    error, peak = peak_of(lambda: read_file(path))
    assert peak < 2 * size + 4 * MB, f"{peak / MB:.0f} MB for a {size / MB:.0f} MB file"
    assert isinstance(error, ReaderError)
    assert str(error).startswith(f"{path}: more than 5,000,000 JSON values")
    # the same through study creation (the satisfaction kind reads FGA JSON with its own reader)
    error, peak = peak_of(lambda: build_items("satisfaction", [path]))
    assert isinstance(error, ReaderError) and "more than 5,000,000 JSON values" in str(error)
    assert peak < 2 * size + 4 * MB


def test_the_json_limit_is_configurable_and_names_the_file(fixtures, monkeypatch):
    path = fixtures / "fga_result_json" / "som-dst_result.sample.json"
    assert read_file(path)  # the fixture reads (about 2,700 values)
    monkeypatch.setenv("DST_JUDGE_MAX_JSON_VALUES", "1000")
    with pytest.raises(ReaderError, match=r"som-dst_result.sample.json: more than 1,000 JSON values"):
        read_file(path)


def zip_bomb(inflated: int, claimed: int = 100) -> bytes:
    """A zip of one member that inflates to ``inflated`` bytes while its local and central headers
    claim ``claimed``."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        with archive.open("fga/PMUL4648.json.txt", "w", force_zip64=False) as member:
            block = b" " * MB
            for _ in range(inflated // MB):
                member.write(block)
    data = bytearray(buffer.getvalue())
    local, central = data.find(b"PK\x03\x04"), data.find(b"PK\x01\x02")
    assert struct.unpack_from("<I", data, local + 22)[0] == inflated  # uncompressed size, local header
    assert struct.unpack_from("<I", data, central + 24)[0] == inflated  # and in the central directory
    struct.pack_into("<I", data, local + 22, claimed)
    struct.pack_into("<I", data, central + 24, claimed)
    return bytes(data)


@pytest.mark.slow
def test_a_zip_bomb_with_a_lying_header_is_refused_in_bounded_memory():
    bomb = zip_bomb(400 * MB)  # over the 200 MB limit once inflated; its headers say 100 bytes
    assert len(bomb) < MB

    def unpack():
        with unpacked([("bomb.zip", bomb)]) as paths:
            return paths

    error, peak = peak_of(unpack)
    assert peak < len(bomb) + 4 * MB, f"{peak / MB:.0f} MB to refuse a {len(bomb) / MB:.1f} MB archive"
    assert isinstance(error, ReaderError)
    assert str(error).startswith("bomb.zip:fga/PMUL4648.json.txt: damaged: its data does not match its header")


def test_a_member_inflating_past_the_limit_within_its_declared_size_is_stopped(monkeypatch):
    """Headers that tell the truth about a size over the limit are refused before anything is
    inflated; the bytes coming out are counted too (a limit of 3 MB, a member of 8 MB claiming 2 MB)."""
    monkeypatch.setattr("annotate.studies.uploads.MAX_UPLOAD_MB", 3)
    honest = zip_bomb(8 * MB, claimed=8 * MB)
    with pytest.raises(ReaderError, match=r"^bomb.zip: unpacks to 8.4 MB, over the 3 MB limit"):
        with unpacked([("bomb.zip", honest)]):
            pass
    lying = zip_bomb(8 * MB, claimed=2 * MB)
    with pytest.raises(ReaderError, match=r"^bomb.zip:fga/PMUL4648.json.txt: damaged"):
        with unpacked([("bomb.zip", lying)]):
            pass


def test_a_normal_fixture_archive_still_imports(fixtures):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted((fixtures / "fga_human_eval").iterdir()):
            archive.write(path, f"fga_human_eval/{path.name}")
    data = buffer.getvalue()

    def build():
        with unpacked([("human.zip", data)]) as paths:
            return build_items("satisfaction", paths)

    drafts, peak = peak_of(build)
    assert not isinstance(drafts, ReaderError), drafts
    assert len(drafts) == 10 and drafts[0].questions == ["satisfied"]
    assert peak < 16 * MB
