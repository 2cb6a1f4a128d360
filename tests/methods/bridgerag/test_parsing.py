"""Validators of the SVO, entity, merged and judge replies."""

from __future__ import annotations

import pytest

from hopindex.backends.llm.reply_shapes import collecting_notes
from hopindex.core.errors import ReplyShapeError
from hopindex.methods.bridgerag.parsing import (
    judge_parser,
    parse_entity_pair,
    parse_extracted,
    parse_queries,
)


def test_queries_are_distinct_trimmed_and_at_most_three() -> None:
    """Blank and repeated (case-blind) queries go; extra ones are cut at three."""
    value = {"queries": ["  Curie  married whom ", "", "curie married whom", "b", "c", "d"]}
    assert parse_queries(value) == ("Curie married whom", "b", "c")


@pytest.mark.parametrize("value", [[], {"queries": "x"}, {"queries": [1]}, {"queries": [" "]},
                                   {"other": []}])
def test_wrong_query_shapes_are_rejected_for_repair(value: object) -> None:
    """A reply the client should repair raises one of the errors it catches."""
    with pytest.raises((TypeError, ValueError, KeyError)):
        parse_queries(value)


def test_entity_pair_forms() -> None:
    """'e1 | e2' on any line; one entity is used twice; quotes and blanks go; nothing
    gives two empty strings (no search) rather than an error."""
    assert parse_entity_pair("Michael Curtiz | Edith Carlmar") == ("Michael Curtiz",
                                                                   "Edith Carlmar")
    assert parse_entity_pair('Sure:\n"Westminster" | "1975"\n') == ("Westminster", "1975")
    assert parse_entity_pair("Westminster") == ("Westminster", "Westminster")
    assert parse_entity_pair("Westminster | ") == ("Westminster", "Westminster")
    assert parse_entity_pair("  ") == ("", "")


@pytest.mark.parametrize(("reply", "pair"), [
    ("Entities: Westminster | 1975", ("Westminster", "1975")),
    ("**Entities:** Michael Curtiz | Edith Carlmar", ("Michael Curtiz", "Edith Carlmar")),
    ("**Westminster** | **1975**", ("Westminster", "1975")),
    ("- `Westminster` | `1975`", ("Westminster", "1975")),
    ("1. Westminster | 2. 1975", ("Westminster", "1975")),
    ("**Entity 1**: Westminster | **Entity 2**: 1975", ("Westminster", "1975")),
    ("e1: Westminster | e2: 1975", ("Westminster", "1975")),
    ("- **e1:** `Westminster`", ("Westminster", "Westminster")),
    ("Here they are:\n1. Westminster\n2. 1975", ("Westminster", "1975")),
    ("Westminster \u2014 1975", ("Westminster", "1975")),
])
def test_entity_pair_loses_labels_and_markdown(reply: str, pair: tuple[str, str]) -> None:
    """A label ("Entities:", "e1:", "**Entity 1**:"), markdown (bold, code marks), a
    list bullet or number do not end up in the entity searched; entities listed on
    lines of their own, or split on the em dash the paper's text names, are read too."""
    assert parse_entity_pair(reply) == pair


@pytest.mark.parametrize("name", ["A.C. Milan", "Guns N' Roses", "Star Wars: Episode IV",
                                  "1. FC K\u00f6ln", "Entity Framework", "R&B"])
def test_entity_pair_keeps_punctuation_that_belongs_to_the_name(name: str) -> None:
    """Cleaning stops at the name: inner dots, apostrophes, a colon after a word that
    is no label, a number before an abbreviation ("1. FC Köln") stay."""
    assert parse_entity_pair(f"{name} | Other") == (name, "Other")
    assert parse_entity_pair(f"**{name}** | Other") == (name, "Other")


def test_merged_entities_lose_labels_and_markdown() -> None:
    """The merged call's entity list is cleaned the same way."""
    got = parse_extracted({"queries": ["q"], "entities": ["**e1:** Westminster", "`1975`"]})
    assert got.entities == ("Westminster", "1975")


