"""The kgbridge query's pure parts: the plan and sufficiency parsers, the plan held to
the routed documents, the question's entity keys and the manifest ranking, the query
settings, and the test server's replies to the query prompts."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hopindex.backends.llm.reply_shapes import collecting_notes
from hopindex.core.errors import ConfigError, ReplyShapeError
from hopindex.core.ids import unit_id
from hopindex.core.models import Unit, UnitKind
from hopindex.methods.kgbridge import query_prompts
from hopindex.methods.kgbridge.query_parsing import (
    AuxiliaryPick,
    PlanReply,
    parse_plan,
    parse_sufficiency,
    resolve_plan,
)
from hopindex.methods.kgbridge.query_prompts import (
    ContextLine,
    DocBrief,
    answer_request,
    plan_request,
    sufficiency_request,
)
from hopindex.methods.kgbridge.routing import fuse, question_keys, rank_by_manifest
from hopindex.methods.kgbridge.settings import KgBridgeSettings
from hopindex.testing import llm_kgbridge
from hopindex.testing.llm_responses import TaskKind, classify, compute_reply

ROUTED = ["ada", "engine", "byron", "smith"]


def test_a_plan_reply_is_read_leniently_where_meaning_is_kept() -> None:
    """A single id for a list, a numeric id, a missing reason and auxiliary, a single
    name for a list: all read; repeated ids kept once."""
    assert parse_plan({"primary": "ada"}) == PlanReply(("ada",), (), "")
    plan = parse_plan({"primary": [7, "7", "ada"], "auxiliary": [
        {"doc_id": "byron", "entities": "Lord Byron"}, {"doc_id": "x"}],
        "reason": " two\nlines "})
    assert plan.primary == ("7", "ada")
    assert plan.auxiliary == (AuxiliaryPick("byron", ("Lord Byron",)), AuxiliaryPick("x", ()))
    assert plan.reason == "two lines"


@pytest.mark.parametrize(("value", "named"), [
    ([], "kgbridge.plan: expected a JSON object"),
    ({"auxiliary": []}, '"primary"'),
    ({"primary": [None]}, "kgbridge.plan primary: no usable element among 1"),
    ({"primary": [" ", True]}, "kgbridge.plan primary: no usable document id among 2"),
    ({"primary": ["a"], "auxiliary": {"doc_id": "b"}},
     "kgbridge.plan auxiliary: expected a list, got dict"),
    ({"primary": ["a"], "auxiliary": ["b", None]},
     "kgbridge.plan auxiliary: no usable element among 2"),
])
def test_a_plan_of_the_wrong_shape_names_what_is_wrong(value: Any, named: str) -> None:
    """Each shape error is a ReplyShapeError (the client's repair is asked for) naming
    the reply kind and the field, raised when nothing usable remains there."""
    with pytest.raises(ReplyShapeError, match=named):
        parse_plan(value)


def test_a_plan_drops_misfit_ids_names_and_reason_not_the_reply() -> None:
    """A null or blank primary id, an auxiliary without a doc id, a name that is not
    text and a reason that is not text are dropped and noted; the rest is the plan."""
    with collecting_notes() as notes:
        plan = parse_plan({"primary": ["ada", None, " "], "auxiliary": [
            {"entities": ["X"]}, {"doc_id": "byron", "entities": ["Lord Byron", 3, None]}],
            "reason": 3})
    assert plan == PlanReply(("ada",), (AuxiliaryPick("byron", ("Lord Byron",)),), "")
    assert notes.dropped == 6


def test_the_plan_keeps_routed_documents_only_and_names_the_rest() -> None:
    """Unknown primary and auxiliary ids are dropped and named; at most two primary;
    an auxiliary that is also primary is read as primary; repeated auxiliaries merge."""
    plan = resolve_plan(PlanReply(
        primary=("nope", "engine", "ada", "byron"),
        auxiliary=(AuxiliaryPick("ghost", ("X",)), AuxiliaryPick("ada", ("Ada",)),
                   AuxiliaryPick("smith", ("John Smith",)),
                   AuxiliaryPick("smith", ("John Smith", "Leeds United"))),
        reason="r"), ROUTED)
    assert plan.primary == ("engine", "ada")
    assert plan.auxiliary == (AuxiliaryPick("smith", ("John Smith", "Leeds United")),)
    assert plan.degraded == (
        "plan named primary document 'nope', which was not routed: dropped",
        "plan named 3 primary documents: the first 2 kept",
        "plan named auxiliary document 'ghost', which was not routed: dropped")


def test_a_plan_without_a_routed_primary_or_unreadable_falls_back_to_the_top_two() -> None:
    """No valid primary, or no readable reply at all: the top two routed documents."""
    empty = resolve_plan(PlanReply((), (AuxiliaryPick("byron", ()),), ""), ROUTED)
    assert empty.primary == ("ada", "engine")
    assert empty.auxiliary == (AuxiliaryPick("byron", ()),)
    assert empty.degraded == ("no routed document is primary in the plan: the top 2 "
                              "routed documents are",)
    unreadable = resolve_plan(None, ROUTED[:1], failure="bad JSON")
    assert (unreadable.primary, unreadable.auxiliary) == (("ada",), ())
    assert unreadable.degraded == ("plan unreadable (bad JSON): the top 1 routed documents "
                                   "are primary",)


def test_a_sufficiency_reply_needs_a_boolean() -> None:
    """``sufficient`` must read as a boolean ("false" is read, counted as coerced);
    findings and sub-question may be missing or null and are read on one line."""
    check = parse_sufficiency({"sufficient": False, "findings": None,
                               "sub_question": "Who\n is she?"})
    assert (check.sufficient, check.findings, check.sub_question) == (False, "", "Who is she?")
    with collecting_notes() as notes:
        assert parse_sufficiency({"sufficient": "false"}).sufficient is False
    assert notes.coerced == 1
    for bad, named in (({"sufficient": "maybe"}, "kgbridge.sufficiency: sufficient"),
                       ([True], "JSON object"),
                       ({"sufficient": True, "findings": 1}, "findings")):
        with pytest.raises(ReplyShapeError, match=named):
            parse_sufficiency(bad)


def test_question_keys_cover_names_with_punctuation_case_and_possessives() -> None:
    """Spans normalised as entity keys: a question mark, a possessive and lower case do
    not hide a name; a leading "the" may stay; function-word edges are left out."""
    keys = question_keys("Who was Lord Byron's daughter, the author of the Analytical "
                         "Engine notes?")
    assert {"lord byron", "byron", "analytical engine", "the analytical engine",
            "analytical engine notes", "daughter"} <= set(keys)
    assert not {"who", "of the", "the", "author of", "byron's daughter,"} & set(keys)
    assert "ada lovelace" in question_keys("what did ada lovelace write")


def _entity(doc_id: str, key: str) -> Unit:
    text = f"{key} (entity): a summary"
    source = f"{doc_id}#entity:{key}"
    return Unit(unit_id=unit_id("kg", UnitKind.ENTITY_SUMMARY, source, text), index="kg",
                kind=UnitKind.ENTITY_SUMMARY, text=text, source_doc_ids=(doc_id,),
                method="kgbridge", source_key=source, entities=(key,))


def test_the_manifest_ranks_documents_by_question_entities_core_ones_twice() -> None:
    """A document holding two question entities outranks one holding one; a core entity
    counts twice; ties keep the order of the search."""
    units = [_entity("b", "ada lovelace"), _entity("a", "ada lovelace"),
             _entity("c", "lord byron"), _entity("a", "lord byron"), _entity("d", "other")]
    ranked = rank_by_manifest(units, {"ada lovelace", "lord byron"},
                              {"c": {"lord byron"}})
    assert ranked == [("a", 2, ("ada lovelace", "lord byron")), ("c", 2, ("lord byron",)),
                      ("b", 1, ("ada lovelace",))]
    assert fuse([["a", "c", "b"], ["b", "a"]]) == pytest.approx(
        {"a": 1 / 61 + 1 / 62, "c": 1 / 62, "b": 1 / 63 + 1 / 61})


@pytest.mark.parametrize(("values", "variable"), [
    ({"route_top_k": 0}, "HOPINDEX_KGBRIDGE_ROUTE_TOP_K"),
    ({"chunks_per_doc": 0}, "HOPINDEX_KGBRIDGE_CHUNKS_PER_DOC"),
    ({"expansion": -1}, "HOPINDEX_KGBRIDGE_EXPANSION"),
    ({"max_iterations": 4}, "HOPINDEX_KGBRIDGE_MAX_ITERATIONS"),
])
def test_query_settings_out_of_range_name_their_variable(values: dict[str, Any],
                                                         variable: str) -> None:
    """Each query setting is checked, naming its variable; the defaults are the paper's."""
    with pytest.raises(ConfigError, match=variable):
        KgBridgeSettings(**values)
    defaults = KgBridgeSettings()
    assert (defaults.route_top_k, defaults.chunks_per_doc, defaults.expansion,
            defaults.max_iterations) == (10, 2, 5, 3)


def test_the_server_knows_the_query_prompts_markers() -> None:
    """The markers the server classifies by are the ones the query prompts carry, and
    the answer prompt is the server's short-answer kind."""
    assert (query_prompts.PLAN_MARKER, query_prompts.SUFFICIENCY_MARKER) == (
        llm_kgbridge.PLAN_MARKER, llm_kgbridge.SUFFICIENCY_MARKER)
    answer = answer_request("Who?", [ContextLine("a", "passage", "Ada wrote.")], ["f"])
    assert classify(answer.messages[-1][1]) is TaskKind.ANSWER


def _json_reply(messages: tuple[tuple[str, str], ...]) -> tuple[TaskKind, Any]:
    reply = compute_reply([content for _, content in messages], json_mode=True)
    return reply.kind, json.loads(reply.content)


def test_the_plan_reply_picks_by_shared_words_and_names_an_auxiliary() -> None:
    """Primary: the documents sharing words with the question (two at most); auxiliary:
    the next one whose core entity the question names; the marker's plan names only
    documents that were not offered; the reply parses."""
    briefs = [DocBrief("smith", "John Smith", "A footballer.", ("John Smith",)),
              DocBrief("engine", "Analytical Engine", "A mechanical computer by Babbage.",
                       ("Analytical Engine", "Charles Babbage")),
              DocBrief("ada", "Ada Lovelace", "She wrote programs for the engine.",
                       ("Ada Lovelace",)),
              DocBrief("byron", "Romantic poets", "Poems of one movement.", ("Lord Byron",))]
    question = "Did Lord Byron's daughter write programs for the mechanical computer?"
    kind, reply = _json_reply(plan_request(question, briefs).messages)
    assert kind is TaskKind.KG_PLAN
    plan = parse_plan(reply)
    assert plan.primary == ("engine", "ada")
    assert plan.auxiliary == (AuxiliaryPick("byron", ("Lord Byron",)),)
    _, marked = _json_reply(plan_request(f"{question} {llm_kgbridge.UNROUTED_PLAN_MARKER}",
                                         briefs).messages)
    assert resolve_plan(parse_plan(marked), ["engine", "ada"]).primary == ("engine", "ada")
    assert parse_plan(marked).primary == (llm_kgbridge.UNROUTED_DOC_ID,)


def test_the_sufficiency_reply_wants_a_question_name_and_two_documents() -> None:
    """One document naming the question's name: not sufficient, asking about the name
    the context lacks; two documents: sufficient; the marker: never."""
    question = "Was Ada Lovelace the daughter of Lord Byron?"
    one = [ContextLine("ada", "passage", "Ada Lovelace wrote programs. More here.")]
    kind, reply = _json_reply(sufficiency_request(question, one, []).messages)
    assert kind is TaskKind.KG_SUFFICIENCY
    check = parse_sufficiency(reply)
    assert (check.sufficient, check.sub_question) == (False, "What is known about Lord Byron?")
    assert check.findings == "Ada Lovelace wrote programs."
    two = [*one, ContextLine("byron", "summary", "Lord Byron: a poet.")]
    assert parse_sufficiency(_json_reply(sufficiency_request(
        question, two, ["x"]).messages)[1]).sufficient is True
    never = sufficiency_request(f"{question} {llm_kgbridge.NEVER_SUFFICIENT_MARKER}", two, [])
    assert parse_sufficiency(_json_reply(never.messages)[1]).sufficient is False
