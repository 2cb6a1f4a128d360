"""The OpenAI-protocol request handlers of the test server, and the state they share.

Each handler applies, in a provider's order: authentication (401), request validation
(400, and a ``response_format`` a refusing reply style does not support), the
per-minute limits (429 + ``Retry-After``), the seeded fault draw, the base latency,
then the deterministic reply of ``llm_responses`` in the form its reply style draws
(``reply_styles``): one JSON response, or with ``"stream": true`` the same reply as
server-sent chunks (``llm_stream``). Every outcome is counted. A batch line
(``llm_batches``) gets the reply a synchronous call with its body gets
(``batch_reply``), past the limits, the fault draw, the outage and the latency.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from typing import Any

from aiohttp import web

from hopindex.core.logging import get_logger
from hopindex.testing.llm_batches import BatchTestApi
from hopindex.testing.llm_chat import (
    ChatAsk,
    ChatDraft,
    RequestError,
    chat_ask,
    completion,
    error_body,
)
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
from hopindex.testing.llm_stream import ChatReply, StreamAsk, StreamWriter
from hopindex.testing.reply_styles import (
    ReplyStyle,
    format_refusal,
    pick_style,
    stream_options_refusal,
    styled_reply,
)
from hopindex.testing.rerank_api import RerankTestApi

log = get_logger(__name__)


def _error(status: int, message: str, *, error_type: str, code: str | None,
           param: str | None = None, headers: dict[str, str] | None = None) -> web.Response:
    return web.json_response(error_body(message, error_type=error_type, code=code,
                                         param=param), status=status, headers=headers)


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
    raise RequestError("input must be a non-empty string, list of strings or token ids",
                       "input")


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
        app = web.Application(client_max_size=BatchTestApi.MAX_UPLOAD_BYTES)
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/v1/embeddings", self._embeddings)
        app.router.add_get("/v1/models", self._models)
        # The rerank API (rerank_api.py): vLLM and Jina serve it under /v1, TEI at the root.
        rerank = RerankTestApi(self._counters, self._unauthorised, self._admit).rerank
        app.router.add_post("/v1/rerank", rerank)
        app.router.add_post("/rerank", rerank)
        # The Files and Batch APIs (llm_batches.py): lines answered as batch_reply does.
        BatchTestApi(self.config, self._counters, self._unauthorised,
                     self.batch_reply).add_routes(app)
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
            raise RequestError(f"request body is not valid JSON: {exc}") from exc
        if not isinstance(body, dict):
            raise RequestError("request body must be a JSON object")
        return body

    def _bad_request(self, endpoint: Endpoint, exc: RequestError) -> web.Response:
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
            ask = chat_ask(await self._body(request))
        except RequestError as exc:
            return self._bad_request(endpoint, exc)
        if (refused := self._refused(ask.response_format, ask.streaming)) is not None:
            return self._bad_request(endpoint, refused)

        draft = self._draft(ask)
        if self.outage.refuses(draft.reply.kind.value):
            self._counters.record(endpoint, Outcome.OUTAGE)
            return _error(503, "Injected outage.", error_type="server_error", code=None)
        fault, rejected = await self._admit(endpoint, draft.tokens)
        if rejected is not None:
            return rejected
        sent, outcome = self._finish(ask, draft, fault)
        self._counters.record(endpoint, outcome)
        return await self._send(request, sent, ask.streaming,
                                cut=fault is Fault.STREAM_BREAK or _marked(
                                    self.config.stream_break_marker, ask.contents))

    def batch_reply(self, body: object) -> tuple[int, dict[str, Any]]:
        """The status and body a synchronous chat call with ``body`` is answered with,
        past the per-minute limits, the fault draw, the outage and the latency, which a
        provider's batch queue does not share: the response of a batch line."""
        try:
            if not isinstance(body, dict):
                raise RequestError("request body must be a JSON object", "body")
            ask = chat_ask(body)
            if ask.streaming is not None:
                raise RequestError("stream is not supported in a batch", "stream")
        except RequestError as exc:
            return 400, error_body(str(exc), error_type="invalid_request_error", code=None,
                                    param=exc.param)
        if (refused := self._refused(ask.response_format, None)) is not None:
            return 400, error_body(str(refused), error_type="invalid_request_error",
                                    code=None, param=refused.param)
        sent, _outcome = self._finish(ask, self._draft(ask), Fault.NONE)
        return 200, completion(sent)

    def _draft(self, ask: ChatAsk) -> ChatDraft:
        reply = compute_reply(ask.contents, max_tokens=ask.max_tokens, json_mode=ask.json_mode)
        self._counters.record_kind(reply.kind.value)
        pick = pick_style(self.config.reply_styles, self.config.seed,
                          [(str(m.get("role", "")), text)
                           for m, text in zip(ask.messages, ask.contents, strict=True)])
        styled = styled_reply(reply, pick, max_tokens=ask.max_tokens,
                              default_max_tokens=self.config.truncated_default_max_tokens)
        return ChatDraft(reply, styled, estimate_tokens(" ".join(ask.contents)),
                      estimate_tokens(styled.reasoning_content or ""))

    def _finish(self, ask: ChatAsk, draft: ChatDraft, fault: Fault) -> tuple[ChatReply, Outcome]:
        """The reply as sent after ``fault`` (NONE: as drafted), its usage counted."""
        reasoning_content: str | None = None
        reasoning_tokens = draft.reasoning_tokens
        replaced = self._faulted(fault, draft.reply, ask.contents)
        if replaced is None:
            styled = draft.styled
            content, outcome, truncated = styled.content, Outcome.OK, styled.truncated
            self._counters.record_style(styled.style.value)
            reasoning_content = styled.reasoning_content
        else:
            # A fault replaces the reply, and with it the form it was given.
            (content, outcome), truncated, reasoning_tokens = replaced, draft.reply.truncated, 0
        prompt_tokens = draft.prompt_tokens
        completion_tokens = estimate_tokens(content) + reasoning_tokens
        self._counters.add_usage(prompt_tokens=prompt_tokens,
                                 completion_tokens=completion_tokens)
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                 "total_tokens": prompt_tokens + completion_tokens,
                 "completion_tokens_details": {"reasoning_tokens": reasoning_tokens}}
        return ChatReply(f"chatcmpl-hopindex-{next(self._ids):010d}", int(time.time()),
                         ask.model or self.config.model, content, reasoning_content,
                         "length" if truncated else "stop", usage), outcome

    async def _send(self, request: web.Request, reply: ChatReply, streaming: StreamAsk | None,
                    *, cut: bool) -> web.StreamResponse:
        """One JSON response, or the stream asked for (``cut`` after its first batch)."""
        if streaming is None:
            await self._streams.decode(reply)
            return web.json_response(completion(reply))
        if cut:
            log.debug("llm_fault_injected", endpoint=Endpoint.CHAT.value,
                      fault=Fault.STREAM_BREAK.value)
        return await self._streams.write(request, reply, streaming, cut=cut)

    def _refused(self, response_format: object,
                 streaming: StreamAsk | None) -> RequestError | None:
        """The 400 a refusing reply style gives the request, counted under that style."""
        if (refused := format_refusal(self.config.reply_styles, response_format)) is not None:
            self._counters.record_style(refused[0].value)
            return RequestError(refused[1], "response_format")
        if streaming is not None and (message := stream_options_refusal(
                self.config.reply_styles, streaming.options)) is not None:
            self._counters.record_style(ReplyStyle.STREAM_OPTIONS_REFUSED.value)
            return RequestError(message, "stream_options")
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
                raise RequestError("dimensions must be a positive integer", "dimensions")
            encoding = body.get("encoding_format") or "float"
            if encoding not in {"float", "base64"}:
                raise RequestError("encoding_format must be float or base64",
                                    "encoding_format")
        except RequestError as exc:
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
