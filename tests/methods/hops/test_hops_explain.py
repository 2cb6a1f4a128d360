"""``hops`` says why each passage ranks, from its trace, for a model reading search
results: the fused lists that found it, and for a walked-to passage the entity and seed
that led there."""

from __future__ import annotations

from hopindex.methods.hops import describe_trace, explain_passages
from hopindex.methods.registry import get_query_method


def test_each_ranked_passage_is_explained_by_its_lists_and_walk() -> None:
    trace = {
        "walk": [{"entity": "Ed Wood", "bridge": "b1", "similarity": 0.7,
                  "from": ["seed-doc"], "to": ["walked-doc"]}],
        "ranks": [
            {"doc_id": "seed-doc", "title": "S", "score": 0.03, "lists": {"hop1": 1}},
            {"doc_id": "walked-doc", "title": "W", "score": 0.02,
             "lists": {"walk": 1, "named": 2}},
        ],
    }
    assert explain_passages(trace) == {
        "seed-doc": "matched the question (hop 1, #1)",
        "walked-doc": "reached through a shared entity (#1); named in the question (#2); "
                      "'Ed Wood' links it to seed-doc",
    }


def test_a_third_hop_is_explained_by_the_entity_that_led_there() -> None:
    """A passage only the chain reached names its hop and the bridge it came through;
    ``--trace`` lists each later hop with its seeds."""
    trace = {
        "seeds": ["film"],
        "walk": [{"entity": "Ed Wood", "bridge": "b1", "similarity": 0.7,
                  "from": ["film"], "to": ["director"]}],
        "chain": [{"hop": 3, "seeds": ["director"],
                   "walk": [{"entity": "Kathy Wood", "bridge": "b2", "similarity": 0.5,
                             "from": ["director"], "to": ["wife"]}]}],
        "ranks": [{"doc_id": "wife", "title": "Kathy Wood", "score": 0.01,
                   "lists": {"hop3": 1, "hop1": 7}}],
    }
    assert explain_passages(trace)["wife"] == (
        "reached through a shared entity from hop 2 (hop 3, #1); matched the question "
        "(hop 1, #7); 'Kathy Wood' links it to director")
    assert "hop 3 from director: 'Kathy Wood' -> wife" in describe_trace(trace)


def test_the_method_registers_its_explanation() -> None:
    assert get_query_method("hops").explain_passages is explain_passages
    assert explain_passages({}) == {}
