"""The kgbridge tests' corpus: two documents describing the same two entities, two
documents about different people who share a name, a long document of two chunks,
and one naming no entity at all."""

from __future__ import annotations

from hopindex.api.client.local import LocalClient
from hopindex.readers import RawDocument
from hopindex.testing.llm_server import LlmTestServer
from tests.conftest import LlmClientFactory, raw

INDEX = "kg"
ADA = raw("Ada Lovelace", "Ada Lovelace wrote programs for the Analytical Engine, a mechanical "
          "computer. Ada Lovelace was the daughter of Lord Byron.", doc_id="ada")
ENGINE = raw("Analytical Engine", "The Analytical Engine was a mechanical computer designed "
             "by Charles Babbage. Ada Lovelace wrote programs for it as a mathematician.",
             doc_id="engine")
FOOTBALLER = raw("John Smith (footballer)", "John Smith scored ninety goals for Leeds United.",
                 doc_id="smith-footballer")
PAINTER = raw("John Smith (painter)", "John Smith painted coastal landscapes in oil.",
              doc_id="smith-painter")
# Over 2,000 characters: two chunks, Lord Byron named in both.
BYRON = raw("Lord Byron", "Lord Byron was a poet of the Romantic movement. "
            + "The poems were read widely across many countries and translated often. " * 30
            + "Lord Byron travelled to Greece in later life.", doc_id="byron")
# No capitalised name: an empty graph.
QUIET = raw("River notes", "the river flows slowly past the old mill. nobody remembers its "
            "name any more.", doc_id="quiet")
CORPUS: list[RawDocument] = [ADA, ENGINE, FOOTBALLER, PAINTER, BYRON, QUIET]
LINKED_KEYS = {"ada lovelace", "analytical engine"}
# Names in two documents: the candidate pairs of the corpus.
CANDIDATE_KEYS = {"ada lovelace", "analytical engine", "john smith", "lord byron"}


def kg_client(make: LlmClientFactory, server: LlmTestServer, name: str = "data",
              **method_env: str) -> LocalClient:
    """A client of a service on ``server`` for chat and embeddings (the hashed bag of
    words, so cosines are the same on every run)."""
    return make(server, name, embedder_url=f"openai://{server.config.embedding_model}",
                method_env=method_env)
