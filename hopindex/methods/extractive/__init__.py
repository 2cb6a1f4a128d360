"""``extractive``: hopindex's LLM-free bridges (docs/methods.md, "Extractive bridges").

Stage 1 keeps passages and their entities; link finds catalogue titles in each
text; stage 2 writes one cross-document bridge unit per entity shared by 2..tau
documents; a query fuses dense and BM25 hits over both and expands bridge hits to
their source passages.
"""

from hopindex.core.models import UnitKind
from hopindex.methods.extractive.method import ExtractiveIndexMethod
from hopindex.methods.extractive.query import ExtractiveMethod
from hopindex.methods.plugin import LlmUse, MethodRegistry, QueryMethodSpec

__all__ = ["ExtractiveIndexMethod", "ExtractiveMethod", "register"]


def register(registry: MethodRegistry) -> None:
    registry.add_index_method(ExtractiveIndexMethod())
    registry.add_query_method(QueryMethodSpec(
        name=ExtractiveMethod.name, factory=ExtractiveMethod,
        reads=frozenset({UnitKind.PASSAGE}), llm_use=LlmUse.NONE,
        summary="hybrid search over passages and bridges, bridge hits expanded to passages"))
