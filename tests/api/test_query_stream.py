"""Streamed queries, through every door: the SDK (local and remote), HTTP and the CLI
send the same events in the same order (passages, the answer's text, usage, done),
the text put together is the unstreamed answer, the passages come before the model
has finished, a reader that leaves stops the model's stream at the provider, and a
stream that breaks part way ends with ``degraded``, never an error.

The indexes are built once against a test server that answers at once; each query
runs against a server of its own, streaming in batches with the latency a test needs.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from click.testing import CliRunner
from prometheus_client import REGISTRY

from hopindex.api.cli import main
from hopindex.api.client import Client
from hopindex.api.client.local import LocalClient
from hopindex.api.client.query_stream import QueryEvent, QueryEventType
from hopindex.api.http.keys import KeyRing, parse_env_keys
from hopindex.api.http.server import BackgroundServer
from hopindex.core.errors import NotFoundError
from hopindex.core.models import JobState
from hopindex.core.settings import Settings
from hopindex.testing.llm_limits import StreamEvent
from hopindex.testing.llm_server import LlmServerConfig, LlmTestServer
from tests.api.http.conftest import KEY_SPEC, KEYS
from tests.conftest import CURIE_CORPUS, ingest_documents, llm_settings, local_client
from tests.waiting import wait_until

pytestmark = pytest.mark.integration

QUESTION = "Where was the wife of Pierre Curie born?"
INDEXES = {"facts": "indexrag", "plain": "extractive", "qa": "compactrag", "trees": "sirerag",
           "kg": "kgbridge"}
# Each method that ends in an answer it streams, and the index it reads.
STREAMING = {"indexrag": "facts", "ircot": "facts", "sirerag": "trees", "kgbridge": "kg"}
# Seconds the test server waits before each batch of a streamed answer.
BATCH_LATENCY_S = 2.0


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data dir with one small Curie index per index method used here."""
    data_dir = tmp_path_factory.mktemp("stream") / "data"
    server = LlmTestServer(LlmServerConfig()).start_in_thread()
    try:
        with local_client(llm_settings(data_dir, server)) as client:
            for index, method in INDEXES.items():
                job = ingest_documents(client, index, CURIE_CORPUS, method=method)
                assert job.state is JobState.SUCCEEDED and not job.errors, job.reason
    finally:
        server.stop()
    return data_dir


@pytest.fixture
def query_server() -> Iterator[list[LlmTestServer]]:
    started: list[LlmTestServer] = []
    yield started
    for server in started:
        server.stop()


def serve_llm(started: list[LlmTestServer], **config: object) -> LlmTestServer:
    server = LlmTestServer(LlmServerConfig(**config)).start_in_thread()  # type: ignore[arg-type]
    started.append(server)
    return server


def query_settings(built: Path, tmp_path: Path, server: LlmTestServer) -> Settings:
    """A copy of the built indexes, its LLM ``server``, no response cache (each query
    reaches the server)."""
    data_dir = tmp_path / "data"
    shutil.copytree(built, data_dir)
    return llm_settings(data_dir, server, llm_cache="off")


def kinds(events: list[QueryEvent]) -> list[str]:
    """The event types, a run of answer.delta events as one."""
    shown: list[str] = []
    for event in events:
        if not (shown and shown[-1] == event.type.value == QueryEventType.ANSWER_DELTA.value):
            shown.append(event.type.value)
    return shown


def text_of(events: list[QueryEvent]) -> str:
    return "".join(e.text for e in events if e.type is QueryEventType.ANSWER_DELTA)


def first_token_count(method: str) -> float:
    """Streamed queries of ``method`` the first-token histogram has counted."""
    return REGISTRY.get_sample_value("hopindex_query_first_token_seconds_count",
                                     {"method": method}) or 0.0


def test_the_sdk_streams_passages_then_the_answer_the_unstreamed_query_gives(
        built: Path, tmp_path: Path, query_server: list[LlmTestServer]) -> None:
    """Locally: passages, the answer in pieces, usage, done; the pieces put together are
    the unstreamed answer, the passages and the result the unstreamed query's; the
    first-token histogram counts the query."""
    server = serve_llm(query_server, stream_batch_tokens=1)
    with local_client(query_settings(built, tmp_path, server)) as client:
        plain = client.query("facts", QUESTION, method="indexrag", k=3)
        before = first_token_count("indexrag")
        with client.query("facts", QUESTION, method="indexrag", k=3, stream=True) as stream:
            events = list(stream)
    assert kinds(events) == ["passages", "answer.delta", "usage", "done"]
    assert plain.answer and text_of(events).strip() == plain.answer
    assert len([e for e in events if e.type is QueryEventType.ANSWER_DELTA]) > 1
    result = events[-1].result
    assert result is not None and result.answer == plain.answer
    assert events[0].passages == tuple(plain.passages) == tuple(result.passages)
    assert events[-2].usage == result.usage and result.usage.llm_calls == 1
    assert first_token_count("indexrag") > before


