"""The LLM is opened only by the query methods that call it: ``naive`` and ``extractive``
answer whatever the LLM settings say, even when they could not open one."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from hopindex.api.cli import main
from hopindex.api.client.local import LocalClient
from hopindex.core.errors import ConfigError
from hopindex.core.models import JobState
from hopindex.core.settings import Settings
from hopindex.testing.redis_server import free_port
from tests.conftest import CURIE_CORPUS, ingest_documents, local_client

pytestmark = pytest.mark.integration

INDEX = "curie"
QUESTION = "Where was Marie Curie born?"
# The settings an operator may leave behind: OpenAI's API with no key (refused when the
# LLM opens), and a local server with no key that is not even running.
# (model, base URL) of each.
BROKEN_LLM = {
    "openai-without-key": ("gpt-4o-mini", "https://api.openai.com/v1"),
    "keyless-server-down": ("local-model", f"http://127.0.0.1:{free_port()}/v1"),
}


def broken_settings(data_dir: Path, name: str) -> Settings:
    model, base_url = BROKEN_LLM[name]
    return Settings(data_dir=data_dir, llm_model=model, llm_base_url=base_url).resolved()


@pytest.fixture(autouse=True)
def no_key_in_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "HOPINDEX_LLM_API_KEY"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An extractive index of the Curie corpus, built with no LLM configured."""
    path = tmp_path_factory.mktemp("lazy-llm")
    with local_client(Settings(data_dir=path).resolved()) as client:
        job = ingest_documents(client, INDEX, CURIE_CORPUS)
    assert job.state is JobState.SUCCEEDED
    return path


@pytest.fixture(params=sorted(BROKEN_LLM))
def broken(request: pytest.FixtureRequest, data_dir: Path) -> Iterator[LocalClient]:
    """A client over that index whose LLM settings cannot open a working LLM."""
    with local_client(broken_settings(data_dir, request.param)) as client:
        yield client


@pytest.mark.parametrize("method", ["naive", "extractive"])
def test_methods_without_an_llm_answer_whatever_the_llm_settings(broken: LocalClient,
                                                                 method: str) -> None:
    """naive and extractive rank passages and never open the LLM."""
    result = broken.query(INDEX, QUESTION, method=method, k=3)
    assert result.passages and result.passages[0].title in {"Marie Curie", "Warsaw"}
    assert result.usage.llm_calls == 0
    assert not broken.service.backends.is_open("llm")


def test_an_llm_method_opens_the_llm_when_it_asks(data_dir: Path) -> None:
    """ircot over the same index with OpenAI's API and no key: the query that needs the
    LLM is the one refused, naming the variable."""
    with local_client(broken_settings(data_dir, "openai-without-key")) as client:
        client.query(INDEX, QUESTION, method="naive", k=5)
        with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
            client.query(INDEX, QUESTION, method="ircot", k=5)


def test_cli_naive_query_ignores_a_broken_llm(data_dir: Path) -> None:
    """`hopindex query --method naive` exits 0 with passages under OpenAI settings that
    have no key."""
    cli = CliRunner(env={"HOPINDEX_DATA_DIR": str(data_dir), "HOPINDEX_LLM_MODEL": "gpt-4o-mini",
                         "OPENAI_API_KEY": None, "HOPINDEX_LLM_API_KEY": None})
    answered = cli.invoke(main, ["query", "--index", INDEX, "--method", "naive", "--json",
                                 QUESTION])
    assert answered.exit_code == 0, answered.output
    assert json.loads(answered.output)["passages"]
