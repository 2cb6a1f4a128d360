"""A third-party method package, as an entry point of ``hopindex.methods`` names it.

The tests install it through a ``*.dist-info`` folder (``fixtures.py``): nothing in
``hopindex`` imports it, so the runtime can only find it the way it finds any plugin.
"""

from hopindex.core.models import UnitKind
from hopindex.methods.naive import NaiveMethod
from hopindex.methods.plugin import LlmUse, MethodRegistry, QueryMethodSpec
from tests.plugin_method.method import LazySentencesIndexMethod, SentencesIndexMethod

__all__ = ["LazySentencesIndexMethod", "SentencesIndexMethod", "register"]

QUERY = "sentences_naive"


def register(registry: MethodRegistry) -> None:
    registry.add_index_method(SentencesIndexMethod())
    registry.add_index_method(LazySentencesIndexMethod())
    registry.add_query_method(QueryMethodSpec(
        name=QUERY, factory=NaiveMethod, reads=frozenset({UnitKind.PASSAGE}),
        llm_use=LlmUse.NONE, summary="the naive query over the sentences method's passages"))
