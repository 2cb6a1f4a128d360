"""Dry runs of compactrag and sirerag against the local test server: each method's
per-document phase is planned exactly (the calls its ingest then sends, and nothing
once its records are current), its no-LLM groups phase plans 0, and what depends on
earlier replies (sirerag's trees) says "not planned"."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from hopindex.api.client.models import IngestPlanView
from hopindex.scheduler.dry_run import Planning
from hopindex.testing.llm_server import LlmTestServer
from tests.conftest import CURIE_CORPUS, ingest_documents, local_client, plan_documents
from tests.methods.indexrag.conftest import llm_settings

pytestmark = pytest.mark.integration


def _planning(plan: IngestPlanView) -> dict[str, tuple[Planning, int | None]]:
    return {p["phase"]: (Planning(p["planning"]), p["calls"]) for p in plan.phases}


def test_compactrag_qa_calls_are_planned_exactly(
        tmp_path: Path, start_server: Callable[..., LlmTestServer]) -> None:
    """The planned ``qa`` calls (with each chunk's spaCy entities in the prompt) are
    the ones the ingest sends: none of them is in the cache, and the count matches the
    server's; ``pairs`` calls no LLM."""
    server = start_server()
    with local_client(llm_settings(tmp_path / "data", server)) as client:
        plan = plan_documents(client, "qa", CURIE_CORPUS, method="compactrag")
        assert _planning(plan) == {"compactrag.qa": (Planning.EXACT, len(CURIE_CORPUS)),
                                   "compactrag.pairs": (Planning.BOUND, 0)}
        assert sum(server.stats.by_kind.values()) == 0
        ingest_documents(client, "qa", CURIE_CORPUS, method="compactrag")
        assert server.stats.by_kind.get("qa_pairs") == len(CURIE_CORPUS)
        # Planned the same again into a new index, every request is now a cache hit.
        again = plan_documents(client, "qa2", CURIE_CORPUS, method="compactrag")
        assert (again.phases[0]["calls"], again.phases[0]["cache_hits"]) == (
            0, len(CURIE_CORPUS))


def test_sirerag_propositions_are_planned_and_trees_are_not(
        tmp_path: Path, start_server: Callable[..., LlmTestServer]) -> None:
    """The ``propositions`` calls are the ingest's; aggregates plan 0 calls; the two
    trees, whose summaries depend on how clusters fall, are "not planned"."""
    server = start_server()
    with local_client(llm_settings(tmp_path / "data", server)) as client:
        plan = plan_documents(client, "sr", CURIE_CORPUS, method="sirerag")
        planning = _planning(plan)
        assert planning["sirerag.propositions"] == (Planning.EXACT, len(CURIE_CORPUS))
        assert planning["sirerag.aggregates"] == (Planning.BOUND, 0)
        assert planning["sirerag.similarity"] == (Planning.NOT_PLANNED, None)
        assert sum(server.stats.by_kind.values()) == 0
        ingest_documents(client, "sr", CURIE_CORPUS, method="sirerag")
        assert server.stats.by_kind.get("propositions") == len(CURIE_CORPUS)


def test_kgbridge_graphs_are_bounded_and_links_not_planned(
        tmp_path: Path, start_server: Callable[..., LlmTestServer]) -> None:
    """kgbridge's ``graphs`` phase knows its extraction requests exactly and bounds the
    summary calls built from their replies: the ingest sends exactly the planned
    extractions, and all its graphs calls stay within the bound; ``links`` is not
    planned."""
    server = start_server()
    with local_client(llm_settings(tmp_path / "data", server)) as client:
        plan = plan_documents(client, "kg", CURIE_CORPUS, method="kgbridge")
        graphs = plan.phases[0]
        assert graphs["phase"] == "kgbridge.graphs" and graphs["planning"] == Planning.BOUND
        # Per one-chunk document: extraction, gleaning, entity summaries, document summary.
        assert graphs["calls"] == 4 * len(CURIE_CORPUS)
        assert _planning(plan)["kgbridge.links"] == (Planning.NOT_PLANNED, None)
        assert sum(server.stats.by_kind.values()) == 0
        ingest_documents(client, "kg", CURIE_CORPUS, method="kgbridge")
        kinds = server.stats.by_kind
        assert kinds.get("kg_extract") == len(CURIE_CORPUS)
        assert kinds.get("kg_glean") == len(CURIE_CORPUS)
        sent = sum(kinds.get(k, 0) for k in ("kg_extract", "kg_glean", "kg_entity_summaries",
                                               "kg_doc_summary"))
        assert sent <= graphs["calls"]
