"""An LLM without an API key: a local server needs none and works, from the client up to
the CLI; OpenAI's API needs one, and every process that would call it stops when it
starts, naming the variable, with the CLI's configuration-error exit and no traceback."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from hopindex.api.cli import main
from hopindex.api.exit_codes import ExitCode
from hopindex.backends.llm.client import ChatRequest, LlmClient, LlmSettings
from hopindex.backends.llm.credentials import check_llm_key
from hopindex.backends.llm.ratelimit import InProcessRateLimiter, RateLimits
from hopindex.backends.llm.usage import UsageMeter
from hopindex.core.errors import ConfigError, LlmAuthenticationError
from hopindex.core.models import JobState
from hopindex.core.settings import Settings
from hopindex.testing.llm_limits import Endpoint, Outcome
from hopindex.testing.llm_server import LlmServerConfig, LlmTestServer, running_llm_server
from tests.conftest import CURIE_CORPUS, ingest_documents, local_client

OPENAI = "https://api.openai.com/v1"
KEY_VARIABLES = ("OPENAI_API_KEY", "HOPINDEX_LLM_API_KEY")
QUESTION = ChatRequest(stage="answer", max_tokens=20, messages=(
    ("user", "Context: Marie Curie was born in Warsaw.\nQuestion: Where was she born?\n"
             "Answer:"),))


@pytest.fixture(autouse=True)
def no_key_in_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The SDK reads OPENAI_API_KEY on its own: these tests must not find one."""
    for name in KEY_VARIABLES:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def keyless_server() -> Iterator[LlmTestServer]:
    with running_llm_server(LlmServerConfig()) as server:
        yield server


def keyless_env(data_dir: Path, server: LlmTestServer) -> dict[str, str | None]:
    """The README's test-server recipe: a model and a base URL, nothing else (embeddings
    from the same server, so no local model loads)."""
    return {"HOPINDEX_DATA_DIR": str(data_dir), "HOPINDEX_LLM_MODEL": server.config.model,
            "HOPINDEX_LLM_BASE_URL": server.base_url,
            "HOPINDEX_EMBEDDER_URL": f"openai://{server.config.embedding_model}",
            "OPENAI_API_KEY": None, "HOPINDEX_LLM_API_KEY": None}


def corpus_file(tmp_path: Path) -> Path:
    path = tmp_path / "curie.jsonl"
    path.write_text("\n".join(json.dumps({"id": f"d{i}", "title": d.title, "text": d.text})
                              for i, d in enumerate(CURIE_CORPUS)) + "\n")
    return path


def test_only_a_provider_that_needs_a_key_is_refused_without_one() -> None:
    """api.openai.com with a model and no key is refused naming both variables; a key, a
    local base URL or no model at all pass; a worker only checks for the LLM queues."""
    bare = Settings(llm_model="gpt-4o-mini", llm_base_url=OPENAI)
    with pytest.raises(ConfigError) as refused:
        check_llm_key(bare)
    assert all(name in str(refused.value) for name in KEY_VARIABLES)
    for queues in (["stage1"], ["stage2", "embed"], ["judge"]):
        with pytest.raises(ConfigError):
            check_llm_key(bare, queues=queues)
    check_llm_key(bare, queues=["embed", "control"])
    check_llm_key(Settings(llm_model="gpt-4o-mini", llm_base_url=OPENAI, llm_api_key="sk-x"))
    check_llm_key(Settings(llm_model="m", llm_base_url="http://127.0.0.1:8000/v1"))
    check_llm_key(Settings(llm_base_url=OPENAI))


def test_a_local_server_is_called_without_a_key(keyless_server: LlmTestServer) -> None:
    """No key configured (and none in the environment): the client is built and its call
    answered, where the SDK used to refuse with 'Missing credentials'."""
    async def scenario() -> str:
        client = LlmClient(LlmSettings(base_url=keyless_server.base_url,
                                       model=keyless_server.config.model, api_key=""),
                           InProcessRateLimiter(RateLimits(requests_per_minute=None)))
        try:
            return (await client.complete(QUESTION, UsageMeter())).content
        finally:
            await client.close()

    assert asyncio.run(scenario())
    assert keyless_server.stats.count(Endpoint.CHAT, Outcome.OK) == 1


