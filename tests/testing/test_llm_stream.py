"""The LLM test server streams as OpenAI does (``hopindex.testing.llm_stream``).

Proves: the wire format (``data:`` events of ``chat.completion.chunk``, the role first,
batches of words, the final chunk, the usage chunk, ``[DONE]``) carries the unstreamed
reply and usage, and the official client parses it; batches are paced (an unstreamed
reply waits for its batches too); reasoning streams as the styles put it; faults
before the first byte are ordinary JSON errors;
a stream is cut by the marker or the fault share; a refusing server refuses
``stream_options``; the counters tell started, completed, broken and disconnected
streams apart.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest

from hopindex.core.errors import ConfigError
from hopindex.testing.llm_limits import Endpoint, LlmServerConfig, Outcome, StreamEvent
from hopindex.testing.llm_server import LlmTestServer, config_from_args, running_llm_server
from hopindex.testing.llm_server import _parser as server_parser
from hopindex.testing.llm_stream import batches
from hopindex.testing.reply_styles import ReplyStyle
from tests.waiting import wait_until

PROMPT = ("Describe the passage below.\n\nMarie Curie was a physicist and chemist who did "
          "pioneering research on radioactivity. She was the first woman to win a Nobel "
          "Prize. She moved to Paris in 1891.")
BREAK = "[[break the stream here]]"


def body(prompt: str = PROMPT, **options: Any) -> dict[str, Any]:
    return {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": prompt}],
            **options}


def events(server: LlmTestServer, payload: dict[str, Any]) -> tuple[list[dict[str, Any]], bool]:
    """The stream's chunks as sent, and whether it ended with ``data: [DONE]`` (False
    for a connection closed mid-body); every event a ``data:`` line and a blank one."""
    chunks: list[dict[str, Any]] = []
    received = bytearray()
    with httpx.stream("POST", f"{server.base_url}/chat/completions", json=payload,
                      timeout=30) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        try:
            for part in response.iter_bytes():
                received += part
        except httpx.RemoteProtocolError:  # the body never ended: a cut stream
            pass
    raw = received.decode().split("\n\n")
    assert raw[-1] == ""
    for event in raw[:-1]:
        assert event.startswith("data: ")
        if event == "data: [DONE]":
            return chunks, True
        chunks.append(json.loads(event.removeprefix("data: ")))
    return chunks, False


def unstreamed(server: LlmTestServer, payload: dict[str, Any]) -> dict[str, Any]:
    reply = httpx.post(f"{server.base_url}/chat/completions", json=payload, timeout=30)
    assert reply.status_code == 200
    result: dict[str, Any] = reply.json()
    return result


@pytest.fixture
def server(request: pytest.FixtureRequest) -> Iterator[LlmTestServer]:
    config: LlmServerConfig = getattr(request, "param", LlmServerConfig(
        stream_batch_tokens=3, stream_break_marker=BREAK))
    with running_llm_server(config) as running:
        yield running


def test_the_wire_format_carries_the_unstreamed_reply_and_usage(server: LlmTestServer) -> None:
    chunks, done = events(server, body(stream=True, stream_options={"include_usage": True}))
    whole = unstreamed(server, body())
    assert done
    assert all(c["object"] == "chat.completion.chunk" and c["id"] == chunks[0]["id"]
               for c in chunks)
    first, *middle, final, usage = chunks
    assert first["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    pieces = [c["choices"][0]["delta"]["content"] for c in middle]
    content = whole["choices"][0]["message"]["content"]
    assert "".join(pieces) == content
    assert pieces == batches(content, 3) and all(len(p.split()) <= 3 for p in pieces)
    assert final["choices"][0] == {"index": 0, "delta": {}, "logprobs": None,
                                   "finish_reason": "stop"}
    assert usage["choices"] == [] and usage["usage"] == whole["usage"]
    assert all(c["usage"] is None for c in chunks[:-1])
    stats = server.stats
    assert stats.stream_count(StreamEvent.STARTED) == stats.stream_count(
        StreamEvent.COMPLETED) == 1
    assert stats.count(Endpoint.CHAT, Outcome.OK) == 2


def test_without_include_usage_there_is_no_usage_chunk(server: LlmTestServer) -> None:
    chunks, done = events(server, body(stream=True))
    assert done and chunks[-1]["choices"][0]["finish_reason"] == "stop"
    assert all("usage" not in c for c in chunks)


def test_the_official_client_parses_the_stream(server: LlmTestServer) -> None:
    client = openai.OpenAI(base_url=server.base_url, api_key="x", max_retries=0)
    stream = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": PROMPT}], stream=True,
        stream_options={"include_usage": True})
    chunks = list(stream)
    whole = client.chat.completions.create(model="gpt-4o-mini",
                                           messages=[{"role": "user", "content": PROMPT}])
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) \
        == whole.choices[0].message.content
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].usage == whole.usage


@pytest.mark.parametrize("server", [LlmServerConfig(stream_batch_tokens=8,
                                                    stream_batch_latency_s=0.2)], indirect=True)
def test_batches_are_paced(server: LlmTestServer) -> None:
    """Each batch is written 0.2 s after the one before (a lower bound: it holds on a
    loaded machine)."""
    started = time.monotonic()
    chunks, done = events(server, body(stream=True))
    contents = [c for c in chunks if c["choices"] and c["choices"][0]["delta"].get("content")]
    assert done and len(contents) == 3
    assert time.monotonic() - started >= 3 * 0.2


@pytest.mark.parametrize("server", [LlmServerConfig(stream_batch_tokens=8,
                                                    stream_batch_latency_s=0.2)], indirect=True)
def test_an_unstreamed_reply_takes_as_long_as_its_stream(server: LlmTestServer) -> None:
    """A provider sends a whole reply once it has written all of it: the unstreamed reply
    waits for its three batches too (a lower bound), so streamed and unstreamed
    requests are compared at one pace."""
    started = time.monotonic()
    response = httpx.post(f"{server.base_url}/chat/completions", json=body(), timeout=30)
    assert response.status_code == 200
    assert len(batches(response.json()["choices"][0]["message"]["content"], 8)) == 3
    assert time.monotonic() - started >= 3 * 0.2


@pytest.mark.parametrize("server", [LlmServerConfig(stream_batch_latency_s=2.0)], indirect=True)
def test_the_first_event_arrives_before_the_answer_is_finished(server: LlmTestServer) -> None:
    """The role chunk is sent at once, the text two seconds a batch later: a client that
    reads the first event and goes away is counted as disconnected, not completed."""
    client = openai.OpenAI(base_url=server.base_url, api_key="x", max_retries=0)
    stream = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": PROMPT}], stream=True)
    first = next(iter(stream))
    assert first.choices[0].delta.role == "assistant"
    assert server.stats.stream_count(StreamEvent.COMPLETED) == 0
    stream.close()
    wait_until(lambda: server.stats.stream_count(StreamEvent.DISCONNECTED) == 1,
               what="the server to see the client go away")
    assert server.stats.stream_count(StreamEvent.COMPLETED) == 0


@pytest.mark.parametrize("server", [LlmServerConfig(reply_styles=(ReplyStyle.REASONING_CONTENT,),
                                                    stream_batch_tokens=4)], indirect=True)
def test_reasoning_content_streams_before_the_content(server: LlmTestServer) -> None:
    chunks, _done = events(server, body(stream=True))
    whole = unstreamed(server, body())["choices"][0]["message"]
    deltas = [c["choices"][0]["delta"] for c in chunks[1:-1]]
    kinds = ["reasoning" if "reasoning_content" in d else "content" for d in deltas]
    assert kinds == sorted(kinds, key=lambda kind: kind == "content") and "reasoning" in kinds
    assert "".join(d.get("reasoning_content", "") for d in deltas) == whole["reasoning_content"]
    assert "".join(d.get("content", "") for d in deltas) == whole["content"]


@pytest.mark.parametrize("server", [LlmServerConfig(reply_styles=(ReplyStyle.THINK,))],
                         indirect=True)
def test_a_think_block_streams_as_content(server: LlmTestServer) -> None:
    chunks, _done = events(server, body(stream=True))
    content = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks)
    assert content.startswith("<think>") and content == unstreamed(
        server, body())["choices"][0]["message"]["content"]


def test_a_cut_reply_ends_with_length(server: LlmTestServer) -> None:
    chunks, done = events(server, body(stream=True, max_tokens=5))
    assert done and chunks[-1]["choices"][0]["finish_reason"] == "length"


@pytest.mark.parametrize("server", [LlmServerConfig(fail_429=0.5, fail_500=0.5, seed=3)],
                         indirect=True)
def test_faults_before_the_first_byte_are_json_errors(server: LlmTestServer) -> None:
    client = openai.OpenAI(base_url=server.base_url, api_key="x", max_retries=0)
    raised: set[type[Exception]] = set()
    for _ in range(8):
        with pytest.raises((openai.RateLimitError, openai.InternalServerError)) as caught:
            client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": PROMPT}], stream=True)
        raised.add(type(caught.value))
    assert raised == {openai.RateLimitError, openai.InternalServerError}
    assert server.stats.stream_count(StreamEvent.STARTED) == 0


def test_the_break_marker_cuts_the_stream_after_its_first_batch(server: LlmTestServer) -> None:
    client = openai.OpenAI(base_url=server.base_url, api_key="x", max_retries=0)
    stream = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": f"{PROMPT}\n{BREAK}"}], stream=True)
    received: list[str] = []
    with pytest.raises(openai.APIConnectionError):
        received.extend(c.choices[0].delta.content or "" for c in stream)
    assert "".join(received) == "Marie Curie was"  # the role chunk, then one batch
    stats = server.stats
    assert stats.stream_count(StreamEvent.BROKEN) == stats.stream_count(StreamEvent.STARTED) == 1
    assert stats.stream_count(StreamEvent.COMPLETED) == 0


@pytest.mark.parametrize("server", [LlmServerConfig(fail_stream_break=0.5, seed=1)],
                         indirect=True)
def test_the_stream_break_share_cuts_streams_and_spares_whole_replies(
        server: LlmTestServer) -> None:
    ended = [events(server, body(stream=True))[1] for _ in range(12)]
    stats = server.stats
    assert 0 < stats.stream_count(StreamEvent.BROKEN) == ended.count(False) < 12
    assert stats.stream_count(StreamEvent.COMPLETED) == ended.count(True)
    assert all(unstreamed(server, body())["choices"][0]["finish_reason"] == "stop"
               for _ in range(6))


@pytest.mark.parametrize("server", [LlmServerConfig(
    reply_styles=(ReplyStyle.STREAM_OPTIONS_REFUSED,))], indirect=True)
def test_a_refusing_server_answers_stream_options_with_a_400(server: LlmTestServer) -> None:
    reply = httpx.post(f"{server.base_url}/chat/completions",
                       json=body(stream=True, stream_options={"include_usage": True}))
    assert reply.status_code == 400
    assert "stream_options" in reply.json()["error"]["message"]
    assert reply.json()["error"]["param"] == "stream_options"
    _chunks, done = events(server, body(stream=True))
    assert done
    assert server.stats.by_style[ReplyStyle.STREAM_OPTIONS_REFUSED.value] == 1


def test_stream_options_without_stream_is_a_400(server: LlmTestServer) -> None:
    reply = httpx.post(f"{server.base_url}/chat/completions",
                       json=body(stream_options={"include_usage": True}))
    assert reply.status_code == 400


def test_stream_config_is_checked_and_taken_from_the_command_line() -> None:
    with pytest.raises(ConfigError, match="sum to more than 1"):
        LlmServerConfig(fail_500=0.6, fail_stream_break=0.6)
    with pytest.raises(ConfigError, match="stream_batch_tokens"):
        LlmServerConfig(stream_batch_tokens=0)
    with pytest.raises(ConfigError, match="negative"):
        LlmServerConfig(stream_batch_latency_s=-1)
    config = config_from_args(server_parser().parse_args(
        ["--stream-batch-latency-ms", "250", "--stream-batch-tokens", "2"]))
    assert (config.stream_batch_latency_s, config.stream_batch_tokens) == (0.25, 2)
