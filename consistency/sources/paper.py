"""The consistency-checks paper's published dataset (``dpaleka/ccflmf`` on Hugging Face), by name.

``paper:NAME`` (names in :data:`NAMES`: tuple sets and question sets) or an ``hf://`` path
(``hf://datasets/OWNER/REPO[@REVISION]/PATH``) becomes a local path: from ``CC_PAPER_DATA`` when
it names a directory in the dataset's layout (``src/data/...``), else through ``huggingface_hub``,
which downloads the files once into its cache and reads them from there when offline. Anything
else is an ordinary path and is returned as it is.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import InputError
from ..extras import install_hint

REPO_ID = "dpaleka/ccflmf"
LOCAL_VARIABLE = "CC_PAPER_DATA"

_NEWS = "src/data/fq/synthetic/news_api_generated_fqs"
#: Short names → paths inside the dataset repository.
NAMES = {
    "tuples_2028": "src/data/tuples/2028",
    "tuples_scraped": "src/data/tuples/scraped",
    "tuples_newsapi": "src/data/tuples/newsapi",
    "scraped_verified_2024": "src/data/fq/real/20240501_20240815.jsonl",
    "scraped_resolved_2024": "src/data/fq/real/20240501_20240815_resolved.jsonl",
    "scraped_unverified_2024": "src/data/fq/real/20240501_20240815_unverified.jsonl",
    "synthetic_news_2024": f"{_NEWS}/20240701_20240831.jsonl",
    "synthetic_news_spanned_2024": f"{_NEWS}/20240701_20240831_gpt-4o_spanned_resolved.jsonl",
    "synthetic_2028": "src/data/fq/synthetic/questions_resolving_2028.jsonl",
}


class DatasetRefError(InputError):
    """A dataset reference that cannot be turned into files (one sentence saying why)."""


def is_reference(ref: str | Path) -> bool:
    text = str(ref)
    return text.startswith(("paper:", "hf:/"))


def parse_hf(ref: str) -> tuple[str, str | None, str]:
    """``hf://datasets/OWNER/REPO[@REV]/PATH`` → (repo id, revision, path)."""
    text = ref.removeprefix("hf://").removeprefix("hf:/")  # a Path collapses the double slash
    parts = text.split("/")
    if len(parts) < 4 or parts[0] != "datasets":
        raise DatasetRefError(f"{ref}: expected hf://datasets/OWNER/REPO[@REVISION]/PATH")
    name, _, revision = parts[2].partition("@")
    return f"{parts[1]}/{name}", revision or None, "/".join(p for p in parts[3:] if p)


def dataset_path(ref: str | Path | None) -> Path | None:
    """The local file or directory a reference names (downloading it first if need be)."""
    if ref is None or not is_reference(ref):
        return None if ref is None else Path(ref)
    text = str(ref)
    if text.startswith("paper:"):
        name = text.removeprefix("paper:")
        if name not in NAMES:
            raise DatasetRefError(f"unknown dataset {name!r}; the paper's are: {', '.join(NAMES)}")
        repo, revision, inner = REPO_ID, None, NAMES[name]
        local = os.environ.get(LOCAL_VARIABLE)
        if local:
            path = Path(local) / inner
            if not path.exists():
                raise DatasetRefError(f"{path}: not found ({LOCAL_VARIABLE} must hold the dataset's src/data layout)")
            return path
    else:
        repo, revision, inner = parse_hf(text)
    return _from_hub(repo, revision, inner)


def _from_hub(repo: str, revision: str | None, inner: str) -> Path:
    try:
        from huggingface_hub import snapshot_download
        from huggingface_hub.errors import LocalEntryNotFoundError
    except ImportError:
        raise DatasetRefError(f"reading the paper's dataset needs huggingface_hub: {install_hint('hf')}") from None
    pattern = inner if inner.endswith(".jsonl") else f"{inner.rstrip('/')}/*"
    kwargs = {"repo_type": "dataset", "revision": revision, "allow_patterns": [pattern]}
    try:  # the cache first, so a second run needs no network
        root = Path(snapshot_download(repo, local_files_only=True, **kwargs))
        if not (root / inner).exists():
            raise LocalEntryNotFoundError("not cached")
    except LocalEntryNotFoundError:
        try:
            root = Path(snapshot_download(repo, **kwargs))
        except Exception as exc:
            raise DatasetRefError(
                f"{repo}/{inner} is not in the Hugging Face cache and could not be downloaded "
                f"({type(exc).__name__}); connect once, or set {LOCAL_VARIABLE} to a local copy"
            ) from None
    path = root / inner
    if not path.exists():
        raise DatasetRefError(f"{repo} has no {inner}")
    return path
