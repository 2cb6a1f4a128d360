"""``hops``' parameters and the pure parts of its graph step: bad values name the
parameter, named titles keep the longest span, and fusion ranks by agreement."""

from __future__ import annotations

import pytest

from hopindex.core.errors import InvalidInputError
from hopindex.core.models import Unit, UnitKind
from hopindex.methods.hops.graph import RankedDoc, fuse_documents, named_documents
from hopindex.methods.hops.params import Chain, HopsParams, Walk


def passage(doc_id: str, title: str) -> RankedDoc:
    unit = Unit(unit_id=f"u-{doc_id}", index="i", kind=UnitKind.PASSAGE, text=title,
                source_doc_ids=(doc_id,), method="extractive", source_key=f"{doc_id}#0",
                metadata={"title": title, "chunk": 0})
    return RankedDoc(doc_id, unit, 1.0)


def test_params_read_strings_and_name_a_bad_one() -> None:
    """Command-line strings convert; an unknown name or a value out of bounds is refused
    naming ``params.KEY``."""
    params = HopsParams.from_params({"walk": "OFF", "seeds": "2", "walk_weight": 0.5})
    assert (params.walk, params.seeds, params.walk_weight) == (Walk.OFF, 2, 0.5)
    with pytest.raises(InvalidInputError) as unknown:
        HopsParams.from_params({"hops": 3})
    assert unknown.value.where == "params.hops"
    with pytest.raises(InvalidInputError) as bounded:
        HopsParams.from_params({"rrf_k": 0})
    assert bounded.value.where == "params.rrf_k"
    with pytest.raises(InvalidInputError) as choice:
        HopsParams.from_params({"feedback": "sparse"})
    assert choice.value.where == "params.feedback"
    chained = HopsParams.from_params({"chain": "mentions", "chain_hops": "4"})
    assert (chained.chain, chained.chain_hops) == (Chain.MENTIONS, 4)
    with pytest.raises(InvalidInputError) as too_long:
        HopsParams.from_params({"chain_hops": 5})  # hop 5 is past what was measured
    assert too_long.value.where == "params.chain_hops"


def test_named_titles_keep_the_longest_span() -> None:
    """"The Hairdresser" sits inside a longer title the question names: only the longer
    one counts; a title named on its own (disambiguation dropped) counts too."""
    docs = [passage("a", "The Hairdresser"),
            passage("b", "The Blue Collar Worker and the Hairdresser"),
            passage("c", "Henry Goes Arizona (film)"),
            passage("d", "Arizona")]
    question = ("Which film came first, Henry Goes Arizona or The Blue Collar Worker "
                "and the Hairdresser?")
    titles = {d.doc_id: str(d.unit.metadata["title"]) for d in docs}
    assert [d.doc_id for d in named_documents(question, docs, titles)] == ["b", "c"]


def test_fusion_rewards_agreement_between_lists() -> None:
    """A document second in two lists beats one first in a single list of equal weight,
    and each keeps its rank per list."""
    a, b, c = passage("a", "A"), passage("b", "B"), passage("c", "C")
    fused = fuse_documents([("hop1", 1.0, [a, b]), ("walk", 1.0, [c, b])], rrf_k=5)
    assert fused[0][0].doc_id == "b"
    assert fused[0][2] == {"hop1": 2, "walk": 2}
