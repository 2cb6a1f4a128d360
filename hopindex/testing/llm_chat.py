"""A chat request of the test server as its reply is computed from it, and the
OpenAI shapes of what it is answered with.

Shared by the synchronous ``/v1/chat/completions`` handler (``llm_api``) and the lines
of a batch (``llm_batches``), so that a batch line's reply is the one a synchronous
call with the same body gets: the same reading of the body, the same reply, style draw
and usage.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hopindex.testing.llm_responses import Reply, estimate_tokens
from hopindex.testing.llm_stream import ChatReply, StreamAsk, StreamRequestError, stream_ask
from hopindex.testing.reply_styles import StyledReply

_JSON_RESPONSE_FORMATS = frozenset({"json_object", "json_schema"})


class RequestError(Exception):
    """A malformed request body: answered with 400 in OpenAI's error shape."""

    def __init__(self, message: str, param: str | None = None) -> None:
        self.param = param
        super().__init__(message)


def error_body(message: str, *, error_type: str, code: str | None,
               param: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": error_type, "param": param, "code": code}}


def message_text(content: object) -> str:
    """A message's text: a string, or the text parts of a multi-part content list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content
                         if isinstance(part, dict) and part.get("type") == "text")
    if content is None:
        return ""
    raise RequestError("message content must be a string or a list of parts", "messages")


def completion(reply: ChatReply) -> dict[str, Any]:
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


@dataclass(frozen=True, slots=True)
class ChatAsk:
    """A well-formed chat request, as the reply is computed from it."""

    messages: list[dict[str, Any]]
    contents: list[str]
    max_tokens: int | None
    response_format: object
    json_mode: bool
    streaming: StreamAsk | None
    model: str


def chat_ask(body: dict[str, Any]) -> ChatAsk:
    """``body`` read as a chat request; ``RequestError`` for one OpenAI refuses."""
    try:
        streaming = stream_ask(body)
    except StreamRequestError as exc:
        raise RequestError(str(exc), "stream_options") from exc
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages or not all(
            isinstance(m, dict) for m in messages):
        raise RequestError("messages must be a non-empty list of objects", "messages")
    contents = [message_text(m.get("content")) for m in messages]
    max_tokens = body.get("max_completion_tokens") or body.get("max_tokens")
    if max_tokens is not None and (not isinstance(max_tokens, int) or max_tokens < 1):
        raise RequestError("max_tokens must be a positive integer", "max_tokens")
    response_format = body.get("response_format")
    json_mode = (isinstance(response_format, dict)
                 and response_format.get("type") in _JSON_RESPONSE_FORMATS)
    return ChatAsk(messages, contents, max_tokens, response_format, json_mode, streaming,
                   str(body.get("model") or ""))


@dataclass(frozen=True, slots=True)
class ChatDraft:
    """The reply computed for a request and the form drawn for it, before any fault."""

    reply: Reply
    styled: StyledReply
    prompt_tokens: int
    reasoning_tokens: int  # billed as completion tokens, as reasoning models' providers do

    @property
    def tokens(self) -> int:
        return (self.prompt_tokens + estimate_tokens(self.styled.content)
                + self.reasoning_tokens)
