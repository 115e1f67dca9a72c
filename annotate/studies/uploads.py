"""Uploaded files into a folder the readers can read: loose files and zip archives of folders.

Limits: the whole upload and every archive's unpacked size stay under ``DST_JUDGE_MAX_UPLOAD_MB``
(default 200); names are reduced to their last part and may not be hidden (``.x``); archive members
may not leave the archive (absolute paths, ``..``).  Every refusal is a ReaderError naming the
uploaded file as the admin knows it.

Memory: an archive is unpacked member by member, ``CHUNK`` bytes at a time, straight to disk; the
sizes its headers declare are checked first, and the bytes that really come out are counted as they
come (a member may not inflate past its declared size, nor the archive past the limit).  A "zip bomb"
whose headers claim 100 bytes for a member that inflates to 1 GB is refused having taken no more than
the upload and one chunk (``tests/store/test_upload_limits.py``).  Python's ``ZipFile.read`` would
inflate the whole member in one call first (up to 2 GB) and only then cut it to the declared size.
"""

from __future__ import annotations

import io
import os
import shutil
import tempfile
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

from formats import ReaderError
from formats.settings import settings

MAX_UPLOAD_MB = settings().max_upload_mb
LOOSE_FOLDER = "uploaded"  # the system name of loose FGA text files uploaded with no system name given


def safe_name(name: str) -> str:
    base = PurePosixPath(name.replace("\\", "/")).name
    if not base or base in (".", "..") or base.startswith("."):
        raise ReaderError(name, "", "not an acceptable file name")
    return base


def _check_size(name: str, size: int, what: str) -> None:
    if size > MAX_UPLOAD_MB * 1e6:
        raise ReaderError(name, "", f"{what} {size / 1e6:.1f} MB, over the {MAX_UPLOAD_MB:.0f} MB limit")


def _members(name: str, archive: zipfile.ZipFile) -> Iterator[tuple[zipfile.ZipInfo, PurePosixPath]]:
    """The archive's files (no folders, no hidden files), each checked to stay inside the archive."""
    for info in archive.infolist():
        inner = PurePosixPath(info.filename)
        if info.is_dir() or inner.name.startswith("."):
            continue
        if inner.is_absolute() or ".." in inner.parts:
            raise ReaderError(name, info.filename, "a path that leaves the archive")
        yield info, inner


CHUNK = 1 << 20  # bytes inflated per read


def unzip(name: str, data: bytes, target: Path) -> Path:
    """A zip archive unpacked under ``target`` (its folders kept), streamed member by member."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            _check_size(name, sum(info.file_size for info in archive.infolist()), "unpacks to")
            total = 0
            for info, inner in _members(name, archive):
                destination = target.joinpath(*inner.parts)
                destination.parent.mkdir(parents=True, exist_ok=True)
                try:
                    with archive.open(info) as source, destination.open("wb") as sink:
                        written = 0
                        while chunk := source.read(CHUNK):
                            written += len(chunk)
                            total += len(chunk)
                            if written > info.file_size:
                                raise ReaderError(name, info.filename, f"inflates past its declared {info.file_size} bytes")
                            _check_size(name, total, "unpacks to more than")
                            sink.write(chunk)
                except zipfile.BadZipFile as err:  # zipfile stops at the declared size; the CRC then differs
                    raise ReaderError(name, info.filename, f"damaged: its data does not match its header ({err})") from None
                except (EOFError, zlib.error, NotImplementedError) as err:
                    raise ReaderError(name, info.filename, f"a member that cannot be unpacked ({err})") from None
    except zipfile.BadZipFile:
        raise ReaderError(name, "", "not a readable zip archive") from None
    return target


def unpack(files: list[tuple[str, bytes]], folder: Path) -> list[Path]:
    """Write uploads into ``folder``: a .zip is unpacked into a folder of its name; loose files go
    into ``uploaded/`` (an FGA text file's system is its folder)."""
    _check_size("upload", sum(len(data) for _, data in files), "uploaded")
    paths = []
    for name, data in files:
        safe = safe_name(name)
        if safe.endswith(".zip"):
            paths.append(unzip(name, data, folder / safe[:-4]))
        else:
            (folder / LOOSE_FOLDER).mkdir(exist_ok=True)
            (folder / LOOSE_FOLDER / safe).write_bytes(data)
            paths.append(folder / LOOSE_FOLDER / safe)
    return paths


@contextmanager
def unpacked(files: list[tuple[str, bytes]]) -> Iterator[list[Path]]:
    """The uploads unpacked in a temporary folder (removed afterwards); a ReaderError raised inside
    names the uploaded file, not the temporary folder."""
    folder = Path(tempfile.mkdtemp(prefix="dst-judge-upload-"))
    try:
        yield unpack(files, folder)
    except ReaderError as err:
        shown = str(err.path).replace(str(folder / LOOSE_FOLDER) + os.sep, "").replace(str(folder) + os.sep, "")
        raise ReaderError(shown, err.place, err.message) from None
    finally:
        shutil.rmtree(folder, ignore_errors=True)
