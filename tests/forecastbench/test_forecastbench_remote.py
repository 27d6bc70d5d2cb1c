"""``fb:latest`` and ``fb:<date>`` against a datasets URL, over real HTTP: caching, refreshing, offline."""

from __future__ import annotations

import time
from datetime import date
from pathlib import Path

import pytest

from consistency.fake_openai.http_server import HTTPServer, Request, Response
from consistency.forecastbench import ForecastBenchError, load
from consistency.forecastbench.synthetic import Shape, make_round, write_round


class Datasets(HTTPServer):
    """A folder served under ``/datasets/`` like raw.githubusercontent.com serves the repository; ``faults``
    lists statuses served to the next requests before the real answers."""

    def __init__(self, root: Path) -> None:
        super().__init__()
        self.root, self.hits, self.faults = root, [], []
        self.route("GET", "/datasets/{rest:path}", self._serve)

    async def _serve(self, request: Request) -> Response:
        self.hits.append(request.params["rest"])
        if self.faults:
            return Response(self.faults.pop(0), b"busy", content_type="text/plain")
        path = self.root / request.params["rest"]
        if not path.is_file():
            return Response(404, b"404: Not Found", content_type="text/plain")
        return Response(200, path.read_bytes(), content_type="text/plain")

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/datasets"


@pytest.fixture
def site(tmp_path):
    root = tmp_path / "site"
    for due in (date(2025, 3, 2), date(2025, 3, 16)):
        write_round(make_round(due, date(2025, 4, 1), Shape({"manifold": 2}, {"fred": 1}), seed=3), root)
    (root / "question_sets" / "latest-llm.json").write_text("2025-03-16-llm.json\n")
    with Datasets(root) as server:
        yield server


def test_latest_is_fetched_with_its_resolution_set_then_served_from_the_cache(site, tmp_path):
    cache = tmp_path / "cache"
    first = load(["fb:latest"], datasets=site.url, cache_root=cache)
    assert first.sets[0][1] == "2025-03-16" and first.imported.outcomes
    assert site.hits == ["question_sets/latest-llm.json", "question_sets/2025-03-16-llm.json",
                         "resolution_sets/2025-03-16_resolution_set.json"]  # fmt: skip
    site.hits.clear()
    again = load(["fb:latest"], datasets=site.url, cache_root=cache)
    # The pointer and the resolution set change as ForecastBench publishes: fetched again; the set is not.
    assert site.hits == ["question_sets/latest-llm.json", "resolution_sets/2025-03-16_resolution_set.json"]
    assert [q.id for q in again.imported.questions] == [q.id for q in first.imported.questions]
    site.hits.clear()
    offline = load(["fb:latest"], datasets=site.url, cache_root=cache, offline=True)
    assert site.hits == [] and len(offline.imported.questions) == len(first.imported.questions)


def test_a_transient_error_is_retried_and_a_missing_resolution_set_is_a_note(site, tmp_path):
    (site.root / "resolution_sets" / "2025-03-02_resolution_set.json").unlink()
    site.faults = [503]
    loaded = load(["fb:2025-03-02"], datasets=site.url, cache_root=tmp_path / "cache")
    assert site.hits[:2] == ["question_sets/2025-03-02-llm.json"] * 2
    assert loaded.sets[0][2] is None and not loaded.imported.outcomes
    assert any("2025-03-02_resolution_set.json: not published (yet)" in n for n in loaded.notes)


def test_offline_without_a_cached_copy_says_what_to_do(site, tmp_path):
    with pytest.raises(ForecastBenchError, match="not in the cache and --offline was given; git clone"):
        load(["fb:2025-03-02"], datasets=site.url, cache_root=tmp_path / "cache", offline=True)
    assert site.hits == []


def test_an_unreachable_address_stops_in_seconds_with_one_sentence(tmp_path):
    with Datasets(tmp_path) as gone:
        url = gone.url
    start = time.monotonic()
    with pytest.raises(ForecastBenchError, match=r"cannot fetch .* to work offline, git clone") as info:
        load(["fb:latest"], datasets=url, cache_root=tmp_path / "cache")
    assert time.monotonic() - start < 20
    assert "\n" not in str(info.value)


def test_a_stale_resolution_set_is_served_from_the_cache_when_the_network_fails(site, tmp_path):
    cache = tmp_path / "cache"
    load(["fb:2025-03-02"], datasets=site.url, cache_root=cache)
    site.faults = [503] * 10  # every attempt of the fresh fetch fails
    loaded = load(["fb:2025-03-02"], datasets=site.url, cache_root=cache)
    assert loaded.imported.outcomes and any("using the cached copy" in n for n in loaded.notes)


def test_a_missing_set_at_the_url_is_named(site, tmp_path):
    with pytest.raises(ForecastBenchError, match=r"2025-05-01-llm\.json: HTTP 404"):
        load(["fb:2025-05-01"], datasets=site.url, cache_root=tmp_path / "cache")
