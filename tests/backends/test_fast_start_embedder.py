"""The default embedder answering questions from its cached ONNX export: made once by
``hopindex prepare-queries``, used by a process that has not loaded torch (which then
never imports it), and ranking the HotpotQA-100 questions exactly as the torch model
does; torch keeps serving bulk embedding, and every call once it is loaded."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from hopindex.api.cli import main
from hopindex.api.client.local import LocalClient
from hopindex.api.service import Hopindex
from hopindex.backends.embedder import OnnxEmbedder, SentenceTransformerEmbedder
from hopindex.backends.embedder.fast_start import SMALL_CALL_TEXTS, FastStartEmbedder
from hopindex.backends.registry import open_backends
from hopindex.core.settings import Settings
from hopindex.evaluation.datasets import DatasetFormat, load_questions
from hopindex.testing.contracts.embedder import EmbedderContract
from tests.conftest import HOTPOT_INDEX, HOTPOT_SAMPLE, hotpot_client

pytestmark = pytest.mark.integration

QUESTION = "Who directed the film that starred Christopher Nolan?"


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data dir whose ONNX export ``hopindex prepare-queries`` made (~20 s, once for
    the module); a second run reuses it."""
    data_dir = tmp_path_factory.mktemp("prepared") / "data"
    cli = CliRunner(env={"HOPINDEX_DATA_DIR": str(data_dir)})
    first = cli.invoke(main, ["prepare-queries", "--json"])
    assert first.exit_code == 0, first.output
    made = json.loads(first.stdout)
    assert made["outcome"] == "exported"
    again = cli.invoke(main, ["prepare-queries", "--json"])
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout) == {**made, "outcome": "reused",
                                        "seconds": json.loads(again.stdout)["seconds"]}
    assert Path(made["folder"]).parent == data_dir / "models" / "onnx"
    return data_dir


def cache_of(data_dir: Path) -> Path:
    return data_dir / "models" / "onnx"


_QUERY_IN_CHILD = """
import json, sys
from pathlib import Path
from hopindex.backends.registry import open_embedder
from hopindex.core.settings import Settings
settings = Settings(data_dir=Path(sys.argv[1]))
row = open_embedder(settings.embedder_url, settings).embed_query(sys.argv[2])
print(json.dumps({"torch": "torch" in sys.modules, "row": row.tolist()}))
"""


def test_a_fresh_process_embeds_a_question_without_torch(prepared: Path) -> None:
    """With the export cached, a process embedding a question with the default embedder
    never imports torch, and gets the torch model's row to float noise."""
    child = subprocess.run([sys.executable, "-c", _QUERY_IN_CHILD, str(prepared), QUESTION],
                           capture_output=True, text=True, timeout=300, check=False)
    assert child.returncode == 0, child.stderr
    found = json.loads(child.stdout.splitlines()[-1])
    assert found["torch"] is False
    expected = SentenceTransformerEmbedder().embed_query(QUESTION)
    np.testing.assert_allclose(np.asarray(found["row"], dtype=np.float32), expected,
                               atol=1e-5)


@pytest.fixture
def torch_unloaded(monkeypatch: pytest.MonkeyPatch) -> None:
    """As a fresh process finds the torch model: not loaded (this test process has it)."""
    monkeypatch.setattr(SentenceTransformerEmbedder, "is_loaded", property(lambda _: False))


class TestFastStartEmbedderFromTheExport(EmbedderContract):
    """The ``Embedder`` contract, every call of its texts served by the export."""

    expected_dimension = 384
    expected_model_name = "all-MiniLM-L6-v2"

    @pytest.fixture
    def embedder(self, prepared: Path, torch_unloaded: None) -> FastStartEmbedder:
        return FastStartEmbedder(SentenceTransformerEmbedder(), cache_dir=cache_of(prepared))


def test_which_engine_serves_a_call(prepared: Path, tmp_path: Path,
                                    torch_unloaded: None) -> None:
    """Torch not loaded: a question or a few texts go to the export, a batch larger than
    a query's to torch; without an export, torch serves everything."""
    cached = FastStartEmbedder(SentenceTransformerEmbedder(), cache_dir=cache_of(prepared))
    assert cached.queries_prepared
    assert isinstance(cached._engine(1), OnnxEmbedder)
    assert isinstance(cached._engine(SMALL_CALL_TEXTS), OnnxEmbedder)
    assert isinstance(cached._engine(SMALL_CALL_TEXTS + 1), SentenceTransformerEmbedder)
    none = FastStartEmbedder(SentenceTransformerEmbedder(), cache_dir=tmp_path / "empty")
    assert not none.queries_prepared
    assert isinstance(none._engine(1), SentenceTransformerEmbedder)


def test_once_torch_is_loaded_it_serves_questions_too(prepared: Path) -> None:
    """A process that loaded torch (an ingest) keeps one model: questions use it."""
    embedder = FastStartEmbedder(SentenceTransformerEmbedder(), cache_dir=cache_of(prepared))
    embedder.embed_texts(["a passage"] * (SMALL_CALL_TEXTS + 1))
    assert isinstance(embedder._engine(1), SentenceTransformerEmbedder)


@pytest.fixture(scope="module")
def services(hotpot_built: Path, prepared: Path,
             tmp_path_factory: pytest.TempPathFactory
             ) -> Iterator[tuple[LocalClient, LocalClient]]:
    """Two copies of HotpotQA-100 as ingested with torch: one queried through torch (as
    before the export existed), one through the export (as a fresh query process)."""
    data_dir = tmp_path_factory.mktemp("hotpot-onnx") / "data"
    shutil.copytree(hotpot_built, data_dir)
    settings = Settings(data_dir=data_dir).resolved()
    onnx = OnnxEmbedder(cache_dir=cache_of(prepared))
    # Client.local opens backends of its own: the client over a service built on the
    # export's embedder is the same client with that embedder.
    with hotpot_client(hotpot_built, tmp_path_factory) as by_torch, \
            LocalClient(Hopindex(settings, open_backends(settings, embedder=onnx))) as by_onnx:
        yield by_torch, by_onnx


@pytest.mark.parametrize("method", ["hops", "naive"])
def test_the_sample_questions_rank_the_same_either_way(services: tuple[LocalClient, LocalClient],
                                                       method: str) -> None:
    """All 100 HotpotQA questions, top 10: the same passages in the same order through
    the export as through torch, scores within float noise, question rows within 1e-5."""
    by_torch, by_onnx = services
    questions = load_questions(HOTPOT_SAMPLE / "questions.json", DatasetFormat.HOTPOTQA)
    assert len(questions) == 100
    for question in questions:
        expected = by_torch.query(HOTPOT_INDEX, question.question, method=method, k=10)
        found = by_onnx.query(HOTPOT_INDEX, question.question, method=method, k=10)
        assert [p.doc_id for p in found.passages] == [p.doc_id for p in expected.passages], \
            question.question
        np.testing.assert_allclose([p.score for p in found.passages],
                                   [p.score for p in expected.passages], atol=1e-5)
    np.testing.assert_allclose(by_onnx.service.backends.embedder.embed_query(QUESTION),
                               by_torch.service.backends.embedder.embed_query(QUESTION),
                               atol=1e-5)
