"""The test server answers in the forms real providers use, when asked, and a lenient
reader gets the same value out of every form.

Proves: the default is bare JSON, counted as such; each per-reply style changes the
form of the replies it applies to (counted in ``by_style``) and a lenient read
(``parse_reply``) gives the bare reply's value; plain-text answers keep their form
except under THINK (a block first) and TRUNCATED; FORMAT_REFUSED answers any
``response_format`` with a 400 naming it, SCHEMA_REFUSED only ``json_schema``;
TRUNCATED cuts a reply to the request's budget (or 64 tokens without one) with
``finish_reason`` length and answers whole with a large budget; the mix is
deterministic per seed and request; the real client, against every style mixed, gets
the values it gets from a bare server; the config and the command line take styles by
name.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import openai
import pydantic
import pytest

from hopindex.backends.llm.client import ChatRequest, LlmClient, LlmSettings
from hopindex.backends.llm.ratelimit import InProcessRateLimiter, RateLimits
from hopindex.backends.llm.reply_json import answer_text
from hopindex.backends.llm.reply_shapes import read_items, scores_on_scale
from hopindex.backends.llm.structured import parse_reply
from hopindex.backends.llm.usage import UsageMeter
from hopindex.core.errors import ConfigError
from hopindex.testing.llm_limits import Endpoint, LlmServerConfig, Outcome
from hopindex.testing.llm_responses import estimate_tokens
from hopindex.testing.llm_server import LlmTestServer, _parser, config_from_args, running_llm_server
from hopindex.testing.reply_styles import (
    ALL_STYLES,
    SERVER_STYLES,
    ReplyStyle,
    StylePick,
    pick_style,
)

STAGE1 = (
    'Extract every fact as question-answer pairs. Return {"qa_pairs": [{"question": "...", '
    '"answer": "..."}], "entities": ["..."]}.\nDocument: Marie Curie\n'
    "Marie Curie was a physicist and chemist born in Warsaw. She worked at the University "
    "of Paris. She shared the Nobel Prize in Physics with Pierre Curie and Henri Becquerel. "
    "Her daughter Irene Joliot-Curie also won a Nobel Prize.\n"
    "Return only a valid JSON object without any other text.")
STAGE2 = (
    "Given the following information about \u201cWarsaw\u201d from multiple source documents, "
    "generate bridging facts.\n=== Document: Marie Curie ===\nQ: Where was she born?\n"
    "A: Marie Curie was born in Warsaw.\n\n=== Document: Warsaw ===\nQ: What is Warsaw?\n"
    "A: Warsaw is the capital of Poland.\n\nRequirements:\n"
    "Return a JSON array of strings. If no meaningful connections exist, return [].")
SCORES = (
    "Question: Where was Marie Curie born and what did she study?\nCandidates:\n"
    "[1] Marie Curie was born in Warsaw and studied physics in Paris.\n"
    "[2] Warsaw is the capital of Poland.\n[3] Pierre Curie studied crystals.\n"
    'Return a JSON object with a score from 0 to 10 for every candidate: {"scores": {"1": 7}}')
ADJUDICATE = (
    'Are these two entities the same? Reply with a JSON object: {"same": true or false, '
    '"score": a number from 0 to 10, "reason": "..."}\nEntity A: Marie Curie\n'
    "Summary: Marie Curie was a physicist born in Warsaw.\nEntity B: Marie Curie\n"
    "Summary: Marie Curie won the Nobel Prize in physics.\n")
QUERIES = (
    'Write three search queries. Return {"queries": ["...", "...", "..."], "entities": '
    '["...", "..."]}\nContext: Marie Curie was born in Warsaw.\n'
    "Question: Which city was Marie Curie born in?")
JSON_PROMPTS = (STAGE1, STAGE2, SCORES, ADJUDICATE, QUERIES)
ANSWER = ("Answer with ONLY the answer.\nContext: Marie Curie was born in Warsaw. Warsaw is "
          "the capital of Poland.\nQuestion: In which city was Marie Curie born?")
# The reply to an unclassified prompt is its first two sentences: two long ones.
LONG_TEXT = "Summarise.\n\n" + ("Marie Curie studied radioactivity in Paris and " * 15
                                + "Warsaw. ") * 2
JSON_OBJECT = {"type": "json_object"}
FORM_STYLES = [s for s in ReplyStyle if s not in SERVER_STYLES
               and s not in (ReplyStyle.BARE, ReplyStyle.TRUNCATED)]


def chat(server: LlmTestServer, prompt: str, **options: Any) -> Any:
    client = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
    return client.chat.completions.create(model="m", messages=[{"role": "user",
                                                                "content": prompt}], **options)


def content_of(server: LlmTestServer, prompt: str, **options: Any) -> str:
    content = chat(server, prompt, **options).choices[0].message.content
    assert isinstance(content, str)
    return content


# --- what makes two readings the same value, per style ----------------------------------


def renumbered(value: Any) -> Any:
    """Numeric strings as numbers, on both sides: only numbers-as-strings differ."""
    if isinstance(value, str):
        for kind in (int, float):
            try:
                return kind(value)
            except ValueError:
                continue
        return value
    if isinstance(value, list):
        return [renumbered(item) for item in value]
    if isinstance(value, dict):
        return {key: renumbered(item) for key, item in value.items()}
    return value


def without_nulls(value: Any) -> Any:
    if isinstance(value, list):
        return [without_nulls(item) for item in value if item is not None]
    if isinstance(value, dict):
        return {key: without_nulls(item) for key, item in value.items()}
    return value


def on_ten(value: Any) -> Any:
    """Scores read as BridgeRAG's judge and the KG adjudication read them: rescaled by
    ``scores_on_scale`` when the reply answered on 0-1 (rounded: 0.7 * 10 is not 7)."""
    if isinstance(value, dict) and isinstance(value.get("scores"), dict):
        keys = list(value["scores"])
        scaled = scores_on_scale(list(value["scores"].values()), top=10)
        return {**value, "scores": dict(zip(keys, (round(s, 9) for s in scaled), strict=True))}
    if isinstance(value, dict) and isinstance(value.get("score"), int | float):
        return {**value, "score": round(scores_on_scale([value["score"]], top=10)[0], 9)}
    return value


READINGS: dict[ReplyStyle, Callable[[Any], Any]] = {
    ReplyStyle.NUMBERS_AS_STRINGS: renumbered, ReplyStyle.NULL_ELEMENTS: without_nulls,
    ReplyStyle.UNIT_SCORES: on_ten}


@pytest.fixture(scope="module")
def bare_contents() -> dict[str, str]:
    """Each JSON prompt's reply from a server with the default styles."""
    with running_llm_server() as server:
        contents = {prompt: content_of(server, prompt, response_format=JSON_OBJECT)
                    for prompt in JSON_PROMPTS}
        assert server.stats.by_style == {"bare": len(JSON_PROMPTS)}
    return contents


