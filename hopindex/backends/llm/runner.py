"""The synchronous face of the async LLM client, for Celery tasks and query methods.

Tasks and query methods are synchronous, but the client's connection pool and the
limiter's state belong to one event loop. The runner owns that loop on a daemon
thread: every caller in the process, from any thread, shares its connections, its
in-flight cap and (embedded) its rate budget, and one task can keep many calls in
flight while the limiter paces them. A streamed answer (``stream``) hands its text to
the caller's callback on that thread, and stops when the caller's event says so.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Any, TypeVar

from hopindex.backends.llm.batch_scope import BatchDeferred, BatchPendingError, PendingLine
from hopindex.backends.llm.client import ChatRequest, ChatResult, LlmClient
from hopindex.backends.llm.usage import UsageMeter
from hopindex.core.budget import BudgetCharge, BudgetLimits, BudgetStatus
from hopindex.core.errors import (
    LLM_CALL_FAILURES,
    ConfigError,
    HopindexError,
    QueryCancelledError,
)
from hopindex.core.provider_batches import BatchProgress, BatchYield

T = TypeVar("T")

_START_TIMEOUT_S = 30.0
# How often a streamed call's waiter looks at its cancel event: the bound on how late
# a cancellation is acted on.
_CANCEL_POLL_S = 0.02
# How long a cancelled call is given to close its stream and settle its reservations
# before the caller is told it was cancelled (it goes on closing meanwhile if slower).
_CANCEL_GRACE_S = 2.0


class LlmRunner:
    def __init__(self, build_client: Callable[[], LlmClient], *, concurrency: int) -> None:
        if concurrency < 1:
            raise ConfigError(f"LLM concurrency must be at least 1, got {concurrency}")
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="hopindex-llm",
                                        daemon=True)
        self._thread.start()
        self._closed = False

        async def start() -> tuple[LlmClient, asyncio.Semaphore]:
            # Built on the loop so that anything loop-bound inside binds to this one.
            return build_client(), asyncio.Semaphore(concurrency)

        try:
            self._client, self._slots = asyncio.run_coroutine_threadsafe(
                start(), self._loop).result(_START_TIMEOUT_S)
        except BaseException:
            self._stop_loop()
            raise

    @property
    def model(self) -> str:
        return self._client.settings.model

    def forget_budget(self, job_id: str) -> None:
        """Drop a finished job's budget account (backends/llm/budget.py)."""
        self._run(self._client.forget_budget(job_id))

    def budget_status(self, job_id: str, limits: BudgetLimits) -> BudgetStatus | None:
        """The job's budget account as it is now (None without a budget store)."""
        return self._run(self._client.budget_status(job_id, limits))

    def complete(self, request: ChatRequest, usage: UsageMeter) -> ChatResult:
        try:
            return self._run(self._bounded(self._client.complete(request, usage)))
        except BatchDeferred:
            raise _batch_pending(usage) from None

    def complete_json(self, request: ChatRequest, parse: Callable[[Any], T],
                      usage: UsageMeter) -> T:
        try:
            return self._run(self._bounded(self._client.complete_json(request, parse, usage)))
        except BatchDeferred:
            raise _batch_pending(usage) from None

    def stream(self, request: ChatRequest, usage: UsageMeter, on_delta: Callable[[str], None],
               *, cancelled: threading.Event | None = None) -> ChatResult:
        """``complete``, the answer's text handed to ``on_delta`` as it arrives
        (``LlmClient.stream``), under the same in-flight cap.

        ``on_delta`` runs on the runner's loop thread, between the reads of the
        provider's stream and those of every other call in the process: it must be
        quick and thread-safe (put the piece on a queue, set an event). When
        ``cancelled`` is set, the call is cancelled within a poll (the provider's stream
        closed, its reservations settled) and ``QueryCancelledError`` is raised."""
        if cancelled is not None and cancelled.is_set():
            raise _cancelled(request.stage)
        call = self._bounded(self._client.stream(request, usage, on_delta))
        if cancelled is None:
            return self._run(call)
        return self._run_cancellable(call, cancelled, request.stage)

    def complete_json_many(self, requests: Sequence[ChatRequest],
                           parse: Callable[[Any], T] | Sequence[Callable[[Any], T]],
                           usage: UsageMeter) -> list[T | HopindexError]:
        """All requests concurrently (up to the process's in-flight cap), in order;
        ``parse`` checks every reply, or is one check per request (a reply judged
        against its own request's input).

        A request that fails because of its item gives its error in its place, so one
        bad document or entity fails alone (see ``item_failure``). Any other failure is
        raised once every request has ended (so the replies paid for meanwhile reach
        the cache): a configuration error (a refused API key) first, then anything
        else — the infrastructure around the calls (the rate limiter, the cache, the
        state) failing, which the task retries, or a bug, which must not hide in a job
        record.
        """
        parses = [parse] * len(requests) if callable(parse) else list(parse)
        if len(parses) != len(requests):
            raise ValueError(f"{len(requests)} requests and {len(parses)} parsers")

        async def run_all() -> list[T | BaseException]:
            tasks = [self._bounded(self._client.complete_json(r, check, usage))
                     for r, check in zip(requests, parses, strict=True)]
            return await asyncio.gather(*tasks, return_exceptions=True)

        return _item_outcomes(self._run(run_all()), usage)

    def complete_text_many(self, requests: Sequence[ChatRequest], parse: Callable[[str], T],
                           usage: UsageMeter) -> list[T | HopindexError]:
        """Text replies, concurrently and in order, each checked by ``parse`` (which
        raises ``LlmOutputError`` for a reply the item cannot use: no repair attempt,
        since a text reply has no shape to correct). Each text becomes a unit, so a
        reply cut at its budget is asked once more with a larger one. Failures as
        ``complete_json_many``."""
        async def one(request: ChatRequest) -> T:
            result = await self._bounded(self._client.complete(request, usage, whole=True))
            return parse(result.content)

        async def run_all() -> list[T | BaseException]:
            return await asyncio.gather(*(one(r) for r in requests), return_exceptions=True)

        return _item_outcomes(self._run(run_all()), usage)

    # --- the provider's Batch API (scheduler/provider_batches.py) ---------------------

    def submit_batch(self, lines: Sequence[PendingLine], *, metadata: dict[str, str]) -> str:
        """Send ``lines`` as one provider batch; its id."""
        return self._run(self._client.batch_desk().submit(lines, metadata))

    def find_batch(self, token: str) -> str | None:
        return self._run(self._client.batch_desk().find(token))

    def batch_progress(self, batch_id: str) -> BatchProgress:
        return self._run(self._client.batch_desk().progress(batch_id))

    def store_batch_results(self, batch_id: str, keys: Sequence[str], stage: str,
                            line_rounds: Mapping[str, int]) -> BatchYield:
        return self._run(self._client.batch_desk().store_results(batch_id, keys, stage,
                                                                 line_rounds))

    def hold_batch_budget(self, job_id: str, limits: BudgetLimits,
                          charges: Sequence[BudgetCharge]) -> int:
        """Hold ``charges`` on the job's budget in order, up to the first that does not
        fit; how many are held (all of them without a budget store)."""
        return self._run(self._client.hold_budget(job_id, limits, charges))

    def settle_batch_budget(self, job_id: str, held: BudgetCharge, spent: BudgetCharge) -> None:
        """Swap a batch's hold for what its lines used."""
        self._run(self._client.settle_budget(job_id, held, spent))

    def cancel_batch(self, batch_id: str) -> None:
        self._run(self._client.batch_desk().cancel(batch_id))

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            asyncio.run_coroutine_threadsafe(self._client.close(), self._loop).result(
                _START_TIMEOUT_S)
        finally:
            self._stop_loop()

    async def _bounded(self, call: Coroutine[Any, Any, T]) -> T:
        async with self._slots:
            return await call

    def _run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return self._submit(coroutine).result()

    def _submit(self, coroutine: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        if self._closed:
            coroutine.close()
            raise ConfigError("the LLM runner is closed")
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop)

    def _run_cancellable(self, coroutine: Coroutine[Any, Any, T], cancelled: threading.Event,
                         stage: str) -> T:
        """``coroutine``'s result, or ``QueryCancelledError`` once ``cancelled`` is set
        (the coroutine cancelled on the loop, and given a moment to clean up)."""
        ended = threading.Event()

        async def watched() -> T:
            try:
                return await coroutine
            finally:
                ended.set()

        future = self._submit(watched())
        while not cancelled.is_set():
            if concurrent.futures.wait([future], timeout=_CANCEL_POLL_S).done:
                return future.result()
        if not future.cancel():  # it ended meanwhile
            return future.result()
        ended.wait(_CANCEL_GRACE_S)
        raise _cancelled(stage)

    def _stop_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(_START_TIMEOUT_S)
        self._loop.close()


