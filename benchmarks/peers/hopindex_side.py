"""One hopindex embedded ingest (the extractive default), run by ``ingest_peers.py``.

spaCy analysis, passages, bridges, tantivy BM25 and Qdrant Edge, in this process
(Celery's eager mode). Prints one JSON line of figures; with ``--digest`` also
writes the digest of every unit (kind, source key, text) it built.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import sys
import time
from pathlib import Path

# The benchmarks' shared helpers: standard library only, so the peer's venv has them too.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from common import high_water_mb  # importable only once the path is set


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--limit", type=int, required=True)
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--digest", type=Path, help="write the unit digests here")
    args = parser.parse_args()

    # The service, not the client: this runs in each arm's tree (PYTHONPATH), trees from
    # before the client included, and every tree has the service.
    from hopindex.api.service import Hopindex
    from hopindex.methods.registry import load_settings
    from hopindex.readers import RawDocument

    with gzip.open(args.corpus, "rt", encoding="utf-8") as fh:
        corpus = json.load(fh)[: args.limit]
    records = [RawDocument(doc_id=None, title=r["title"], text=r["text"].strip(), metadata={},
                           origin=f"corpus.json[{i}]") for i, r in enumerate(corpus)]
    cpu0, wall0 = time.process_time(), time.perf_counter()
    # Every HOPINDEX_* variable the driver passes (an ablation's), and our data folder.
    os.environ["HOPINDEX_DATA_DIR"] = str(args.data_dir)
    settings = load_settings()
    with Hopindex(settings) as service:
        job = service.ingest_documents("peer", records, method="extractive")
        cpu_s, wall_s = time.process_time() - cpu0, time.perf_counter() - wall0
        counts = service.backends.state.count_units("peer")
        if args.digest:
            state = service.backends.state
            units = state.units_of_documents("peer", sorted(state.document_hashes("peer")))
            args.digest.write_text(json.dumps(sorted(
                [u.kind.value, u.source_key, hashlib.sha256(u.text.encode()).hexdigest()[:16]]
                for u in units)))
    print(json.dumps({"ingest_cpu_s": cpu_s, "ingest_wall_s": wall_s,
                      "vm_hwm_mb": high_water_mb(), "documents": len(records),
                      "errors": len(job.errors),
                      "units": {k.value: v for k, v in counts.items()}}))


if __name__ == "__main__":
    main()
