"""The extractive index of the dev corpora holds what it held before ingest was made
cheaper: the same sentences and entities per document, the same units (kind, key,
text). The reference (``data/unit_sets.json``) was written by the code before that
work; see ``unit_sets.py`` to regenerate it or to check all 6,119 2Wiki passages."""

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from hopindex.api.client.local import LocalClient
from tests.conftest import HOTPOT_INDEX, hotpot_client
from tests.methods.extractive.unit_sets import (
    REFERENCE,
    analysis_digests,
    hotpot_documents,
    ingested_units,
    wiki_documents,
)

pytestmark = pytest.mark.integration

# Every 4th 2Wiki passage (1,530 of 6,119): spaCy over all of them takes about a
# minute on a 2-core machine, a quarter of it suffices to catch a changed pipeline.
WIKI_STRIDE = 4


@pytest.fixture(scope="module")
def reference() -> dict[str, dict[str, object]]:
    loaded: dict[str, dict[str, object]] = json.loads(REFERENCE.read_text())
    return loaded


@pytest.fixture(scope="module")
def client(hotpot_built: Path, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[LocalClient]:
    """A copy of the session's HotpotQA-100 ingest: built by the same code with the
    same settings as an ingest of its own here, without paying for it twice."""
    with hotpot_client(hotpot_built, tmp_path_factory) as opened:
        yield opened


def _differing(expected: dict[str, str], found: dict[str, str]) -> list[str]:
    return sorted(k for k in expected.keys() | found.keys() if expected.get(k) != found.get(k))


def test_hotpot_units_and_analyses_unchanged(client: LocalClient,
                                            reference: dict[str, dict[str, object]]) -> None:
    """The full HotpotQA-100 ingest builds exactly the reference passages and bridges,
    from exactly the reference sentences and entities of each of its 994 paragraphs."""
    documents = hotpot_documents()
    expected = reference["hotpotqa-100"]
    found_analyses = analysis_digests(client, [d.text for d in documents])
    changed = [d.title for d, a, b in zip(documents, expected["analyses"], found_analyses,
                                          strict=True) if a != b]
    assert not changed, f"{len(changed)} paragraphs analysed differently: {changed[:10]}"
    # The documents are already in the shared index: this re-ingest must skip them
    # all and leave exactly the units the first ingest built.
    units = ingested_units(client, documents, index=HOTPOT_INDEX)
    assert units.keys() == expected["units"].keys() == {"bridge", "passage"}
    for kind, keyed in expected["units"].items():
        differing = _differing(keyed, units[kind])
        assert not differing, f"{len(differing)} {kind} units differ: {differing[:10]}"


def test_wiki_analyses_unchanged(client: LocalClient,
                                 reference: dict[str, dict[str, object]]) -> None:
    """Every 4th 2Wiki passage gets exactly the reference sentences and entities, which
    (with the stage code unchanged) fix its passages, mentions and bridges."""
    documents = wiki_documents()[::WIKI_STRIDE]
    expected = reference["2wiki"]["analyses"][::WIKI_STRIDE]
    found = analysis_digests(client, [d.text for d in documents])
    changed = [d.title for d, a, b in zip(documents, expected, found, strict=True) if a != b]
    assert len(found) == 1530
    assert not changed, f"{len(changed)} passages analysed differently: {changed[:10]}"
