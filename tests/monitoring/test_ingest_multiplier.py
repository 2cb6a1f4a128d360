"""The ingestion multiplier in Prometheus: a finished job's LLM tokens per corpus token,
observed per method, phase and kind once per job (settled under a key, as its
documents are) however often its finalize runs; its corpus and LLM tokens counted with
it, so their ratio over time is the multiplier."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client import REGISTRY

from hopindex.backends.protocols import IndexInfo
from hopindex.backends.registry import Backends
from hopindex.backends.state.sqlite_store import SqliteStateStore
from hopindex.core.models import Job, JobKind, JobState, LlmUsage
from hopindex.core.settings import Settings
from hopindex.monitoring.ingest_multiplier import observe_job
from hopindex.monitoring.tasks import (
    MULTIPLIER_OBSERVED_KEY,
    _observe_multiplier,
    _on_postrun,
    _on_prerun,
)
from hopindex.workers.app import configure_app
from hopindex.workers.runtime import Runtime, bind_runtime
from hopindex.workers.tasks.control import finalize

INDEX = "mult"
# A method name no real build uses: these series are this module's alone, so a job
# another test leaves finishing on a thread of this process cannot move them.
METHOD = "multiplier-probe"
STAGE1, STAGE2 = "indexrag.stage1", "indexrag.stage2"


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def figures(phase: str = STAGE1) -> dict[str, float]:
    """This process's multiplier series of ``phase``, and the corpus counter."""
    labels = {"method": METHOD, "phase": phase}
    return {
        "prompt_count": sample("hopindex_ingest_token_multiplier_count", **labels,
                               kind="prompt"),
        "prompt_sum": sample("hopindex_ingest_token_multiplier_sum", **labels, kind="prompt"),
        "completion_sum": sample("hopindex_ingest_token_multiplier_sum", **labels,
                                 kind="completion"),
        "prompt_tokens": sample("hopindex_ingest_llm_tokens_total", **labels, kind="prompt"),
        "corpus": sample("hopindex_ingest_corpus_tokens_total", method=METHOD)}


def delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {key: after[key] - before[key] for key in before}


def job(name: str, state: JobState = JobState.SUCCEEDED, corpus: int | None = 2_000) -> Job:
    return Job(job_id=name, index=INDEX, kind=JobKind.INGEST, state=state,
               corpus_tokens=corpus,
               llm={STAGE1: LlmUsage(calls=4, prompt_tokens=8_000, completion_tokens=3_000),
                    STAGE2: LlmUsage(calls=2, prompt_tokens=1_000, completion_tokens=500)})


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStateStore]:
    """A state store holding the index, bound as this process's runtime (the hook reads
    the job records through it), with the task hooks recording metrics."""
    configure_app(Settings())
    opened = SqliteStateStore(tmp_path / "state.sqlite3")
    opened.create_index(IndexInfo(name=INDEX, method=METHOD, created_at=0.0))
    settings = Settings(data_dir=tmp_path).resolved()
    bind_runtime(Runtime(settings=settings, backends=Backends(settings, state=opened)))
    yield opened
    bind_runtime(None)
    opened.close()


def test_a_finished_jobs_multiplier_is_observed_once(store: SqliteStateStore) -> None:
    """finalize redelivered (its task run twice, as Celery's signals report it): one
    observation per phase and kind (8,000 prompt tokens over a 2,000-token corpus: 4x;
    3,000 completion: 1.5x), the corpus and LLM tokens counted once, and the record
    settled under its key."""
    store.create_job(job("done"))
    before = figures()
    arguments: tuple[str, str, dict[str, object]] = ("done", INDEX, {})
    for run in ("first", "again"):
        _on_prerun(task=finalize, task_id=f"finalize-{run}", args=arguments)
        _on_postrun(task=finalize, task_id=f"finalize-{run}", args=arguments,
                    state="SUCCESS")
    assert delta(before, figures()) == {"prompt_count": 1, "prompt_sum": 4.0,
                                        "completion_sum": 1.5, "prompt_tokens": 8_000,
                                        "corpus": 2_000}
    assert store.settled_keys("done", [MULTIPLIER_OBSERVED_KEY]) == {MULTIPLIER_OBSERVED_KEY}


@pytest.mark.parametrize(("state", "corpus"), [
    (JobState.FAILED, 2_000), (JobState.SUCCEEDED, None), (JobState.SUCCEEDED, 0)])
def test_jobs_with_no_multiplier_observe_nothing(store: SqliteStateStore, state: JobState,
                                                 corpus: int | None) -> None:
    """A job that did not succeed, one that counted no corpus (no LLM method, a delete)
    and one that read no document: nothing observed, and their records left unwritten."""
    store.create_job(job("other", state, corpus))
    before = figures()
    _observe_multiplier("other")
    assert delta(before, figures()) == dict.fromkeys(before, 0)
    assert store.settled_keys("other", [MULTIPLIER_OBSERVED_KEY]) == set()


def test_every_phase_is_observed_under_the_method() -> None:
    """Each phase of the job has its own series under the index method's label."""
    before = figures(STAGE2)
    assert observe_job(job("direct"), METHOD)
    assert delta(before, figures(STAGE2)) == {"prompt_count": 1, "prompt_sum": 0.5,
                                              "completion_sum": 0.25, "prompt_tokens": 1_000,
                                              "corpus": 2_000}
    assert not observe_job(job("none", corpus=None), METHOD)
