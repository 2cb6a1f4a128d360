"""What each query of a benchmark cost, recorded around the local client's service's
``query``: the call both the evaluation code (``evaluate_method``, given
``client.service``) and the client's own ``query`` make."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from unittest.mock import patch

from hopindex.methods.base import QueryOptions, QueryResult
from hopindex.testing.llm_server import LlmTestServer

if TYPE_CHECKING:
    from hopindex.api.client.local import LocalClient


def _nothing(_: QueryResult) -> dict[str, Any]:
    return {}


@dataclass
class QueryLog:
    """Per query: its wall time, phases, the test server's requests by kind during it
    (``by_kind``, and their sum ``server_calls``), its LLM calls and tokens by usage,
    and what ``describe`` reads from its result (the method's trace)."""

    server: LlmTestServer
    describe: Callable[[QueryResult], dict[str, Any]] = _nothing
    rows: list[dict[str, Any]] = field(default_factory=list)

    @contextmanager
    def installed(self, client: LocalClient) -> Iterator[None]:
        service = client.service
        query = service.query

        def recording(index: str, question: str, method: str | None = None,
                      options: QueryOptions | None = None) -> QueryResult:
            before = dict(self.server.stats.by_kind)
            started = time.perf_counter()
            result = query(index, question, method=method, options=options)
            wall_s = time.perf_counter() - started
            by_kind = {k: v - before.get(k, 0) for k, v in self.server.stats.by_kind.items()
                       if v - before.get(k, 0)}
            self.rows.append({
                "wall_s": wall_s, "phases": dict(result.usage.phases_s), "by_kind": by_kind,
                "server_calls": sum(by_kind.values()), "llm_calls": result.usage.llm_calls,
                "tokens": result.usage.prompt_tokens + result.usage.completion_tokens,
                **self.describe(result)})
            return result

        with patch.object(service, "query", recording):
            yield
