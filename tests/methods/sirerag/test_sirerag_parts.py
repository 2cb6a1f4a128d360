"""SiReRAG's pure parts: the aggregate rule, cluster keys, summary provenance, the pool."""

from __future__ import annotations

import pytest

from hopindex.core.errors import ConfigError, InvalidInputError
from hopindex.core.models import Document, Unit, UnitKind
from hopindex.methods.base import QueryOptions
from hopindex.methods.chunking import passage_units
from hopindex.methods.sirerag.aggregates import Entry, aggregate_unit, kept
from hopindex.methods.sirerag.method import SiReRagSettings
from hopindex.methods.sirerag.parsing import Proposition
from hopindex.methods.sirerag.propositions import METHOD, PassagePropositions, entity_key
from hopindex.methods.sirerag.query import Pool, in_pool, pool_of
from hopindex.methods.sirerag.trees import Tree, cluster_key, passages_beneath, summary_unit


def _entry(text: str, *entities: str, doc: str = "d1") -> Entry:
    return Entry(doc_id=doc, passage_id=f"{doc}-p", text=text, entities=frozenset(entities))


def _unit(unit_id: str, kind: UnitKind, **metadata: object) -> Unit:
    return Unit(unit_id=unit_id, index="i", kind=kind, text=unit_id, source_doc_ids=(unit_id,),
                method="sirerag", source_key=unit_id, metadata=dict(metadata))


def test_entity_keys_are_lower_cased_with_spaces_folded() -> None:
    """Propositions group by lower-cased entity: case and spacing do not split a group."""
    assert entity_key("  Marie   Curie ") == entity_key("marie curie") == "marie curie"


def test_an_entity_with_several_propositions_is_kept() -> None:
    """Two propositions make an aggregate whatever other entities they name."""
    assert kept("curie", [_entry("a", "curie", "paris"), _entry("b", "curie")], {"paris": 5})


def test_a_single_proposition_held_by_a_larger_aggregate_is_skipped() -> None:
    """The paper's rule: an entity with one proposition that also appears under another
    entity (with more) adds nothing and is skipped."""
    assert not kept("paris", [_entry("a", "curie", "paris")], {"curie": 2})


def test_a_proposition_every_entity_holds_alone_is_kept_once() -> None:
    """When each entity of a proposition has it as its only one, the first entity by key
    keeps it: neither lost nor indexed twice."""
    entries = [_entry("a", "curie", "paris")]
    counts = {"curie": 1, "paris": 1}
    assert kept("curie", entries, counts)
    assert not kept("paris", entries, counts)


def test_a_single_proposition_naming_only_its_entity_is_kept() -> None:
    """Nothing else holds it: the entity's aggregate is that proposition."""
    assert kept("curie", [_entry("a", "curie")], {})
    assert not kept("curie", [], {})


def test_an_aggregate_joins_propositions_in_order_and_names_its_passages() -> None:
    """Newline-joined in document order; provenance lists each source document and
    passage once, in order."""
    entries = [_entry("one", "x", doc="d1"), _entry("two", "x", doc="d2"),
               _entry("three", "x", doc="d1")]
    unit = aggregate_unit("i", "x", entries)
    assert unit.kind is UnitKind.PROPOSITION_AGGREGATE
    assert unit.text == "one\ntwo\nthree"
    assert unit.source_doc_ids == ("d1", "d2")
    assert unit.metadata["passages"] == ["d1-p", "d2-p"]
    assert aggregate_unit("i", "x", entries).unit_id == unit.unit_id


def test_cluster_keys_depend_on_the_members_not_their_order() -> None:
    """An unchanged cluster keeps its key (so its summary's id and cached reply), a
    changed one gets another; the level is part of the key."""
    assert cluster_key(0, ["b", "a"]) == cluster_key(0, ["a", "b"])
    assert cluster_key(0, ["a", "b"]) != cluster_key(0, ["a", "c"])
    assert cluster_key(1, ["a", "b"]).startswith("1:")


def test_a_summary_lists_its_children_and_the_passages_beneath_in_order() -> None:
    """Provenance: a summary over a passage, an aggregate and another summary names the
    passages beneath each child, in the children's order, each once."""
    children = [_unit("p1", UnitKind.PASSAGE),
                _unit("agg", UnitKind.PROPOSITION_AGGREGATE, passages=["p2", "p1"]),
                _unit("s0", UnitKind.SUMMARY, passages=["p3"])]
    unit = summary_unit("i", Tree.RELATEDNESS, 1, "1:abc", text="sum", children=children)
    assert unit.kind is UnitKind.SUMMARY and unit.level == 2
    assert unit.metadata["tree"] == "relatedness"
    assert unit.metadata["children"] == ["p1", "agg", "s0"]
    assert passages_beneath(unit) == ["p1", "p2", "p3"]
    assert passages_beneath(children[0]) == ["p1"]


def test_passages_are_the_documents_chunks_with_their_titles() -> None:
    """A short document is one passage of title and text; ids repeat for the same text."""
    document = Document(doc_id="d", index="i", title="Curie", text="Marie Curie was born.",
                        content_hash="")
    (unit,) = passage_units(document, ["Marie Curie was born."], METHOD)
    assert unit.text == "Curie\nMarie Curie was born."
    assert unit.kind is UnitKind.PASSAGE and unit.source_doc_ids == ("d",)
    assert passage_units(document, ["Marie Curie was born."], METHOD)[0].unit_id == unit.unit_id


def test_stored_propositions_round_trip() -> None:
    """A document's record reads back as written."""
    stored = PassagePropositions("p", (Proposition(text="t", entities=("A", "B")),))
    assert PassagePropositions.from_dict(stored.as_dict()) == stored


def test_the_similarity_pool_holds_passages_and_similarity_summaries_only() -> None:
    """``pool=similarity`` is RAPTOR's pool: no aggregates, no relatedness summaries."""
    passage = _unit("p", UnitKind.PASSAGE)
    aggregate = _unit("a", UnitKind.PROPOSITION_AGGREGATE)
    similar = _unit("s", UnitKind.SUMMARY, tree="similarity")
    related = _unit("r", UnitKind.SUMMARY, tree="relatedness")
    assert [in_pool(u, Pool.SIMILARITY) for u in (passage, aggregate, similar, related)] == [
        True, False, True, False]
    assert all(in_pool(u, Pool.BOTH) for u in (passage, aggregate, similar, related))


def test_an_unknown_pool_is_refused_naming_the_option() -> None:
    """A bad ``pool`` names the option and the values it takes."""
    assert pool_of(QueryOptions()) is Pool.BOTH
    assert pool_of(QueryOptions(params={"pool": "similarity"})) is Pool.SIMILARITY
    with pytest.raises(InvalidInputError, match="both, similarity") as raised:
        pool_of(QueryOptions(params={"pool": "everything"}))
    assert raised.value.where == "options.pool"


def test_settings_out_of_range_name_the_variable() -> None:
    """A bad setting stops the process naming ``HOPINDEX_SIRERAG_*``."""
    with pytest.raises(ConfigError, match="HOPINDEX_SIRERAG_REBUILD_SHARE"):
        SiReRagSettings(rebuild_share=1.5)
    with pytest.raises(ConfigError, match="HOPINDEX_SIRERAG_LEVELS"):
        SiReRagSettings(levels=0)