def _batch_pending(usage: UsageMeter) -> BatchPendingError:
    """The run's unanswered batch-mode calls, for its task to send as one batch."""
    scope = usage.batch
    assert scope is not None  # only a batch scope's calls are deferred
    return BatchPendingError(scope.job_id, scope.take_pending())


def _cancelled(stage: str) -> QueryCancelledError:
    return QueryCancelledError(f"{stage}: the query was cancelled while its answer streamed")


def item_failure(error: BaseException) -> HopindexError | None:
    """``error`` when it is the fault of the item whose request raised it, else None.

    The item's fault: a reply still invalid after the repair (``LlmOutputError``), a
    request the provider refuses for good (``PermanentStageError``, a 4xx), and the
    provider failing it past the client's attempts or found unreachable
    (``LlmUnavailableError``: recorded on the item, which a later ingest plans again;
    the client shares an unreachable verdict, so a batch's other calls fail at once).
    Never the item's fault: the cache, the rate limiter, the state or the broker
    failing around the call.
    """
    return error if isinstance(error, LLM_CALL_FAILURES) else None


def _item_outcomes(outcomes: Sequence[T | BaseException],
                   usage: UsageMeter) -> list[T | HopindexError]:
    """Each request's result or its item's failure; any other failure is raised (a
    configuration error first) once every request has ended. Calls waiting for a
    provider batch make the whole run wait (``BatchPendingError``): the task runs
    again when they are answered, and the results of the others are read again then."""
    if any(isinstance(outcome, BatchDeferred) for outcome in outcomes):
        raise _batch_pending(usage)
    results: list[T | HopindexError] = []
    raised: list[BaseException] = []
    for outcome in outcomes:
        if not isinstance(outcome, BaseException):
            results.append(outcome)
        elif (failure := item_failure(outcome)) is not None:
            results.append(failure)
        else:
            raised.append(outcome)
    if raised:
        raise next((e for e in raised if isinstance(e, ConfigError)), raised[0])
    return results