def test_merged_reply_carries_queries_and_entities() -> None:
    """The merged call's entities come as a list (or an 'e1 | e2' string)."""
    got = parse_extracted({"queries": ["q1", "q2", "q3"], "entities": ["A", "B"]})
    assert got.queries == ("q1", "q2", "q3") and got.entities == ("A", "B")
    assert parse_extracted({"queries": ["q"], "entities": "A | B"}).entities == ("A", "B")
    assert parse_extracted({"queries": ["q"], "entities": ["A"]}).entities == ("A", "A")
    with pytest.raises(ValueError, match="entities"):
        parse_extracted({"queries": ["q"], "entities": []})
    with pytest.raises(ReplyShapeError, match='no "entities" key'):
        parse_extracted({"queries": ["q"]})


def test_judge_reply_shapes() -> None:
    """Scores keyed by number, as a list in candidate order, or as id/score objects;
    numeric strings and '7/10' are read, out-of-range values clamped, unknown ids
    ignored, and a candidate left out scores None."""
    parse = judge_parser(4)
    assert parse({"scores": {"1": 7, "2": "3", "[3]": "8/10", "9": 5}}) == (7.0, 3.0, 8.0, None)
    assert parse({"scores": [1, 2.5, 11, -1]}) == (1.0, 2.5, 10.0, 0.0)
    assert parse({"scores": [{"id": 2, "score": 6}, {"candidate": "4", "score": 1}]}) == (
        None, 6.0, None, 1.0)


@pytest.mark.parametrize("value", [[], {"scores": {}}, {"scores": {"7": 3}}, {"scores": 3},
                                   {"scores": {"1": "high"}}, {"scores": {"1": True}},
                                   {"scores": [None]}, {"result": "x"}])
def test_unusable_judge_replies_are_rejected_for_repair(value: object) -> None:
    """No usable score for any candidate is a wrong shape, a ReplyShapeError (a
    ValueError) naming the judge's scores."""
    with pytest.raises(ReplyShapeError, match=r"judge scores|bridgerag"):
        judge_parser(2)(value)


def test_judge_drops_bad_scores_not_the_reply() -> None:
    """A null, boolean or wordy score and an unknown id are dropped and noted, their
    candidates scoring None; the other scores are kept, numeric strings coerced."""
    with collecting_notes() as notes:
        scores = judge_parser(4)({"scores": {"1": None, "2": " 6 ", "3": True, "4": "high",
                                             "9": 5}})
    assert scores == (None, 6.0, None, None)
    assert (notes.dropped, notes.coerced) == (4, 1)


def test_judge_rescales_a_reply_given_on_zero_to_one() -> None:
    """Scores asked on 0-10 and all given in 0-1 with a fraction are read on 0-1 (x10,
    noted as rescaled); a 0-10 reply of whole numbers 0 and 1 is kept as given."""
    with collecting_notes() as notes:
        assert judge_parser(3)({"scores": {"1": 0.9, "2": "0.25", "3": 0}}) == (
            9.0, 2.5, 0.0)
    assert notes.rescaled == 1
    with collecting_notes() as notes:
        assert judge_parser(3)({"scores": [1, 0, 7]}) == (1.0, 0.0, 7.0)
        assert judge_parser(2)({"scores": [1, 0]}) == (1.0, 0.0)
    assert notes.rescaled == 0


def test_queries_and_entities_drop_misfits_and_keep_the_rest() -> None:
    """A null or numeric query or entity is dropped and noted, the others kept; a bare
    list of queries is read too; all-bad queries or entities fail the reply."""
    with collecting_notes() as notes:
        got = parse_extracted({"queries": [None, "q1", 7, "q2"], "entities": ["A", None, 3]})
    assert got.queries == ("q1", "q2") and got.entities == ("A", "A")
    assert notes.dropped == 4
    assert parse_queries(["q1", "q2"]) == ("q1", "q2")
    with pytest.raises(ReplyShapeError, match="bridgerag queries: no usable element"):
        parse_queries({"queries": [None, 1]})
    with pytest.raises(ReplyShapeError, match="bridgerag entities: no entity among 2"):
        parse_extracted({"queries": ["q"], "entities": [None, 2]})
