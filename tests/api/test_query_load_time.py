"""A query's latency is the query's own time: the embedding model's load (its first use
in the process) is reported apart, as ``embedder_load_s``, in the result, its JSON, the
CLI's line and not in the latency histogram; a query that never embeds loads nothing."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from prometheus_client import REGISTRY
from rich.console import Console

from hopindex.api import service as service_module
from hopindex.api.cli_embedder import slow_start_hint
from hopindex.api.client.local import LocalClient
from hopindex.api.render import render_result
from hopindex.api.service import Hopindex
from hopindex.backends.embedder import loading
from hopindex.backends.protocols import Vector
from hopindex.backends.registry import open_backends
from hopindex.core.settings import Settings
from hopindex.methods import phases
from hopindex.methods.base import QueryOptions, Retrieval
from tests.clocks import ManualClock
from tests.conftest import CURIE_CORPUS, ingest_documents

# The model's load, as slow as torch's in a cold CLI process, and one question's embedding.
LOAD_S = 4.8
EMBED_S = 0.004
QUESTION = "Where was the wife of Pierre Curie born?"


class SlowLoadingEmbedder:
    """Bag-of-words rows (no model), whose first use after ``unload`` "loads" for
    ``LOAD_S`` of the test's clock, reported as a real adapter reports its load."""

    dimension = 64
    model_name = "slow-loading-test"

    def __init__(self, clock: ManualClock) -> None:
        self.clock = clock
        self.loaded = False

    def unload(self) -> None:
        """As a fresh process finds it."""
        self.loaded = False

    def embed_texts(self, texts: Sequence[str]) -> Vector:
        if not self.loaded:
            with loading.loading():
                self.clock.advance(LOAD_S)
                self.loaded = True
        self.clock.advance(EMBED_S)
        rows = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                rows[row, hashlib.sha256(word.encode()).digest()[0] % self.dimension] += 1.0
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        unit: Vector = (rows / np.where(norms > 0, norms, 1.0)).astype(np.float32)
        return unit

    def embed_query(self, text: str) -> Vector:
        row: Vector = self.embed_texts([text])[0]
        return row


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> ManualClock:
    """One clock for the service's query timing, the phase timer and the load clock:
    the load lasts exactly ``LOAD_S`` however busy the machine is."""
    fake = ManualClock()
    for module in (service_module, phases, loading):
        monkeypatch.setattr(module, "time", SimpleNamespace(perf_counter=fake))
    return fake


@pytest.fixture
def embedder(clock: ManualClock) -> SlowLoadingEmbedder:
    return SlowLoadingEmbedder(clock)


@pytest.fixture
def client(tmp_path: Path, embedder: SlowLoadingEmbedder) -> Iterator[LocalClient]:
    """The Curie corpus ingested with the slow-loading embedder, which then looks as a
    fresh process finds it: not loaded."""
    settings = Settings(data_dir=tmp_path / "data").resolved()
    # Client.local opens backends of its own: the client over a service built on the
    # test's embedder is the same client with that embedder.
    with LocalClient(Hopindex(settings, open_backends(settings, embedder=embedder))) as opened:
        ingest_documents(opened, "curie", CURIE_CORPUS)
        embedder.unload()
        yield opened


def duration(method: str) -> tuple[float, float]:
    """The query latency histogram's (sum, count) for ``method``."""
    labels = {"method": method}
    return (REGISTRY.get_sample_value("hopindex_query_duration_seconds_sum", labels) or 0.0,
            REGISTRY.get_sample_value("hopindex_query_duration_seconds_count", labels) or 0.0)


def test_the_first_query_reports_the_load_apart(client: LocalClient,
                                                embedder: SlowLoadingEmbedder) -> None:
    """The query that loads the model has latency_s and its embed phase without the
    load, which is its embedder_load_s; the latency histogram receives the query's own
    time; the next query, the model loaded, reports no load."""
    before = duration("naive")
    first = client.query("curie", QUESTION, method="naive", k=5)
    assert first.passages
    assert first.embedder_load_s == pytest.approx(LOAD_S)
    assert first.latency_s == pytest.approx(EMBED_S)
    assert first.usage.phases_s["embed"] == pytest.approx(EMBED_S)
    assert first.as_dict()["embedder_load_s"] == pytest.approx(LOAD_S)
    assert first.as_dict()["latency_s"] == pytest.approx(EMBED_S)
    after = duration("naive")
    assert after[0] - before[0] == pytest.approx(EMBED_S)
    assert after[1] - before[1] == 1

    second = client.query("curie", QUESTION, method="naive", k=5)
    assert second.embedder_load_s == 0.0
    assert second.latency_s == pytest.approx(EMBED_S)
    assert [p.doc_id for p in second.passages] == [p.doc_id for p in first.passages]


def test_the_default_method_reports_it_too(client: LocalClient) -> None:
    """The index method's default query (hops: hop 1, title matches, a walk over the
    bridges) keeps the load out of its latency and every phase as well."""
    result = client.query("curie", QUESTION, k=5)
    assert result.embedder_load_s == pytest.approx(LOAD_S)
    assert result.latency_s == pytest.approx(EMBED_S)
    assert sum(result.usage.phases_s.values()) == pytest.approx(EMBED_S)


def test_a_keyword_query_loads_nothing(client: LocalClient,
                                       embedder: SlowLoadingEmbedder) -> None:
    """A query that never embeds does not load the model, so it reports no load."""
    result = client.query("curie", QUESTION, method="naive", k=5,
                          options=QueryOptions(retrieval=Retrieval.KEYWORD))
    assert result.passages
    assert (result.embedder_load_s, embedder.loaded) == (0.0, False)


def test_the_cli_line_shows_the_load_beside_the_querys_time(client: LocalClient) -> None:
    """``hopindex query`` prints the query's milliseconds and, apart, the model's load;
    an embedder with nothing to prepare earns no hint."""
    result = client.query("curie", QUESTION, method="naive", k=5)
    console = Console(width=200, record=True)
    render_result(console, result)
    header = console.export_text().splitlines()[0]
    assert header == (f"{QUESTION}  (method=naive, {EMBED_S * 1000:.1f} ms, embedding model "
                      f"loaded in {LOAD_S:.2f} s)")
    assert slow_start_hint(client.service.backends.embedder, result) is None


class _Exportable:
    """An embedder whose queries would start faster once prepared."""

    def __init__(self, prepared: bool) -> None:
        self.queries_prepared = prepared

    def prepare_queries(self) -> Path:
        raise AssertionError("a hint never prepares")


def test_a_slow_load_that_preparing_would_cut_earns_a_hint(client: LocalClient) -> None:
    """After a query whose model took seconds to load, and only when the export is not
    there yet, the CLI names `hopindex prepare-queries`."""
    result = client.query("curie", QUESTION, method="naive", k=5)
    hint = slow_start_hint(_Exportable(prepared=False), result)  # type: ignore[arg-type]
    assert hint is not None
    assert f"took {LOAD_S:.1f} s" in hint and "`hopindex prepare-queries`" in hint
    assert slow_start_hint(_Exportable(prepared=True), result) is None  # type: ignore[arg-type]
    fast = client.query("curie", QUESTION, method="naive", k=5)  # loaded: nothing to say
    assert slow_start_hint(_Exportable(prepared=False), fast) is None  # type: ignore[arg-type]
