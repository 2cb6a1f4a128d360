"""With an LLM that accepts requests and never answers, every LLM query method degrades
instead of hanging or failing: over the CLI and over HTTP it returns its passages, a
null answer and the steps that degraded, within the query's LLM deadline (2 s here),
and the query's later LLM steps never reach the provider.

The indexes are built once, against a test server that answers; the queries run
against a second one that holds every chat request (``fail_timeout=1.0``). Embeddings
come from the local model, so that only the LLM hangs.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
import schemathesis
from click.testing import CliRunner

from hopindex.api.cli import main
from hopindex.api.http.keys import KeyRing, parse_env_keys
from hopindex.api.http.server import BackgroundServer
from hopindex.core.models import JobState
from hopindex.testing.llm_limits import Endpoint
from hopindex.testing.llm_responses import TaskKind
from hopindex.testing.llm_server import LlmServerConfig, LlmTestServer
from tests.api.http.conftest import KEY_SPEC, Api
from tests.conftest import CURIE_CORPUS, ingest_documents, local_client
from tests.methods.indexrag.conftest import llm_settings

pytestmark = pytest.mark.integration

QUESTION = "Where was the wife of Pierre Curie born?"
DEADLINE_S = 2
# The issue's own bound: a query against a hung LLM answers well inside it.
BOUND_S = 10.0
# Index method → its index, and each LLM query method → the index it reads.
INDEXES = {"indexrag": "facts", "compactrag": "qa", "kgbridge": "kg", "sirerag": "trees"}
# Query method → (index, the steps that degrade, in order, with every chat request held).
EXPECTED = {
    "indexrag": ("facts", ["answer"]),
    "ircot": ("facts", ["reasoning step 1", "answer"]),
    "bridgerag": ("facts", ["svo_queries", "entities", "judge"]),
    "compactrag": ("qa", ["decompose", "answer"]),
    "kgbridge": ("kg", ["plan", "reasoning step 1", "answer"]),
    "sirerag": ("trees", ["answer"]),
}
# The one chat request each method's first LLM step sends; nothing after it is asked.
FIRST_KIND = {"indexrag": TaskKind.ANSWER, "ircot": TaskKind.IRCOT,
              "bridgerag": TaskKind.QUERIES, "compactrag": TaskKind.DECOMPOSE,
              "kgbridge": TaskKind.KG_PLAN, "sirerag": TaskKind.ANSWER}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data dir holding one small Curie index per LLM index method, built against a
    test server that answers (the client closed: later services open the copy)."""
    data_dir = tmp_path_factory.mktemp("degraded") / "data"
    server = LlmTestServer(LlmServerConfig()).start_in_thread()
    try:
        with local_client(llm_settings(data_dir, server)) as client:
            for method, index in INDEXES.items():
                job = ingest_documents(client, index, CURIE_CORPUS, method=method)
                assert job.state is JobState.SUCCEEDED and not job.errors, job.reason
    finally:
        server.stop()
    return data_dir


@pytest.fixture(scope="module")
def hung() -> Iterator[LlmTestServer]:
    """An LLM that takes every chat request and never answers it (until it stops)."""
    server = LlmTestServer(LlmServerConfig(fail_timeout=1.0)).start_in_thread()
    try:
        yield server
    finally:
        server.stop()


def query_env(data_dir: Path, hung: LlmTestServer) -> dict[str, str]:
    return {"HOPINDEX_DATA_DIR": str(data_dir), "HOPINDEX_LLM_MODEL": hung.config.model,
            "HOPINDEX_LLM_BASE_URL": hung.base_url, "HOPINDEX_LLM_API_KEY": "test-key",
            "HOPINDEX_LLM_CACHE": "off", "HOPINDEX_QUERY_LLM_DEADLINE_S": str(DEADLINE_S)}