@pytest.mark.parametrize("method", list(STREAMING))
def test_every_answering_method_streams_what_it_answers(
        method: str, built: Path, tmp_path: Path, query_server: list[LlmTestServer]) -> None:
    """Each method that ends in an answer call tells its passages before the answer and
    streams the answer in pieces; the result is the unstreamed query's."""
    server = serve_llm(query_server, stream_batch_tokens=1)
    index = STREAMING[method]
    with local_client(query_settings(built, tmp_path, server)) as client:
        plain = client.query(index, QUESTION, method=method, k=3)
        with client.query(index, QUESTION, method=method, k=3, stream=True) as stream:
            events = list(stream)
    assert kinds(events) == ["passages", "answer.delta", "usage", "done"], method
    result = events[-1].result
    assert result is not None and plain.answer and result.answer == plain.answer
    assert text_of(events).strip() == plain.answer
    assert [p.doc_id for p in events[0].passages] == [p.doc_id for p in plain.passages]
    assert server.stats.stream_count(StreamEvent.COMPLETED) == 1


def test_methods_without_a_streamed_answer_keep_the_shape(
        built: Path, tmp_path: Path, query_server: list[LlmTestServer]) -> None:
    """A method with no answer streams passages, usage, done; compactrag, whose answer
    is read out of a JSON reply, gives its answer in one piece after the passages."""
    server = serve_llm(query_server)
    with local_client(query_settings(built, tmp_path, server)) as client:
        with client.query("plain", QUESTION, method="extractive", stream=True) as stream:
            extractive = list(stream)
        with client.query("qa", QUESTION, method="compactrag", stream=True) as stream:
            compact = list(stream)
    assert kinds(extractive) == ["passages", "usage", "done"]
    assert kinds(compact) == ["passages", "answer.delta", "usage", "done"]
    result = compact[-1].result
    assert result is not None and result.answer and text_of(compact) == result.answer


def test_a_stream_that_breaks_part_way_ends_degraded(
        built: Path, tmp_path: Path, query_server: list[LlmTestServer]) -> None:
    """The provider cuts the answer's stream after its first batch: the query ends with
    a degraded event (answer null, the answer step named), never an error; the broken
    stream is not asked again (its text was shown)."""
    server = serve_llm(query_server, stream_batch_tokens=1, stream_break_marker="Pierre")
    with local_client(query_settings(built, tmp_path, server)) as client, \
            client.query("facts", QUESTION, method="indexrag", stream=True) as stream:
        events = list(stream)
    assert kinds(events) == ["passages", "answer.delta", "usage", "degraded"]
    result = events[-1].result
    assert result is not None and result.answer is None
    assert [d.step for d in result.degraded] == ["answer"]
    assert "broke" in result.degraded[0].reason
    assert server.stats.stream_count(StreamEvent.BROKEN) == 1
    assert server.stats.stream_count(StreamEvent.STARTED) == 1


@pytest.fixture
def api(built: Path, tmp_path: Path, query_server: list[LlmTestServer]
        ) -> Iterator[tuple[str, LlmTestServer, LocalClient]]:
    """The HTTP API over a copy of the indexes, its LLM streaming slowly."""
    server = serve_llm(query_server, stream_batch_latency_s=BATCH_LATENCY_S)
    with local_client(query_settings(built, tmp_path, server)) as client, \
            BackgroundServer(client.service, KeyRing(parse_env_keys(KEY_SPEC))) as http:
        yield http.url, server, client


def sse_events(response: requests.Response) -> Iterator[tuple[str, dict[str, object]]]:
    name = ""
    for line in response.iter_lines(decode_unicode=True):
        if line.startswith("event:"):
            name = line.removeprefix("event:").strip()
        elif line.startswith("data:"):
            yield name, json.loads(line.removeprefix("data:"))


def test_http_sends_the_passages_before_the_model_has_finished(
        api: tuple[str, LlmTestServer, LocalClient]) -> None:
    """Over HTTP with 2 s before each batch of the answer: the passages event is read
    while the test server's stream is still under way; the answer put together equals
    the unstreamed one, and the SDK's remote client reads the same events."""
    url, server, client = api
    headers = {"Authorization": f"Bearer {KEYS['read']}"}
    plain = client.query("facts", QUESTION, method="indexrag", k=3)
    server.reset()
    started = time.monotonic()
    with requests.post(f"{url}/v1/indexes/facts/query", headers=headers, stream=True,
                       json={"question": QUESTION, "method": "indexrag", "k": 3,
                             "stream": True}, timeout=60) as response:
        assert response.status_code == 200
        assert response.headers["Content-Type"].startswith("text/event-stream")
        read = sse_events(response)
        name, data = next(read)
        first_s = time.monotonic() - started
        assert name == "passages" and data["passages"]
        assert server.stats.stream_count(StreamEvent.COMPLETED) == 0
        rest = list(read)
    assert first_s < BATCH_LATENCY_S
    names = [n for n, _ in rest]
    assert names[-2:] == ["usage", "done"] and set(names[:-2]) == {"answer.delta"}
    answer = "".join(str(d["text"]) for n, d in rest if n == "answer.delta")
    assert answer.strip() == plain.answer == rest[-1][1]["answer"]
    with Client.connect(url, api_key=KEYS["read"]) as remote, \
            remote.query("facts", QUESTION, method="indexrag", k=3, stream=True) as stream:
        events = list(stream)
    assert kinds(events) == ["passages", "answer.delta", "usage", "done"]
    assert text_of(events).strip() == plain.answer
    assert [p.doc_id for p in events[0].passages] == [p.doc_id for p in plain.passages]


