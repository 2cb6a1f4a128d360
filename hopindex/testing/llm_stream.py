"""Streamed chat replies of the test server, as OpenAI sends them.

A request with ``"stream": true`` is answered by ``llm_api`` exactly as an unstreamed
one up to its first byte (the same reply and style draw; authentication, validation,
rate limits, injected faults and the base latency answered as ordinary JSON errors,
as providers do), then sent here as server-sent events of ``chat.completion.chunk``
objects (``data: {...}`` and a blank line each):

1. a first chunk whose delta carries the ``role`` (and an empty content);
2. under the REASONING_CONTENT style, the ``reasoning_content`` in batches, then the
   content in batches (a ``<think>`` block is content, and streams as such): batches
   of ``stream_batch_tokens`` words, each written ``stream_batch_latency_s`` after the
   one before, so a test can see the first text arrive long before the last;
3. a chunk with an empty delta and the ``finish_reason`` (``length`` for a cut reply);
4. when ``stream_options.include_usage`` is set, a chunk with empty ``choices`` and the
   ``usage`` (every chunk before it carries ``"usage": null``, as OpenAI's do);
5. ``data: [DONE]``.

A stream whose prompt holds ``stream_break_marker``, or that drew the stream-break
fault, is cut after its first content batch: the connection is closed with neither the
final chunk nor ``[DONE]``, as when a provider dies mid-reply. Each stream is counted
(``StreamEvent``): started, completed, broken, and disconnected when the client closed
the connection first (the server cancels a handler whose client went away).
"""

from __future__ import annotations

import asyncio
import enum
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from hopindex.core.logging import get_logger
from hopindex.testing.llm_limits import LlmServerConfig, ServerCounters, StreamEvent

log = get_logger(__name__)

# A word with the whitespace before it: batches joined give the text back exactly.
_WORD = re.compile(r"\s*\S+|\s+")
_DONE = b"data: [DONE]\n\n"


class StreamRequestError(ValueError):
    """A request whose streaming parameters cannot be honoured (answered with a 400)."""


@dataclass(frozen=True, slots=True)
class StreamAsk:
    """What a streaming request asked for: the usage chunk, and whether it sent
    ``stream_options`` at all (which a refusing server answers with a 400)."""

    include_usage: bool
    options: Mapping[str, Any] | None


def stream_ask(body: Mapping[str, Any]) -> StreamAsk | None:
    """The request's streaming parameters, None when it does not stream;
    ``StreamRequestError`` for ones OpenAI refuses too."""
    options = body.get("stream_options")
    if body.get("stream") is not True:
        if options is not None:
            raise StreamRequestError("The 'stream_options' parameter is only allowed when "
                                     "'stream' is enabled.")
        return None
    if options is not None and not isinstance(options, dict):
        raise StreamRequestError("stream_options must be an object")
    return StreamAsk(include_usage=bool(options and options.get("include_usage")),
                     options=options)


@dataclass(frozen=True, slots=True)
class ChatReply:
    """One chat reply as it is sent, whole or streamed."""

    completion_id: str
    created: int
    model: str
    content: str
    reasoning_content: str | None
    finish_reason: str
    usage: Mapping[str, Any]


class _Part(enum.Enum):
    """The kinds of chunk in a stream, in the order they are sent."""

    ROLE = enum.auto()
    REASONING = enum.auto()
    CONTENT = enum.auto()
    FINISH = enum.auto()
    USAGE = enum.auto()


def batches(text: str, size: int) -> list[str]:
    """``text`` in pieces of ``size`` words (with their whitespace): joined, ``text``."""
    words = _WORD.findall(text)
    return ["".join(words[start:start + size]) for start in range(0, len(words), size)]


