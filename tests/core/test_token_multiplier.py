"""The ingestion multiplier's arithmetic (LLM tokens per corpus token, per phase and in
all) and a job record that keeps its corpus tokens through ``as_dict``/``from_dict``."""

from __future__ import annotations

import json

import pytest

from hopindex.core.models import Job, JobKind, JobState, LlmUsage
from hopindex.core.token_multiplier import (
    TokenMultiplier,
    multiplier_record,
    multiplier_text,
    phase_multipliers,
    token_multiplier,
)

STAGES = {"m.stage2": LlmUsage(calls=3, prompt_tokens=600, completion_tokens=30),
          "m.stage1": LlmUsage(calls=9, prompt_tokens=4_500, completion_tokens=1_500)}


def test_prompt_completion_and_total_are_each_divided_by_the_corpus() -> None:
    """4,500 prompt and 1,500 completion tokens over a 1,500-token corpus: 3x, 1x, 4x."""
    found = token_multiplier(STAGES["m.stage1"], 1_500)
    assert found == TokenMultiplier(prompt=3.0, completion=1.0)
    assert found is not None and found.total == 4.0
    assert found.as_dict() == {"prompt": 3.0, "completion": 1.0, "total": 4.0}


@pytest.mark.parametrize("corpus", [None, 0, -5])
def test_no_corpus_gives_no_multiplier(corpus: int | None) -> None:
    """Nothing counted (None) or nothing read (0) is no ratio, never a division by zero."""
    assert token_multiplier(STAGES["m.stage1"], corpus) is None
    assert phase_multipliers(STAGES, corpus) == {}
    assert multiplier_record(LlmUsage(prompt_tokens=1), STAGES, corpus) is None


def test_each_phase_over_the_same_corpus_sorted_by_name() -> None:
    """Phases are divided by the job's one corpus, in name order; the record holds the
    job's total at the top and the phases under ``stages``, as ``llm`` does; figures are
    rounded to four places."""
    assert list(phase_multipliers(STAGES, 3_000)) == ["m.stage1", "m.stage2"]
    total = LlmUsage(prompt_tokens=5_100, completion_tokens=1_530)
    assert multiplier_record(total, STAGES, 3_000) == {
        "prompt": 1.7, "completion": 0.51, "total": 2.21,
        "stages": {"m.stage1": {"prompt": 1.5, "completion": 0.5, "total": 2.0},
                   "m.stage2": {"prompt": 0.2, "completion": 0.01, "total": 0.21}}}
    assert TokenMultiplier(prompt=1 / 3, completion=0.0).as_dict() == {
        "prompt": 0.3333, "completion": 0.0, "total": 0.3333}


def test_multipliers_read_as_a_person_reads_them() -> None:
    """Two places from 0.1 up; two significant digits below, so a small one is not 0."""
    assert [multiplier_text(v) for v in (9.3217, 0.1, 0.0041, 0.0)] == [
        "9.32x", "0.10x", "0.0041x", "0.00x"]


def test_a_job_record_keeps_its_corpus_and_writes_its_multiplier() -> None:
    """The job's JSON carries ``corpus_tokens`` and the derived ``token_multiplier``, and
    reads back equal with the same corpus; a record written before the count existed
    reads as None, with no multiplier."""
    job = Job(job_id="j", index="i", kind=JobKind.INGEST, state=JobState.SUCCEEDED,
              llm=dict(STAGES), corpus_tokens=1_500)
    data = json.loads(json.dumps(job.as_dict()))
    assert data["corpus_tokens"] == 1_500
    assert data["token_multiplier"]["total"] == pytest.approx((5_100 + 1_530) / 1_500,
                                                              abs=1e-4)
    assert data["token_multiplier"]["stages"]["m.stage2"] == {
        "prompt": 0.4, "completion": 0.02, "total": 0.42}
    assert Job.from_dict(data) == job
    del data["corpus_tokens"], data["token_multiplier"]
    older = Job.from_dict(data)
    assert older.corpus_tokens is None
    assert older.as_dict()["token_multiplier"] is None
