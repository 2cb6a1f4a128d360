"""The paper's three extraction prompts (Figs. 6-8) and their readers, with the
extraction setting.

Proves: each prompt carries its figure's instruction and example before the chunk, asks
for text (Fig. 6) or a JSON object (Figs. 7 and 8), and is recognised and answered by
the test server in a shape the readers take; the readers keep what fits item by item
(a misfit entity or fact, a malformed triplet, costs itself alone), fail naming the
problem only when nothing usable is left, and give a fact as entities only its triplets'
ends that Fig. 7 listed; and ``HOPINDEX_SIRERAG_EXTRACTION`` takes only its two modes.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from hopindex.backends.llm.chat import ResponseFormat
from hopindex.backends.llm.reply_shapes import collecting_notes
from hopindex.core.errors import ConfigError, ReplyShapeError
from hopindex.methods.sirerag.method import SiReRagSettings
from hopindex.methods.sirerag.paper_prompts import (
    COREFERENCE,
    ENTITIES,
    FACTS,
    entities_request,
    facts_request,
    rewrite_request,
)
from hopindex.methods.sirerag.parsing import (
    Proposition,
    facts_parser,
    parse_entities,
    parse_rewrite,
)
from hopindex.testing.llm_responses import TaskKind, classify, compute_reply

CURIE = "Marie Curie\nMarie Curie was born in Warsaw. She shared the Nobel Prize with Pierre Curie."


def _prompt(messages: tuple[tuple[str, str], ...]) -> str:
    return "\n\n".join(content for _, content in messages)


# --- prompts, as the test server reads them ----------------------------------------


def test_the_rewrite_prompt_is_fig_6_with_the_chunk_last() -> None:
    """Text reply, temperature 0; the figure's instruction and its Gualala example come
    first, the previous chunk and the chunk last; the server resolves the pronoun."""
    request = rewrite_request("Warsaw is the capital of Poland.", CURIE)
    assert (request.stage, request.temperature) == (COREFERENCE, 0.0)
    assert request.response_format is ResponseFormat.TEXT
    prompt = _prompt(request.messages)
    assert prompt.count("Rewrite the below paragraph by resolving all entity coreferences "
                        "with the preceding paragraph from document.") == 2
    assert prompt.index("Gualala") < prompt.index("Previous paragraph from Document: Warsaw")
    assert prompt.endswith(f"Paragraph: {CURIE}\n\nOutput:")
    assert classify(prompt) is TaskKind.COREFERENCE
    reply = compute_reply([c for _, c in request.messages])
    assert parse_rewrite(reply.content) == (
        "Marie Curie\nMarie Curie was born in Warsaw. Marie Curie shared the Nobel Prize "
        "with Pierre Curie.")


def test_the_entity_and_facts_prompts_are_figs_7_and_8_and_their_replies_read() -> None:
    """JSON objects, no schema (their keys are the model's n1, f1, ...); Fig. 8 lists
    Fig. 7's entities on one line after the chunk; the server's replies parse, and each
    fact's entities are the listed ones its triplets join."""
    rewritten = parse_rewrite(compute_reply([rewrite_request("", CURIE).messages[0][1]]).content)
    request = entities_request(rewritten)
    assert (request.stage, request.response_format, request.shape) == (
        ENTITIES, ResponseFormat.JSON, None)
    prompt = _prompt(request.messages)
    assert "Extract all named entities from the document." in prompt
    assert prompt.index("Eli Lilly") < prompt.index(rewritten) and prompt.endswith("Output:")
    assert classify(prompt) is TaskKind.NAMED_ENTITIES
    for json_mode in (True, False):
        names = parse_entities(json.loads(compute_reply(
            [prompt], json_mode=json_mode).content))
        assert names == ("Marie Curie", "Warsaw", "Nobel Prize", "Pierre Curie")

    request = facts_request(rewritten, [*names, "Two\nLines"])
    assert (request.stage, request.response_format, request.shape) == (
        FACTS, ResponseFormat.JSON, None)
    prompt = _prompt(request.messages)
    assert "Extract all facts from the document. For each fact, also generate all semantic " \
           "triplets" in prompt
    assert prompt.endswith(f"Paragraph: {rewritten}\nEntities: Marie Curie, Warsaw, "
                           "Nobel Prize, Pierre Curie, Two Lines\nOutput:")
    assert classify(prompt) is TaskKind.FACTS
    facts = facts_parser(names)(json.loads(compute_reply([prompt]).content))
    assert facts == [
        Proposition("Marie Curie was born in Warsaw.", ("Marie Curie", "Warsaw")),
        Proposition("Marie Curie shared the Nobel Prize with Pierre Curie.",
                    ("Marie Curie", "Nobel Prize", "Pierre Curie"))]


# --- readers -----------------------------------------------------------------------


def test_entities_are_read_item_by_item() -> None:
    """Keyed object, array or one bare item; names in reply order, once each (case
    aside); a misfit or null item is dropped and noted; {} is a chunk naming nobody."""
    with collecting_notes() as notes:
        names = parse_entities({"n1": {"name": "Eli Lilly", "type": "Organization"},
                                "n2": {"type": "Drug"}, "n3": None,
                                "n4": {"name": "eli lilly"}, "n5": {"name": " Zepbound "}})
    assert names == ("Eli Lilly", "Zepbound")
    assert notes.dropped == 2
    assert parse_entities([{"name": "FDA", "type": "Organization"}]) == ("FDA",)
    assert parse_entities({"name": "FDA", "type": "Organization"}) == ("FDA",)
    assert parse_entities({}) == ()


@pytest.mark.parametrize(("reader", "bad", "named"), [
    (parse_entities, "Eli Lilly", "expected a JSON object of items, got str"),
    (parse_entities, {"n1": {"type": "Drug"}}, "no usable element among 1"),
    (facts_parser(()), [7, None], "no usable element among 2"),
    (facts_parser(()), {"f1": {"triplets": []}}, "no usable element among 1"),
])
def test_a_reply_with_nothing_usable_fails_naming_why(reader: Any, bad: Any,
                                                       named: str) -> None:
    """Only a reply with no fitting item fails: a ReplyShapeError (which the client's
    one repair shows the model) naming the reply kind and the problem."""
    with pytest.raises(ReplyShapeError, match=named):
        reader(bad)


def test_a_facts_entities_are_its_triplets_listed_ends() -> None:
    """Heads and tails on Fig. 7's list, under its spelling; values and common nouns
    are not entities; a malformed triplet costs itself; a fact without triplets names
    nobody; a blank fact is dropped, a repeated one kept once."""
    parse = facts_parser(["Eli Lilly", "Mounjaro", "FDA"])
    with collecting_notes() as notes:
        facts = parse({
            "f1": {"fact": "Mounjaro won its first FDA approval in May 2022.",
                   "triplets": [["mounjaro", "won", "FDA approval"],
                                ["FDA approval", "was in", "May 2022"], ["FDA"], "FDA"]},
            "f2": {"fact": "Sales are at record highs."},
            "f3": {"fact": "  "},
            "f4": {"fact": "Mounjaro won its first FDA approval in May 2022.",
                   "triplets": [["Eli Lilly", "makes", "Mounjaro"]]}})
    assert facts == [
        Proposition("Mounjaro won its first FDA approval in May 2022.",
                    ("Mounjaro", "Eli Lilly")),
        Proposition("Sales are at record highs.", ())]
    assert notes.dropped == 3


def test_a_rewrite_loses_an_echoed_label_and_must_not_be_empty() -> None:
    """Models repeat the examples' closing label: it is not part of the chunk."""
    assert parse_rewrite("**Output:**\nMarie Curie was born in Warsaw.") == (
        "Marie Curie was born in Warsaw.")
    assert parse_rewrite("Output here is a word.") == "Output here is a word."
    for empty in ("", "  Output:  "):
        with pytest.raises(ReplyShapeError, match="rewritten paragraph is empty"):
            parse_rewrite(empty)


def test_the_extraction_setting_takes_its_two_modes() -> None:
    """One call by default; three_step on request; anything else refused, named."""
    assert SiReRagSettings().extraction == "one_call"
    assert SiReRagSettings(extraction="three_step").extraction == "three_step"
    with pytest.raises(ConfigError, match="HOPINDEX_SIRERAG_EXTRACTION must be one_call or "
                                          "three_step, got paper"):
        SiReRagSettings(extraction="paper")