class StreamWriter:
    """Writes streamed replies for one server, counting how each stream ended."""

    def __init__(self, config: LlmServerConfig, counters: ServerCounters) -> None:
        self._config = config
        self._counters = counters

    async def decode(self, reply: ChatReply) -> None:
        """Wait as long as streaming ``reply`` would take: a provider sends an unstreamed
        reply once it has written the whole of it, so a streamed and an unstreamed
        request are compared at one model's pace."""
        size = self._config.stream_batch_tokens
        count = (len(batches(reply.reasoning_content or "", size))
                 + len(batches(reply.content, size)))
        if self._config.stream_batch_latency_s and count:
            await asyncio.sleep(self._config.stream_batch_latency_s * count)

    async def write(self, request: web.Request, reply: ChatReply, ask: StreamAsk, *,
                    cut: bool) -> web.StreamResponse:
        """Send ``reply`` as events; ``cut``: close the connection after its first
        content batch."""
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream",
                                               "Cache-Control": "no-cache"})
        self._counters.record_stream(StreamEvent.STARTED)
        try:
            await response.prepare(request)
            was_cut = await self._send(response, reply, ask, cut=cut)
        except asyncio.CancelledError:
            # The client closed the connection: aiohttp cancels the handler.
            self._disconnected(reply)
            raise
        except ConnectionResetError:
            # A write to a connection the client already closed; aiohttp's own
            # end-of-response write meets the same and lets it go.
            self._disconnected(reply)
            return response
        if was_cut:
            self._break(request, reply)
        else:
            self._counters.record_stream(StreamEvent.COMPLETED)
        return response

    async def _send(self, response: web.StreamResponse, reply: ChatReply,
                    ask: StreamAsk, *, cut: bool) -> bool:
        """Write the events; True when the stream was cut after its first content."""
        for part, chunk in self._chunks(reply, ask):
            if part in (_Part.REASONING, _Part.CONTENT) and self._config.stream_batch_latency_s:
                # A slow model's pace between batches (a test server simulating it).
                await asyncio.sleep(self._config.stream_batch_latency_s)
            await response.write(_event(chunk))
            if cut and part is _Part.CONTENT:
                return True
        await response.write(_DONE)
        return False

    def _chunks(self, reply: ChatReply,
                ask: StreamAsk) -> Iterator[tuple[_Part, dict[str, Any]]]:
        usage_field: dict[str, Any] = {"usage": None} if ask.include_usage else {}

        def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
            return {**_head(reply), "choices": [{"index": 0, "delta": delta, "logprobs": None,
                                                 "finish_reason": finish_reason}],
                    **usage_field}

        size = self._config.stream_batch_tokens
        yield _Part.ROLE, chunk({"role": "assistant", "content": ""})
        for piece in batches(reply.reasoning_content or "", size):
            yield _Part.REASONING, chunk({"reasoning_content": piece})
        for piece in batches(reply.content, size):
            yield _Part.CONTENT, chunk({"content": piece})
        yield _Part.FINISH, chunk({}, reply.finish_reason)
        if ask.include_usage:
            yield _Part.USAGE, {**_head(reply), "choices": [], "usage": dict(reply.usage)}

    def _break(self, request: web.Request, reply: ChatReply) -> None:
        """Close the connection mid-stream: the client reads a body that never ends
        properly, as from a provider that died."""
        self._counters.record_stream(StreamEvent.BROKEN)
        log.debug("llm_stream_broken", completion_id=reply.completion_id)
        transport = request.transport
        if transport is not None:
            transport.close()

    def _disconnected(self, reply: ChatReply) -> None:
        self._counters.record_stream(StreamEvent.DISCONNECTED)
        log.debug("llm_stream_disconnected", completion_id=reply.completion_id)


def _head(reply: ChatReply) -> dict[str, Any]:
    return {"id": reply.completion_id, "object": "chat.completion.chunk",
            "created": reply.created, "model": reply.model,
            "system_fingerprint": "hopindex-test"}


def _event(chunk: Mapping[str, Any]) -> bytes:
    return b"data: " + json.dumps(chunk, ensure_ascii=False).encode("utf-8") + b"\n\n"
