"""An ``.eval`` log (a zip) checked before anything of it is decompressed, so a hostile file costs little.

inspect decompresses each member whole, trusting the compressed stream rather than the size the
archive declares: a 1.3 MB file holding one deflated member of 1.2 GB took ``cc score`` to 3.8 GB of
memory. :func:`check_eval_zip` reads only the central directory to refuse what no log looks like (a
member larger than :data:`MAX_MEMBER`, members that would decompress to more than :data:`MAX_RATIO`
times the file's size beyond :data:`FLOOR`, compression other than stored, deflate or zstd, encryption),
then inflates every member in bounded chunks and refuses one that grows past its declared size. After
it, reading the file with Python's ``zipfile`` (whose view of the archive it shares) is bounded by the
declared sizes just checked.
"""

from __future__ import annotations

import struct
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from ...errors import InputError

#: The largest member a log may hold, decompressed (a ``consistency/...`` sample is tens of kilobytes).
MAX_MEMBER = 64 * 2**20
#: Decompressed bytes a log may hold per byte of file, beyond :data:`FLOOR`: inspect's logs hold 6 to
#: 30 times their size (JSON compressed by zstd); a zip bomb holds a thousand.
MAX_RATIO = 100
FLOOR = 8 * 2**20
_CHUNK = 1 << 16
_ZSTD = 93
_METHODS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflate", _ZSTD: "zstd"}
_LOCAL_HEADER = struct.Struct("<4s5H3I2H")  # signature ... name length, extra length (30 bytes)


class UnsafeLog(InputError):
    """A log file refused before decompression; the message is one sentence saying why."""


def check_eval_zip(path: Path) -> None:
    """Refuse ``path`` unless every member is a plausible size and inflates to exactly what it declares."""
    size = path.stat().st_size
    try:
        with zipfile.ZipFile(path) as archive:
            members = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError) as exc:
        raise UnsafeLog(f"not a readable .eval archive ({exc})") from None
    total = 0
    for info in members:
        if info.flag_bits & 0x1:
            raise UnsafeLog(f"member {info.filename!r} is encrypted")
        if info.compress_type not in _METHODS:
            method = info.compress_type
            raise UnsafeLog(f"member {info.filename!r} uses compression method {method}, not one inspect writes")
        if info.file_size > MAX_MEMBER:
            raise UnsafeLog(
                f"member {info.filename!r} would decompress to {info.file_size:,} bytes "
                f"(at most {MAX_MEMBER:,} are read from a log)"
            )
        total += info.file_size
    budget = max(FLOOR, MAX_RATIO * size)
    if total > budget:
        raise UnsafeLog(
            f"its members would decompress to {total:,} bytes, {total / max(size, 1):,.0f} times the file's "
            f"{size:,} (a log holds at most {MAX_RATIO} times its size)"
        )
    with path.open("rb") as fh:
        for info in members:
            produced = sum(len(chunk) for chunk in _inflate(fh, info))
            if produced > info.file_size:
                raise UnsafeLog(
                    f"member {info.filename!r} inflates past the {info.file_size:,} bytes it declares "
                    f"(stopped at {produced:,})"
                )
            if produced < info.file_size:
                raise UnsafeLog(f"member {info.filename!r} is truncated ({produced:,} of {info.file_size:,} bytes)")


def _inflate(fh: BinaryIO, info: zipfile.ZipInfo) -> Iterator[bytes]:
    """The member's decompressed bytes in chunks of at most 64 KiB, stopping one chunk past its declared size."""
    fh.seek(info.header_offset)
    header = fh.read(_LOCAL_HEADER.size)
    if len(header) < _LOCAL_HEADER.size or header[:4] != b"PK\x03\x04":
        raise UnsafeLog(f"member {info.filename!r} has no local header where the directory points")
    name_length, extra_length = _LOCAL_HEADER.unpack(header)[-2:]
    fh.seek(info.header_offset + _LOCAL_HEADER.size + name_length + extra_length)
    raw = _Slice(fh, info.compress_size)
    limit = info.file_size
    produced = 0
    try:
        for chunk in _decoded(raw, info.compress_type):
            produced += len(chunk)
            yield chunk
            if produced > limit:
                return  # grown past its declared size: the caller refuses it
    except (zlib.error, ValueError, OSError) as exc:
        raise UnsafeLog(f"member {info.filename!r} is corrupt ({exc})") from None
    except Exception as exc:  # zstandard.ZstdError (imported only when a member needs it)
        if type(exc).__name__ != "ZstdError":
            raise
        raise UnsafeLog(f"member {info.filename!r} is corrupt ({exc})") from None


def _decoded(raw: _Slice, method: int) -> Iterator[bytes]:
    if method == zipfile.ZIP_STORED:
        yield from iter(lambda: raw.read(_CHUNK), b"")
    elif method == zipfile.ZIP_DEFLATED:
        inflater = zlib.decompressobj(-15)
        for data in iter(lambda: raw.read(_CHUNK), b""):
            while data:
                yield inflater.decompress(data, _CHUNK)
                data = inflater.unconsumed_tail
        yield inflater.flush()
    else:
        import zstandard  # inspect's own dependency: it writes zstd members

        reader = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)
        yield from iter(lambda: reader.read(_CHUNK), b"")


class _Slice:
    """``length`` bytes of ``fh`` from where it stands, as a file for the zstd reader."""

    def __init__(self, fh: BinaryIO, length: int) -> None:
        self.fh, self.left = fh, length

    def read(self, n: int = -1) -> bytes:
        n = self.left if n is None or n < 0 else min(n, self.left)
        data = self.fh.read(n)
        self.left -= len(data)
        return data
