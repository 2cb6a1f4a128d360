"""IndexRAG as its paper specifies it: whole documents to stage 1 (chunks only over the
token limit), Algorithm 1 walking the ranking until it holds k units, and facts
matched to an entity on whole words."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any, cast

import pytest

from hopindex.backends.llm.chat import CHARS_PER_TOKEN, ChatRequest, ChatResult
from hopindex.backends.llm.usage import UsageMeter
from hopindex.backends.protocols import UnitFilter, Vector
from hopindex.core.errors import ConfigError
from hopindex.core.models import Document, Hit, Unit, UnitKind
from hopindex.methods.base import QueryOptions, SearchContext
from hopindex.methods.indexrag.method import IndexRagSettings
from hopindex.methods.indexrag.parsing import DocFacts, QaPair
from hopindex.methods.indexrag.planning import plan_stage1_calls
from hopindex.methods.indexrag.query import IndexRagMethod
from hopindex.methods.indexrag.units import (
    RETRIEVE_K,
    mentions,
    select_facts,
    stage1_inputs,
)

INDEX = "hand"


# --- stage 1: whole documents up to the token limit ----------------------------------


def _doc(text: str) -> Document:
    return Document(doc_id="d1", index=INDEX, title="Long Title", text=text, content_hash="h")


def test_a_document_under_the_limit_is_one_input_and_one_request_holding_all_of_it() -> None:
    """A 7,000-character document (over the old 2,000-character chunks) under the
    default 2,000-token limit is sent whole: one input, one planned request, and that
    request's prompt holds the full text."""
    text = " ".join(f"Sentence {n} names Ada Lovelace and the Analytical Engine." for n in
                    range(120))
    assert 2000 * 2 < len(text) < IndexRagSettings().max_document_tokens * CHARS_PER_TOKEN
    assert stage1_inputs(_doc(text), IndexRagSettings().max_document_tokens) == [text]
    planned = plan_stage1_calls(_doc(text), IndexRagSettings().max_document_tokens)
    assert len(planned.requests) == 1
    assert text in planned.requests[0].messages[-1][1]


def test_a_document_over_the_limit_is_chunked_within_it_with_overlap() -> None:
    """Over the limit, the document is cut into chunks of at most the limit (in the
    client's characters per token) that overlap and together cover the text."""
    limit = 100  # tokens: 400 characters
    text = "".join(f"{n:04d} " for n in range(300))  # 1,500 characters
    chunks = stage1_inputs(_doc(text), limit)
    assert len(chunks) == 7  # windows of 400 characters, 200 apart
    assert all(len(c) <= limit * CHARS_PER_TOKEN for c in chunks)
    assert all(c[-20:].strip() in n for c, n in itertools.pairwise(chunks))
    assert chunks[0].startswith("0000") and chunks[-1].endswith("0299")
    assert len(plan_stage1_calls(_doc(text), limit).requests) == len(chunks)


def test_the_limits_are_validated() -> None:
    """A token limit too small to chunk by, or a candidate bound outside 20..1000, is
    refused naming the variable."""
    with pytest.raises(ConfigError, match="HOPINDEX_INDEXRAG_MAX_DOCUMENT_TOKENS"):
        IndexRagSettings(max_document_tokens=50)
    with pytest.raises(ConfigError, match="HOPINDEX_INDEXRAG_MAX_CANDIDATES"):
        IndexRagSettings(max_candidates=10)


# --- facts mention an entity on whole words ------------------------------------------


@pytest.mark.parametrize(("entity", "text", "found"), [
    ("art", "Arthur Miller wrote plays.", False),
    ("art", "He studied art in Paris.", True),
    ("art", "Art's history is long.", True),
    ("paris", "Parisian cafés", False),
    ("a.c. milan", "He joined A.C. Milan in 1990.", True),
    ("guns n' roses", "Slash played in Guns N' Roses.", True),
    ("são paulo", "Born in São Paulo, Brazil.", True),
    ("são paulo", "São Pauloense club", False),
    ("köln", "Kölner Dom", False),
    ("art", "Les artères du cœur", False),  # "è" is a word character, not an end
])
def test_a_fact_mentions_an_entity_only_as_whole_words(entity: str, text: str,
                                                       found: bool) -> None:
    """'art' is not in 'Arthur' (nor in 'artères', nor 'köln' in 'Kölner': Unicode
    letters are word characters), yet is in "Art's"; names with dots or apostrophes
    match themselves."""
    assert mentions(entity, QaPair(question="Q?", answer=text)) is found


def test_stage2_evidence_leaves_out_facts_naming_a_longer_word() -> None:
    """The facts of 'art' are those naming art, not Arthur's: a document mentioning
    only 'Arthur' gives no evidence for 'art'."""
    arthur = DocFacts("d1", "Arthur", (QaPair("Who is Arthur?", "Arthur is a king."),))
    art = DocFacts("d2", "Art", (QaPair("What is art?", "Art is expression."),))
    assert [d.doc_id for d in select_facts("art", [arthur, art])] == ["d2"]


# --- Algorithm 1 walks the ranking until it holds k --------------------------------


