"""A fault at any step of planning or launching a job fails that job with the reason,
the caller gets a HopindexError, and running the same request again ends with the
unit set of a clean build: 0 lost, 0 duplicated (eager mode, embedded backends)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import hopindex.scheduler.submit as submit
from hopindex.api.client.local import LocalClient
from hopindex.core.errors import BackendUnavailableError, HopindexError
from hopindex.core.ids import doc_id_from_title
from hopindex.core.models import JobKind, JobState, Stage
from hopindex.core.settings import Settings
from hopindex.readers import RawDocument
from hopindex.workers.app import app
from tests.conftest import CURIE_CORPUS, raw
from tests.methods.indexrag.conftest import ClientFactory, local_client
from tests.scheduler.test_pipeline import engine_counts, ingest, unit_snapshot

pytestmark = pytest.mark.integration

INDEX = "curie"
WARSAW = doc_id_from_title("Warsaw")
WITHOUT_WARSAW = [d for d in CURIE_CORPUS if d.title != "Warsaw"]


class InjectedError(RuntimeError):
    """The fault these tests inject: not a HopindexError, like a bug or a driver error."""


@dataclass(frozen=True)
class Step:
    """Where a fault is injected: an attribute of the submit module, of a store, or the
    ``run`` of a control task (a chord callback, run inside the submitting call when
    eager)."""

    name: str
    where: str  # "submit", "state", "events" or "task"
    attribute: str
    # Fire only on a call these arguments pass (a callback of one phase among several).
    when: Callable[..., bool] | None = None


def _target(client: LocalClient, step: Step) -> Any:
    if step.where == "submit":
        return submit
    if step.where == "state":
        return client.service.backends.state
    if step.where == "events":
        return client.service.backends.events
    return app.tasks[step.attribute]


def inject(monkeypatch: pytest.MonkeyPatch, client: LocalClient, step: Step,
           fault: BaseException | None = None) -> None:
    """Make the step's first call raise ``fault`` (an InjectedError naming the step by
    default); later calls, such as the retry's, run as usual."""
    target = _target(client, step)
    attribute = "run" if step.where == "task" else step.attribute
    original: Callable[..., Any] = getattr(target, attribute)
    fired: list[bool] = []

    def faulty(*args: Any, **kwargs: Any) -> Any:
        if not fired and (step.when is None or step.when(*args, **kwargs)):
            fired.append(True)
            raise fault or InjectedError(f"injected at {step.name}")
        return original(*args, **kwargs)

    monkeypatch.setattr(target, attribute, faulty)


CONTROL = "hopindex.control."
INGEST_STEPS = [
    Step("index check", "submit", "ensure_index"),
    Step("validation", "submit", "validate_documents"),
    Step("document hashes", "state", "document_hashes"),
    Step("job creation", "state", "create_job"),
    Step("put_documents", "state", "put_documents"),
    Step("job_started", "submit", "job_started"),
    Step("first phase", "submit", "start_steps"),
    Step("documents task", "task", "hopindex.phase.documents"),
    Step("after_phase", "task", CONTROL + "after_phase"),
    Step("start_step", "task", CONTROL + "start_step"),
    Step("groups task", "task", "hopindex.phase.groups"),
    Step("finalize", "task", CONTROL + "finalize"),
]
DELETE_STEPS = [
    Step("index check", "submit", "validate_index_name"),
    Step("validation", "submit", "delete_plan"),
    Step("document hashes", "state", "document_hashes"),
    Step("units of the documents", "state", "units_of_documents"),
    Step("job creation", "state", "create_job"),
    Step("delete mentions", "state", "delete_mentions"),
    Step("delete documents", "state", "delete_documents"),
    Step("job_started", "submit", "job_started"),
    Step("fan-out", "submit", "fan_out"),
    Step("purge", "task", "hopindex.purge"),
    Step("start_step", "task", CONTROL + "start_step"),
    Step("after_phase", "task", CONTROL + "after_phase"),
    Step("groups task", "task", "hopindex.phase.groups"),
    Step("finalize", "task", CONTROL + "finalize"),
]


@dataclass(frozen=True)
class CleanBuild:
    units: set[tuple[str, str, str]]
    engines: tuple[int, int]


