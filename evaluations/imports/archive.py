"""The bundle as an archive: size and digest of the upload, safe member names, members read within limits.

Errors are :class:`BundleInvalid` with a path naming the upload (``bundle``) or one member (``bundle:<name>``).
"""

from __future__ import annotations

import hashlib
import lzma
import os
import re
import struct
import zipfile
import zlib
from typing import IO

from django.conf import settings

from ..planning import RequestInvalid

__all__ = ["BundleInvalid", "CHUNK", "COMPRESSION_METHODS", "READ_ERRORS", "expansion_limit", "RESULT_FILENAME", "check_members", "clean_file_name", "fail", "measure",
           "read_head", "read_member", "unsafe_name"]

RESULT_FILENAME = "result.json"
CHUNK = 1024 * 1024
_DRIVE = re.compile(r"^[A-Za-z]:")
#: What zipfile raises for a malformed archive, opening it or reading a member: a bad CRC, a truncated or unsupported
#: entry, and offsets past either end. Which one depends on the file object: a seek before the start is an OSError on
#: a temporary file (a raw body) but a ValueError on an in-memory upload (a multipart one), and a member name
#: flagged UTF-8 that is not is a UnicodeDecodeError (a ValueError too).
READ_ERRORS = (zipfile.BadZipFile, zlib.error, lzma.LZMAError, struct.error, OSError, EOFError, NotImplementedError,
               RuntimeError, ValueError, OverflowError)
#: Compression methods a bundle may use: what ``rlmesh.Recorder.export()`` (Python's zipfile) writes. Others
#: (bzip2, LZMA, …) are refused before anything is decompressed.
COMPRESSION_METHODS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflated"}


class BundleInvalid(RequestInvalid):
    """A bundle that cannot be imported; ``errors`` is ``[{"path", "message"}]`` (paths: see the module doc)."""

    def __init__(self, errors: list[dict], *, code: str = "invalid_bundle", status: int = 400):
        super().__init__(errors, code=code, status=status)


def fail(path: str, message: str, **kwargs) -> BundleInvalid:
    return BundleInvalid([{"path": path, "message": message}], **kwargs)


def clean_file_name(value: str) -> str:
    base = os.path.basename(str(value).replace("\\", "/"))
    return "".join(ch for ch in base if ch.isprintable())[:200]


def measure(fileobj: IO[bytes], *, limit: int) -> tuple[int, str]:
    """Size in bytes and sha256 of the whole file (reading stops past ``limit``); rewinds it."""
    digest = hashlib.sha256()
    size = 0
    fileobj.seek(0)
    while chunk := fileobj.read(CHUNK):
        size += len(chunk)
        if size > limit:
            break
        digest.update(chunk)
    fileobj.seek(0)
    return size, digest.hexdigest()


def unsafe_name(name: str) -> str | None:
    """Why a member name could escape the bundle (absolute, a drive, backslashes, ``..``), or None."""
    if name.startswith("/") or _DRIVE.match(name):
        return "is an absolute path; members must be relative to the bundle"
    if "\\" in name:
        return "contains a backslash; members must use / separators"
    if ".." in name.split("/"):
        return "contains '..' (path traversal)"
    if any(not ch.isprintable() for ch in name):
        return "contains control characters"
    return None


#: Any bundle may uncompress to this many bytes, whatever its ratio (a small bundle's result.json compresses well).
MIN_EXPANSION_BYTES = 1024 * 1024


def expansion_limit(upload_size: int) -> int:
    """Bytes a bundle of ``upload_size`` bytes may uncompress to: ``RLMESH_IMPORT_MAX_EXPANSION`` times its size, at
    least ``MIN_EXPANSION_BYTES``, never more than ``RLMESH_IMPORT_MAX_BYTES``."""
    ratio_limit = max(int(upload_size * settings.RLMESH_IMPORT_MAX_EXPANSION), MIN_EXPANSION_BYTES)
    return min(settings.RLMESH_IMPORT_MAX_BYTES, ratio_limit)


def check_members(archive: zipfile.ZipFile, *, max_bytes: int) -> tuple[dict[str, zipfile.ZipInfo], str]:
    """The file members by name, and the bundle root ("" or "<folder>/"); BundleInvalid for an unsafe archive or one
    whose members uncompress (by their declared sizes, which bound what zipfile extracts) to more than ``max_bytes``."""
    infos = archive.infolist()
    max_members = settings.RLMESH_IMPORT_MAX_MEMBERS
    if len(infos) > max_members:
        raise fail("bundle", f"has {len(infos)} members; the limit is {max_members}")
    files: dict[str, zipfile.ZipInfo] = {}
    total = 0
    for info in infos:
        name = info.filename
        problem = unsafe_name(name)
        if problem:
            raise fail(f"bundle:{name}", problem)
        if info.flag_bits & 0x1:
            raise fail(f"bundle:{name}", "is encrypted; export the bundle without a password")
        if info.compress_type not in COMPRESSION_METHODS:
            raise fail(f"bundle:{name}", f"uses compression method {info.compress_type}; a bundle's members are stored "
                       "or deflated (as rlmesh.Recorder.export() writes them)")
        if info.is_dir():
            continue
        if name in files:
            raise fail(f"bundle:{name}", "appears twice in the archive")
        files[name] = info
        total += info.file_size
        if total > max_bytes:  # the sizes zipfile will extract to: a zip bomb stops here, before any read
            raise fail("bundle", f"uncompresses to more than {max_bytes} bytes (the limit for this upload: "
                       f"{settings.RLMESH_IMPORT_MAX_EXPANSION:g}x its size, at most RLMESH_IMPORT_MAX_BYTES)")
    if RESULT_FILENAME in files:
        return files, ""
    nested = [n for n in files if n.count("/") == 1 and n.endswith("/" + RESULT_FILENAME) and not n.startswith("__MACOSX/")]
    if len(nested) == 1:
        return files, nested[0][: -len(RESULT_FILENAME)]
    raise fail(f"bundle:{RESULT_FILENAME}", "is missing: a bundle has result.json at its top level (or in its one folder)")


def read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, *, limit: int) -> bytes:
    if info.file_size > limit:
        raise fail(f"bundle:{info.filename}", f"is {info.file_size} bytes; the limit is {limit}")
    try:
        with archive.open(info) as member:
            data = member.read(limit + 1)
    except READ_ERRORS as exc:
        raise fail(f"bundle:{info.filename}", f"cannot be read: {exc}") from None
    if len(data) > limit:
        raise fail(f"bundle:{info.filename}", f"is larger than {limit} bytes")
    return data


def read_head(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    try:
        with archive.open(info) as member:
            return member.read(16)
    except READ_ERRORS as exc:
        raise fail(f"bundle:{info.filename}", f"cannot be read: {exc}") from None

