"""A job's corpus tokens and ingestion multiplier through the HTTP API: ``GET
/v1/jobs/{id}`` carries them as the spec's Job declares them (the answer is checked
against the published document), and the remote client reads them into the same job
record, which ``hopindex --api … jobs JOB_ID`` then shows as a local one would."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from hopindex.api.cli import main
from hopindex.testing.llm_server import LlmTestServer
from tests.api.http.conftest import KEYS, Api, ApiFactory, llm_settings_of, sample_documents

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def api(make_api: ApiFactory, llm: LlmTestServer) -> Api:
    return make_api(**llm_settings_of(llm))


def test_the_job_view_carries_the_corpus_and_its_multiplier(api: Api,
                                                            tmp_path: Path) -> None:
    """An IndexRAG ingest of three sample paragraphs: the job's corpus is their title
    and text at a quarter token a character, and each phase's multiplier is its tokens
    over that corpus; the spec declares both fields (the answer conforms), and the
    CLI through the server shows the corpus line and the table."""
    _, docs = sample_documents(limit=3)
    submitted = api.call("POST", "/v1/indexes/mult/documents", params={"method": "indexrag"},
                         json=docs)
    assert submitted.status_code == 202, submitted.text
    job = api.wait_job(submitted.json()["job_id"])
    assert job["state"] == "succeeded"
    corpus = round(sum(len(d["title"]) + len(d["text"]) for d in docs) / 4)
    assert job["corpus_tokens"] == corpus
    stage1 = job["llm"]["stages"]["indexrag.stage1"]
    assert job["token_multiplier"]["stages"]["indexrag.stage1"]["prompt"] == round(
        stage1["prompt_tokens"] / corpus, 4)
    assert job["token_multiplier"]["total"] == round(
        (job["llm"]["prompt_tokens"] + job["llm"]["completion_tokens"]) / corpus, 4)
    schema = api.spec.raw_schema["components"]["schemas"]["Job"]
    assert {"corpus_tokens", "token_multiplier"} <= set(schema["required"])
    cli = CliRunner(env={"HOPINDEX_API_URL": api.url, "HOPINDEX_API_KEY": KEYS["read"],
                         "HOPINDEX_DATA_DIR": str(tmp_path / "unused")})
    shown = cli.invoke(main, ["jobs", job["job_id"]])
    assert shown.exit_code == 0, shown.output
    assert f"corpus: {corpus:,} tokens" in shown.output
    assert "LLM tokens per corpus token" in shown.output
