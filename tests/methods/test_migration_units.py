"""Moving the built-in index methods onto the plugin runtime changed no unit.

The reference digests (tests/methods/data/units_before_plugins.json) were taken from
HotpotQA-100 built by the runtime that branched on the method's name; the same build
now must give the same unit ids, kinds and texts, for ``extractive`` and for
``indexrag`` against the local test LLM server. IndexRAG's reference was taken again
when its stage 1 began sending whole documents (a change of the method, not of the
runtime); any later change of either digest must be such a change, said in the file.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable
from importlib.resources import as_file, files
from pathlib import Path
from typing import Any

import pytest

from hopindex.api.client.local import LocalClient
from hopindex.core.models import JobState
from hopindex.core.settings import Settings
from hopindex.readers import RawDocument, ReadResult
from hopindex.testing.llm_server import LlmTestServer
from tests.methods.indexrag.conftest import local_client

pytestmark = pytest.mark.integration

INDEX = "hotpot"
REFERENCE = json.loads((Path(__file__).parent / "data" / "units_before_plugins.json")
                       .read_text())


def _corpus() -> list[RawDocument]:
    with as_file(files("hopindex") / "sample" / "hotpotqa-100" / "corpus.json") as path:
        data: dict[str, list[str]] = json.loads(path.read_text())
    return [RawDocument(doc_id=None, title=title, text="".join(sentences), metadata={},
                        origin=title) for title, sentences in data.items()]


def _digest(client: LocalClient) -> dict[str, Any]:
    state = client.service.backends.state
    units = state.units_of_documents(INDEX, sorted(state.document_hashes(INDEX)))
    lines = sorted(f"{u.unit_id}\t{u.kind.value}\t{u.text}" for u in units)
    return {"units": len(lines), "kinds": dict(sorted(Counter(u.kind.value for u in units)
                                                        .items())),
            "sha256": hashlib.sha256("\n".join(lines).encode()).hexdigest()}


@pytest.mark.parametrize("method", ["extractive", "indexrag"])
def test_hotpotqa_units_are_those_built_before_the_migration(
        method: str, tmp_path: Path, start_server: Callable[..., LlmTestServer]) -> None:
    """Same unit ids, kinds and texts as before, for each built-in index method."""
    server = start_server()
    settings = Settings(data_dir=tmp_path, llm_model=server.config.model,
                        llm_base_url=server.base_url, llm_api_key="test-key",
                        embedder_url=f"openai://{server.config.embedding_model}").resolved()
    with local_client(settings) as client:
        job = client.ingest_read(INDEX, ReadResult(documents=_corpus()), method=method)
        assert job.state is JobState.SUCCEEDED and not job.errors, job.reason
        assert _digest(client) == {k: REFERENCE[method][k] for k in ("units", "kinds",
                                                                         "sha256")}
