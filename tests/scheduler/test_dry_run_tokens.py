"""The dry run's token history over job records in a real SQLite state store: per
character from jobs whose plan is on record, per call from those without, other
models' jobs left out, and the character ratio before any history."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hopindex.backends.state.sqlite_store import SqliteStateStore
from hopindex.core.models import Job, JobKind, LlmUsage
from hopindex.scheduler.dry_run_tokens import (
    COMPLETION_TOKENS_PER_CALL,
    TOKENS_PER_CHAR,
    TokenBasis,
    estimate_tokens,
    phase_history,
)

PHASE = "indexrag.stage1"


def _job(job_id: str, usage: LlmUsage, planned: dict[str, Any] | None) -> Job:
    job = Job(job_id=job_id, index="wiki", kind=JobKind.INGEST, llm={PHASE: usage})
    if planned is not None:
        job.estimate = {PHASE: planned}
    return job


def _planned(calls: int, prompt_chars: int, input_chars: int, *, model: str = "m",
             planning: str = "exact") -> dict[str, Any]:
    return {"planning": planning, "calls": calls, "prompt_chars": prompt_chars,
            "input_chars": input_chars, "model": model}


def test_per_character_rates_come_from_planned_jobs(tmp_path: Path) -> None:
    """Two planned jobs give prompt tokens per prompt character and completion tokens
    per document character over both; the estimate applies them to the new plan's
    characters, not to its calls."""
    state = SqliteStateStore(tmp_path / "state.db")
    state.create_job(_job("a", LlmUsage(calls=10, prompt_tokens=2_000, completion_tokens=900),
                          _planned(10, 10_000, 3_000)))
    state.create_job(_job("b", LlmUsage(calls=5, prompt_tokens=1_000, completion_tokens=600),
                          _planned(5, 5_000, 2_000)))
    history = phase_history(state, "wiki", "m")[PHASE]
    assert history.sized is not None and history.sized.jobs == 2
    assert history.sized.prompt_per_char == 3_000 / 15_000
    assert history.sized.completion_per_input_char == 1_500 / 5_000
    tokens = estimate_tokens(4, history, prompt_chars=1_000, input_chars=10_000)
    assert (tokens.prompt_tokens, tokens.completion_tokens, tokens.basis) == (
        200, 3_000, TokenBasis.HISTORY)


def test_characters_scale_to_the_calls_answered(tmp_path: Path) -> None:
    """A job that planned 10 calls and had 5 answered counts half its planned
    characters against its tokens."""
    state = SqliteStateStore(tmp_path / "state.db")
    state.create_job(_job("a", LlmUsage(calls=5, prompt_tokens=1_000, completion_tokens=500),
                          _planned(10, 10_000, 4_000)))
    sized = phase_history(state, "wiki", "m")[PHASE].sized
    assert sized is not None
    assert (sized.prompt_chars, sized.input_chars) == (5_000, 2_000)


def test_jobs_without_a_plan_give_tokens_per_call(tmp_path: Path) -> None:
    """A job with no plan on record (or a bounded one) counts per call only: the
    estimate is then per call, and says so."""
    state = SqliteStateStore(tmp_path / "state.db")
    state.create_job(_job("a", LlmUsage(calls=4, prompt_tokens=800, completion_tokens=400),
                          None))
    state.create_job(_job("b", LlmUsage(calls=4, prompt_tokens=800, completion_tokens=400),
                          _planned(4, 4_000, 2_000, planning="bound")))
    history = phase_history(state, "wiki", "m")[PHASE]
    assert (history.jobs, history.calls, history.sized) == (2, 8, None)
    tokens = estimate_tokens(3, history, prompt_chars=1_000, input_chars=500)
    assert (tokens.prompt_tokens, tokens.completion_tokens, tokens.basis) == (
        600, 300, TokenBasis.HISTORY_PER_CALL)


def test_another_models_jobs_are_left_out(tmp_path: Path) -> None:
    """A job planned for model "old" is no history for model "new"; with nothing else,
    the estimate falls back to the character ratio."""
    state = SqliteStateStore(tmp_path / "state.db")
    state.create_job(_job("a", LlmUsage(calls=4, prompt_tokens=800, completion_tokens=400),
                          _planned(4, 4_000, 2_000, model="old")))
    assert PHASE in phase_history(state, "wiki", "old")
    assert phase_history(state, "wiki", "new") == {}
    tokens = estimate_tokens(3, None, prompt_chars=1_000, input_chars=500)
    assert (tokens.prompt_tokens, tokens.completion_tokens, tokens.basis) == (
        round(1_000 * TOKENS_PER_CHAR), 3 * COMPLETION_TOKENS_PER_CALL,
        TokenBasis.CHARACTERS)


def test_damaged_plan_figures_count_per_call_only(tmp_path: Path) -> None:
    """A plan whose figures are not positive counts (null characters, a zero) is not
    divided by: that job counts per call."""
    state = SqliteStateStore(tmp_path / "state.db")
    state.create_job(_job("a", LlmUsage(calls=4, prompt_tokens=800, completion_tokens=400),
                          {**_planned(4, 4_000, 2_000), "input_chars": 0}))
    state.create_job(_job("b", LlmUsage(calls=4, prompt_tokens=800, completion_tokens=400),
                          {**_planned(4, 4_000, 2_000), "prompt_chars": None}))
    history = phase_history(state, "wiki", "m")[PHASE]
    assert (history.jobs, history.sized) == (2, None)
