"""A job's LLM budget around one paid request: the call's estimate is held before it
is sent, and swapped for what it used after (``budget.py`` keeps the accounts)."""

from __future__ import annotations

from hopindex.backends.llm.budget import LlmBudget
from hopindex.backends.llm.chat import ChatRequest, ChatResult
from hopindex.backends.llm.usage import LlmPrices, UsageMeter
from hopindex.core.budget import BudgetCharge, BudgetScope
from hopindex.core.errors import BackendError, BudgetExhaustedError
from hopindex.core.logging import get_logger

log = get_logger(__name__)


class BudgetGate:
    def __init__(self, budget: LlmBudget, prices: LlmPrices) -> None:
        self._budget = budget
        self._prices = prices

    async def hold(self, request: ChatRequest, usage: UsageMeter,
                   scope: BudgetScope) -> BudgetCharge:
        """Hold the request's estimate on the job's budget, or raise
        ``BudgetExhaustedError`` with the figures. A budget store that cannot answer
        raises its own retryable error: the call is not made unchecked."""
        charge = self._estimate(request)
        first = usage.refusal
        if first is not None:
            raise BudgetExhaustedError(str(first), job_id=first.job_id, figures=first.figures)
        if await self._budget.reserve(scope.job_id, scope.limits, charge):
            return charge
        status = await self._budget.status(scope.job_id, scope.limits)
        reason = status.refusal(charge)
        # Info, not a warning: the job pauses and says so itself (scheduler/pause.py).
        log.info("llm_budget_refused", stage=request.stage, job_id=scope.job_id,
                 reason=reason)
        refused = BudgetExhaustedError(
            reason, job_id=scope.job_id,
            figures={**status.as_dict(), "stage": request.stage,
                     "next_call": {"tokens": charge.tokens, "cost": charge.cost}})
        usage.refusal = refused
        raise refused

    async def settle(self, stage: str, scope: BudgetScope, held: BudgetCharge,
                     result: ChatResult | None) -> None:
        """Swap the hold for what the call used (nothing, when it failed). Bookkeeping,
        like the limiter's: a store that cannot take it leaves the hold counted (the
        budget errs on the safe side) and never costs the reply."""
        spent = BudgetCharge(0) if result is None else BudgetCharge(
            result.prompt_tokens + result.completion_tokens,
            self._prices.cost_of(result.prompt_tokens, result.completion_tokens) or 0.0)
        try:
            await self._budget.settle(scope.job_id, held, spent)
        except BackendError as exc:
            log.warning("llm_budget_settle_failed", stage=stage, job_id=scope.job_id,
                        error=str(exc))

    def _estimate(self, request: ChatRequest) -> BudgetCharge:
        prompt, completion = (request.estimated_prompt_tokens(),
                              request.estimated_completion_tokens())
        return BudgetCharge(prompt + completion, self._prices.cost_of(prompt, completion) or 0.0)