def test_a_server_that_wants_a_key_says_none_is_set() -> None:
    """A server requiring a key answers 401 to the keyless client: a configuration error
    naming the variables, after one request."""
    async def scenario(server: LlmTestServer) -> None:
        client = LlmClient(LlmSettings(base_url=server.base_url, model=server.config.model,
                                       api_key=""),
                           InProcessRateLimiter(RateLimits(requests_per_minute=None)))
        try:
            await client.complete(QUESTION, UsageMeter())
        finally:
            await client.close()

    with running_llm_server(LlmServerConfig(api_key="sk-right")) as server, \
            pytest.raises(LlmAuthenticationError, match="none is set") as caught:
        asyncio.run(scenario(server))
    assert "OPENAI_API_KEY" in str(caught.value)


@pytest.mark.integration
def test_keyless_service_ingests_and_answers_with_the_llm(
        keyless_server: LlmTestServer, tmp_path: Path) -> None:
    """A service configured with only a model and a base URL builds an IndexRAG index and
    answers an indexrag query through the test server."""
    settings = Settings(data_dir=tmp_path / "data", llm_model=keyless_server.config.model,
                        llm_base_url=keyless_server.base_url,
                        embedder_url=f"openai://{keyless_server.config.embedding_model}"
                        ).resolved()
    with local_client(settings) as client:
        job = ingest_documents(client, "curie", CURIE_CORPUS)
        assert job.state is JobState.SUCCEEDED and not job.errors
        assert job.llm["indexrag.stage1"].calls == len(CURIE_CORPUS)
        result = client.query("curie", "Where was Marie Curie born?", k=5)
    assert result.method == "indexrag" and result.answer
    assert result.usage.llm_calls == 1


@pytest.mark.integration
def test_keyless_cli_ingests_and_answers_with_the_llm(keyless_server: LlmTestServer,
                                                      tmp_path: Path) -> None:
    """The README's test-server recipe on the CLI: ingest builds an IndexRAG index and
    query answers with one call, both exiting 0."""
    cli = CliRunner(env=keyless_env(tmp_path / "data", keyless_server))
    ingested = cli.invoke(main, ["ingest", "--index", "curie", "--json",
                                 str(corpus_file(tmp_path))])
    assert ingested.exit_code == 0, ingested.output
    assert json.loads(ingested.output)["state"] == "succeeded"
    answered = cli.invoke(main, ["query", "--index", "curie", "--json",
                                 "Where was Marie Curie born?"])
    assert answered.exit_code == 0, answered.output
    result = json.loads(answered.output)
    assert result["method"] == "indexrag" and result["answer"]


# Without the check these processes would start and run: the timeout turns that into a
# failure instead of a hang.
@pytest.mark.timeout(60)
@pytest.mark.parametrize("command", [["serve", "--port", "0"],
                                     ["worker", "--queues", "stage1,embed"],
                                     ["worker", "--queues", "judge"],
                                     ["ingest", "--index", "curie", "CORPUS"]],
                         ids=["serve", "worker-stage1", "worker-judge", "ingest"])
def test_openai_without_a_key_stops_each_process_at_start(command: list[str],
                                                          tmp_path: Path) -> None:
    """`serve`, a worker of an LLM queue and an LLM ingest, configured for api.openai.com
    with no key, exit with the configuration-error code naming the variables before doing
    anything: no traceback, no job."""
    cli = CliRunner(env={"HOPINDEX_DATA_DIR": str(tmp_path / "data"),
                         "HOPINDEX_LLM_MODEL": "gpt-4o-mini", "HOPINDEX_LLM_BASE_URL": OPENAI,
                         "HOPINDEX_BROKER_URL": "redis://127.0.0.1:1/0"
                         if command[0] == "worker" else None,
                         "OPENAI_API_KEY": None, "HOPINDEX_LLM_API_KEY": None})
    argv = [str(corpus_file(tmp_path)) if a == "CORPUS" else a for a in command]
    result = cli.invoke(main, argv)
    assert result.exit_code == ExitCode.CONFIG, result.output
    assert "OPENAI_API_KEY" in result.output and "HOPINDEX_LLM_API_KEY" in result.output
    assert "Traceback" not in result.output
    assert not isinstance(result.exception, ConfigError)  # handled, not escaped
    if command[0] == "ingest":
        listed = cli.invoke(main, ["jobs", "--json"])
        assert listed.exit_code == 0 and json.loads(listed.output) == []
