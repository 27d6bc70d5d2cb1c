"""Hostile ``.eval`` files cost ``cc score`` little: refused from the archive's directory, or while inflating
in bounded chunks, before inspect decompresses anything whole.

The files are built here from a real log (``cc export inspect`` of bundled forecasts) by appending one
member; a member of hundreds of megabytes of zeros deflates to a few hundred kilobytes, so nothing big
is written or committed. Memory is measured with tracemalloc (Python's allocations, decompressed bytes
included), never time.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
import tracemalloc
import zipfile
import zlib
from pathlib import Path

import pytest

from tests.support.inspect_support import CC, require_inspect

require_inspect()

from consistency.integrations.inspect.logs import InspectLogError, export_run, score_log  # noqa: E402
from consistency.integrations.inspect.logzip import FLOOR, MAX_MEMBER  # noqa: E402

SAMPLE = Path(__file__).resolve().parents[2] / "consistency" / "datasets" / "sample" / "forecasts"
MiB = 1 << 20


@pytest.fixture(scope="module")
def honest_log(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("honest")
    run = tmp / "run"
    run.mkdir()
    shutil.copy(SAMPLE / "NegChecker.jsonl", run)
    target = tmp / "honest.eval"
    export_run(run, target)
    return target


def deflated_zeros(mib: int) -> tuple[bytes, int]:
    """A raw deflate stream of ``mib`` MiB of zeros, built without compressing them all, and its CRC-32.

    After a full flush the compressor starts afresh, so every further MiB compresses to the same bytes."""
    block = bytes(MiB)
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
    first = deflate.compress(block) + deflate.flush(zlib.Z_FULL_FLUSH)
    again = deflate.compress(block) + deflate.flush(zlib.Z_FULL_FLUSH)
    assert deflate.compress(block) + deflate.flush(zlib.Z_FULL_FLUSH) == again
    crc = 0
    for _ in range(mib):
        crc = zlib.crc32(block, crc)
    return first + again * (mib - 1) + deflate.flush(), crc


def append_member(path: Path, name: str, data: bytes, crc: int, size: int) -> None:
    """Append a deflated member to the zip at ``path``, declaring ``size`` decompressed bytes."""
    blob = path.read_bytes()
    with zipfile.ZipFile(path) as archive:
        start, count = archive.start_dir, len(archive.infolist())
    end = blob.rfind(b"PK\x05\x06")
    raw_name = name.encode()
    local = struct.pack("<4s5H3I2H", b"PK\x03\x04", 20, 0, 8, 0, 0, crc, len(data), size, len(raw_name), 0)
    central = struct.pack(
        "<4s6H3I5H2I", b"PK\x01\x02", 20, 20, 0, 8, 0, 0, crc, len(data), size, len(raw_name), 0, 0, 0, 0, 0, start
    )
    directory = blob[start:end] + central + raw_name
    where = start + len(local) + len(raw_name) + len(data)
    eocd = struct.pack("<4s4H2IH", b"PK\x05\x06", 0, 0, count + 1, count + 1, len(directory), where, 0)
    path.write_bytes(blob[:start] + local + raw_name + data + directory + eocd)


def hostile(honest: Path, tmp: Path, mib: int, declared: int | None = None, members: int = 1) -> Path:
    path = tmp / "hostile.eval"
    shutil.copy(honest, path)
    data, crc = deflated_zeros(mib)
    for i in range(members):
        append_member(path, f"samples/NegChecker:{900 + i}_epoch_1.json", data, crc, declared or mib * MiB)
    return path


def refused_cheaply(path: Path, tmp: Path, reason: str) -> None:
    tracemalloc.start()
    try:
        with pytest.raises(InspectLogError, match=reason) as caught:
            score_log(path, tmp / "scored")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert str(path) in str(caught.value) and "refused before reading it" in str(caught.value)
    assert peak < 8 * MiB, f"refusing it allocated {peak / MiB:.0f} MiB"
    assert not (tmp / "scored").exists()


def test_the_honest_log_scores(honest_log, tmp_path):
    report = score_log(honest_log, tmp_path / "scored")
    assert report.files and (tmp_path / "scored" / "summary.json").is_file()


def test_a_member_declaring_hundreds_of_megabytes_is_refused_from_the_directory(honest_log, tmp_path):
    path = hostile(honest_log, tmp_path, mib=4 * MAX_MEMBER // MiB)
    assert path.stat().st_size < 2 * MiB
    refused_cheaply(path, tmp_path, r"would decompress to 268,435,456 bytes \(at most 67,108,864")


def test_a_member_that_inflates_past_its_declared_size_is_stopped_while_inflating(honest_log, tmp_path):
    path = hostile(honest_log, tmp_path, mib=256, declared=1000)  # the directory says 1000 bytes
    refused_cheaply(path, tmp_path, r"inflates past the 1,000 bytes it declares \(stopped at 65,536\)")


def test_many_members_of_plausible_size_are_refused_by_the_ratio(honest_log, tmp_path):
    path = hostile(honest_log, tmp_path, mib=FLOOR // MiB, members=3)  # each under the member cap
    refused_cheaply(path, tmp_path, "times the file's")


def test_cc_score_says_why_in_one_sentence(honest_log, tmp_path):
    path = hostile(honest_log, tmp_path, mib=4 * MAX_MEMBER // MiB)
    result = subprocess.run(
        [str(CC), "score", str(path), "-o", str(tmp_path / "out")], capture_output=True, text=True, timeout=300
    )
    assert result.returncode != 0
    said = " ".join(result.stderr.split())  # the console wraps long lines
    assert f"{path}: refused before reading it: member 'samples/NegChecker:900_epoch_1.json' would" in said
    assert "would decompress to 268,435,456 bytes" in said and "Traceback" not in said
