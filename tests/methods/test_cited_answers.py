"""``answer=cited`` on indexrag and ircot: numbered contexts, and the answer's markers
renumbered to the ranks of the result's passages, whose citations name file, page and
section.

The marker mapping is proved on hand-made units and passages; the whole path (the
request the model sees, the markers it returns, the passages they land on) against
the local test server, over Markdown files, whose passages carry citations.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from hopindex.core.errors import InvalidInputError
from hopindex.core.models import JobState, Unit, UnitKind
from hopindex.methods.base import QueryOptions, RankedPassage
from hopindex.methods.retrieval.answer import (
    ANSWER_MAX_TOKENS,
    AnswerStyle,
    answer_style_of,
    cite_answer,
    cited_answer_request,
)
from hopindex.testing.document_files import Section, write_markdown
from hopindex.testing.llm_server import LlmTestServer
from tests.conftest import LlmClientFactory


def _unit(unit_id: str, *doc_ids: str) -> Unit:
    return Unit(unit_id=unit_id, index="i", kind=UnitKind.AKU, text=unit_id,
                source_doc_ids=doc_ids, method="indexrag", source_key=unit_id)


def _passage(rank: int, doc_id: str) -> RankedPassage:
    return RankedPassage(rank=rank, doc_id=doc_id, title=doc_id, text="t", score=1.0,
                         via_unit_id="u", via_kind="passage")


def test_markers_are_renumbered_to_the_passages_their_contexts_came_from() -> None:
    """Context [1] came from document b (shown at rank 2), context [2] from a and c
    (ranks 1 and 3): "Warsaw [1][2]" reads "Warsaw [2][1][3]"; what each marker named
    is listed."""
    contexts = [_unit("u1", "b"), _unit("u2", "a", "c")]
    passages = [_passage(1, "a"), _passage(2, "b"), _passage(3, "c")]
    answer, cites = cite_answer("Warsaw [1][2]", contexts, passages)
    assert answer == "Warsaw [2][1][3]"
    assert cites == [{"marker": 1, "unit_id": "u1", "passage_ranks": [2]},
                     {"marker": 2, "unit_id": "u2", "passage_ranks": [1, 3]}]


def test_markers_naming_nothing_shown_are_dropped_and_repeats_merged() -> None:
    """A marker past the contexts, or whose context's documents are not among the
    passages, is dropped (listed with no ranks); two markers landing on one passage
    read as one."""
    contexts = [_unit("u1", "a"), _unit("u2", "a"), _unit("u3", "gone")]
    passages = [_passage(1, "a")]
    answer, cites = cite_answer("Paris [1][2] [3] [9]", contexts, passages)
    assert answer == "Paris [1]"
    assert [c["passage_ranks"] for c in cites] == [[1], [1], [], []]
    assert cites[-1]["unit_id"] is None


def test_the_cited_request_numbers_its_contexts_and_asks_for_markers() -> None:
    """Each context is "[n] text", n its place in the selection (a blank one is left
    out but keeps its number, so markers still name the unit); the system prompt is
    IndexRAG's with the request for markers, and the answer may be a few tokens longer."""
    request = cited_answer_request("Where  was\nshe born?", ["Warsaw is in Poland.", " ",
                                                             "Marie was born in Warsaw."])
    system, user = (text for _, text in request.messages)
    assert user == ("Context:\n[1] Warsaw is in Poland.\n\n[3] Marie was born in Warsaw."
                    "\nQuestion: Where was she born?")
    assert "[2][5]" in system
    assert request.max_tokens is not None and request.max_tokens > ANSWER_MAX_TOKENS


def test_the_answer_option_is_read_and_a_bad_one_refused() -> None:
    """No option: the paper's short answer; "cited" in any case; another value names
    params.answer."""
    assert answer_style_of(QueryOptions()) is AnswerStyle.SHORT
    assert answer_style_of(QueryOptions(params={"answer": "CITED"})) is AnswerStyle.CITED
    with pytest.raises(InvalidInputError) as refused:
        answer_style_of(QueryOptions(params={"answer": "long"}))
    assert refused.value.where == "params.answer"


@pytest.mark.integration
@pytest.mark.parametrize("method", ["indexrag", "ircot"])
def test_a_cited_answer_points_at_passages_with_their_file_and_section(
        tmp_path: Path, start_server: Callable[..., LlmTestServer],
        make_llm_client: LlmClientFactory, method: str) -> None:
    """Over Markdown sections, a cited answer ends in markers; each is the rank of a
    shown passage whose text holds the answer and which cites its file and section."""
    folder = tmp_path / "notes"
    folder.mkdir()
    write_markdown(folder / "curies.md", [
        Section("Marie Curie", "Marie Curie was born in Warsaw. She married Pierre Curie."),
        Section("Pierre Curie", "Pierre Curie was a French physicist born in Paris."),
        Section("Warsaw", "Warsaw is the capital of Poland, on the Vistula.")])
    client = make_llm_client(start_server())
    job = client.ingest("curies", [folder], method="indexrag")
    assert job.state is JobState.SUCCEEDED, job.reason
    result = client.query("curies", "Where was Marie Curie born?", method=method, k=5,
                          options=QueryOptions(params={"answer": "cited"}))
    assert result.answer is not None
    cites = result.trace["answer_citations"]
    bare, _, markers = result.answer.partition(" [")
    ranks = [int(r) for r in re.findall(r"\[(\d+)\]", "[" + markers)]
    assert ranks and set(ranks) == {r for c in cites for r in c["passage_ranks"]}
    shown = {p.rank: p for p in result.passages}
    for rank in ranks:
        passage = shown[rank]
        assert passage.citation is not None and passage.citation.file == "curies.md"
        assert passage.citation.section == passage.title
        assert bare in passage.text
