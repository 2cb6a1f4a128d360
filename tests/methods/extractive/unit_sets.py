"""What the extractive ingest of the dev corpora holds, as compact digests.

A digest per document of its spaCy analysis (sentence bounds; entity texts, labels
and offsets) and one per unit of its text, keyed by kind and source key, so a test
can tell which documents or units changed, not only that something did. The
reference in ``data/unit_sets.json`` was written by the code before the ingest
was made cheaper; regenerate it only for a change meant to alter the index:

    .venv/bin/python -m tests.methods.extractive.unit_sets --write
    .venv/bin/python -m tests.methods.extractive.unit_sets   # compare, all 6,119 passages
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hopindex.api.client.local import LocalClient
from hopindex.core.models import TextAnalysis
from hopindex.core.settings import Settings
from hopindex.readers import RawDocument, read_paths
from tests.conftest import ingest_documents, local_client

ROOT = Path(__file__).resolve().parents[3]
REFERENCE = Path(__file__).resolve().parent / "data" / "unit_sets.json"
HOTPOT_CORPUS = ROOT / "hopindex" / "sample" / "hotpotqa-100" / "corpus.json"
WIKI_CORPUS = ROOT / "benchmarks" / "data" / "2wiki-corpus.json.gz"
INDEX = "unitsets"


def digest(value: Any) -> str:
    """16 hex digits of the sha256 of ``value`` as canonical JSON: enough to tell
    thousands of items apart, small enough to keep a reference of every one."""
    raw = json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    return hashlib.sha256(raw.encode()).hexdigest()[:16]


def analysis_digest(analysis: TextAnalysis) -> str:
    return digest([[[s.start, s.end] for s in analysis.sentences],
                   [[e.text, e.label, e.start, e.end] for e in analysis.entities]])


def hotpot_documents() -> list[RawDocument]:
    return list(read_paths([HOTPOT_CORPUS]).documents)


def wiki_documents() -> list[RawDocument]:
    """The 2Wiki passages as the benchmarks ingest them (title, stripped text)."""
    with gzip.open(WIKI_CORPUS, "rt", encoding="utf-8") as fh:
        corpus = json.load(fh)
    return [RawDocument(doc_id=None, title=r["title"], text=r["text"].strip(), metadata={},
                        origin=f"corpus.json[{i}]") for i, r in enumerate(corpus)]


def analysis_digests(client: LocalClient, texts: Sequence[str]) -> list[str]:
    return [analysis_digest(a) for a in client.service.backends.nlp.analyze_texts(texts)]


def ingested_units(client: LocalClient, documents: Sequence[RawDocument], index: str = INDEX
                   ) -> dict[str, dict[str, str]]:
    """Ingest ``documents`` with ``extractive`` into ``index`` (nothing to do where they
    are already there) and digest every unit it holds: {kind: {source key: digest of
    the text}}."""
    job = ingest_documents(client, index, documents, method="extractive")
    if job.errors:
        raise RuntimeError(f"ingest failed: {job.errors[:3]}")
    state = client.service.backends.state
    units = state.units_of_documents(index, sorted(state.document_hashes(index)))
    found: dict[str, dict[str, str]] = {}
    for unit in units:
        found.setdefault(unit.kind.value, {})[unit.source_key] = digest(unit.text)
    return {kind: dict(sorted(keys.items())) for kind, keys in sorted(found.items())}


def compute(data_dir: Path) -> dict[str, Any]:
    hotpot = hotpot_documents()
    wiki = wiki_documents()
    with local_client(Settings(data_dir=data_dir).resolved()) as client:
        return {
            "hotpotqa-100": {"analyses": analysis_digests(client, [d.text for d in hotpot]),
                             "units": ingested_units(client, hotpot)},
            "2wiki": {"analyses": analysis_digests(client, [d.text for d in wiki])},
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--write", action="store_true",
                        help="write the reference (default: compare with it)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        found = compute(Path(tmp))
    if args.write:
        REFERENCE.write_text(json.dumps(found, separators=(",", ":")) + "\n")
        print(f"wrote {REFERENCE} ({REFERENCE.stat().st_size:,} bytes)")
        return
    reference = json.loads(REFERENCE.read_text())
    differing = 0
    for corpus, parts in reference.items():
        for part, expected in parts.items():
            got = found[corpus][part]
            if part == "analyses":
                bad = [i for i, (a, b) in enumerate(zip(expected, got, strict=True)) if a != b]
            else:
                bad = sorted(f"{k}:{key}" for k in set(expected) | set(got)
                             for key in set(expected.get(k, {})) | set(got.get(k, {}))
                             if expected.get(k, {}).get(key) != got.get(k, {}).get(key))
            differing += len(bad)
            print(f"{corpus} {part}: {len(bad)} differ {bad[:10]}")
    sys.exit(1 if differing else 0)


if __name__ == "__main__":
    main()
