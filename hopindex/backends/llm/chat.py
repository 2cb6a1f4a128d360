"""The shapes of one chat call: the client's settings, a request and its result."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

import pydantic

from hopindex.backends.llm.reachability import CONNECT_GIVE_UP_S
from hopindex.backends.llm.usage import LlmPrices
from hopindex.core.errors import ConfigError
from hopindex.core.settings import LlmOutputMode

# Characters per token for estimates before a call; the provider's usage corrects it.
CHARS_PER_TOKEN = 4
DEFAULT_COMPLETION_ESTIMATE = 256


class ResponseFormat(enum.StrEnum):
    TEXT = "text"
    JSON = "json"


@dataclass(frozen=True, slots=True)
class LlmSettings:
    base_url: str
    model: str
    api_key: str
    timeout_s: float = 60.0
    max_attempts: int = 6
    backoff_base_s: float = 0.5
    backoff_max_s: float = 30.0
    # Prices each answered call as it is recorded (job records, query usage, metrics).
    prices: LlmPrices = field(default_factory=LlmPrices)
    # Negotiate the structured-output mode, or always use one (output_modes.py).
    output_mode: LlmOutputMode = LlmOutputMode.AUTO
    # How long a provider that refuses connections or does not resolve is retried,
    # quickly, before its calls fail (reachability.py); not the patient policy above.
    connect_give_up_s: float = CONNECT_GIVE_UP_S
    # The share the provider's Batch API takes off ``prices`` (batch mode's lines).
    batch_discount: float = 0.5

    def __post_init__(self) -> None:
        if not self.model:
            raise ConfigError("HOPINDEX_LLM_MODEL must name a model")
        if self.timeout_s <= 0 or self.max_attempts < 1 or self.connect_give_up_s <= 0:
            raise ConfigError("LLM timeout and connect give-up must be positive and "
                              "attempts at least 1")


@dataclass(frozen=True, slots=True)
class ChatRequest:
    stage: str
    messages: tuple[tuple[str, str], ...]  # (role, content)
    temperature: float = 0.0
    max_tokens: int | None = None
    response_format: ResponseFormat = ResponseFormat.TEXT
    seed: int | None = None
    # The reply's declared shape, sent as a JSON schema where the provider takes one.
    shape: type[pydantic.BaseModel] | None = None

    def as_messages(self) -> list[dict[str, str]]:
        return [{"role": role, "content": content} for role, content in self.messages]

    def estimated_tokens(self) -> int:
        return self.estimated_prompt_tokens() + self.estimated_completion_tokens()

    def estimated_prompt_tokens(self) -> int:
        return sum(len(content) for _, content in self.messages) // CHARS_PER_TOKEN + 1

    def estimated_completion_tokens(self) -> int:
        return self.max_tokens or DEFAULT_COMPLETION_ESTIMATE


@dataclass(frozen=True, slots=True)
class ChatResult:
    content: str
    prompt_tokens: int
    completion_tokens: int
    cached: bool
    waited_s: float = 0.0
    attempts: int = 0
    # The provider's reason for ending the reply; "length" is a reply cut at its budget.
    finish_reason: str | None = None
    # The model that answered, as the provider names it (None: a cache hit, a stream).
    model: str | None = None

    @property
    def truncated(self) -> bool:
        return self.finish_reason == "length"


def message_text(content: object) -> str:
    """A reply message's content as text: a string, or the text parts some gateways send
    as a list (``[{"type": "text", "text": ...}]``); anything else (a null content,
    OpenAI's structured-output refusal) is no text."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") if isinstance(part, dict) else
                       str(getattr(part, "text", "") or "") for part in content)
    return ""
