"""The OpenAI-protocol request handlers of the test server, and the state they share.

Each handler applies, in a provider's order: authentication (401), request validation
(400, and a ``response_format`` a refusing reply style does not support), the
per-minute limits (429 + ``Retry-After``), the seeded fault draw, the base latency,
then the deterministic reply of ``llm_responses`` in the form its reply style draws
(``reply_styles``): one JSON response, or with ``"stream": true`` the same reply as
server-sent chunks (``llm_stream``). Every outcome is counted.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from typing import Any

from aiohttp import web

from hopindex.core.logging import get_logger
from hopindex.testing.llm_limits import (
    Endpoint,
    Fault,
    FaultPicker,
    LlmServerConfig,
    LlmServerStats,
    OutageWindow,
    Outcome,
    ServerCounters,
    SlidingWindowLimiter,
    retry_after_header,
)
from hopindex.testing.llm_responses import (
    Reply,
    compute_reply,
    corrupt_json,
    embed_text,
    encode_base64,
    estimate_tokens,
)
from hopindex.testing.llm_stream import (
    ChatReply,
    StreamAsk,
    StreamRequestError,
    StreamWriter,
    stream_ask,
)
from hopindex.testing.reply_styles import (
    ReplyStyle,
    format_refusal,
    pick_style,
    stream_options_refusal,
    styled_reply,
)
from hopindex.testing.rerank_api import RerankTestApi

log = get_logger(__name__)

_JSON_RESPONSE_FORMATS = frozenset({"json_object", "json_schema"})


class _RequestError(Exception):
    """A malformed request body: answered with 400 in OpenAI's error shape."""

    def __init__(self, message: str, param: str | None = None) -> None:
        self.param = param
        super().__init__(message)


def _error(status: int, message: str, *, error_type: str, code: str | None,
           param: str | None = None, headers: dict[str, str] | None = None) -> web.Response:
    body = {"error": {"message": message, "type": error_type, "param": param, "code": code}}
    return web.json_response(body, status=status, headers=headers)


def _message_text(content: object) -> str:
    """A message's text: a string, or the text parts of a multi-part content list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content
                         if isinstance(part, dict) and part.get("type") == "text")
    if content is None:
        return ""
    raise _RequestError("message content must be a string or a list of parts", "messages")


def _embedding_texts(value: object) -> list[str]:
    """OpenAI accepts a string, strings, token ids or lists of token ids as ``input``."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and value:
        if all(isinstance(item, str) for item in value):
            return [str(item) for item in value]
        if all(isinstance(item, int) for item in value):
            return [" ".join(str(item) for item in value)]
        if all(isinstance(item, list) for item in value):
            return [" ".join(str(token) for token in item) for item in value]
    raise _RequestError("input must be a non-empty string, list of strings or token ids",
                        "input")


def _completion(reply: ChatReply) -> dict[str, Any]:
    """``reply`` as one ``chat.completion`` object."""
    message: dict[str, Any] = {"role": "assistant", "refusal": None}
    if reply.reasoning_content is not None:
        message["reasoning_content"] = reply.reasoning_content
    message["content"] = reply.content
    return {"id": reply.completion_id, "object": "chat.completion", "created": reply.created,
            "model": reply.model, "system_fingerprint": "hopindex-test",
            "choices": [{"index": 0, "message": message, "logprobs": None,
                         "finish_reason": reply.finish_reason}],
            "usage": dict(reply.usage)}


def _marked(marker: str, contents: list[str]) -> bool:
    return bool(marker) and any(marker in content for content in contents)


