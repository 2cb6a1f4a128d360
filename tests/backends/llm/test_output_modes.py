"""Structured-output negotiation's parts: which refusals step the mode down, the strict
schema sent for a declared shape, and the memory of refused modes, in-process and in a
real Redis shared by two clients."""

from __future__ import annotations

import asyncio

import pydantic
import pytest

from hopindex.backends.llm.output_modes import (
    ModeNegotiator,
    OutputMode,
    ProcessOutputModes,
    is_mode_refusal,
    response_format,
    strict_schema,
)
from hopindex.backends.llm.output_modes_redis import RedisOutputModes
from hopindex.core.settings import LlmOutputMode
from tests.redis_server import (
    redis_url,  # noqa: F401  # pytest fixture
    unique_key,
)

URL = "http://gateway.example/v1"


class Item(pydantic.BaseModel):
    title: str
    score: int = 0


class Reply(pydantic.BaseModel):
    items: list[Item]
    note: str | None = None


@pytest.mark.parametrize(("status", "message", "mode", "refused"), [
    (400, "Error code: 400 - {'error': {'message': 'response_format is not supported'}}",
     OutputMode.JSON_SCHEMA, True),
    (400, "Invalid parameter: 'response_format' of type 'json_schema' is not supported "
          "with this model", OutputMode.JSON_SCHEMA, True),
    (422, "guided_json is not available: no grammar backend", OutputMode.JSON_OBJECT, True),
    (500, "Internal error: failed to parse grammar from json_schema",
     OutputMode.JSON_SCHEMA, True),
    (500, "Internal server error", OutputMode.JSON_SCHEMA, False),
    (400, "This model's maximum context length is 8192 tokens", OutputMode.JSON_SCHEMA,
     False),
    (401, "response_format", OutputMode.JSON_SCHEMA, False),
    (400, "response_format is not supported", OutputMode.PROMPT, False),
])
def test_only_a_refusal_naming_the_output_mode_steps_down(status: int, message: str,
                                                          mode: OutputMode,
                                                          refused: bool) -> None:
    """A 400/422 that names the mode is the mode refused; any other 4xx is the request
    refused (the item's failure), and the prompt mode has nothing left to drop."""
    assert is_mode_refusal(status, message, mode) is refused


def test_the_strict_schema_closes_every_object_and_requires_every_property() -> None:
    """Strict mode's rules hold at every level, and a property named like a schema
    keyword ("title") survives."""
    schema = strict_schema(Reply)
    assert schema["additionalProperties"] is False
    assert sorted(schema["required"]) == ["items", "note"]
    item = schema["$defs"]["Item"]
    assert item["additionalProperties"] is False and sorted(item["required"]) == ["score",
                                                                                  "title"]
    assert "title" in item["properties"]
    assert "default" not in item["properties"]["score"]
    sent = response_format(OutputMode.JSON_SCHEMA, "stage 1/akus", Reply)
    assert sent is not None and sent["json_schema"]["name"] == "stage_1_akus"
    assert response_format(OutputMode.JSON_SCHEMA, "x", None) == {"type": "json_object"}
    assert response_format(OutputMode.PROMPT, "x", Reply) is None


def test_the_negotiator_steps_down_once_per_refusal_and_remembers() -> None:
    """json_schema → json_object → prompt, one step per refusal, remembered for the
    next request; a fixed setting never steps down."""
    async def scenario() -> list[OutputMode | None]:
        memory = ProcessOutputModes()
        negotiator = ModeNegotiator(memory, LlmOutputMode.AUTO, base_url=URL, model="m")
        seen: list[OutputMode | None] = [await negotiator.mode_for_json()]
        seen.append(await negotiator.step_down("s", OutputMode.JSON_SCHEMA, 400,
                                               "json_schema unsupported"))
        seen.append(await negotiator.mode_for_json())
        seen.append(await negotiator.step_down("s", OutputMode.JSON_OBJECT, 400,
                                               "response_format unsupported"))
        seen.append(await ModeNegotiator(memory, LlmOutputMode.AUTO, base_url=URL,
                                         model="m").mode_for_json())
        seen.append(await ModeNegotiator(memory, LlmOutputMode.AUTO, base_url=URL,
                                         model="other").mode_for_json())
        fixed = ModeNegotiator(memory, LlmOutputMode.JSON_SCHEMA, base_url=URL, model="m")
        seen.append(await fixed.mode_for_json())
        seen.append(await fixed.step_down("s", OutputMode.JSON_SCHEMA, 400,
                                          "json_schema unsupported"))
        return seen

    assert asyncio.run(scenario()) == [
        OutputMode.JSON_SCHEMA, OutputMode.JSON_OBJECT, OutputMode.JSON_OBJECT,
        OutputMode.PROMPT, OutputMode.PROMPT, OutputMode.JSON_SCHEMA,
        OutputMode.JSON_SCHEMA, None]


@pytest.mark.integration
def test_one_workers_refusal_is_every_workers_through_redis(redis_url: str) -> None:  # noqa: F811  # fixture imported above
    """Two processes' memories on one Redis: what one learns the other reads, and a late
    writer of a stronger mode never undoes a step down."""
    model = unique_key("model")

    async def scenario() -> tuple[OutputMode | None, ...]:
        first, second = RedisOutputModes(redis_url), RedisOutputModes(redis_url)
        try:
            before = await second.get_mode(URL, model)
            await first.set_mode(URL, model, OutputMode.PROMPT)
            learned = await second.get_mode(URL, model)
            await RedisOutputModes(redis_url).set_mode(URL, model, OutputMode.JSON_OBJECT)
            fresh = RedisOutputModes(redis_url)
            kept = await fresh.get_mode(URL, model)
            await fresh.close()
            return before, learned, kept
        finally:
            await first.close()
            await second.close()

    assert asyncio.run(scenario()) == (None, OutputMode.PROMPT, OutputMode.PROMPT)


def test_an_unreachable_redis_falls_back_to_the_process_memory() -> None:
    """Memory only: Redis away costs nothing but sharing (no error reaches the call)."""
    async def scenario() -> OutputMode | None:
        modes = RedisOutputModes("redis://127.0.0.1:1/0")
        try:
            await modes.set_mode(URL, "m", OutputMode.JSON_OBJECT)
            return await modes.get_mode(URL, "m")
        finally:
            await modes.close()

    assert asyncio.run(scenario()) is OutputMode.JSON_OBJECT
