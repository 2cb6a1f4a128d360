"""The prompts: the paper's wording in hopindex's layout, read right by the test server."""

from __future__ import annotations

from hopindex.methods.bridgerag.judge import JudgeOutcome, JudgeRequest, JudgeStatus
from hopindex.methods.bridgerag.prompts import (
    cut,
    entities_request,
    extract_request,
    judge_request,
    svo_request,
)
from hopindex.methods.bridgerag.records import DecisionRecord, append_record, read_records
from hopindex.testing.llm_responses import TaskKind, classify, compute_reply

QUESTION = "Who is the spouse of the actor who played the Terminator?"
BRIDGE = "Arnold Schwarzenegger is an Austrian-American actor and former politician."


def _user(messages: tuple[tuple[str, str], ...]) -> str:
    return "\n\n".join(content for _, content in messages)


def test_each_prompt_is_recognised_as_its_task() -> None:
    """SVO → queries, entities → entity pair, merged → queries with entities, judge →
    scores: the shapes a real model is asked for, as the test server classifies them."""
    assert classify(_user(svo_request(QUESTION, BRIDGE).messages)) is TaskKind.QUERIES
    assert classify(_user(entities_request(QUESTION, BRIDGE).messages)) is TaskKind.ENTITY_PAIR
    assert classify(_user(extract_request(QUESTION, BRIDGE).messages)) is TaskKind.QUERIES
    judge = judge_request(QUESTION, [BRIDGE], ["Arnold Schwarzenegger", "Terminator"],
                          ["Maria Shriver is the wife of Arnold Schwarzenegger.",
                           "The Terminator is a 1984 film."])
    assert classify(_user(judge.messages)) is TaskKind.SCORES


def test_merged_prompt_gets_queries_and_entities_from_the_scripted_model() -> None:
    """The test server answers the merged prompt with both keys, the SVO prompt with one."""
    import json

    merged = json.loads(compute_reply([c for _, c in extract_request(QUESTION, BRIDGE)
                                      .messages]).content)
    assert len(merged["queries"]) == 3 and len(merged["entities"]) == 2
    alone = json.loads(compute_reply([c for _, c in svo_request(QUESTION, BRIDGE)
                                     .messages]).content)
    assert set(alone) == {"queries"}


def test_judge_prompt_numbers_candidates_and_shows_the_bridge_only_in_c() -> None:
    """Condition C shows entities and bridge; B (no bridges) shows neither; two bridges
    are labelled 1 and 2; every candidate is one numbered line."""
    c = _user(judge_request(QUESTION, [BRIDGE], ["E one", "E two"],
                            ["first\ncandidate", "second"]).messages)
    assert "Bridge: " + BRIDGE in c and "Bridge entity 1: E one" in c
    assert "[1] first\ncandidate" not in c and "[1] first candidate" in c and "[2] second" in c
    b = _user(judge_request(QUESTION, [], [], ["first", "second"]).messages)
    assert "Bridge" not in b and "[2] second" in b
    two = _user(judge_request(QUESTION, [BRIDGE, "Other."], ["E"], ["x"]).messages)
    assert "Bridge 1: " + BRIDGE in two and "Bridge 2: Other." in two


def test_scripted_judge_scores_with_the_bridge_entities_in_c() -> None:
    """The test server's judge counts question words, plus the entities' in condition C:
    the bridge can change a score, which the eval's B-vs-C rows rely on."""
    import json

    candidates = ["Maria Shriver married Arnold Schwarzenegger.", "The Terminator film."]
    with_bridge = json.loads(compute_reply([c for _, c in judge_request(
        QUESTION, [BRIDGE], ["Arnold Schwarzenegger"], candidates).messages]).content)
    without = json.loads(compute_reply([c for _, c in judge_request(
        QUESTION, [], [], candidates).messages]).content)
    assert with_bridge["scores"]["1"] > without["scores"]["1"]


def test_cut_keeps_one_line_within_the_limit() -> None:
    """Whitespace collapses; a longer text ends in an ellipsis at exactly the limit."""
    assert cut("a\n b   c", 700) == "a b c"
    cut_text = cut("word " * 300, 100)
    assert len(cut_text) <= 100 and cut_text.endswith("\u2026") and "\n" not in cut_text


def test_judge_request_and_outcome_survive_a_task_message() -> None:
    """What travels to the judge queue and back is plain JSON and round-trips."""
    request = JudgeRequest(question=QUESTION, bridges=(BRIDGE,), entities=("A", "B"),
                           candidates=("x", "y"))
    assert JudgeRequest.from_payload(json_round(request.as_payload())) == request
    outcome = JudgeOutcome(JudgeStatus.SCORED, scores=(3.0, None))
    back = JudgeOutcome.from_payload(json_round(outcome.as_payload()))
    assert back.scores == (3.0, None) and back.status is JudgeStatus.SCORED


def json_round(value: dict[str, object]) -> dict[str, object]:
    import json

    loaded: dict[str, object] = json.loads(json.dumps(value))
    return loaded


def test_records_append_as_json_lines(tmp_path: object) -> None:
    """Each record is one line; reading returns them oldest first."""
    from pathlib import Path

    path = Path(str(tmp_path)) / "decisions" / "idx.jsonl"
    for question in ("q1", "q2"):
        append_record(path, DecisionRecord(index="idx", question=question, params={},
                                           retrieval="dense"))
    assert [r["question"] for r in read_records(path)] == ["q1", "q2"]