@pytest.mark.parametrize("style", FORM_STYLES, ids=str)
def test_each_style_changes_the_form_and_reads_back_to_the_bare_value(
        style: ReplyStyle, bare_contents: dict[str, str]) -> None:
    """Every reply the style applies to differs from the bare one and is counted under
    the style; a lenient read of every reply gives the bare reply's value."""
    reading = READINGS.get(style, lambda value: value)
    changed = 0
    with running_llm_server(LlmServerConfig(reply_styles=(style,))) as server:
        for prompt, bare in bare_contents.items():
            reply = chat(server, prompt, response_format=JSON_OBJECT)
            content = reply.choices[0].message.content
            if content != bare:
                changed += 1
            assert reply.choices[0].finish_reason == "stop"
            assert parse_reply("styled", content, reading).value == reading(json.loads(bare))
            if style is ReplyStyle.REASONING_CONTENT:
                assert content == bare
                assert reply.choices[0].message.reasoning_content.startswith(("Okay", "The user"))
                assert reply.usage.completion_tokens > estimate_tokens(bare)
        stats = server.stats
    exercised = len(bare_contents) if style is ReplyStyle.REASONING_CONTENT else changed
    assert exercised >= 1
    assert stats.by_style.get(style.value) == exercised
    assert stats.by_style.get("bare", 0) == len(bare_contents) - exercised


def test_unit_scores_apply_only_to_replies_scored_on_zero_to_ten(
        bare_contents: dict[str, str]) -> None:
    """The judge's scores and the adjudication's score come as fractions; the other
    kinds' replies stay bare."""
    with running_llm_server(LlmServerConfig(reply_styles=(ReplyStyle.UNIT_SCORES,))) as server:
        scores = json.loads(content_of(server, SCORES, response_format=JSON_OBJECT))
        verdict = json.loads(content_of(server, ADJUDICATE, response_format=JSON_OBJECT))
        assert content_of(server, STAGE1, response_format=JSON_OBJECT) == bare_contents[STAGE1]
    assert scores == {"scores": {"1": 0.7, "2": 0.0, "3": 0.2}}
    assert verdict["score"] == 0.2


