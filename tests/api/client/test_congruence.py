"""The same scenarios through ``Client.local`` and ``Client.connect`` (conftest.py):
the answers are equal once ids and clocks are dropped (``normal``), and a refusal is
the same error type with the same code and ``where`` from both."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hopindex.api.client import Client, WebhookInfo
from hopindex.core.budget import BudgetLimits
from hopindex.core.errors import (
    ConfigError,
    HopindexError,
    IndexExistsError,
    InvalidIndexNameError,
    InvalidInputError,
    JobFinishedError,
    NotFoundError,
    error_type_for,
)
from hopindex.core.events import EventType
from hopindex.core.llm_modes import ModeSource
from hopindex.core.models import Job, JobState
from hopindex.core.settings import LlmMode
from hopindex.methods.base import FusionMode, QueryOptions, Retrieval
from hopindex.methods.plugin import LlmUse
from hopindex.methods.registry import fitting_queries, list_operations, registry
from tests.api.client.conftest import Pair, assert_alike, normal
from tests.conftest import CURIE_CORPUS
from tests.waiting import wait_until

pytestmark = pytest.mark.integration

INDEX = "curie"
QUESTION = "Which city was the wife of Pierre Curie born in?"
# The third record has no text: it fails alone, named by its line in records.jsonl.
BAD_AT = 3


def records() -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = [{"id": f"d{i}", "title": d.title, "text": d.text}
                                   for i, d in enumerate(CURIE_CORPUS)]
    found.insert(BAD_AT - 1, {"id": "broken", "title": "No text here"})
    return found


@pytest.fixture(scope="module")
def curie(pair: Pair) -> tuple[Job, Job]:
    """Index ``curie`` built alike on both sides from records, one of them bad."""
    return pair.both(lambda c: c.ingest(INDEX, records()))


def assert_same_error(errors: tuple[HopindexError, HopindexError],
                      kind: type[HopindexError], where: str | None = None,
                      ids: tuple[str, str] | None = None) -> None:
    """The local one is exactly ``kind``, the remote one its code's type (the same
    class unless ``kind`` refines a more general type of its code), both with its
    code, HTTP status and exit code, and (an input error) the same ``where``; the
    messages say the same once the ids each side made (``ids``: local's, remote's)
    are set aside."""
    local, remote = errors
    assert type(local) is kind, local
    assert type(remote) is error_type_for(kind.code), remote
    for error in errors:
        assert (error.code, error.http_status, error.exit_code, error.retryable) == (
            kind.code, kind.http_status, kind.exit_code, kind.retryable)
    if isinstance(local, InvalidInputError | NotFoundError):
        assert isinstance(remote, InvalidInputError | NotFoundError)
        assert local.where == remote.where
        if where is not None:
            assert local.where == where
    local_ids, remote_ids = ids or ("", "")
    assert message(local, local_ids) == message(remote, remote_ids)


def message(error: HopindexError, made_id: str = "") -> str:
    """The error's message (``where: what`` for an input error, from either client),
    with ``made_id`` (an id one side made) replaced."""
    text = str(error)
    return text.replace(made_id, "<id>") if made_id else text


# -- ingest ---------------------------------------------------------------------------

def test_records_with_a_bad_record(curie: tuple[Job, Job]) -> None:
    """Succeeded on both: every good record indexed, the bad one listed by its line."""
    local, remote = curie
    assert_alike(local, remote)
    assert local.state is JobState.SUCCEEDED  # a bad input record fails alone
    assert [(e.item, e.stage) for e in local.errors] == [
        (f"records.jsonl:{BAD_AT}:text", "validate")]
    assert local.counts["validate"].done == len(CURIE_CORPUS)


def write_folder(root: Path) -> Path:
    folder = root / "corpus"
    (folder / "nested").mkdir(parents=True)
    (folder / "warsaw.txt").write_text("Warsaw is the capital of Poland.\n")
    (folder / "nested" / "paris.md").write_text("# Paris\n\nParis is the capital of France.\n")
    (folder / "people.jsonl").write_text(
        json.dumps({"id": "p1", "title": "Marie Curie", "text": "She was born in Warsaw."})
        + "\n" + "{not json\n")
    (folder / ".hidden.txt").write_text("never read: hidden\n")
    return folder


def without_errors(value: Any) -> Any:
    return {k: v for k, v in normal(value).items() if k != "errors"}


def test_ingest_a_folder(pair: Pair, tmp_path: Path) -> None:
    """Text, Markdown and JSONL files under a folder (a hidden one skipped, a bad JSONL
    line failing alone): the same documents and counts, one error on the same line
    (named by the process that read the file: the path as given here, the upload's
    name, its path below the folder, through a server; both end alike)."""
    folder = write_folder(tmp_path)
    local, remote = pair.both(lambda c: c.ingest("folder", [folder]))
    assert_alike(without_errors(local), without_errors(remote))
    assert local.state is JobState.SUCCEEDED
    for job in (local, remote):
        assert [(e.item.endswith("people.jsonl:2"), e.stage) for e in job.errors] == [
            (True, "validate")]
    found = pair.same(lambda c: sorted(
        p.doc_id for p in c.query("folder", "capital", method="naive", k=10).passages))
    assert len(found) == 3


def test_plan_ingest(pair: Pair, curie: tuple[Job, Job], tmp_path: Path) -> None:
    """A plan of a new index from a folder, and of records partly known to an existing
    index (the folder's error is named as in test_ingest_a_folder)."""
    folder = write_folder(tmp_path)
    local, remote = pair.both(lambda c: c.plan_ingest("planned", [folder]))
    assert_alike(without_errors(local), without_errors(remote))
    assert not local.index_exists and len(local.errors) == len(remote.errors) == 1
    known = pair.same(lambda c: c.plan_ingest(
        INDEX, [*records()[:2], {"id": "new", "title": "New", "text": "A new text."}]))
    assert known.index_exists and known.method == "extractive"
    assert known.errors == []
    assert_same_error(pair.raised(lambda c: c.indexes.describe_index("planned")),
                      NotFoundError)  # a plan writes nothing


# -- query ----------------------------------------------------------------------------

def llm_free_queries(index_method: str) -> list[str]:
    """The query methods that read an index of ``index_method`` without an LLM."""
    return [name for name in fitting_queries(index_method)
            if registry().query_methods[name].llm_use is LlmUse.NONE]


def a_param(method: str) -> dict[str, str | int | float | bool]:
    """One of ``method``'s own options, set to a value other than its lowest (none
    when it takes none)."""
    schema = registry().query_methods[method].options_schema or {}
    for name, field in schema.get("properties", {}).items():
        if field.get("type") == "integer":
            return {name: min(int(field.get("minimum", 0)) + 1,
                              int(field.get("maximum", 1_000)))}
    for name, field in schema.get("properties", {}).items():
        if "enum" in field:
            return {name: field["enum"][-1]}
    return {}


QUERY_OPTIONS = [
    pytest.param({}, id="defaults"),
    pytest.param({"retrieval": Retrieval.KEYWORD}, id="keyword"),
    pytest.param({"retrieval": Retrieval.DENSE}, id="dense"),
    pytest.param({"retrieval": Retrieval.HYBRID, "fusion": FusionMode.PERCENTILE,
                  "candidates": 8, "keyword_weight": 0.5}, id="hybrid-percentile"),
    pytest.param({"with_param": True}, id="method-param"),
]


def test_llm_free_methods_are_found() -> None:
    """The enumeration below is not empty (and holds the default index's own method)."""
    assert {"extractive", "naive", "hops"} <= set(llm_free_queries("extractive"))


@pytest.mark.parametrize("method", llm_free_queries("extractive"))
@pytest.mark.parametrize("given", QUERY_OPTIONS)
def test_query(pair: Pair, curie: tuple[Job, Job], method: str, given: dict[str, Any]
               ) -> None:
    """Every LLM-free method that fits the index, with options: the same passages
    (ids, ranks, titles, texts, scores, provenance), answer and trace."""
    given = dict(given)
    params = a_param(method) if given.pop("with_param", False) else {}
    options = QueryOptions(params=params, **given)
    local, remote = pair.both(lambda c: c.query(INDEX, QUESTION, method=method, k=3,
                                                options=options))
    assert_alike(local, remote)
    assert local.method == method and len(local.passages) == 3
    assert [p.rank for p in local.passages] == [1, 2, 3]
    assert all(p.via_unit_id and p.via_kind for p in local.passages)
    assert local.trace and remote.trace
    assert local.answer is None  # LLM-free: evidence only


def test_query_default_method(pair: Pair, curie: tuple[Job, Job]) -> None:
    """No method named: the index method's default query method, alike."""
    local = pair.same(lambda c: c.query(INDEX, QUESTION))
    assert local.method == registry().index_methods["extractive"].default_queries[0]
    assert local.passages and local.trace


# -- jobs -----------------------------------------------------------------------------

def test_jobs(pair: Pair, curie: tuple[Job, Job]) -> None:
    """list, get and wait answer the same job alike; a finished job cannot be
    cancelled, from either."""
    listed = pair.same(lambda c: c.jobs.list_jobs(INDEX))
    assert [j.job_id for j in listed][-1] == curie[0].job_id
    ids = {pair.local: curie[0].job_id, pair.remote: curie[1].job_id}
    pair.same(lambda c: c.jobs.get_job(ids[c]))
    pair.same(lambda c: c.jobs.wait_for_job(ids[c], timeout_s=30))
    assert_same_error(pair.raised(lambda c: c.jobs.cancel_job(ids[c])), JobFinishedError,
                      ids=(curie[0].job_id, curie[1].job_id))


def test_delete_documents(pair: Pair) -> None:
    """A delete job alike; the document is gone from both, the others stay."""
    kept = [{"id": "x1", "title": "Warsaw", "text": CURIE_CORPUS[2].text},
            {"id": "x2", "title": "Poland", "text": CURIE_CORPUS[4].text}]
    pair.same(lambda c: c.ingest("deletes", kept))
    job = pair.same(lambda c: c.delete_documents("deletes", ["x1"]))
    assert job.state is JobState.SUCCEEDED
    found = pair.same(lambda c: [p.doc_id for p in c.query("deletes", "Warsaw Poland",
                                                           method="naive").passages])
    assert found == ["x2"]
    assert pair.same(lambda c: c.indexes.describe_index("deletes")).documents == 1


# -- documents ------------------------------------------------------------------------

def test_get_document(pair: Pair, curie: tuple[Job, Job]) -> None:
    """A document read from records, by id: the same title, text, hash and (empty)
    metadata from both, and no citation."""
    found = pair.same(lambda c: c.get_document(INDEX, "d1"))
    assert (found.doc_id, found.index, found.title, found.text) == (
        "d1", INDEX, CURIE_CORPUS[1].title, CURIE_CORPUS[1].text)
    assert found.content_hash and found.metadata == {} and found.citation is None


def test_get_document_with_metadata_and_a_free_text_id(pair: Pair) -> None:
    """An id holding '/', '#', '?', '%' and spaces reaches the same document through
    both (the remote client sends it as a query parameter), with the metadata it was
    given and none of the fields hopindex keeps beside it (where it was read from,
    which differs between the two sides)."""
    doc_id = "notes/2024 #1?a=b&c=%20"
    record = {"id": doc_id, "title": "Nobel", "text": "Marie Curie won two Nobel Prizes.",
              "metadata": {"source": "wiki", "year": 1911, "tags": ["physics", "chemistry"]}}
    pair.same(lambda c: c.ingest("documents", [record]))
    found = pair.same(lambda c: c.get_document("documents", doc_id))
    assert found.doc_id == doc_id
    assert found.metadata == record["metadata"]


def test_get_document_refusals(pair: Pair, curie: tuple[Job, Job]) -> None:
    """An unknown id is the same NotFoundError from both, naming the id, ``where``
    ``doc_id`` (the HTTP API's field ``id``, named back); an unknown index the usual
    NotFoundError, naming no field; a blank id an input error naming ``doc_id``."""
    unknown = pair.raised(lambda c: c.get_document(INDEX, "no/such#doc"))
    assert_same_error(unknown, NotFoundError, "doc_id")
    assert str(unknown[0]) == f"no document 'no/such#doc' in index {INDEX!r}"
    absent = pair.raised(lambda c: c.get_document("absent", "d0"))
    assert_same_error(absent, NotFoundError, "")
    assert_same_error(pair.raised(lambda c: c.get_document(INDEX, " ")), InvalidInputError,
                      "doc_id")


# -- events ---------------------------------------------------------------------------

def test_events(pair: Pair, curie: tuple[Job, Job]) -> None:
    """The index's event log holds the same kinds of event, in the same order. A job's
    record and its events are two stores: the last event may land just after the
    client saw the job end, so each log is read once it holds the build's end. A run
    of job.progress events counts as one: they are sent at most once per
    HOPINDEX_PROGRESS_EVENT_INTERVAL_S, so how many a build sends depends on its
    speed, not on the client."""
    for client in pair.clients:
        wait_until(lambda c=client: any(e.event_type is EventType.INDEX_READY
                                        for e in c.events.iterate_events(INDEX)),
                   what="the curie build's index.ready event")

    def kinds(client: Client) -> list[tuple[EventType, str]]:
        found: list[tuple[EventType, str]] = []
        for event in client.events.iterate_events(INDEX):
            kind = (event.event_type, event.index)
            if not (found and found[-1] == kind and kind[0] is EventType.JOB_PROGRESS):
                found.append(kind)
        return found

    pair.same(kinds)


# -- indexes --------------------------------------------------------------------------

def test_indexes(pair: Pair, curie: tuple[Job, Job]) -> None:
    listed = pair.same(lambda c: sorted((i for i in c.indexes.list_indexes()
                                         if i.name == INDEX), key=lambda i: i.name))
    assert [i.method for i in listed] == ["extractive"]
    described = pair.same(lambda c: c.indexes.describe_index(INDEX))
    assert described.documents == len(CURIE_CORPUS)
    pair.same(lambda c: c.indexes.describe_index(INDEX, verify=True))


def test_budget(pair: Pair, curie: tuple[Job, Job]) -> None:
    """set, get and clear an index's default budget."""
    assert pair.same(lambda c: c.indexes.get_budget(INDEX)).budget == {}
    limits = BudgetLimits(max_llm_tokens=50_000)
    assert pair.same(lambda c: c.indexes.set_budget(INDEX, limits)).budget == \
        limits.as_dict()
    assert pair.same(lambda c: c.indexes.get_budget(INDEX)).budget == limits.as_dict()
    assert pair.same(lambda c: c.indexes.set_budget(INDEX, BudgetLimits())).budget == {}
    assert pair.same(lambda c: c.indexes.get_budget(INDEX)).budget == {}


def test_llm_modes(pair: Pair) -> None:
    """An ingest runs in the mode asked for; an index's default mode is set, read and
    cleared alike, and a later ingest or repair naming none runs in it, one naming one
    in its own; a dry run says which mode and where it came from."""
    record = [{"id": "m1", "title": "Modes", "text": "A job's LLM calls go one way."}]
    assert pair.same(lambda c: c.ingest("modes", record, llm_mode="batch")
                     ).llm_mode is LlmMode.BATCH
    assert pair.same(lambda c: c.indexes.get_llm_mode("modes")).as_dict() == {
        "index": "modes", "llm_mode": None, "effective": "sync"}
    assert pair.same(lambda c: c.indexes.set_llm_mode("modes", LlmMode.BATCH)).as_dict() == {
        "index": "modes", "llm_mode": "batch", "effective": "batch"}
    more = [{"id": "m2", "title": "More", "text": "Or the other way, as the index says."}]
    planned = pair.same(lambda c: c.plan_ingest("modes", more))
    assert (planned.llm_mode, planned.llm_mode_from) == (LlmMode.BATCH, ModeSource.INDEX)
    assert pair.same(lambda c: c.ingest("modes", more)).llm_mode is LlmMode.BATCH
    assert pair.same(lambda c: c.indexes.repair_index("modes", llm_mode="sync")
                     ).llm_mode is LlmMode.SYNC
    assert pair.same(lambda c: c.indexes.set_llm_mode("modes", None)).llm_mode is None
    assert pair.same(lambda c: c.indexes.get_llm_mode("modes")).effective is LlmMode.SYNC


def test_create_index_twice(pair: Pair) -> None:
    created = pair.same(lambda c: c.indexes.create_index("made", "extractive"))
    assert (created.name, created.method, created.documents) == ("made", "extractive", 0)
    assert_same_error(pair.raised(lambda c: c.indexes.create_index("made")),
                      IndexExistsError)
    pair.same(lambda c: c.indexes.delete_index("made"))
    assert_same_error(pair.raised(lambda c: c.indexes.describe_index("made")),
                      NotFoundError)


# -- webhooks -------------------------------------------------------------------------

SECRET = "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


def test_webhooks(pair: Pair) -> None:
    """Registered for an index that never has an event (nothing is delivered), with the
    secret given and with one made up; listed without secrets; removed."""
    hook = "http://127.0.0.1:9/hook?token=abc"
    given = pair.both(lambda c: c.webhooks.add_webhook("hooked", hook, SECRET))
    assert_alike(*given)
    assert given[0].secret == given[1].secret
    made = pair.both(lambda c: c.webhooks.add_webhook("hooked", hook))
    assert_alike(*made)
    assert all(m.secret and m.secret.startswith("whsec_") for m in made)
    listed = pair.same(lambda c: c.webhooks.list_webhooks("hooked"))
    assert len(listed) == 2 and all(h.secret is None for h in listed)
    assert all("abc" not in h.url for h in listed)  # secret-looking values hidden
    for hooks in (given, made):
        remove_twice(pair, hooks)
    assert pair.same(lambda c: c.webhooks.list_webhooks("hooked")) == []


def remove_twice(pair: Pair, hooks: tuple[WebhookInfo, WebhookInfo]) -> None:
    """Removed alike; removed again, the same NotFoundError naming each side's id."""
    ids = {pair.local: hooks[0].webhook_id, pair.remote: hooks[1].webhook_id}
    pair.same(lambda c: c.webhooks.remove_webhook(ids[c]))
    assert_same_error(pair.raised(lambda c: c.webhooks.remove_webhook(ids[c])),
                      NotFoundError, ids=(hooks[0].webhook_id, hooks[1].webhook_id))


# -- operations -----------------------------------------------------------------------

def test_operations_list(pair: Pair) -> None:
    every = pair.same(lambda c: c.operations.list_operations())
    assert [(o.method, o.name) for o in every] == [
        (o.method, o.name) for o in list_operations()]
    pair.same(lambda c: c.operations.list_operations("kgbridge"))
    assert pair.same(lambda c: c.operations.list_operations("extractive")) == []


def test_links_on_an_extractive_index(pair: Pair, curie: tuple[Job, Job]) -> None:
    """``links.list`` is kgbridge's: on another index, the same refusal naming the
    index's method; an operation nobody registers names the operation."""
    assert_same_error(pair.raised(lambda c: c.operations.run_operation(INDEX, "links.list")),
                      InvalidInputError, where="method")
    assert_same_error(pair.raised(lambda c: c.operations.run_operation(INDEX, "no.such")),
                      InvalidInputError, where="operation")
    assert_same_error(pair.raised(lambda c: c.operations.run_operation("absent",
                                                                       "links.list")),
                      NotFoundError)


def test_an_llm_method_without_an_llm(pair: Pair) -> None:
    """A kgbridge index (whose links the operations above read) cannot even be created
    where no LLM is configured: the same configuration error from both."""
    errors = pair.raised(lambda c: c.indexes.create_index("graph", "kgbridge"))
    assert_same_error(errors, ConfigError)
    assert "HOPINDEX_LLM_MODEL" in str(errors[1])


# -- errors ---------------------------------------------------------------------------

def case(call: Any, kind: type[HopindexError], where: str | None, name: str) -> Any:
    """One refusal both clients can reach."""
    return pytest.param(call, kind, where, id=name)


ERRORS = [
    case(lambda c: c.indexes.describe_index("absent"), NotFoundError, None,
         "index-not-found"),
    case(lambda c: c.query("absent", "q"), NotFoundError, None, "query-index-not-found"),
    case(lambda c: c.delete_documents("absent", ["d0"]), NotFoundError, None,
         "delete-index-not-found"),
    case(lambda c: c.get_document("absent", "d0"), NotFoundError, None,
         "document-index-not-found"),
    case(lambda c: c.get_document(INDEX, "absent"), NotFoundError, "doc_id",
         "document-not-found"),
    case(lambda c: c.get_document("Bad Name!", "d0"), InvalidIndexNameError, None,
         "document-bad-index-name"),
    case(lambda c: c.get_document(INDEX, ""), InvalidInputError, "doc_id",
         "document-id-blank"),
    case(lambda c: c.indexes.get_budget("absent"), NotFoundError, None,
         "budget-index-not-found"),
    case(lambda c: c.indexes.get_llm_mode("absent"), NotFoundError, None,
         "llm-mode-index-not-found"),
    case(lambda c: c.indexes.set_llm_mode(INDEX, "fast"), InvalidInputError, "llm_mode",
         "index-llm-mode-unknown"),
    case(lambda c: c.ingest(INDEX, [{"id": "a", "title": "A", "text": "a"}], llm_mode="later"),
         InvalidInputError, "llm_mode", "ingest-llm-mode-unknown"),
    case(lambda c: c.indexes.repair_index(INDEX, llm_mode="Batch"), InvalidInputError,
         "llm_mode", "repair-llm-mode-unknown"),
    case(lambda c: c.jobs.get_job("no-such-job"), NotFoundError, None, "job-not-found"),
    case(lambda c: c.jobs.cancel_job("no-such-job"), NotFoundError, None,
         "cancel-job-not-found"),
    case(lambda c: c.indexes.create_index("Bad Name!"), InvalidIndexNameError, None,
         "bad-index-name"),
    case(lambda c: c.ingest("Bad Name!", [{"id": "a", "title": "A", "text": "a"}]),
         InvalidIndexNameError, None, "ingest-bad-index-name"),
    case(lambda c: c.query(INDEX, "q", method="hops", options=QueryOptions(params={"bogus": 1})),
         InvalidInputError, "params.bogus", "unknown-query-option"),
    case(lambda c: c.query(INDEX, "q", options=QueryOptions(params={"walk": "off"})),
         InvalidInputError, "method", "options-without-method"),
    case(lambda c: c.query(INDEX, "q", method="naive",
                           options=QueryOptions(params={"seeds": 2})),
         InvalidInputError, "params.seeds", "option-of-another-method"),
    case(lambda c: c.query(INDEX, "q", method="indexrag"), InvalidInputError, "method",
         "method-not-fitting-index"),
    case(lambda c: c.query(INDEX, "q", method="nosuch"), InvalidInputError, "method",
         "unknown-method"),
    case(lambda c: c.query(INDEX, "q", k=0), InvalidInputError, "k", "k-out-of-range"),
    case(lambda c: c.ingest(INDEX, [{"id": "a", "title": "A", "text": "a"}],
                            method="nosuch"),
         InvalidInputError, "method", "unknown-index-method"),
]


@pytest.mark.parametrize(("call", "kind", "where"), ERRORS)
def test_error_kinds(pair: Pair, curie: tuple[Job, Job], call: Any,
                     kind: type[HopindexError], where: str | None) -> None:
    """Every refusal both clients can reach: the same type, code, status, exit code
    and ``where``. The wire carries the code, so a refinement sharing its code with a
    more general type (``InvalidIndexNameError`` is an ``invalid_input``) comes back
    through a server as the code's type, which the local one is an instance of."""
    local, remote = pair.raised(call)
    assert type(local) is kind, local
    assert type(remote) is error_type_for(kind.code), remote
    assert isinstance(local, type(remote))
    if isinstance(local, InvalidInputError | NotFoundError):
        assert local.where == getattr(remote, "where", None)
        assert where is None or local.where == where


@pytest.mark.parametrize(("call", "kind", "where"), ERRORS)
def test_errors(pair: Pair, curie: tuple[Job, Job], call: Any, kind: type[HopindexError],
                where: str | None) -> None:
    """... and the same message, ``where: what`` from both."""
    assert_same_error(pair.raised(call), kind, where)


def test_error_text_is_the_same(pair: Pair, curie: tuple[Job, Job]) -> None:
    """A refusal the HTTP layer makes while reading the request reads as the local one,
    ``where: what``."""
    local, remote = pair.raised(lambda c: c.query(INDEX, "q", method="nosuch"))
    assert str(local) == str(remote)
