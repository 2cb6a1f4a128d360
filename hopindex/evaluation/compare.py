"""Compare index methods in one run: one index per method over the same documents, each
asked its method's default query methods (or those named), with what building it cost.

An index already holding documents is reused as it is, and its build cost is the sum
over every finished job of it on record (ingests, deletes, repairs, rebuilds); only an
empty or new index is ingested. The LLM response cache
is keyed by prompt, not by index, so even a rebuilt index costs no new calls.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from hopindex.api.service import Hopindex
from hopindex.core.errors import HopindexError, InvalidInputError
from hopindex.core.ids import validate_index_name
from hopindex.core.logging import get_logger
from hopindex.core.models import Job, JobState, UnitKind
from hopindex.evaluation.build_cost import BuildCost, BuildSource, build_cost
from hopindex.evaluation.build_tokens import JOBS_READ
from hopindex.evaluation.datasets import Question
from hopindex.evaluation.report import EvalReport, MethodReport, SkippedMethod
from hopindex.evaluation.report_tokens import assign_build_tokens
from hopindex.evaluation.runner import DEFAULT_KS, GoldMatch, QuestionOutcome, evaluate_method
from hopindex.evaluation.specs import MethodSpec, expand_method_specs
from hopindex.methods.plugin import phase_name
from hopindex.methods.registry import (
    default_index_method,
    fits,
    get_index_method,
    get_query_method,
)

log = get_logger(__name__)

# Ingest the run's corpus into an index (name, index method) and return the job.
IngestCorpus = Callable[[str, str], Job]
Notify = Callable[[str], None]


class IndexBuildError(HopindexError):
    """An index of the run could not be built: its ingest failed or was cancelled."""


@dataclass(frozen=True, slots=True)
class Target:
    """One index of the run: its name and its index method."""

    index: str
    index_method: str


@dataclass(frozen=True, slots=True)
class _Plan:
    target: Target
    specs: list[MethodSpec]


def index_name(base: str, index_method: str) -> str:
    return validate_index_name(f"{base}-{index_method}")


def plan_targets(service: Hopindex, base: str, index_methods: Sequence[str]) -> list[Target]:
    """One index per index method, named ``<base>-<method>``; none named: ``base`` itself,
    with its own method or, when new, the one a new index gets.

    Refused before anything is built: an unknown method, an existing index built with
    another method, a method that needs an LLM when none is configured.
    """
    if not index_methods:
        info = service.index_info(base)
        method = (info.method if info is not None
                  else default_index_method(service.settings.llm_enabled))
        targets = [Target(index=base, index_method=method)]
    else:
        targets = [Target(index=index_name(base, method), index_method=method)
                   for method in dict.fromkeys(index_methods)]
    for target in targets:
        get_index_method(target.index_method)  # an unknown method is refused, named
        info = service.index_info(target.index)
        if info is not None and info.method != target.index_method:
            raise InvalidInputError(
                f"index {target.index!r} is built with {info.method!r}, not "
                f"{target.index_method!r}: delete it or evaluate under another --index",
                where="--index-method")
        service.require_llm_for(target.index, target.index_method)
    return targets


def _kinds(kinds: frozenset[UnitKind]) -> str:
    return ", ".join(sorted(k.value for k in kinds))


def query_specs(index_method: str, methods: Sequence[str]
                ) -> tuple[list[MethodSpec], list[SkippedMethod]]:
    """The query methods to run on an index of ``index_method``: those named (the ones that
    can read it; the others noted as skipped), or its method's default ones."""
    specs = expand_method_specs(methods or get_index_method(index_method).default_queries)
    kept: list[MethodSpec] = []
    skipped: list[SkippedMethod] = []
    for spec in specs:
        query = get_query_method(spec.method)
        if fits(query, index_method):
            kept.append(spec)
        else:
            writes = get_index_method(index_method).writes
            skipped.append(SkippedMethod(
                method=spec.label, index_method=index_method,
                reason=f"it reads {_kinds(query.reads)} units, the index holds "
                       f"{_kinds(writes)}"))
    return kept, skipped


