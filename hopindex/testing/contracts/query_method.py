"""The query method contract: what every registered query method answers, and refuses.

Each test runs for every (query method, index method) pair the registry knows, the
pairs where the query method fits (it reads a unit kind the index method writes) or,
for the refusal test, where it does not. The test class provides ``build_index``: a
function that builds a small index with a given index method and returns the client
holding it (``Client.local``), the index name and a question its documents answer.
Queries go through the client; the provenance test reads the units behind it. The contract builds
each index once per test class.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar

import pytest

from hopindex.api.client.local import LocalClient
from hopindex.core.errors import InvalidInputError
from hopindex.core.models import UnitKind
from hopindex.methods.base import QueryResult, QueryUsage, RankedPassage
from hopindex.methods.phases import PHASES
from hopindex.methods.plugin import LlmUse
from hopindex.methods.registry import (
    check_fit,
    fits,
    fitting_queries,
    get_query_method,
    index_method_names,
    query_method_names,
)

UNIT_KINDS = frozenset(kind.value for kind in UnitKind)


@dataclass(frozen=True, slots=True)
class QueryTarget:
    """An index built for the contract: the client it is reached through, its name and
    what to ask it."""

    client: LocalClient
    index: str
    question: str


IndexFactory = Callable[[str], QueryTarget]


@dataclass(frozen=True, slots=True)
class Pairing:
    """A query method asked of an index built by an index method."""

    query: str
    index_method: str

    def __str__(self) -> str:
        return f"{self.query}-on-{self.index_method}"


def pairings(queries: Sequence[str], index_methods: Sequence[str], *,
             fitting: bool) -> list[Pairing]:
    return [Pairing(query, method) for query in queries for method in index_methods
            if fits(get_query_method(query), method) is fitting]


class QueryMethodContract:
    """Subclass with a class-scoped ``build_index`` fixture. ``query_methods`` and
    ``index_methods`` narrow the pairs (None: every registered method), for a class
    whose service cannot build or answer them all (no LLM configured)."""

    query_methods: ClassVar[Sequence[str] | None] = None
    index_methods: ClassVar[Sequence[str] | None] = None

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        queries = self.query_methods if self.query_methods is not None else query_method_names()
        methods = self.index_methods if self.index_methods is not None else index_method_names()
        for name, fitting in (("fitting", True), ("misfit", False)):
            if name in metafunc.fixturenames:
                found = pairings(queries, methods, fitting=fitting)
                if found:
                    metafunc.parametrize(name, found, ids=[str(p) for p in found])
                else:
                    unfit = "fits" if fitting else "fails to fit"
                    metafunc.parametrize(name, [pytest.param(None, id="none", marks=(
                        pytest.mark.skip(reason=f"no query method here {unfit} any index "
                                                "method here")))])

    @pytest.fixture(scope="class")
    def build_index(self) -> IndexFactory:
        raise NotImplementedError("the test class provides the class-scoped build_index "
                                  "fixture")

    @pytest.fixture(scope="class")
    def target_of(self, build_index: IndexFactory) -> IndexFactory:
        """``build_index``, each index method's index built once for the class."""
        built: dict[str, QueryTarget] = {}

        def target(index_method: str) -> QueryTarget:
            if index_method not in built:
                built[index_method] = build_index(index_method)
            return built[index_method]

        return target

    def ask(self, target_of: IndexFactory, pairing: Pairing, k: int = 5) -> QueryResult:
        target = target_of(pairing.index_method)
        return target.client.query(target.index, target.question, method=pairing.query, k=k)

    def test_result_has_its_shape(self, target_of: IndexFactory, fitting: Pairing) -> None:
        """The result names the question, method and index asked; its fields have their
        types; ``as_dict`` is strict JSON (no NaN) and carries every passage."""
        target = target_of(fitting.index_method)
        result = self.ask(target_of, fitting)
        assert isinstance(result, QueryResult)
        assert (result.question, result.method, result.index) == (
            target.question, fitting.query, target.index)
        assert result.answer is None or isinstance(result.answer, str)
        assert isinstance(result.trace, dict)
        assert isinstance(result.usage, QueryUsage)
        assert result.latency_s >= 0
        assert all(isinstance(p, RankedPassage) for p in result.passages)
        assert all(isinstance(p.score, float | int) and math.isfinite(p.score)
                   for p in result.passages)
        data = json.loads(json.dumps(result.as_dict(), allow_nan=False))
        assert [p["rank"] for p in data["passages"]] == [p.rank for p in result.passages]
        assert data["method"] == fitting.query

    @pytest.mark.parametrize("k", [1, 3])
    def test_k_is_respected(self, target_of: IndexFactory, fitting: Pairing, k: int) -> None:
        """At most ``k`` passages, at least one (the question is about the documents),
        ranked 1 to n in order."""
        passages = self.ask(target_of, fitting, k=k).passages
        assert 1 <= len(passages) <= k
        assert [p.rank for p in passages] == list(range(1, len(passages) + 1))

    def test_usage_speaks_the_phase_vocabulary(self, target_of: IndexFactory,
                                               fitting: Pairing) -> None:
        """Time is reported only in the shared query phases, none negative; a method
        declaring no LLM use makes no LLM call."""
        usage = self.ask(target_of, fitting).usage
        assert set(usage.phases_s) <= PHASES, set(usage.phases_s) - PHASES
        assert all(seconds >= 0 for seconds in usage.phases_s.values())
        assert min(usage.llm_calls, usage.prompt_tokens, usage.completion_tokens,
                   usage.cache_hits, usage.llm_retries) >= 0
        if get_query_method(fitting.query).llm_use is LlmUse.NONE:
            assert usage.llm_calls == 0

    def test_every_passage_has_provenance(self, target_of: IndexFactory,
                                          fitting: Pairing) -> None:
        """Each passage is a document of the index reached through a unit of the index:
        the unit exists, has the kind the passage says, and cites the document."""
        target = target_of(fitting.index_method)
        state = target.client.service.backends.state
        passages = self.ask(target_of, fitting).passages
        documents = set(state.document_hashes(target.index))
        for passage in passages:
            assert passage.via_unit_id, passage
            assert passage.via_kind in UNIT_KINDS, passage
            assert passage.doc_id in documents, passage
            units = state.get_units(target.index, [passage.via_unit_id])
            assert len(units) == 1, passage
            assert units[0].kind.value == passage.via_kind
            assert passage.doc_id in units[0].source_doc_ids

    def test_index_it_cannot_read_is_refused(self, target_of: IndexFactory,
                                             misfit: Pairing) -> None:
        """Asked of an index it reads nothing of, the method is refused with invalid
        input naming every method that fits the index, by the client and by
        ``check_fit`` alike."""
        target = target_of(misfit.index_method)
        fitting = fitting_queries(misfit.index_method)
        with pytest.raises(InvalidInputError) as refused:
            target.client.query(target.index, target.question, method=misfit.query)
        with pytest.raises(InvalidInputError) as checked:
            check_fit(misfit.query, target.index, misfit.index_method)
        for error in (refused.value, checked.value):
            assert all(name in str(error) for name in fitting), (str(error), fitting)
            assert misfit.query in str(error)
