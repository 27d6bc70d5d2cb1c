"""Finding ForecastBench's files: paths, folders, and ``fb:<due date>`` / ``fb:latest`` references.

A reference is resolved against a datasets folder: a local copy of ForecastBench's datasets
repository (its root or its ``datasets/`` folder), any folder with ``question_sets/`` and
``resolution_sets/`` in it, or a URL of such a folder (by default the repository's raw files on
GitHub). Downloads go through the project's polite web client and its page cache: a question set
never changes once published, so a cached copy is used as it is; ``latest-llm.json`` and the
resolution sets are rewritten as ForecastBench publishes, so they are fetched again (the cached
copy serves when the network does not, with a note saying so). ``offline`` uses the cache only.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .formats import ForecastBenchError, kind_of, load_document

#: ForecastBench's datasets on GitHub, as raw files (the folder holding question_sets/ and resolution_sets/).
DEFAULT_DATASETS = "https://raw.githubusercontent.com/forecastingresearch/forecastbench-datasets/main/datasets"
_REF = re.compile(r"^fb:(latest|\d{4}-\d{2}-\d{2})(-(llm|human))?$")
CLONE_HINT = "git clone https://github.com/forecastingresearch/forecastbench-datasets and give --datasets DIR"


@dataclass
class Document:
    file: str  # path or URL, for messages
    kind: str  # question_set, resolution_set or forecast_set
    doc: dict[str, Any]


@dataclass
class Gathered:
    documents: list[Document] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def of(self, kind: str) -> list[Document]:
        return [d for d in self.documents if d.kind == kind]


def _is_url(text: str) -> bool:
    return text.startswith(("http://", "https://"))


def _local_root(root: Path) -> Path:
    """The folder holding ``question_sets/`` in a clone of the datasets repository (or such a folder)."""
    for candidate in (root, root / "datasets"):
        if (candidate / "question_sets").is_dir():
            return candidate
    raise ForecastBenchError(f"{root}: no question_sets/ folder here or in datasets/ (is it ForecastBench's datasets?)")


class _Remote:
    """Files under a datasets URL, through the page cache (one event loop for the whole gathering)."""

    def __init__(self, base: str, offline: bool, refresh: bool, cache_root: Path | None) -> None:
        from ..paths import cache_dir
        from ..sources.http import HttpSettings, PageCache

        self.base = base.rstrip("/")
        self.cache = PageCache((cache_root or cache_dir() / "pages") / "forecastbench")
        # A missing network is no transient: three quick attempts, then a clear message.
        self.settings = HttpSettings(requests_per_minute=60, concurrency=2, timeout=60, max_attempts=3,
                                     max_backoff=2.0, offline=offline, refresh=refresh)  # fmt: skip

    def get(self, path: str, *, fresh: bool, required: bool, notes: list[str]) -> str | None:
        return asyncio.run(self._get(path, fresh, required, notes))

    async def _get(self, path: str, fresh: bool, required: bool, notes: list[str]) -> str | None:
        from ..sources.http import FatalHTTPError, FetchError, HttpSettings, WebClient

        url = f"{self.base}/{path}"
        settings = self.settings
        if fresh and not settings.offline:
            settings = HttpSettings(**{**settings.__dict__, "refresh": True})
        try:
            async with WebClient("forecastbench", settings, self.cache) as web:
                return await web.get_text(url)
        except FatalHTTPError as exc:
            if exc.status == 404 and not required:
                notes.append(f"{url}: not published (yet)")
                return None
            if settings.offline:
                raise ForecastBenchError(f"{url}: not in the cache and --offline was given; {CLONE_HINT}") from None
            raise ForecastBenchError(f"{url}: {exc.reason}") from None
        except FetchError as exc:
            cached = self.cache.get(url) if fresh else None
            if cached is not None:
                notes.append(f"{url}: {exc.reason}; using the cached copy")
                return cached
            raise ForecastBenchError(f"cannot fetch {url} ({exc.reason}); to work offline, {CLONE_HINT}") from None


class Locator:
    """Resolves sources to ForecastBench documents."""

    def __init__(
        self, datasets: str | Path | None = None, *, offline: bool = False, refresh: bool = False,
        cache_root: Path | None = None, resolutions: bool = True,
    ) -> None:  # fmt: skip
        self.datasets = str(datasets) if datasets is not None else DEFAULT_DATASETS
        self.offline, self.refresh, self.cache_root, self.resolutions = offline, refresh, cache_root, resolutions
        self._remote: _Remote | None = None
        self.found = Gathered()

    def gather(self, sources: list[str]) -> Gathered:
        for source in sources:
            if _REF.match(source):
                self._reference(source)
            elif _is_url(source):
                self._add(source, self._fetch_url(source))
            else:
                self._path(Path(source))
        self._beside_resolutions()
        return self.found

    # ------------------------------------------------------------------ local files and folders
    def _path(self, path: Path) -> None:
        if path.is_dir():
            subs = ("", "question_sets", "resolution_sets", "datasets/question_sets", "datasets/resolution_sets")
            files = [p for sub in subs for p in sorted((path / sub).glob("*.json"))]
            files = [p for p in files if not p.name.startswith("latest-")]
            if not files:
                raise ForecastBenchError(f"{path}: no ForecastBench JSON files in this folder")
            for file in files:
                self._add(str(file), load_document(file), skip_unknown=True)
        elif path.is_file():
            self._add(str(path), load_document(path))
        else:
            raise ForecastBenchError(f"{path}: no such file or folder (or give fb:latest / fb:YYYY-MM-DD)")

    def _add(self, file: str, doc: dict[str, Any], *, skip_unknown: bool = False) -> None:
        kind = kind_of(doc)
        if kind is None:
            if skip_unknown:
                self.found.notes.append(f"{file}: not a question, resolution or forecast set; skipped")
                return
            raise ForecastBenchError(f"{file}: not a ForecastBench question, resolution or forecast set")
        if any(d.file == file for d in self.found.documents):
            return
        self.found.documents.append(Document(file, kind, doc))

    def _beside_resolutions(self) -> None:
        """A local question set given alone: its resolution set where the datasets repository keeps it."""
        if not self.resolutions:
            self.found.documents = [d for d in self.found.documents if d.kind != "resolution_set"]
            return
        have = {d.doc.get("forecast_due_date") for d in self.found.of("resolution_set")}
        for d in self.found.of("question_set"):
            due = d.doc.get("forecast_due_date")
            if due in have or _is_url(d.file) or not isinstance(due, str):
                continue
            here = Path(d.file).parent
            for candidate in (
                here / f"{due}_resolution_set.json",
                here.parent / "resolution_sets" / f"{due}_resolution_set.json",
            ):
                if candidate.is_file():
                    self._add(str(candidate), load_document(candidate))
                    have.add(due)
                    break

    # ------------------------------------------------------------------ fb: references
    def _reference(self, ref: str) -> None:
        m = _REF.match(ref)
        assert m is not None
        which, audience = m.group(1), m.group(3) or "llm"
        if _is_url(self.datasets):
            self._remote_reference(which, audience)
            return
        root = _local_root(Path(self.datasets))
        folder = root / "question_sets"
        name = self._latest_local(folder, audience) if which == "latest" else f"{which}-{audience}.json"
        path = folder / name
        if not path.is_file():
            raise ForecastBenchError(f"{ref}: no {name} in {folder}")
        self._add(str(path), load_document(path))
        due = name[:10]
        resolution = root / "resolution_sets" / f"{due}_resolution_set.json"
        if self.resolutions and resolution.is_file():
            self._add(str(resolution), load_document(resolution))
        elif self.resolutions:
            self.found.notes.append(f"{ref}: no resolution set for {due} in {root / 'resolution_sets'} (yet)")

    @staticmethod
    def _latest_local(folder: Path, audience: str) -> str:
        pointer = folder / f"latest-{audience}.json"
        if pointer.is_file():
            return pointer.read_text(encoding="utf-8").strip()
        names = sorted(p.name for p in folder.glob(f"????-??-??-{audience}.json"))
        if not names:
            raise ForecastBenchError(f"{folder}: no {audience} question sets")
        return names[-1]

    def _remote_reference(self, which: str, audience: str) -> None:
        remote = self._remote_client()
        notes = self.found.notes
        if which == "latest":
            text = remote.get(f"question_sets/latest-{audience}.json", fresh=True, required=True, notes=notes)
            name = (text or "").strip()
            if not re.fullmatch(r"\d{4}-\d{2}-\d{2}-\w+\.json", name):
                raise ForecastBenchError(
                    f"{remote.base}/question_sets/latest-{audience}.json: expected a file name, got {name[:60]!r}"
                )
        else:
            name = f"{which}-{audience}.json"
        text = remote.get(f"question_sets/{name}", fresh=False, required=True, notes=notes)
        self._add(f"{remote.base}/question_sets/{name}", load_document(name, text))
        if self.resolutions:
            path = f"resolution_sets/{name[:10]}_resolution_set.json"
            text = remote.get(path, fresh=True, required=False, notes=notes)
            if text is not None:
                self._add(f"{remote.base}/{path}", load_document(path, text))

    def _fetch_url(self, url: str) -> dict[str, Any]:
        base, _, name = url.rpartition("/")
        remote = _Remote(base, self.offline, self.refresh, self.cache_root)
        fresh = "resolution_set" in name or name.startswith("latest-")
        text = remote.get(name, fresh=fresh, required=True, notes=self.found.notes)
        return load_document(url, text)

    def _remote_client(self) -> _Remote:
        if self._remote is None:
            self._remote = _Remote(self.datasets, self.offline, self.refresh, self.cache_root)
        return self._remote