class _Vectors:
    """A hand-made index's vector store: a fixed ranking; each search returns its
    first k, as a real store does for a fixed question."""

    def __init__(self, ranking: Sequence[str]) -> None:
        self.ranking = list(ranking)
        self.asked: list[int] = []

    def search_vectors(self, index: str, vector: Vector, k: int,
                       unit_filter: UnitFilter | None = None) -> list[Hit]:
        self.asked.append(k)
        return [Hit(unit_id=u, score=1.0 - n / 1000) for n, u in enumerate(self.ranking[:k])]


class _Units:
    def __init__(self, units: Sequence[Unit]) -> None:
        self.by_id = {u.unit_id: u for u in units}

    def get_units(self, index: str, unit_ids: Sequence[str]) -> list[Unit]:
        return [self.by_id[u] for u in unit_ids if u in self.by_id]

    def units_of_documents(self, index: str, doc_ids: Sequence[str],
                           kinds: Sequence[UnitKind] = ()) -> list[Unit]:
        return []


class _Documents:
    def get_documents(self, index: str, doc_ids: Sequence[str]) -> list[Document]:
        return [Document(doc_id=d, index=INDEX, title=d, text=d, content_hash="h")
                for d in doc_ids]


class _Embedder:
    def __init__(self) -> None:
        self.calls = 0

    def embed_query(self, text: str) -> Vector:
        self.calls += 1
        return [1.0, 0.0]


class _Llm:
    def __init__(self) -> None:
        self.requests: list[ChatRequest] = []

    def complete(self, request: ChatRequest, usage: UsageMeter) -> ChatResult:
        self.requests.append(request)
        return ChatResult(content="answer", prompt_tokens=10, completion_tokens=1,
                          cached=False)


def _unit(name: str, kind: UnitKind) -> Unit:
    return Unit(unit_id=name, index=INDEX, kind=kind, text=f"text of {name}",
                source_doc_ids=(f"doc-{name}",), method="indexrag", source_key=name)


def _hand_made(bridges: int, akus: int, settings: IndexRagSettings | None = None
               ) -> tuple[IndexRagMethod, _Vectors, _Embedder, _Llm]:
    """An index whose ranking puts ``bridges`` bridging facts first, then ``akus`` AKUs."""
    units = [_unit(f"b{n:03d}", UnitKind.BRIDGE) for n in range(bridges)]
    units += [_unit(f"a{n:03d}", UnitKind.AKU) for n in range(akus)]
    vectors, embedder, llm = _Vectors([u.unit_id for u in units]), _Embedder(), _Llm()
    own = settings or IndexRagSettings()
    context = SearchContext(
        vectors=cast(Any, vectors), keywords=cast(Any, None), units=cast(Any, _Units(units)),
        documents=cast(Any, _Documents()), indexes=cast(Any, None),
        embedder=cast(Any, embedder), llm=cast(Any, llm),
        read_settings=lambda name: own,
        index_kinds=lambda index: frozenset({UnitKind.AKU, UnitKind.BRIDGE}))
    return IndexRagMethod(context), vectors, embedder, llm


def test_selection_searches_deeper_until_it_holds_ten_units() -> None:
    """The top 20 of this index are 18 bridging facts and 2 AKUs: 5 eligible units.
    The selection fetches 20 more at a time (one embedding, reused) until it holds
    10: 3 bridging facts and 7 AKUs, in ranking order, all of them in the one answer
    prompt."""
    method, vectors, embedder, llm = _hand_made(bridges=18, akus=30)
    result = method.run_query(INDEX, "Who?", QueryOptions(k=5))
    selected = result.trace["selected"]
    assert len(selected) == 10
    assert [s["unit_id"] for s in selected] == ["b000", "b001", "b002", *(
        f"a{n:03d}" for n in range(7))]
    assert vectors.asked == [RETRIEVE_K, 2 * RETRIEVE_K]
    assert result.trace["candidates"] == 2 * RETRIEVE_K
    assert embedder.calls == 1
    assert len(llm.requests) == 1
    prompt = llm.requests[0].messages[-1][1]
    assert all(f"text of {s['unit_id']}" in prompt for s in selected)


def test_selection_stops_when_the_index_is_exhausted() -> None:
    """An index of 30 bridging facts and 4 AKUs can give only 7 units: the selection
    stops when a search returns fewer candidates than asked."""
    method, vectors, _, _ = _hand_made(bridges=30, akus=4)
    result = method.run_query(INDEX, "Who?", QueryOptions(k=5))
    assert len(result.trace["selected"]) == 7
    assert vectors.asked == [20, 40]


def test_selection_stops_at_the_candidate_bound() -> None:
    """HOPINDEX_INDEXRAG_MAX_CANDIDATES bounds the searches: with 40, a ranking whose
    first 100 are bridging facts yields the 3 allowed ones after two searches."""
    method, vectors, _, _ = _hand_made(bridges=100, akus=10,
                                       settings=IndexRagSettings(max_candidates=40))
    result = method.run_query(INDEX, "Who?", QueryOptions(k=5))
    assert len(result.trace["selected"]) == 3
    assert vectors.asked == [20, 40]


def test_a_top_twenty_with_enough_eligible_units_makes_one_search() -> None:
    """When the first 20 hold 10 eligible units, nothing more is fetched (the paper's
    case: its k = 10 of the 20 retrieved)."""
    method, vectors, _, _ = _hand_made(bridges=5, akus=30)
    result = method.run_query(INDEX, "Who?", QueryOptions(k=5))
    assert len(result.trace["selected"]) == 10
    assert vectors.asked == [20]
