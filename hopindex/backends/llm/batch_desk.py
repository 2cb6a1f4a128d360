"""What the scheduler asks of the provider's Batch API, and where the results go.

``ProviderBatches`` (batch_api.py) makes the calls; this desk turns the job's pending
lines into a batch, tells how one is doing in the job record's terms, and stores an
ended batch's lines where the calls in batch mode look for them (batch_calls.py),
counting each answered line's tokens and cost (at the batch price) with the LLM
observer, as a synchronous call is counted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from hopindex.backends.llm.batch_api import BatchLine, BatchLineError, ProviderBatches
from hopindex.backends.llm.batch_calls import CANCELLED_CODE, EXPIRED_CODE, LineResult, LineStore
from hopindex.backends.llm.batch_scope import PendingLine
from hopindex.backends.llm.observer import LlmObserver, LlmOutcome
from hopindex.backends.llm.usage import LlmPrices
from hopindex.core.errors import BackendError, HopindexError
from hopindex.core.logging import get_logger
from hopindex.core.provider_batches import TOKEN_KEY, BatchProgress, BatchState, BatchYield

log = get_logger(__name__)

# How many of the provider's newest batches a lookup by token reads.
_FIND_LIMIT = 1000


class BatchDesk:
    def __init__(self, batches: ProviderBatches, lines: LineStore | None, *, model: str,
                 prices: LlmPrices, observer: LlmObserver) -> None:
        self._batches = batches
        self._lines = lines
        self._model = model
        self._prices = prices
        self._observer = observer

    async def submit(self, lines: Sequence[PendingLine], metadata: dict[str, str]) -> str:
        """Send ``lines`` as one batch; its id."""
        self._store()
        ticket = await self._batches.submit_batch(
            [BatchLine(line.key, line.body) for line in lines], metadata=metadata)
        return ticket.batch_id

    async def find(self, token: str) -> str | None:
        """The id of the batch created with ``token`` in its metadata, if the provider has
        one (a sender stopped between creating it and recording its id)."""
        return await self._batches.find_batch(TOKEN_KEY, token, limit=_FIND_LIMIT)

    async def progress(self, batch_id: str) -> BatchProgress:
        status = await self._batches.get_batch(batch_id)
        error = ""
        if status.errors:
            error = "; ".join(problem.describe() for problem in status.errors[:5])
        return BatchProgress(status.state, total=status.counts.total,
                             completed=status.counts.completed, failed=status.counts.failed,
                             error=error)

    async def cancel(self, batch_id: str) -> None:
        await self._batches.cancel_batch(batch_id)

    async def store_results(self, batch_id: str, keys: Sequence[str], stage: str,
                            line_rounds: Mapping[str, int]) -> BatchYield:
        """Store each of the batch's lines as its result (a reply, or why there is none)
        and report what was answered. A batch failed at validation fails every line,
        for the provider's reason. ``line_rounds``: how many batches each line has been in,
        this one included (from the job's record, so storing twice changes nothing)."""
        store = self._store()
        status = await self._batches.get_batch(batch_id)
        failed_whole: HopindexError | None = None
        replies: dict[str, object] = {}
        missing: frozenset[str] = frozenset()
        try:
            results = await self._batches.read_results(status, custom_ids=keys)
            replies, missing = dict(results.replies), results.missing
        except HopindexError as exc:
            if status.state is not BatchState.FAILED:
                raise
            failed_whole = exc
        answered = failed = prompt = completion = 0
        for key in keys:
            round_ = line_rounds.get(key, 1)
            reply = replies.get(key)
            if failed_whole is not None:
                result = LineResult(status=400, code="batch_failed", message=str(failed_whole),
                                    rounds=round_)
            elif isinstance(reply, dict):
                result = LineResult.from_completion(reply, round_)
            elif isinstance(reply, BatchLineError):
                result = LineResult(status=reply.status_code or 0, code=reply.code,
                                    message=reply.message, rounds=round_)
            else:
                code = EXPIRED_CODE if status.state is BatchState.EXPIRED else CANCELLED_CODE
                result = LineResult(code=code, message="the batch ended before this line ran"
                                    if key in missing else "the line is in no result file",
                                    rounds=round_)
            await store.write(key, result)
            if result.is_error:
                failed += 1
                continue
            answered += 1
            prompt += result.prompt_tokens
            completion += result.completion_tokens
            self._observer.observe_request(
                stage, self._model, LlmOutcome.OK, 0.0, prompt_tokens=result.prompt_tokens,
                completion_tokens=result.completion_tokens,
                cost=self._prices.cost_of(result.prompt_tokens, result.completion_tokens))
        log.info("llm_batch_results_stored", batch_id=batch_id, answered=answered,
                 failed=failed)
        return BatchYield(answered=answered, failed=failed, prompt_tokens=prompt,
                          completion_tokens=completion)

    def _store(self) -> LineStore:
        if self._lines is None:
            raise BackendError("batch mode keeps the provider's replies in the response "
                               "cache, which is off (HOPINDEX_LLM_CACHE)")
        return self._lines
