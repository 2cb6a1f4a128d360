"""The lenient reader finds the JSON in replies as providers document them.

Proves: for each recorded provider reply (``provider_replies/``: OpenAI JSON mode,
Claude through a gateway, Ollama, vLLM with and without a reasoning parser, llama.cpp's
near-JSON, a stripped opening think tag, typographic quotes, refusals, an empty reply,
a cut reply, 2 MB of prose) the first candidate is the value the reply means, or there
is none and ``no_json_reason`` says why; a reply missing only its outer bracket is read
whole, not as a fragment nested in it; the repairer is never handed more than
``MAX_REPAIR_CHARS`` characters and at most ``MAX_SCAN_STARTS`` brackets are tried;
``answer_text`` strips reasoning blocks (closed, unclosed, or opened in the prompt) and
nothing else.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import json_repair
import pytest

from hopindex.backends.llm.chat import message_text
from hopindex.backends.llm.reply_json import (
    MAX_REPAIR_CHARS,
    MAX_SCAN_STARTS,
    answer_text,
    json_candidates,
    no_json_reason,
)

FIXTURES = Path(__file__).parent / "provider_replies"
FIXTURE_FILES = sorted(FIXTURES.glob("*.json"))


def load(path: Path) -> tuple[dict[str, Any], str]:
    """The fixture and its reply content, as the client reads it (``message_text``: null
    is empty, a list of text parts is their text)."""
    fixture = json.loads(path.read_text(encoding="utf-8"))
    content = message_text(fixture["response"]["choices"][0]["message"]["content"])
    if "content_parts" in fixture:
        content = "".join(part["text"] * part["repeat"] for part in fixture["content_parts"])
    return fixture, content


def test_the_fixture_folder_covers_the_documented_formats() -> None:
    """Every provider format the reader must handle has its recorded reply."""
    assert {path.stem for path in FIXTURE_FILES} >= {
        "openai_json_object", "anthropic_gateway_prose_fenced", "ollama_fenced",
        "vllm_reasoning_parser", "vllm_think_inline", "llamacpp_near_json",
        "llamacpp_missing_bracket", "open_think_tag_stripped", "typographic_quotes",
        "runaway_no_json_2mb", "empty_content", "prose_refusal", "openai_truncated_length"}


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda path: path.stem)
def test_provider_reply_reads_as_expected(path: Path) -> None:
    """The first candidate is the fixture's expected value; a reply without usable JSON
    gives no candidate and the recorded reason; a cut reply gives no whole value."""
    fixture, content = load(path)
    candidates = list(json_candidates(content))
    if fixture["expected"] is not None:
        assert candidates, no_json_reason(content)
        assert candidates[0].value == fixture["expected"]
    elif "whole" in fixture:
        assert fixture["response"]["choices"][0]["finish_reason"] == "length"
        assert all(candidate.value != fixture["whole"] for candidate in candidates)
    else:
        assert candidates == []
        assert no_json_reason(content) == fixture["no_json_reason"]


def test_reasoning_content_is_a_separate_field_never_read() -> None:
    """vLLM's reasoning parser leaves content holding the answer alone: the reasoning
    field is no input of the reader, and the content reads with no note."""
    fixture, content = load(FIXTURES / "vllm_reasoning_parser.json")
    message = fixture["response"]["choices"][0]["message"]
    assert "same person" in message["reasoning_content"]
    first = next(json_candidates(content))
    assert first.value == fixture["expected"] and first.notes == ()


def test_missing_outer_bracket_is_repaired_before_nested_fragments() -> None:
    """The nested arrays of a reply missing its last brace decode as written; the
    repaired whole still comes first, so a shape accepting a list of strings does not
    take a fragment for the answer."""
    fixture, content = load(FIXTURES / "llamacpp_missing_bracket.json")
    values = [candidate.value for candidate in json_candidates(content)]
    assert values[0] == fixture["expected"]
    assert fixture["expected"]["queries"] in values[1:]  # the fragments still follow


def test_two_megabyte_reply_never_reaches_the_repairer(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """2 MB of prose with a stray brace past the first MAX_REPAIR_CHARS: the repairer is
    not called on it (the bound that keeps such a reply fast), and nothing is found."""
    _, content = load(FIXTURES / "runaway_no_json_2mb.json")
    assert len(content) > 2_000_000 and "{" in content[MAX_REPAIR_CHARS:]
    handed: list[int] = []

    def recording_loads(text: str) -> object:
        handed.append(len(text))
        return {}

    monkeypatch.setattr(json_repair, "loads", recording_loads)
    assert list(json_candidates(content)) == []
    assert all(length <= MAX_REPAIR_CHARS for length in handed), handed


def test_at_most_max_scan_starts_brackets_are_tried() -> None:
    """Prose with more brackets than MAX_SCAN_STARTS: the values past the limit are not
    looked for, so a reply of many brackets costs a bounded number of decodes."""
    content = " ".join(f"[{n}]" for n in range(MAX_SCAN_STARTS + 10))
    values = [candidate.value for candidate in json_candidates(f"Numbers: {content}")]
    assert values == [[n] for n in range(MAX_SCAN_STARTS)]


def test_candidates_carry_what_was_forgiven() -> None:
    """Notes say a fence, prose, a reasoning block or a repair was needed."""
    fenced = next(json_candidates('```json\n{"a": 1}\n```'))
    assert fenced.notes == ("read from a fenced block",)
    prose = next(json_candidates('Here you go: {"a": 1} Enjoy.'))
    assert prose.notes == ("read from inside prose",)
    think = next(json_candidates('<think>hmm</think>{"a": 1}'))
    assert think.notes == ("reasoning block ignored",)
    repaired = next(json_candidates('{"a": 1,'))
    assert repaired.value == {"a": 1} and "repaired" in repaired.notes[-1]


def test_json_inside_a_string_keeps_its_typographic_quotes() -> None:
    """Curly quotes inside valid JSON strings are content: the reply decodes as written
    and they are kept."""
    content = '{"answer": "She said “yes” to Pierre\u2019s offer"}'
    assert next(json_candidates(content)).value == {
        "answer": "She said “yes” to Pierre\u2019s offer"}


def test_no_json_reason_tells_the_cases_apart() -> None:
    """Empty, reasoning only, no brackets, and brackets that do not read."""
    assert no_json_reason("   ") == "the reply was empty"
    assert no_json_reason("<think>only thoughts</think>") == (
        "the reply held only a reasoning block")
    assert no_json_reason("No JSON here.") == "the reply holds no JSON object or array"
    assert no_json_reason("{{{ nope") == "the reply's JSON could not be read, even leniently"


# --- answer_text ------------------------------------------------------------------------


@pytest.mark.parametrize(("content", "answer"), [
    ("<think>\nLet me see.\n</think>\n\nWarsaw", "Warsaw"),
    ("<THINKING>upper case</THINKING>Warsaw", "Warsaw"),
    ("<reasoning>a</reasoning> Warsaw <reflection>b</reflection>", "Warsaw"),
    ("Okay, the template opened the tag.\n</think>\n\nWarsaw", "Warsaw"),
    ("Warsaw <think>and then it ran out of budget", "Warsaw"),
    ("<think>never closed", ""),
    ("  Warsaw, Poland  ", "Warsaw, Poland"),
    ("The tag <b>is</b> not reasoning", "The tag <b>is</b> not reasoning"),
], ids=["closed", "case", "two-blocks", "opening-stripped", "unclosed-after", "only-unclosed",
        "plain", "other-tags"])
def test_answer_text_strips_reasoning_only(content: str, answer: str) -> None:
    """Reasoning blocks go, closed, unclosed or with their opening tag in the prompt;
    the answer and any other markup stay."""
    assert answer_text(content) == answer


def test_answer_text_keeps_everything_after_the_last_closing_tag_only() -> None:
    """Two closing tags without openings (the template opened one, the model another):
    everything up to the last is reasoning."""
    content = "thought one</think>thought two</think>\nWarsaw"
    assert answer_text(content) == "Warsaw"
