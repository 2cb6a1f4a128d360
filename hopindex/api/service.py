"""One object a program (the CLI, the evaluation runner, tests) drives hopindex through."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path
from types import TracebackType

from hopindex.api.index_health import IndexHealth
from hopindex.api.job_waiting import wait_for_job
from hopindex.api.method_options import check_option_names
from hopindex.api.query_platform import (
    PLATFORM_OPTIONS,
    HeardQuery,
    method_options,
    rerank_stage_for,
)
from hopindex.backends.embedder.loading import timed_loads
from hopindex.backends.embedder.metering import metered_embeddings, report_embedding_usage
from hopindex.backends.protocols import IndexInfo
from hopindex.backends.registry import Backends, open_state_store_to_read
from hopindex.core.budget import BudgetLimits
from hopindex.core.errors import (
    IndexBusyError,
    InvalidInputError,
    NotFoundError,
    QueryCancelledError,
)
from hopindex.core.ids import validate_index_name
from hopindex.core.llm_modes import with_index_mode
from hopindex.core.logging import configure_logging
from hopindex.core.memory import limit_malloc_arenas
from hopindex.core.models import Document, Job, UnitKind
from hopindex.core.settings import LlmMode, Settings
from hopindex.core.text import unstorable_field
from hopindex.core.tracing import current_trace_id, span, spans
from hopindex.methods.base import AnswerListener, QueryOptions, QueryResult, SearchContext
from hopindex.methods.registry import (
    check_fit,
    default_query,
    get_index_method,
    load_settings,
    method_settings,
)
from hopindex.monitoring.queries import query_recorder
from hopindex.readers import RawDocument, ReadError, Reading, read_options, read_paths
from hopindex.scheduler.dry_run import IngestPlan, plan_ingest
from hopindex.scheduler.level_builds import level_statuses
from hopindex.scheduler.lifecycle import CANCELLED_BY_REQUEST, cancel_job
from hopindex.scheduler.outstanding import Outstanding, outstanding_work
from hopindex.scheduler.pause import resume_paused_job, set_index_budget
from hopindex.scheduler.rebuild import submit_rebuild
from hopindex.scheduler.recovery import recover_orphaned_jobs
from hopindex.scheduler.repair import submit_repair
from hopindex.scheduler.submit import submit_delete, submit_ingest
from hopindex.scheduler.webhook_sender import close_embedded_senders
from hopindex.scheduler.writers import Announce, WaitPolicy
from hopindex.workers.app import app, configure_app, drop_connections
from hopindex.workers.engine_route import open_process_backends
from hopindex.workers.query_tasks import CeleryQueryTasks
from hopindex.workers.runtime import Runtime, bind_runtime


class Hopindex:
    """Ingest, query, delete and inspect jobs; tasks run eagerly in this process unless a
    broker URL sends them to workers."""

    def __init__(self, settings: Settings | None = None,
                 backends: Backends | None = None) -> None:
        self.settings = settings or load_settings()
        configure_logging(self.settings)
        limit_malloc_arenas(self.settings.malloc_arenas)
        configure_app(self.settings)
        # With a broker and embedded engines, the engines here are the owner's,
        # reached on the engine queue (workers/engine_route.py).
        self.backends = backends or open_process_backends(self.settings)
        self.runtime = Runtime(settings=self.settings, backends=self.backends, app=app)
        bind_runtime(self.runtime)
        recover_orphaned_jobs(self.runtime)
        self._search: SearchContext | None = None
        self._query_metrics = query_recorder(self.settings)
        self._health = IndexHealth(lambda: self.backends.state, self.outstanding)

    @classmethod
    def for_planning(cls, settings: Settings) -> Hopindex:
        """A service for dry runs, which write nothing: over an embedded state file that
        does not exist yet it reads an empty store in memory instead of creating the file
        and its folder (``open_state_store_to_read``). Planning opens no engine."""
        configure_logging(settings)  # before the store logs its opening
        return cls(settings, Backends(settings,
                                      state=open_state_store_to_read(settings.state_url)))

    def __enter__(self) -> Hopindex:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        close_embedded_senders()  # before the event log closes: queued webhook deliveries
        bind_runtime(None)
        self.backends.close()
        drop_connections()

    # -- ingest and delete ------------------------------------------------------------
    def ingest_paths(self, index: str, paths: Sequence[Path], method: str | None = None,
                     budget: BudgetLimits | None = None, *, wait: WaitPolicy = WaitPolicy.WAIT,
                     announce: Announce | None = None, reading: Reading | None = None,
                     llm_mode: LlmMode | None = None) -> Job:
        """``reading``: how document files split, and which files of a folder are read."""
        validate_index_name(index)
        read = read_paths(paths, options=read_options(self.settings, reading))
        return self.ingest_documents(index, read.documents, read.errors, method=method,
                                     budget=budget, wait=wait, announce=announce,
                                     llm_mode=llm_mode)

    def ingest_documents(self, index: str, documents: Sequence[RawDocument],
                         read_errors: Sequence[ReadError] = (), method: str | None = None,
                         *, job_id: str | None = None, budget: BudgetLimits | None = None,
                         wait: WaitPolicy = WaitPolicy.WAIT, announce: Announce | None = None,
                         llm_mode: LlmMode | None = None) -> Job:
        """Ingest into ``index``; a new index is built with the index method ``method``
        (default: the registry's ``default_index_method``, which depends on whether an
        LLM is configured). ``job_id`` lets a caller that runs this in the background
        know the job before the call returns. ``budget`` caps the job's LLM spend (None:
        the index's default budget); past it the job pauses until resumed. ``wait``: what
        a job behind another of its index does (scheduler/writers.py); ``announce`` is
        told each job it waits behind. ``llm_mode``: how its LLM calls are made (None:
        the index's default mode, else HOPINDEX_LLM_MODE)."""
        return submit_ingest(self.runtime, index, documents, read_errors, method=method,
                             job_id=job_id, budget=budget, wait=wait, announce=announce,
                             llm_mode=llm_mode)

    def plan_ingest_paths(self, index: str, paths: Sequence[Path],
                          method: str | None = None, *, reading: Reading | None = None,
                          llm_mode: LlmMode | None = None) -> IngestPlan:
        """What ``ingest_paths`` would do and cost, computed without an LLM call or a write."""
        validate_index_name(index)
        read = read_paths(paths, options=read_options(self.settings, reading))
        return self.plan_ingest_documents(index, read.documents, read.errors, method=method,
                                          llm_mode=llm_mode)

    def plan_ingest_documents(self, index: str, documents: Sequence[RawDocument],
                              read_errors: Sequence[ReadError] = (),
                              method: str | None = None, *,
                              llm_mode: LlmMode | None = None) -> IngestPlan:
        """The dry run of ``ingest_documents`` (scheduler/dry_run.py): documents new,
        changed, unchanged and invalid, each phase's LLM calls and tokens, the cost at
        the synchronous and the batch prices, and the mode the job would run in."""
        return plan_ingest(self.runtime, index, documents, read_errors, method=method,
                           llm_mode=llm_mode)

    def delete_documents(self, index: str, doc_ids: Sequence[str],
                         job_id: str | None = None, *, wait: WaitPolicy = WaitPolicy.WAIT,
                         announce: Announce | None = None) -> Job:
        self.require_index(index)
        return submit_delete(self.runtime, index, doc_ids, job_id=job_id, wait=wait,
                             announce=announce)

    def repair_index(self, index: str, job_id: str | None = None, *,
                     wait: WaitPolicy = WaitPolicy.WAIT, announce: Announce | None = None,
                     llm_mode: LlmMode | None = None) -> Job:
        """Redo the index's outstanding work: documents not fully indexed and items that
        failed for good (see scheduler/outstanding.py), with no new input."""
        self.require_index(index)
        return submit_repair(self.runtime, index, job_id=job_id, wait=wait, announce=announce,
                             llm_mode=llm_mode)

    def rebuild_index(self, index: str, job_id: str | None = None, *,
                      wait: WaitPolicy = WaitPolicy.WAIT, announce: Announce | None = None,
                      llm_mode: LlmMode | None = None) -> Job:
        """Build again the index's levels phases built only on request (a global tree),
        over its documents as they are now, with no new input (scheduler/rebuild.py)."""
        self.require_index(index)
        return submit_rebuild(self.runtime, index, job_id=job_id, wait=wait,
                              announce=announce, llm_mode=llm_mode)

    def outstanding(self, index: str, *, verify: bool = False) -> Outstanding:
        """The index's status (ready, building, partial), what it is missing, and how
        stale its levels phases built on request are; ``verify`` also finds stored text
        its units were not built from (reads every document)."""
        self.require_index(index)
        return outstanding_work(self.backends.state, index,
                                level_statuses(self.runtime, index), verify=verify)

    # -- queries ----------------------------------------------------------------------
    def query(self, index: str, question: str, method: str | None = None,
              options: QueryOptions | None = None, *,
              listener: AnswerListener | None = None) -> QueryResult:
        """``method`` defaults to the first default query method of the index's method; one
        that cannot read the index is refused, naming those that can. Every query,
        answered or failed, goes into the query metrics with the numbers its response
        carries. ``listener`` hears the query stream: its passages, then its answer's
        text as it is written (``api/query_platform.py``). With tracing on it is one
        span (its steps and LLM calls inside), whose trace id the result carries."""
        with span("query", {spans.INDEX: index, spans.METHOD: method}) as traced:
            result = self._query(index, question, method, options, listener=listener)
            if traced.is_recording():
                traced.set_attribute(spans.METHOD, result.method)
                traced.set_attribute("hopindex.query.passages", len(result.passages))
                traced.set_attribute("hopindex.query.degraded",
                                     [d.step for d in result.degraded])
            return result

    def _query(self, index: str, question: str, method: str | None,
               options: QueryOptions | None, *,
               listener: AnswerListener | None) -> QueryResult:
        try:
            if (bad := unstorable_field([("question", question)])) is not None:
                # The CLI passes undecodable argument bytes as lone surrogates; the HTTP
                # API refuses them while parsing.
                raise InvalidInputError(bad.reason, where=bad.field)
            info = self.require_index(index)
            options = options or QueryOptions()
            own = sorted(n for n in options.params if n not in PLATFORM_OPTIONS)
            if own and method is None:
                # Options are one method's: read by whatever the index's default is, the
                # same query would mean another thing once that default changes. The
                # platform's (rerank) mean the same to every method.
                raise InvalidInputError(
                    f"options ({', '.join(own)}) belong to one query method: name it",
                    where="method")
            method = method or default_query(info.method)
            spec = check_fit(method, index, info.method)
            check_option_names(method, options.params)
            stage = rerank_stage_for(self.settings, options.params,
                                     lambda: self.backends.reranker)
            options = method_options(options)
            warnings = self._health.warnings(index)
            search = self._search_context()  # opening the engines is not the query's time
            heard = None if listener is None else HeardQuery(
                listener, partial(self._query_metrics.record_first_token, method))
            if heard is not None or stage is not None:
                search = replace(search, listener=heard, rerank=stage)
            with timed_loads() as loads, metered_embeddings() as meter:
                started = time.perf_counter()
                if heard is not None:
                    heard.start()
                result = spec.factory(search).run_query(index, question, options)
                elapsed = time.perf_counter() - started
            if stage is not None:
                stage.report(result)
            # The embedder's first use loads its model inside the query: reported apart,
            # so latency_s (and the latency histogram) measure the query alone.
            result.embedder_load_s = loads.read()
            result.latency_s = max(0.0, elapsed - result.embedder_load_s)
            result.warnings.extend(warnings)
            embedding = meter.usage(self.settings.embedding_price_per_mtok)
            result.usage.add_embedding(embedding)
            if not embedding.is_empty:  # else the embedder may be unopened: leave it so
                report_embedding_usage(self.settings, self.backends.embedder.model_name,
                                       embedding)
            result.trace_id = current_trace_id() or ""
            if heard is not None:
                heard.finish(result)
        except QueryCancelledError:
            raise  # its reader left: no answer went out, and no error either
        except Exception:
            self._query_metrics.record_failure(method)
            raise
        self._query_metrics.record_query(result)
        return result

    def _search_context(self) -> SearchContext:
        # Opened at the first query, not with the service: a process that only submits
        # jobs to workers must not take the embedded engines' one-process lock.
        if self._search is None:
            b = self.backends
            # With a broker, a query method's remote work (an LLM judge) runs on workers.
            tasks = CeleryQueryTasks() if self.settings.broker_url else None
            self._search = SearchContext(vectors=b.vectors, keywords=b.keywords, units=b.state,
                                         documents=b.state, indexes=b.state,
                                         embedder=b.embedder, open_llm=lambda: b.llm,
                                         settings=self.settings, tasks=tasks,
                                         read_settings=lambda name: method_settings(
                                             self.settings, name),
                                         index_kinds=self._index_kinds, records=b.state,
                                         catalogue=b.state)
        return self._search

    def _index_kinds(self, index: str) -> frozenset[UnitKind]:
        info = self.backends.state.get_index(index)
        return get_index_method(info.method).writes if info is not None else frozenset()

    # -- inspection -------------------------------------------------------------------
    def get_job(self, job_id: str) -> Job:
        job = self.backends.state.get_job(job_id)
        if job is None:
            raise NotFoundError(f"no job {job_id!r}")
        return job

    @property
    def runs_on_workers(self) -> bool:
        """True when a broker sends tasks to worker processes (jobs finish later)."""
        return bool(self.settings.broker_url)

    def wait_for_job(self, job_id: str, timeout_s: float | None = None) -> Job:
        return wait_for_job(self.backends.state, job_id, timeout_s=timeout_s)

    def cancel_job(self, job_id: str, *, reason: str | None = None) -> Job:
        """Stop the job; ``reason`` is what its record says instead of the default
        (cancelled by request), when the process stops it for a reason of its own."""
        self.get_job(job_id)
        return cancel_job(self.runtime, job_id, reason=reason or CANCELLED_BY_REQUEST)

    def resume_job(self, job_id: str, *, max_llm_tokens: int | None = None,
                   max_cost: float | None = None) -> Job:
        """Continue a job paused on its LLM budget where it stopped; a limit given
        replaces the job's (it is the job's new total, counting what it spent)."""
        self.get_job(job_id)
        return resume_paused_job(self.runtime, job_id, max_llm_tokens=max_llm_tokens,
                                 max_cost=max_cost)

    def set_index_budget(self, index: str, budget: BudgetLimits) -> IndexInfo:
        """The budget every later job of ``index`` gets when it gives none (no limits:
        the default is removed)."""
        self.require_index(index)
        return set_index_budget(self.backends.state, index, budget)

    def set_index_llm_mode(self, index: str, mode: LlmMode | None) -> IndexInfo:
        """The mode every later job of ``index`` runs in when it names none (None: the
        index's default is removed, and HOPINDEX_LLM_MODE applies)."""
        info = self.require_index(index)
        return self.backends.state.set_index_options(index, with_index_mode(info.options,
                                                                            mode))

    def list_jobs(self, index: str | None = None, limit: int = 50) -> list[Job]:
        return self.backends.state.list_jobs(index, limit)

    def list_indexes(self) -> list[IndexInfo]:
        return self.backends.state.list_indexes()

    def index_info(self, index: str) -> IndexInfo | None:
        """The index's record, or None when there is no such index."""
        return self.backends.state.get_index(validate_index_name(index))

    def require_llm_for(self, index: str, index_method: str) -> None:
        """Refuse (``ConfigError``) building ``index`` with a method that needs an LLM
        when none is configured, before anything is built."""
        self.runtime.require_llm(index, get_index_method(index_method))

    def get_documents(self, index: str, doc_ids: Sequence[str]) -> list[Document]:
        return self.backends.state.get_documents(index, doc_ids)

    def count_documents(self, index: str) -> int:
        return len(self.backends.state.document_hashes(index))

    def delete_index(self, index: str) -> None:
        """Drop ``index`` from every store: its vectors, postings, documents, units and
        jobs. Refused while one of its jobs is still running."""
        self.require_index(index)
        running = [j.job_id for j in self.list_jobs(index, limit=20) if not j.state.is_final]
        if running:
            raise IndexBusyError(f"index {index!r} has running jobs ({', '.join(running)}); "
                                 "cancel them or wait")
        self.backends.vectors.drop_index(index)
        self.backends.keywords.drop_index(index)
        self.backends.state.delete_index(index)

    def require_index(self, index: str) -> IndexInfo:
        """The index's record; a malformed name is an input error, an unknown one
        ``NotFoundError``."""
        validate_index_name(index)
        info = self.backends.state.get_index(index)
        if info is None:
            raise NotFoundError(f"no index {index!r}; ingest documents into it first")
        return info
