"""``indexrag``: index-time bridging facts (docs/methods.md, "IndexRAG"), the pure parts.

Stage 1 turns each document (whole, as the paper does, up to a token limit; in
chunks above it) into atomic question-answer pairs and an entity list; its answers
form one AKU unit. Stage 2 asks, per bridge entity, for facts that combine two or
more documents; each becomes a bridge unit. A query keeps every AKU but at most
``k_b`` bridging facts (balanced selection), searching deeper until it holds k units.

The prompts, reply validators, unit builders and selection are pure and testable
offline; ``indexing`` makes a batch's calls, ``method`` is the index method and
``query`` the query method.
"""

from hopindex.core.models import UnitKind
from hopindex.methods.indexrag.method import IndexRagIndexMethod
from hopindex.methods.indexrag.query import IndexRagMethod
from hopindex.methods.plugin import LlmUse, MethodRegistry, QueryMethodSpec
from hopindex.methods.retrieval.answer import OPTIONS_SCHEMA

__all__ = ["IndexRagIndexMethod", "IndexRagMethod", "register"]


def register(registry: MethodRegistry) -> None:
    registry.add_index_method(IndexRagIndexMethod())
    registry.add_query_method(QueryMethodSpec(
        name=IndexRagMethod.name, factory=IndexRagMethod,
        reads=frozenset({UnitKind.AKU}), llm_use=LlmUse.REQUIRED,
        summary="AKUs and at most k_b bridging facts, one answer call",
        options_schema=OPTIONS_SCHEMA))