def _phases(index_method: str) -> list[tuple[str, str]]:
    return [(phase_name(index_method, phase), phase.kind.value)
            for phase in get_index_method(index_method).phases]


def _building_jobs(service: Hopindex, index: str) -> list[Job]:
    """Every finished job of ``index`` on record, oldest first: each built some of what
    the index holds (a job still running is not done building)."""
    return [job for job in reversed(service.list_jobs(index, limit=JOBS_READ))
            if job.state.is_final]


def prepare_index(service: Hopindex, target: Target, ingest: IngestCorpus,
                  notify: Notify) -> BuildCost:
    """Reuse the index when it holds documents, else ingest the corpus into it; either way
    what building it cost."""
    documents = (service.count_documents(target.index)
                 if service.index_info(target.index) is not None else 0)
    if documents:
        jobs = _building_jobs(service, target.index)
        source = BuildSource.REUSED if jobs else BuildSource.REUSED_UNRECORDED
        notify(f"index {target.index!r} ({target.index_method}) holds {documents} documents: "
               f"reusing it" + (f", build cost summed over its {len(jobs)} finished job"
                                f"{'' if len(jobs) == 1 else 's'}" if jobs else
                                ", no job built it on record (build cost 0)"))
    else:
        notify(f"index {target.index!r} is empty: ingesting the corpus with "
               f"{target.index_method}")
        submitted = ingest(target.index, target.index_method)
        # The stored record, final: with workers the ingest returns while it runs.
        job = (service.get_job(submitted.job_id) if submitted.state.is_final
               else service.wait_for_job(submitted.job_id))
        if job.state in (JobState.FAILED, JobState.CANCELLED):
            raise IndexBuildError(f"ingest job {job.job_id} into {target.index!r} ended "
                                 f"{job.state.value}: {job.reason}")
        source = BuildSource.BUILT
        jobs = [job]
        documents = service.count_documents(target.index)
        notify(f"ingest job {job.job_id}: {job.state.value}, {documents} documents, "
               f"{len(job.errors)} errors")
    cost = build_cost(target.index_method, target.index, source=source, documents=documents,
                      jobs=jobs, phases=_phases(target.index_method))
    log.info("eval_index_ready", index=target.index, index_method=target.index_method,
             source=cost.source.value, job_id=cost.job_id, jobs=cost.jobs_summed,
             wall_s=round(cost.wall_s, 3), llm_calls=cost.total().llm_calls)
    return cost


def compare_indexes(service: Hopindex, targets: Sequence[Target], *, base: str, dataset: str,
                    questions: Sequence[Question], methods: Sequence[str],
                    ingest: IngestCorpus, notify: Notify, ks: Sequence[int] = DEFAULT_KS,
                    on_question: Callable[[QuestionOutcome], None] | None = None,
                    match: GoldMatch = GoldMatch.TEXT) -> EvalReport:
    """Build (or reuse) every target, then run its query methods: one report."""
    plans: list[_Plan] = []
    skipped: list[SkippedMethod] = []
    for target in targets:
        specs, not_fitting = query_specs(target.index_method, methods)
        plans.append(_Plan(target=target, specs=specs))
        skipped.extend(not_fitting)
    if not any(plan.specs for plan in plans):
        raise InvalidInputError("no --method given can read any index of the run: "
                                + "; ".join(s.note for s in skipped), where="--method")
    builds = [prepare_index(service, plan.target, ingest, notify) for plan in plans]
    reports: list[MethodReport] = []
    for plan in plans:
        for spec in plan.specs:
            notify(f"{spec.label} on {plan.target.index!r}: {len(questions)} questions")
            report, _ = evaluate_method(service, plan.target.index, questions, spec.label,
                                        ks=ks, on_question=on_question, match=match)
            report.index_method = plan.target.index_method
            reports.append(report)
    run = EvalReport(dataset=dataset, index=base,
                     created_at=datetime.now(UTC).isoformat(timespec="seconds"),
                     methods=reports, ks=tuple(ks), builds=builds, skipped=skipped)
    assign_build_tokens(run, service.list_jobs)
    return run