def assert_degraded(method: str, data: dict[str, object], elapsed_s: float) -> None:
    _, steps = EXPECTED[method]
    assert data["answer"] is None and data["answer_truncated"] is False
    degraded = data["degraded"]
    assert isinstance(degraded, list) and [d["step"] for d in degraded] == steps
    assert f"LLM deadline of {DEADLINE_S}s passed" in degraded[0]["reason"]
    trace = data["trace"]
    assert isinstance(trace, dict) and trace["degraded"] == degraded
    assert data["passages"], f"{method} returned no passage"
    assert elapsed_s < BOUND_S


def assert_later_steps_skipped(method: str, hung: LlmTestServer) -> None:
    """Only the first LLM step's request reached the provider (a retry of it may have
    gone out as the deadline struck); no later step's did."""
    stats = hung.stats
    assert set(stats.by_kind) == {FIRST_KIND[method].value}, stats.by_kind
    assert stats.count(Endpoint.CHAT) >= 1


@pytest.mark.parametrize("method", list(EXPECTED))
def test_the_cli_shows_passages_and_a_note_when_the_llm_hangs(
        method: str, built: Path, hung: LlmTestServer, tmp_path: Path) -> None:
    """``hopindex query`` against a hung LLM exits 0 within the deadline: the passages
    as usual, one note on stderr naming the first step that degraded; ``--json`` holds
    ``degraded`` and a null answer; only the first LLM step reached the provider."""
    data_dir = tmp_path / "data"
    shutil.copytree(built, data_dir)
    cli = CliRunner(env=query_env(data_dir, hung))
    index, _ = EXPECTED[method]
    hung.reset()
    started = time.monotonic()
    as_json = cli.invoke(main, ["query", "--index", index, "--method", method, "--json",
                                QUESTION])
    elapsed_s = time.monotonic() - started
    assert as_json.exit_code == 0, as_json.output
    assert_degraded(method, json.loads(as_json.stdout), elapsed_s)
    assert_later_steps_skipped(method, hung)
    if method != "indexrag":
        return  # one text rendering is enough: it does not depend on the method
    shown = cli.invoke(main, ["query", "--index", index, "--method", method, QUESTION])
    assert shown.exit_code == 0, shown.output
    [note] = shown.stderr.splitlines()
    assert note == (f"note: answer unavailable (answer: the query's LLM deadline of "
                    f"{DEADLINE_S}s passed); showing retrieved passages")
    assert " 1. " in shown.stdout and "answer:" not in shown.stdout


@pytest.fixture(scope="module")
def api(built: Path, hung: LlmTestServer,
        tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    """The HTTP API over a copy of the built indexes, its LLM the hung server."""
    data_dir = tmp_path_factory.mktemp("degraded-api") / "data"
    shutil.copytree(built, data_dir)
    settings = llm_settings(data_dir, hung, llm_cache="off",
                            query_llm_deadline_s=float(DEADLINE_S))
    with local_client(settings) as client, \
            BackgroundServer(client.service, KeyRing(parse_env_keys(KEY_SPEC))) as server:
        spec = schemathesis.openapi.from_dict(requests.get(
            server.url + "/v1/openapi.json", timeout=10).json())
        yield Api(server.url, client.service, spec, server)


@pytest.mark.parametrize("method", list(EXPECTED))
def test_http_answers_200_with_degraded_when_the_llm_hangs(method: str, api: Api,
                                                          hung: LlmTestServer) -> None:
    """``POST /v1/indexes/{name}/query`` against a hung LLM: 200 within the deadline,
    ``answer`` null, ``degraded`` naming each step, the passages; the answer conforms
    to the published spec."""
    index, _ = EXPECTED[method]
    hung.reset()
    started = time.monotonic()
    response = api.call("POST", f"/v1/indexes/{index}/query", key="read",
                        json={"question": QUESTION, "method": method})
    elapsed_s = time.monotonic() - started
    assert response.status_code == 200, response.text
    assert_degraded(method, response.json(), elapsed_s)
    assert_later_steps_skipped(method, hung)
