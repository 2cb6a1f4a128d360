"""The output modes providers refused, shared by every worker through Redis.

Without it each worker process would learn again, by one refused request per process,
that the gateway does not take ``json_schema``. One hash, ``hopindex:llm:output-modes``,
maps ``base URL + model`` to the weakest mode that provider needed; a Lua script keeps
the weaker of the stored and the new mode, so two workers learning at once never undo
a step down. Memory only: when Redis cannot answer, the process's own copy decides
and the miss is logged, never a failed call.
"""

from __future__ import annotations

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from hopindex.backends.llm.output_modes import OutputMode, ProcessOutputModes
from hopindex.backends.llm.ratelimit_redis import public_url
from hopindex.core.logging import get_logger

log = get_logger(__name__)

KEY = "hopindex:llm:output-modes"
SOCKET_TIMEOUT_S = 2.0

# KEYS[1] the hash; ARGV[1] the field, ARGV[2] the new mode, ARGV[3..] modes strongest
# first. Keeps whichever of stored and new comes later in that order.
_KEEP_WEAKER = """
local stored = redis.call('HGET', KEYS[1], ARGV[1])
if stored then
  local rank = {}
  for i = 3, #ARGV do rank[ARGV[i]] = i end
  if rank[stored] and rank[stored] >= rank[ARGV[2]] then return stored end
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return ARGV[2]
"""


class RedisOutputModes:
    """``OutputModeMemory`` in one Redis hash, with the process's copy in front."""

    def __init__(self, url: str) -> None:
        self.url = public_url(url)
        self._local = ProcessOutputModes()
        self._client: aioredis.Redis = aioredis.Redis.from_url(
            url, socket_connect_timeout=SOCKET_TIMEOUT_S, socket_timeout=SOCKET_TIMEOUT_S)

    async def get_mode(self, base_url: str, model: str) -> OutputMode | None:
        known = await self._local.get_mode(base_url, model)
        try:
            stored = await self._client.hget(KEY, _field(base_url, model))
        except (RedisError, OSError) as exc:
            log.warning("llm_output_mode_unread", url=self.url, error=str(exc))
            return known
        if stored is None:
            return known
        mode = _mode(stored)
        if mode is not None:
            await self._local.set_mode(base_url, model, mode)
        return await self._local.get_mode(base_url, model)

    async def set_mode(self, base_url: str, model: str, mode: OutputMode) -> None:
        await self._local.set_mode(base_url, model, mode)
        try:
            await self._client.eval(
                _KEEP_WEAKER, 1, KEY, _field(base_url, model), mode.value,
                *(m.value for m in OutputMode))
        except (RedisError, OSError) as exc:
            log.warning("llm_output_mode_unsaved", url=self.url, error=str(exc))

    async def close(self) -> None:
        await self._client.aclose()


def _field(base_url: str, model: str) -> str:
    return f"{base_url.rstrip('/')} {model}"


def _mode(stored: bytes | str) -> OutputMode | None:
    text = stored.decode() if isinstance(stored, bytes) else stored
    try:
        return OutputMode(text)
    except ValueError:
        return None  # written by a newer version with a mode this one lacks