def test_text_answers_keep_their_form_except_under_think() -> None:
    """Fences, prose and the JSON-only styles leave a plain-text answer alone; THINK
    puts a reasoning block before it, which ``answer_text`` removes."""
    for style in FORM_STYLES:
        with running_llm_server(LlmServerConfig(reply_styles=(style,))) as server:
            content = content_of(server, ANSWER)
        if style is ReplyStyle.THINK:
            assert content.startswith("<think>\n") and content.endswith("</think>\n\nWarsaw")
            assert answer_text(content) == "Warsaw"
        else:
            assert content == "Warsaw", style


def test_format_refused_answers_400_naming_response_format() -> None:
    """Every request carrying a response_format gets OpenAI's 400 naming the parameter;
    one without it is answered. Each refusal is counted under the style."""
    config = LlmServerConfig(reply_styles=(ReplyStyle.FORMAT_REFUSED, ReplyStyle.FENCED))
    with running_llm_server(config) as server:
        for response_format in (JSON_OBJECT, {"type": "json_schema", "json_schema": {
                "name": "s", "schema": {"type": "object"}}}):
            with pytest.raises(openai.BadRequestError) as caught:
                chat(server, STAGE1, response_format=response_format)
            assert caught.value.status_code == 400
            assert "response_format" in caught.value.message
            error = caught.value.body
            assert isinstance(error, dict) and error["param"] == "response_format"
        assert content_of(server, STAGE1).startswith("```")  # the form style still applies
        stats = server.stats
    assert stats.by_style == {"format_refused": 2, "fenced": 1}
    assert stats.requests["chat.completions"] == {"400": 2, "ok": 1}


def test_schema_refused_answers_400_naming_json_schema_and_accepts_json_object(
        bare_contents: dict[str, str]) -> None:
    """Only ``json_schema`` is refused, with a message naming it; ``json_object`` gets
    the bare reply."""
    config = LlmServerConfig(reply_styles=(ReplyStyle.SCHEMA_REFUSED,))
    with running_llm_server(config) as server:
        with pytest.raises(openai.BadRequestError, match="json_schema"):
            chat(server, STAGE1, response_format={"type": "json_schema", "json_schema": {
                "name": "s", "schema": {"type": "object"}}})
        assert content_of(server, STAGE1, response_format=JSON_OBJECT) == bare_contents[STAGE1]
        assert server.stats.by_style == {"schema_refused": 1, "bare": 1}


def test_truncated_cuts_to_the_budget_and_answers_whole_with_a_large_one(
        bare_contents: dict[str, str]) -> None:
    """A JSON reply longer than max_tokens is cut to fit, finish_reason length; without
    max_tokens it is cut at 64 tokens; with the client's retry budget it is whole.
    Text answers are cut the same way."""
    bare = bare_contents[STAGE1]
    assert estimate_tokens(bare) > 64
    with running_llm_server(LlmServerConfig(reply_styles=(ReplyStyle.TRUNCATED,))) as server:
        for max_tokens, cap in ((20, 20), (None, 64)):
            options = {"max_tokens": max_tokens} if max_tokens else {}
            reply = chat(server, STAGE1, response_format=JSON_OBJECT, **options)
            content = reply.choices[0].message.content
            assert reply.choices[0].finish_reason == "length"
            assert bare.startswith(content) and len(content) < len(bare)
            assert reply.usage.completion_tokens == estimate_tokens(content) <= cap
        whole = chat(server, STAGE1, response_format=JSON_OBJECT, max_tokens=2048)
        assert whole.choices[0].finish_reason == "stop"
        assert whole.choices[0].message.content == bare
        text = chat(server, LONG_TEXT)
        assert text.choices[0].finish_reason == "length"
        assert text.usage.completion_tokens <= 64
        assert server.stats.by_style == {"truncated": 3, "bare": 1}


