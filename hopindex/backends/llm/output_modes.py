"""Structured-output negotiation: ask for the strongest mode the provider honours.

``json_schema`` (the reply constrained to the call kind's declared shape) where the
provider supports it, else ``json_object`` (any JSON object), else the prompt alone
(the prompts ask for JSON in words; the lenient reader finds it). Providers say "not
supported" differently: OpenAI-compatible gateways answer 400 naming
``response_format``; some name ``json_schema`` only; llama.cpp and vLLM builds answer
400 or 422 about a grammar or guided decoding. Any of those steps the mode down one
and the call is sent again at once: a refusal of the mode is never the item's failure.

What a provider refused is remembered per (base URL, model): for the process, and,
with a Redis broker, in Redis for every worker (``output_modes_redis``). A setting
(``HOPINDEX_LLM_OUTPUT_MODE``) fixes the mode instead, for a provider that accepts a
mode it then ignores.
"""

from __future__ import annotations

import enum
import re
import threading
from typing import Any, Protocol

import pydantic

from hopindex.core.logging import get_logger
from hopindex.core.settings import LlmOutputMode

log = get_logger(__name__)


class OutputMode(enum.StrEnum):
    """How a structured reply is asked for, strongest first."""

    JSON_SCHEMA = "json_schema"
    JSON_OBJECT = "json_object"
    PROMPT = "prompt"

    def weaker(self) -> OutputMode | None:
        order = list(OutputMode)
        position = order.index(self)
        return order[position + 1] if position + 1 < len(order) else None


def fixed_mode(setting: LlmOutputMode) -> OutputMode | None:
    """The mode ``HOPINDEX_LLM_OUTPUT_MODE`` fixes; None for ``auto`` (negotiate)."""
    return None if setting is LlmOutputMode.AUTO else OutputMode(setting.value)


class OutputModeMemory(Protocol):
    """The weakest mode a provider needed, per (base URL, model)."""

    async def get_mode(self, base_url: str, model: str) -> OutputMode | None: ...

    async def set_mode(self, base_url: str, model: str, mode: OutputMode) -> None: ...

    async def close(self) -> None: ...


class ProcessOutputModes:
    """Remembered for this process only (no broker, or no Redis)."""

    def __init__(self) -> None:
        self._modes: dict[tuple[str, str], OutputMode] = {}
        self._lock = threading.Lock()

    async def get_mode(self, base_url: str, model: str) -> OutputMode | None:
        with self._lock:
            return self._modes.get((base_url, model))

    async def set_mode(self, base_url: str, model: str, mode: OutputMode) -> None:
        with self._lock:
            self._modes[(base_url, model)] = weakest(self._modes.get((base_url, model)), mode)

    async def close(self) -> None:
        return None


def weakest(known: OutputMode | None, mode: OutputMode) -> OutputMode:
    """Of two modes learned, the weaker: a step down is never undone by a late writer."""
    if known is None:
        return mode
    order = list(OutputMode)
    return max(known, mode, key=order.index)


class ModeNegotiator:
    """The output mode of one provider's structured requests, and its step down."""

    def __init__(self, memory: OutputModeMemory, setting: LlmOutputMode, *, base_url: str,
                 model: str) -> None:
        self._memory = memory
        self._fixed = fixed_mode(setting)
        self._base_url = base_url
        self._model = model

    async def mode_for_json(self) -> OutputMode:
        """Fixed by the setting, else the strongest the provider has not refused."""
        if self._fixed is not None:
            return self._fixed
        known = await self._memory.get_mode(self._base_url, self._model)
        return known or OutputMode.JSON_SCHEMA

    async def step_down(self, stage: str, mode: OutputMode, status: int,
                        message: str) -> OutputMode | None:
        """The next mode down, remembered, when a refusal (``status``, ``message``)
        names the output mode; None when it does not, or the mode is fixed by the
        setting (the operator asked for that one: its refusal is an error to see)."""
        if self._fixed is not None or not is_mode_refusal(status, message, mode):
            return None
        weaker = mode.weaker()
        log.warning("llm_output_mode_refused", stage=stage, model=self._model,
                    refused=mode.value, next=weaker.value if weaker else None, status=status)
        if weaker is not None:
            await self._memory.set_mode(self._base_url, self._model, weaker)
        return weaker

    async def close(self) -> None:
        await self._memory.close()


# What a refusal of the requested output mode says, across providers and servers.
_REFUSAL = re.compile(
    r"response_format|json_schema|json_object|structured output|guided_json|"
    r"guided decoding|grammar|json mode|response format|schema is not supported",
    re.IGNORECASE)


def is_mode_refusal(status: int, message: str, mode: OutputMode) -> bool:
    """A 400/422 (a 404/501 from a server without the feature, a 500 from one that
    crashed compiling it) that names the output mode: the mode is refused, not the
    request."""
    if mode is OutputMode.PROMPT or status not in (400, 404, 415, 422, 500, 501):
        return False
    return bool(_REFUSAL.search(message))


def response_format(mode: OutputMode, name: str,
                    shape: type[pydantic.BaseModel] | None) -> dict[str, Any] | None:
    """The ``response_format`` argument for ``mode``; None asks in words only. Without a
    declared shape, ``json_schema`` has nothing to send and asks for ``json_object``."""
    if mode is OutputMode.PROMPT:
        return None
    if mode is OutputMode.JSON_SCHEMA and shape is not None:
        return {"type": "json_schema",
                "json_schema": {"name": _schema_name(name), "strict": True,
                                "schema": strict_schema(shape)}}
    return {"type": "json_object"}


def strict_schema(shape: type[pydantic.BaseModel]) -> dict[str, Any]:
    """The shape's JSON schema as strict mode requires it: every object closed
    (``additionalProperties: false``) and every property listed as required."""
    schema = shape.model_json_schema()
    _close_objects(schema)
    return schema


def _close_objects(node: Any) -> None:
    """Close every schema node in place; maps of names (properties, $defs) are walked
    by value, so a property called "title" or "default" is never taken for a keyword."""
    if isinstance(node, list):
        for value in node:
            _close_objects(value)
        return
    if not isinstance(node, dict):
        return
    node.pop("default", None)
    node.pop("title", None)
    if node.get("type") == "object" or "properties" in node:
        node["additionalProperties"] = False
        node["required"] = list(node.get("properties", {}))
    for key, value in node.items():
        if key in ("properties", "$defs", "definitions") and isinstance(value, dict):
            for schema in value.values():
                _close_objects(schema)
        else:
            _close_objects(value)


def _schema_name(stage: str) -> str:
    # OpenAI allows letters, digits, underscores and dashes, 64 at most.
    return re.sub(r"[^A-Za-z0-9_-]", "_", stage)[:64] or "reply"