class OpenAiTestApi:
    """Routes, counters, rate window and fault sequence of one test server."""

    def __init__(self, config: LlmServerConfig) -> None:
        self.config = config
        self._counters = ServerCounters()
        self._limiter = SlidingWindowLimiter(config.requests_per_minute,
                                             config.tokens_per_minute)
        self._faults = FaultPicker(config)
        self._streams = StreamWriter(config, self._counters)
        self.outage = OutageWindow(config)
        self._ids = itertools.count(1)
        self._hanging: set[asyncio.Task[Any]] = set()

    @property
    def stats(self) -> LlmServerStats:
        return self._counters.snapshot()

    def reset(self) -> None:
        """Zero the counters, empty the rate window and restart the fault sequence."""
        self._counters.reset()
        self._limiter.reset()
        self._faults.reset()
        self.outage.reset()

    def build_app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/v1/embeddings", self._embeddings)
        app.router.add_get("/v1/models", self._models)
        # The rerank API (rerank_api.py): vLLM and Jina serve it under /v1, TEI at the root.
        rerank = RerankTestApi(self._counters, self._unauthorised, self._admit).rerank
        app.router.add_post("/v1/rerank", rerank)
        app.router.add_post("/rerank", rerank)
        app.router.add_get("/_stats", self._stats)
        app.router.add_post("/_reset", self._reset)
        return app

    def cancel_hanging(self) -> None:
        """Cancel requests held by the timeout fault, so that shutdown does not wait an hour."""
        for task in list(self._hanging):
            task.cancel()

    def _unauthorised(self, request: web.Request, endpoint: Endpoint) -> web.Response | None:
        if self.config.api_key is None:
            return None
        if request.headers.get("Authorization", "") == f"Bearer {self.config.api_key}":
            return None
        self._counters.record(endpoint, Outcome.UNAUTHORIZED)
        return _error(401, "Incorrect API key provided.", error_type="invalid_request_error",
                      code="invalid_api_key")

    async def _body(self, request: web.Request) -> dict[str, Any]:
        try:
            body = await request.json()
        except ValueError as exc:
            raise _RequestError(f"request body is not valid JSON: {exc}") from exc
        if not isinstance(body, dict):
            raise _RequestError("request body must be a JSON object")
        return body

    def _bad_request(self, endpoint: Endpoint, exc: _RequestError) -> web.Response:
        self._counters.record(endpoint, Outcome.BAD_REQUEST)
        return _error(400, str(exc), error_type="invalid_request_error", code=None,
                      param=exc.param)

    async def _admit(self, endpoint: Endpoint, tokens: int) -> tuple[Fault, web.Response | None]:
        """Rate limit, fault draw and latency, in the order a provider applies them."""
        wait = self._limiter.admit(tokens)
        if wait > 0.0:
            self._counters.record(endpoint, Outcome.RATE_LIMITED)
            return Fault.RATE_LIMITED, _error(
                429, f"Rate limit reached for {self.config.model}: please try again in "
                f"{wait:.3f}s.", error_type="requests", code="rate_limit_exceeded",
                headers=retry_after_header(wait))
        fault = self._faults.draw()
        if self.config.latency_s > 0:
            await asyncio.sleep(self.config.latency_s)
        if fault is Fault.RATE_LIMITED:
            self._counters.record(endpoint, Outcome.RATE_LIMITED)
            log.debug("llm_fault_injected", endpoint=endpoint.value, fault=fault.value)
            return fault, _error(429, "Injected rate limit.", error_type="requests",
                                 code="rate_limit_exceeded",
                                 headers=retry_after_header(self.config.fault_retry_after_s))
        if fault is Fault.SERVER_ERROR:
            self._counters.record(endpoint, Outcome.SERVER_ERROR)
            log.debug("llm_fault_injected", endpoint=endpoint.value, fault=fault.value)
            return fault, _error(500, "Injected server error.", error_type="server_error",
                                 code=None)
        if fault is Fault.TIMEOUT:
            self._counters.record(endpoint, Outcome.TIMEOUT)
            log.debug("llm_fault_injected", endpoint=endpoint.value, fault=fault.value)
            await self._hang()
        return fault, None

    async def _hang(self) -> None:
        """Outlast the client's timeout; tracked so that stopping the server cancels it."""
        task = asyncio.current_task()
        if task is not None:
            self._hanging.add(task)
        try:
            await asyncio.sleep(self.config.timeout_hang_s)
        finally:
            if task is not None:
                self._hanging.discard(task)

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        endpoint = Endpoint.CHAT
        if (denied := self._unauthorised(request, endpoint)) is not None:
            return denied
        try:
            body = await self._body(request)
            try:
                streaming = stream_ask(body)
            except StreamRequestError as exc:
                raise _RequestError(str(exc), "stream_options") from exc
            messages = body.get("messages")
            if not isinstance(messages, list) or not messages or not all(
                    isinstance(m, dict) for m in messages):
                raise _RequestError("messages must be a non-empty list of objects", "messages")
            contents = [_message_text(m.get("content")) for m in messages]
            max_tokens = body.get("max_completion_tokens") or body.get("max_tokens")
            if max_tokens is not None and (not isinstance(max_tokens, int) or max_tokens < 1):
                raise _RequestError("max_tokens must be a positive integer", "max_tokens")
            response_format = body.get("response_format")
            json_mode = (isinstance(response_format, dict)
                         and response_format.get("type") in _JSON_RESPONSE_FORMATS)
        except _RequestError as exc:
            return self._bad_request(endpoint, exc)
        if (refused := self._refused(response_format, streaming)) is not None:
            return self._bad_request(endpoint, refused)

        reply = compute_reply(contents, max_tokens=max_tokens, json_mode=json_mode)
        self._counters.record_kind(reply.kind.value)
        if self.outage.refuses(reply.kind.value):
            self._counters.record(endpoint, Outcome.OUTAGE)
            return _error(503, "Injected outage.", error_type="server_error", code=None)
        pick = pick_style(self.config.reply_styles, self.config.seed,
                          [(str(m.get("role", "")), text)
                           for m, text in zip(messages, contents, strict=True)])
        styled = styled_reply(reply, pick, max_tokens=max_tokens,
                              default_max_tokens=self.config.truncated_default_max_tokens)
        # Reasoning is billed as completion tokens, as reasoning models' providers do.
        reasoning_tokens = estimate_tokens(styled.reasoning_content or "")
        prompt_tokens = estimate_tokens(" ".join(contents))
        fault, rejected = await self._admit(
            endpoint, prompt_tokens + estimate_tokens(styled.content) + reasoning_tokens)
        if rejected is not None:
            return rejected

        reasoning_content: str | None = None
        replaced = self._faulted(fault, reply, contents)
        if replaced is None:
            content, outcome, truncated = styled.content, Outcome.OK, styled.truncated
            self._counters.record_style(styled.style.value)
            reasoning_content = styled.reasoning_content
        else:
            # A fault replaces the reply, and with it the form it was given.
            (content, outcome), truncated, reasoning_tokens = replaced, reply.truncated, 0
        completion_tokens = estimate_tokens(content) + reasoning_tokens
        self._counters.add_usage(prompt_tokens=prompt_tokens,
                                 completion_tokens=completion_tokens)
        self._counters.record(endpoint, outcome)
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                 "total_tokens": prompt_tokens + completion_tokens,
                 "completion_tokens_details": {"reasoning_tokens": reasoning_tokens}}
        sent = ChatReply(f"chatcmpl-hopindex-{next(self._ids):010d}", int(time.time()),
                         str(body.get("model") or self.config.model), content,
                         reasoning_content, "length" if truncated else "stop", usage)
        return await self._send(request, sent, streaming,
                                cut=fault is Fault.STREAM_BREAK or _marked(
                                    self.config.stream_break_marker, contents))

    async def _send(self, request: web.Request, reply: ChatReply, streaming: StreamAsk | None,
                    *, cut: bool) -> web.StreamResponse:
        """One JSON response, or the stream asked for (``cut`` after its first batch)."""
        if streaming is None:
            await self._streams.decode(reply)
            return web.json_response(_completion(reply))
        if cut:
            log.debug("llm_fault_injected", endpoint=Endpoint.CHAT.value,
                      fault=Fault.STREAM_BREAK.value)
        return await self._streams.write(request, reply, streaming, cut=cut)

    def _refused(self, response_format: object,
                 streaming: StreamAsk | None) -> _RequestError | None:
        """The 400 a refusing reply style gives the request, counted under that style."""
        if (refused := format_refusal(self.config.reply_styles, response_format)) is not None:
            self._counters.record_style(refused[0].value)
            return _RequestError(refused[1], "response_format")
        if streaming is not None and (message := stream_options_refusal(
                self.config.reply_styles, streaming.options)) is not None:
            self._counters.record_style(ReplyStyle.STREAM_OPTIONS_REFUSED.value)
            return _RequestError(message, "stream_options")
        return None

    def _faulted(self, fault: Fault, reply: Reply,
                 contents: list[str]) -> tuple[str, Outcome] | None:
        """The content and outcome that replace ``reply`` when a fault or a marker
        breaks it; None when it is sent as computed."""
        poisoned = bool(self.config.invalid_json_marker) and any(
            self.config.invalid_json_marker in c for c in contents)
        if (fault is Fault.INVALID_JSON or poisoned) and reply.expects_json:
            log.debug("llm_fault_injected", endpoint=Endpoint.CHAT.value, fault=fault.value)
            return corrupt_json(reply.content), Outcome.INVALID_JSON
        if (not reply.expects_json and self.config.empty_text_marker
                and any(self.config.empty_text_marker in c for c in contents)):
            return "", Outcome.EMPTY
        return None

    async def _embeddings(self, request: web.Request) -> web.Response:
        endpoint = Endpoint.EMBEDDINGS
        if (denied := self._unauthorised(request, endpoint)) is not None:
            return denied
        try:
            body = await self._body(request)
            texts = _embedding_texts(body.get("input"))
            dimension = body.get("dimensions") or self.config.embedding_dimension
            if not isinstance(dimension, int) or dimension < 1:
                raise _RequestError("dimensions must be a positive integer", "dimensions")
            encoding = body.get("encoding_format") or "float"
            if encoding not in {"float", "base64"}:
                raise _RequestError("encoding_format must be float or base64",
                                    "encoding_format")
        except _RequestError as exc:
            return self._bad_request(endpoint, exc)

        tokens = sum(estimate_tokens(text) for text in texts)
        _fault, rejected = await self._admit(endpoint, tokens)
        if rejected is not None:
            return rejected
        data: list[dict[str, Any]] = []
        for position, text in enumerate(texts):
            vector = embed_text(text, dimension)
            data.append({"object": "embedding", "index": position,
                         "embedding": encode_base64(vector) if encoding == "base64" else vector})
        self._counters.add_embedding_tokens(tokens)
        self._counters.record(endpoint, Outcome.OK)
        return web.json_response({
            "object": "list", "data": data,
            "model": str(body.get("model") or self.config.embedding_model),
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        })

    async def _models(self, request: web.Request) -> web.Response:
        if (denied := self._unauthorised(request, Endpoint.MODELS)) is not None:
            return denied
        self._counters.record(Endpoint.MODELS, Outcome.OK)
        return web.json_response({"object": "list", "data": [
            {"id": model, "object": "model", "created": 0, "owned_by": "hopindex-test"}
            for model in (self.config.model, self.config.embedding_model)]})

    async def _stats(self, _request: web.Request) -> web.Response:
        return web.json_response(self.stats.as_dict())

    async def _reset(self, _request: web.Request) -> web.Response:
        self.reset()
        return web.json_response(self.stats.as_dict())
