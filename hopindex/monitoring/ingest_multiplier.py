"""The ingestion multiplier in Prometheus: a finished job's LLM tokens per token of the
corpus it read (core/token_multiplier.py), recorded once per job from its record.

``monitoring/tasks.py`` calls :func:`observe_job` after a job's finalize, settled for the
job so a finalize that runs twice records nothing the second time. Labels: the index
method and its qualified phase names (fixed by the installed methods) and the token
kind; never an index or a job.
"""

from __future__ import annotations

from hopindex.core.models import Job
from hopindex.core.token_multiplier import phase_multipliers
from hopindex.monitoring import metrics as m
from hopindex.monitoring.labels import TokenKind


def observe_job(job: Job, method: str) -> bool:
    """Record ``job``'s multiplier per phase and kind, its corpus tokens and its LLM
    tokens under ``method``; False (nothing recorded) for a job that counted no corpus
    (a delete, a method without an LLM) or read no document."""
    if not job.corpus_tokens:
        return False
    m.INGEST_CORPUS_TOKENS.labels(method=method).inc(job.corpus_tokens)
    for phase, multiplier in phase_multipliers(job.llm, job.corpus_tokens).items():
        usage = job.llm[phase]
        for kind, ratio, tokens in (
                (TokenKind.PROMPT, multiplier.prompt, usage.prompt_tokens),
                (TokenKind.COMPLETION, multiplier.completion, usage.completion_tokens)):
            m.INGEST_TOKEN_MULTIPLIER.labels(method=method, phase=phase,
                                             kind=kind.value).observe(ratio)
            m.INGEST_LLM_TOKENS.labels(method=method, phase=phase,
                                       kind=kind.value).inc(tokens)
    return True