def test_the_mix_is_deterministic_per_seed_and_request() -> None:
    """A request repeated gets the same form; a second server with the seed gives the
    same forms in any order; another seed gives others; many styles are exercised."""
    prompts = [STAGE1.replace("Marie Curie\n", f"Marie Curie, part {n}\n") for n in range(30)]

    def contents(seed: int, order: list[str]) -> dict[str, str]:
        config = LlmServerConfig(seed=seed, reply_styles=ReplyStyle.mixed(refusals=False))
        with running_llm_server(config) as server:
            found = {prompt: content_of(server, prompt, response_format=JSON_OBJECT)
                     for prompt in order}
            assert all(content_of(server, prompt, response_format=JSON_OBJECT) == found[prompt]
                       for prompt in order[:5])
            assert len(server.stats.by_style) >= 5, server.stats.by_style
        return found

    first = contents(3, prompts)
    assert contents(3, prompts[::-1]) == first
    other = contents(4, prompts)
    assert other != first and other.keys() == first.keys()


def test_pick_style_ignores_server_styles_and_covers_the_tuple() -> None:
    """Refusing styles are never drawn; the empty tuple is bare; a pick depends on the
    messages and the seed only."""
    messages = [("user", "hello")]
    assert pick_style((), 0, messages) == pick_style((ReplyStyle.FORMAT_REFUSED,), 0, messages)
    assert pick_style((), 0, messages).style is ReplyStyle.BARE
    drawn = {pick_style(ALL_STYLES, 0, [("user", f"prompt {n}")]).style for n in range(200)}
    assert drawn == set(ReplyStyle) - SERVER_STYLES
    assert pick_style(ALL_STYLES, 1, messages) == pick_style(ALL_STYLES, 1, messages)
    assert isinstance(pick_style(ALL_STYLES, 1, messages), StylePick)


class QaPair(pydantic.BaseModel):
    question: str
    answer: str


def client_values(server: LlmTestServer, prompts: list[str]) -> list[list[QaPair]]:
    """What the real client's ``complete_json`` returns for each prompt."""
    async def scenario() -> list[list[QaPair]]:
        settings = LlmSettings(base_url=server.base_url, model="hopindex-test-llm",
                               api_key="k", timeout_s=10.0, backoff_base_s=0.01,
                               backoff_max_s=0.05)
        client = LlmClient(settings, InProcessRateLimiter(RateLimits(requests_per_minute=6000)),
                           None)
        usage = UsageMeter()
        try:
            return [await client.complete_json(
                ChatRequest(stage="stage1", messages=(("user", prompt),)),
                lambda value: read_items(value["qa_pairs"], QaPair, what="qa_pairs"), usage)
                for prompt in prompts]
        finally:
            await client.close()

    return asyncio.run(scenario())


def test_the_client_reads_every_style_as_it_reads_bare_replies() -> None:
    """Against all styles mixed (refusals included) the client steps its output mode
    down, retries cut replies with a larger budget and reads every form: the values
    are those of a bare server."""
    prompts = [STAGE1.replace("Marie Curie\n", f"Marie Curie, part {n}\n") for n in range(24)]
    with running_llm_server() as bare_server:
        expected = client_values(bare_server, prompts)
    with running_llm_server(LlmServerConfig(reply_styles=ALL_STYLES)) as server:
        assert client_values(server, prompts) == expected
        stats = server.stats
    assert stats.by_style["format_refused"] >= 1
    assert stats.count(Endpoint.CHAT, Outcome.BAD_REQUEST) == stats.by_style["format_refused"]
    assert {"fenced", "prose", "think", "null_elements", "truncated"} <= set(stats.by_style)


def test_config_and_command_line_take_styles_by_name() -> None:
    """Names (or ``all``) are read into styles; an unknown one is a config error, which
    the command reports as a usage error."""
    assert LlmServerConfig(reply_styles=("fenced", "think")).reply_styles == (  # type: ignore[arg-type]
        ReplyStyle.FENCED, ReplyStyle.THINK)
    with pytest.raises(ConfigError):
        LlmServerConfig(reply_styles=("verbose",))  # type: ignore[arg-type]
    parsed = config_from_args(_parser().parse_args(["--reply-styles", "fenced, null-elements"]))
    assert parsed.reply_styles == (ReplyStyle.FENCED, ReplyStyle.NULL_ELEMENTS)
    assert config_from_args(_parser().parse_args(["--reply-styles", "all"])).reply_styles \
        == ALL_STYLES
    assert config_from_args(_parser().parse_args([])).reply_styles == ()
    with pytest.raises(ConfigError, match="verbose"):
        config_from_args(_parser().parse_args(["--reply-styles", "fenced,verbose"]))