def test_a_reader_that_leaves_stops_the_models_stream(
        api: tuple[str, LlmTestServer, LocalClient]) -> None:
    """Closing the HTTP stream after the passages cancels the answer call: the test
    server sees its stream end before it was finished."""
    url, server, _ = api
    server.reset()
    with requests.post(f"{url}/v1/indexes/facts/query",
                       headers={"Authorization": f"Bearer {KEYS['read']}"}, stream=True,
                       json={"question": QUESTION, "method": "indexrag", "stream": True},
                       timeout=60) as response:
        name, _ = next(sse_events(response))
        assert name == "passages"
        wait_until(lambda: server.stats.stream_count(StreamEvent.STARTED),
                   what="the answer's stream to start", timeout_s=30)
    wait_until(lambda: server.stats.stream_count(StreamEvent.DISCONNECTED),
               what="the test server to see the stream end", timeout_s=30)
    assert server.stats.stream_count(StreamEvent.COMPLETED) == 0


def test_http_refuses_before_the_stream_as_json(
        api: tuple[str, LlmTestServer, LocalClient]) -> None:
    """Accept alone asks for the stream; a query refused before its first event is an
    ordinary JSON error with its status: an unknown index a 404, a bad option a 400
    naming options.NAME; the remote SDK raises the same types."""
    url, _, _ = api
    headers = {"Authorization": f"Bearer {KEYS['read']}", "Accept": "text/event-stream"}
    with requests.post(f"{url}/v1/indexes/plain/query", headers=headers, stream=True,
                       json={"question": QUESTION, "method": "extractive"},
                       timeout=30) as streamed:
        assert streamed.headers["Content-Type"].startswith("text/event-stream")
        assert [n for n, _ in sse_events(streamed)] == ["passages", "usage", "done"]
    missing = requests.post(f"{url}/v1/indexes/nowhere/query", headers=headers,
                            json={"question": QUESTION}, timeout=30)
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
    bad = requests.post(f"{url}/v1/indexes/facts/query", headers=headers, timeout=30,
                        json={"question": QUESTION, "method": "indexrag",
                              "options": {"rerank": "sideways"}})
    assert bad.status_code == 400 and bad.json()["error"]["field"] == "options.rerank"
    with Client.connect(url, api_key=KEYS["read"]) as remote, \
            pytest.raises(NotFoundError):
        remote.query("nowhere", QUESTION, stream=True)


def test_the_cli_streams_text_and_json_lines(
        built: Path, tmp_path: Path, query_server: list[LlmTestServer]) -> None:
    """``hopindex query --stream`` prints the passages, then the answer; with --json one
    event per line, the same events the SDK yields."""
    server = serve_llm(query_server)
    data_dir = tmp_path / "data"
    shutil.copytree(built, data_dir)
    cli = CliRunner(env={"HOPINDEX_DATA_DIR": str(data_dir),
                         "HOPINDEX_LLM_MODEL": server.config.model,
                         "HOPINDEX_LLM_BASE_URL": server.base_url,
                         "HOPINDEX_LLM_API_KEY": "test-key", "HOPINDEX_LLM_CACHE": "off"})
    args = ["query", "--index", "facts", "--method", "indexrag", "--stream", QUESTION]
    shown = cli.invoke(main, args)
    assert shown.exit_code == 0, shown.output
    lines = shown.stdout.splitlines()
    answer_line = next(i for i, line in enumerate(lines) if line.startswith("  answer: "))
    assert any(line.startswith("   1. ") for line in lines[:answer_line])
    as_json = cli.invoke(main, [*args[:-1], "--json", QUESTION])
    assert as_json.exit_code == 0, as_json.output
    events = [json.loads(line) for line in as_json.stdout.splitlines()]
    names = [e["event"] for e in events]
    assert names[0] == "passages" and names[-2:] == ["usage", "done"]
    answer = "".join(e["data"]["text"] for e in events if e["event"] == "answer.delta")
    assert answer.strip() == events[-1]["data"]["answer"]
    assert f"  answer: {answer}".rstrip() == lines[answer_line].rstrip()