def _clean(data_dir: Path, documents: list[RawDocument]) -> CleanBuild:
    with local_client(Settings(data_dir=data_dir).resolved()) as client:
        job = ingest(client, documents)
        assert job.state is JobState.SUCCEEDED, job.reason
        return CleanBuild(unit_snapshot(client), engine_counts(client))


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, CleanBuild]]:
    """The unit sets of clean builds: the whole corpus, and the corpus without Warsaw."""
    root = tmp_path_factory.mktemp("clean")
    yield {"all": _clean(root / "all", CURIE_CORPUS),
           "without": _clean(root / "without", WITHOUT_WARSAW)}


def assert_no_job_left_running(client: LocalClient, kind: JobKind, reason: str) -> None:
    jobs = [j for j in client.jobs.list_jobs(limit=1000) if j.kind is kind]
    for job in jobs:
        assert job.state is JobState.FAILED, (job.job_id, job.state, job.reason)
        assert reason in job.reason, job.reason


def assert_clean(client: LocalClient, build: CleanBuild) -> None:
    assert unit_snapshot(client) == build.units
    assert engine_counts(client) == build.engines


@pytest.mark.parametrize("step", INGEST_STEPS, ids=[s.name for s in INGEST_STEPS])
def test_a_fault_while_an_ingest_is_planned_fails_its_job_alone(
        step: Step, make_client: ClientFactory, clean: dict[str, CleanBuild],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The ingest raises a HopindexError naming the fault, its job (when it got one) is
    failed with the reason, and the same ingest again builds the clean unit set."""
    client = make_client()
    inject(monkeypatch, client, step)
    with pytest.raises(HopindexError, match=f"injected at {step.name}"):
        ingest(client, CURIE_CORPUS)
    assert_no_job_left_running(client, JobKind.INGEST, f"injected at {step.name}")
    again = ingest(client, CURIE_CORPUS)
    assert again.state is JobState.SUCCEEDED, again.reason
    assert_clean(client, clean["all"])


@pytest.mark.parametrize("step", DELETE_STEPS, ids=[s.name for s in DELETE_STEPS])
def test_a_fault_while_a_delete_is_planned_fails_its_job_alone(
        step: Step, make_client: ClientFactory, clean: dict[str, CleanBuild],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The delete raises a HopindexError naming the fault, its job (when it got one) is
    failed with the reason, and the same delete again finishes what the first one began:
    the index holds the unit set of a clean build without the deleted document."""
    client = make_client()
    assert ingest(client, CURIE_CORPUS).state is JobState.SUCCEEDED
    inject(monkeypatch, client, step)
    with pytest.raises(HopindexError, match=f"injected at {step.name}"):
        client.delete_documents(INDEX, [WARSAW, "no-such-doc"])
    assert_no_job_left_running(client, JobKind.DELETE, f"injected at {step.name}")
    again = client.delete_documents(INDEX, [WARSAW, "no-such-doc"])
    assert again.state is JobState.SUCCEEDED, again.reason
    # A first delete that got as far as its last step left nothing of Warsaw to find.
    assert [e.item for e in again.errors] in (["no-such-doc"], sorted(["no-such-doc", WARSAW]))
    assert_clean(client, clean["without"])


def test_a_hopindex_error_while_planning_keeps_its_type(
        make_client: ClientFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """A HopindexError (here: the state store unreachable) reaches the caller as itself,
    so the API answers its own status, and the job is failed with it."""
    client = make_client()
    inject(monkeypatch, client, Step("put_documents", "state", "put_documents"),
           BackendUnavailableError("state store unreachable"))
    with pytest.raises(BackendUnavailableError, match="unreachable"):
        ingest(client, CURIE_CORPUS)
    assert_no_job_left_running(client, JobKind.INGEST, "unreachable")


def test_an_interrupted_ingest_is_failed_and_the_interrupt_goes_on(
        make_client: ClientFactory, clean: dict[str, CleanBuild],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C in the middle of an embedded ingest: the job is failed as interrupted,
    KeyboardInterrupt still stops the program, and the next ingest completes the index."""
    client = make_client()
    inject(monkeypatch, client, Step("start_step", "task", CONTROL + "start_step"),
           KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt):
        ingest(client, CURIE_CORPUS)
    assert_no_job_left_running(client, JobKind.INGEST, "KeyboardInterrupt")
    assert ingest(client, CURIE_CORPUS).state is JobState.SUCCEEDED
    assert_clean(client, clean["all"])


def test_deleting_only_unknown_ids_succeeds_listing_them(make_client: ClientFactory) -> None:
    """A delete none of whose ids exist finishes: each id is a validation error on the
    job, nothing is removed, and the index can be deleted afterwards."""
    client = make_client()
    ingest(client, CURIE_CORPUS[:2])
    before = unit_snapshot(client)
    job = client.delete_documents(INDEX, ["ghost-1", "ghost-2"])
    assert job.state is JobState.SUCCEEDED, job.reason
    assert [(e.item, e.stage) for e in job.errors] == [("ghost-1", Stage.VALIDATE),
                                                       ("ghost-2", Stage.VALIDATE)]
    assert "no document 'ghost-1'" in job.errors[0].reason
    assert job.counts[Stage.VALIDATE].failed == 2
    assert unit_snapshot(client) == before
    client.indexes.delete_index(INDEX)
    assert client.indexes.list_indexes() == []


def test_an_unstorable_id_in_a_delete_is_a_validation_error(
        make_client: ClientFactory) -> None:
    """An id holding an unpaired surrogate (an undecodable argv byte) is listed on the
    job with an escaped name; the other id is deleted."""
    client = make_client()
    ingest(client, CURIE_CORPUS[:2])
    gone = doc_id_from_title(CURIE_CORPUS[0].title)
    job = client.delete_documents(INDEX, [gone, "bad-\udcff"])
    assert job.state is JobState.SUCCEEDED, job.reason
    assert [e.item for e in job.errors] == ["bad-\\udcff"]
    assert "surrogate" in job.errors[0].reason
    assert gone not in client.service.backends.state.document_hashes(INDEX)


UNSTORABLE = [
    ("metadata.author", raw("Bad", "Some text.", doc_id="bad"), {"author": "x\ud800"}),
    ("metadata.tags[1]", raw("Bad", "Some text.", doc_id="bad"), {"tags": ["ok", "\udfff"]}),
    ("metadata.a.b", raw("Bad", "Some text.", doc_id="bad"), {"a": {"b": "\ud800"}}),
    ("title", raw("Bad \ud800", "Some text.", doc_id="bad"), {}),
    ("text", raw("Bad", "Some \ud800 text.", doc_id="bad"), {}),
    ("id", raw("Bad", "Some text.", doc_id="bad-\ud800"), {}),
]


@pytest.mark.parametrize(("field", "record", "metadata"), UNSTORABLE,
                         ids=[f for f, _, _ in UNSTORABLE])
def test_an_unstorable_record_fails_alone_naming_its_field(
        field: str, record: RawDocument, metadata: dict[str, Any],
        make_client: ClientFactory) -> None:
    """A record whose title, text, id or metadata (at any depth) holds an unpaired
    surrogate is a validation error naming the record and the field; the good records
    of the same job are ingested and the job succeeds."""
    client = make_client()
    bad = RawDocument(doc_id=record.doc_id, title=record.title, text=record.text,
                      metadata=metadata, origin="upload.jsonl:7")
    job = ingest(client, [*CURIE_CORPUS[:2], bad])
    assert job.state is JobState.SUCCEEDED, job.reason
    assert len(job.errors) == 1
    error = job.errors[0]
    assert error.stage == Stage.VALIDATE
    assert error.where == f"upload.jsonl:7:{field}"
    assert field in error.reason and "surrogate" in error.reason
    assert sorted(client.service.backends.state.document_hashes(INDEX)) == sorted(
        doc_id_from_title(d.title) for d in CURIE_CORPUS[:2])


@pytest.mark.parametrize("kind", [JobKind.INGEST, JobKind.DELETE])
def test_an_event_log_fault_never_fails_the_job(
        kind: JobKind, make_client: ClientFactory, clean: dict[str, CleanBuild],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Events report a job; they do not make it. An event log that raises (any error,
    not only a HopindexError) loses that event, is logged, and the job goes on to the
    clean build's unit set."""
    client = make_client()
    if kind is JobKind.DELETE:
        assert ingest(client, CURIE_CORPUS).state is JobState.SUCCEEDED
    inject(monkeypatch, client, Step("event publish", "events", "append_event"))
    job = (ingest(client, CURIE_CORPUS) if kind is JobKind.INGEST
           else client.delete_documents(INDEX, [WARSAW]))
    assert job.state is JobState.SUCCEEDED, job.reason
    assert_clean(client, clean["all" if kind is JobKind.INGEST else "without"])
