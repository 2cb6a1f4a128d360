"""SiReRAG's answer call: the paper's answer prompt by default, IndexRAG's on request,
one call per query either way.

Proves, against the local test server (the requests it answered recorded by
``chat_log``): a query sends the paper's instruction ("answer this question in as fewer
number of words as possible") after the question, with no system prompt;
``answer_prompt=indexrag`` sends IndexRAG's system prompt and no such instruction; an
unknown value is refused naming the option; and a query costs exactly one LLM request
whichever prompt it uses.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from hopindex.core.errors import InvalidInputError
from hopindex.core.models import JobState
from hopindex.methods.base import QueryOptions
from hopindex.methods.retrieval.answer import ANSWER_SYSTEM
from hopindex.methods.sirerag.prompts import PAPER_ANSWER_INSTRUCTION
from hopindex.methods.sirerag.query import answer_prompt_of
from hopindex.testing.llm_server import LlmTestServer
from tests.conftest import CURIE_CORPUS, LlmClientFactory, ingest_documents
from tests.methods.sirerag.conftest import ChatLog

pytestmark = pytest.mark.integration

QUESTION = "Where was Marie Curie born?"


def test_the_answer_call_sends_the_papers_prompt_unless_asked_for_indexrags(
        start_server: Callable[..., LlmTestServer], make_llm_client: LlmClientFactory,
        chat_log: ChatLog) -> None:
    """Default: one user message ending with the question and the paper's instruction,
    no system prompt. ``answer_prompt=indexrag``: IndexRAG's system prompt, and the
    question alone. Each query is one answer request, nothing else."""
    server = start_server()
    client = make_llm_client(server)
    job = ingest_documents(client, "curie", CURIE_CORPUS, method="sirerag")
    assert job.state is JobState.SUCCEEDED, job.reason
    built = len(chat_log.requests)

    paper = client.query("curie", QUESTION, method="sirerag", k=5)
    assert chat_log.kinds()[built:] == ["answer"]
    [messages] = [m for _, m in chat_log.requests[built:]]
    assert len(messages) == 1  # the user message alone
    assert messages[0].startswith("Context: ")
    assert messages[0].endswith(f"\nQuestion: {QUESTION} {PAPER_ANSWER_INSTRUCTION}")
    assert PAPER_ANSWER_INSTRUCTION == (
        "Answer this question in as fewer number of words as possible.")
    assert paper.answer and paper.trace["answer_prompt"] == "paper"

    indexrag = client.query("curie", QUESTION, method="sirerag", k=5,
                            options=QueryOptions(params={"answer_prompt": "indexrag"}))
    assert chat_log.kinds()[built:] == ["answer", "answer"]
    system, user = chat_log.requests[-1][1]
    assert system == ANSWER_SYSTEM
    assert user.endswith(f"\nQuestion: {QUESTION}")
    assert PAPER_ANSWER_INSTRUCTION not in user
    assert indexrag.trace["answer_prompt"] == "indexrag"
    # The same retrieval under both prompts: only the instruction differs.
    assert [p.doc_id for p in indexrag.passages] == [p.doc_id for p in paper.passages]
    assert server.stats.by_kind["answer"] == 2
    assert paper.usage.llm_calls == indexrag.usage.llm_calls == 1


def test_an_unknown_answer_prompt_is_refused_naming_the_option() -> None:
    """Validated like ``pool``: the default is the paper's; anything else but the two
    names is an InvalidInputError naming ``options.answer_prompt``."""
    assert answer_prompt_of(QueryOptions()).value == "paper"
    assert answer_prompt_of(QueryOptions(params={"answer_prompt": "indexrag"})).value == (
        "indexrag")
    with pytest.raises(InvalidInputError, match="answer_prompt must be one of paper, "
                                                 "indexrag, got 'raptor'") as caught:
        answer_prompt_of(QueryOptions(params={"answer_prompt": "raptor"}))
    assert caught.value.where == "options.answer_prompt"
