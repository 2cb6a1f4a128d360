"""``kgbridge``: partitioned knowledge graphs bridged by verified SAME_AS links
("BridgeRAG: A Framework for Reasoning over Partitioned Knowledge Graphs", an ICLR 2026
submission with no arXiv id at the time of writing): one graph per document, so that
popular entities do not saturate a global graph, and documents joined only through
same-name entities the model confirms are one.

``graphs`` is the documents phase (passages, one graph and its summaries per
document), ``links`` the groups phase (per entity name, the adjudicated links between
documents, and the functions a route listing and rejecting links calls); ``prompts``
and ``parsing`` hold the four LLM calls, ``settings`` the ``HOPINDEX_KGBRIDGE_*``
variables and ``method`` the index method. The query side reads the records these
phases keep.
"""

from hopindex.methods.kgbridge.method import KgBridgeIndexMethod, KgBridgeSettings
from hopindex.methods.plugin import MethodRegistry

__all__ = ["KgBridgeIndexMethod", "KgBridgeSettings", "register"]


def register(registry: MethodRegistry) -> None:
    registry.add_index_method(KgBridgeIndexMethod())
