"""The Batch API client against the test server (and, for the failures the server
cannot inject on these routes, a stub provider).

Proves: a batch goes up, runs and comes back by custom_id, each completion equal to the
synchronous reply for its body, and its files can be deleted; injected line failures
are retryable errors that succeed when sent again, no line sent twice otherwise; an
expired batch's undone lines are retryable ``batch_expired`` errors and a cancelled
batch's are missing; a batch failed at validation raises naming its line; a base URL
without the Batch API is a ConfigError saying so, a refused key an
``LlmAuthenticationError``, a 429/5xx a retryable ``LlmUnavailableError`` with the
provider's pause, another refusal permanent (the uploaded file deleted); a batch is
found again by its metadata; the input and result files have OpenAI's formats.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

import openai
import pytest
from aiohttp import web

from hopindex.backends.llm.batch_api import (
    BatchLine,
    BatchLineError,
    BatchState,
    BatchStatus,
    ProviderBatches,
    write_input_file,
)
from hopindex.backends.llm.batch_files import read_result_file
from hopindex.core.errors import (
    ConfigError,
    InvalidInputError,
    LlmAuthenticationError,
    LlmBatchFailedError,
    LlmBatchUnavailableError,
    LlmUnavailableError,
    NotFoundError,
    PermanentStageError,
)
from hopindex.testing.llm_batch_files import drawn_share
from hopindex.testing.llm_limits import BatchEvent
from hopindex.testing.llm_server import LlmTestServer
from hopindex.testing.reply_styles import ReplyStyle
from tests.waiting import wait_until

T = TypeVar("T")
KEY = "sk-batch"
MODEL = "gpt-4o-mini"
StartServer = Callable[..., LlmTestServer]


def answer_body(n: int, **extra: Any) -> dict[str, Any]:
    return {"model": MODEL, "messages": [{"role": "user", "content": (
        f"Context: Person {n} was born in Town {n}.\nQuestion: Where was Person {n} born?")}],
        **extra}


def stage1_body(n: int) -> dict[str, Any]:
    return {"model": MODEL, "response_format": {"type": "json_object"}, "messages": [
        {"role": "system", "content": "You extract facts."},
        {"role": "user", "content": 'Extract every fact as "qa_pairs" and list "entities".\n'
                                    f"Document: Person {n} was born in Town {n}."}]}


def lines_of(count: int, prefix: str = "line") -> list[BatchLine]:
    return [BatchLine(f"{prefix}-{n}", answer_body(n)) for n in range(count)]


class Harness:
    """One event loop for a test's async clients, driven from the (sync) test."""

    def __init__(self) -> None:
        self._runner = asyncio.Runner()
        self._clients: list[openai.AsyncOpenAI] = []

    def run(self, call: Awaitable[T]) -> T:
        async def wrapped() -> T:
            return await call
        return self._runner.run(wrapped())

    def client(self, base_url: str, key: str = KEY) -> openai.AsyncOpenAI:
        # No SDK retries: each test sees the provider's first answer.
        client = openai.AsyncOpenAI(base_url=base_url, api_key=key, max_retries=0)
        self._clients.append(client)
        return client

    def batches(self, base_url: str, key: str = KEY) -> ProviderBatches:
        return ProviderBatches(self.client(base_url, key))

    def ended(self, batches: ProviderBatches, batch_id: str) -> BatchStatus:
        """The batch once it has ended, polled as the job's poller would."""
        def read() -> BatchStatus | None:
            status = self.run(batches.get_batch(batch_id))
            return status if status.state.ended else None
        return wait_until(read, what=f"batch {batch_id} to end")

    def close(self) -> None:
        for client in self._clients:
            self.run(client.close())
        self._runner.close()


@pytest.fixture
def harness() -> Iterator[Harness]:
    running = Harness()
    yield running
    running.close()


def kept(answer: dict[str, Any]) -> dict[str, Any]:
    """A chat.completion but for its id and second of creation, new on every call."""
    return {key: value for key, value in answer.items() if key not in {"id", "created"}}


def test_a_batch_goes_up_runs_and_comes_back_by_custom_id(
        start_server: StartServer, harness: Harness) -> None:
    """submit → get → read: the ticket names the batch and its input file, the status is
    completed with its counts and metadata, every line's completion is there by its
    custom_id with nothing missing, and deleting the files leaves none at the provider."""
    server = start_server(api_key=KEY)
    batches = harness.batches(server.base_url)
    lines = [*lines_of(3), BatchLine("stage1", stage1_body(7))]
    ticket = harness.run(batches.submit_batch(lines, metadata={"job": "j-1"}))
    assert ticket.batch_id.startswith("batch_") and ticket.input_file_id.startswith("file-")
    status = harness.ended(batches, ticket.batch_id)
    assert status.state is BatchState.COMPLETED and status.errors == ()
    assert (status.counts.total, status.counts.completed, status.counts.failed) == (4, 4, 0)
    assert status.metadata == {"job": "j-1"} and status.input_file_id == ticket.input_file_id
    results = harness.run(batches.read_results(status))
    assert set(results.completions) == {line.custom_id for line in lines}
    assert results.errors == {} and results.missing == frozenset()
    assert json.loads(results.completions["stage1"]["choices"][0]["message"]["content"])[
        "qa_pairs"]

    harness.run(batches.delete_files(*status.file_ids, None))
    sync = openai.OpenAI(base_url=server.base_url, api_key=KEY, max_retries=0)
    for file_id in status.file_ids:
        with pytest.raises(openai.NotFoundError):
            sync.files.retrieve(file_id)
    harness.run(batches.delete_files(ticket.input_file_id))  # already gone: no error
    assert server.stats.submissions == {line.custom_id: 1 for line in lines}


def test_each_completion_equals_the_synchronous_reply_for_its_body(
        start_server: StartServer, harness: Harness) -> None:
    """Under every reply style, the batch's completion for a body equals the
    synchronous chat completion for the same body, usage included: a batch build can
    equal a synchronous one."""
    server = start_server(api_key=KEY, reply_styles=ReplyStyle.mixed(refusals=False),
                          seed=2)
    batches = harness.batches(server.base_url)
    lines = [BatchLine(f"a{n}", answer_body(n, max_tokens=30)) for n in range(5)] + [
        BatchLine(f"s{n}", stage1_body(n)) for n in range(5)]
    status = harness.ended(batches, harness.run(
        batches.submit_batch(lines, metadata={})).batch_id)
    results = harness.run(batches.read_results(status))
    assert len(server.stats.by_style) >= 3  # several forms are compared
    client = harness.client(server.base_url)
    for line in lines:
        raw = harness.run(client.chat.completions.with_raw_response.create(**line.body))
        assert kept(results.completions[line.custom_id]) == kept(
            raw.http_response.json()), line.custom_id


def test_failed_lines_are_retryable_and_succeed_when_sent_again(
        start_server: StartServer, harness: Harness) -> None:
    """With batch_fail_lines=0.5, the lines the seed picks come back as retryable 500
    errors (the batch still completes); sent again in a new batch they complete, and no
    other line was ever submitted twice."""
    server = start_server(api_key=KEY, batch_fail_lines=0.5, seed=11)
    batches = harness.batches(server.base_url)
    lines = lines_of(10)
    picked = {line.custom_id for line in lines if drawn_share(11, line.custom_id) < 0.5}
    assert 0 < len(picked) < len(lines)
    status = harness.ended(batches, harness.run(
        batches.submit_batch(lines, metadata={})).batch_id)
    assert status.state is BatchState.COMPLETED and status.counts.failed == len(picked)
    results = harness.run(batches.read_results(status))
    assert set(results.errors) == picked and results.missing == frozenset()
    assert {(error.status_code, error.code, error.retryable)
            for error in results.errors.values()} == {(500, "server_error", True)}

    again = [line for line in lines if line.custom_id in picked]
    retried = harness.ended(batches, harness.run(
        batches.submit_batch(again, metadata={})).batch_id)
    assert set(harness.run(batches.read_results(retried)).completions) == picked
    assert server.stats.submissions == {
        line.custom_id: 2 if line.custom_id in picked else 1 for line in lines}


def test_an_expired_batch_reports_its_undone_lines_as_retryable_errors(
        start_server: StartServer, harness: Harness) -> None:
    """An expired batch of 6 lines: the first 3 completed, the other 3 errors coded
    batch_expired with no HTTP status, retryable; none missing."""
    server = start_server(api_key=KEY, batch_expire=True)
    batches = harness.batches(server.base_url)
    lines = lines_of(6)
    status = harness.ended(batches, harness.run(
        batches.submit_batch(lines, metadata={})).batch_id)
    assert status.state is BatchState.EXPIRED
    results = harness.run(batches.read_results(status))
    assert sorted(results.completions) == ["line-0", "line-1", "line-2"]
    assert results.errors == {f"line-{n}": BatchLineError(
        "batch_expired", results.errors[f"line-{n}"].message, None, True) for n in (3, 4, 5)}
    assert results.missing == frozenset()
    assert server.stats.batch_count(BatchEvent.LINE_EXPIRED) == 3


def test_a_cancelled_batch_reports_its_unrun_lines_missing(
        start_server: StartServer, harness: Harness) -> None:
    """Cancelled while in progress with no line done, the batch goes cancelling then
    cancelled, and every line is missing, whether the caller names the custom_ids or
    they are read from the input file; reading an unended batch is refused."""
    server = start_server(api_key=KEY, batch_completion_s=3600.0)
    batches = harness.batches(server.base_url)
    lines = lines_of(4)
    ticket = harness.run(batches.submit_batch(lines, metadata={}))
    running = harness.run(batches.get_batch(ticket.batch_id))
    assert running.state is BatchState.IN_PROGRESS and not running.state.ended
    with pytest.raises(ValueError, match="no results yet"):
        harness.run(batches.read_results(running))
    assert harness.run(batches.cancel_batch(ticket.batch_id)).state is BatchState.CANCELLING
    status = harness.ended(batches, ticket.batch_id)
    assert status.state is BatchState.CANCELLED
    ids = frozenset(line.custom_id for line in lines)
    for named in (None, ids):
        results = harness.run(batches.read_results(status, custom_ids=named))
        assert results.replies == {} and results.missing == ids
    assert harness.run(batches.cancel_batch(ticket.batch_id)).state is BatchState.CANCELLED
    assert server.stats.batch_count(BatchEvent.LINE_CANCELLED) == 4


def test_a_batch_failed_at_validation_raises_naming_its_line(
        start_server: StartServer, harness: Harness) -> None:
    """A batch whose third line names another model is failed by the provider: its
    status lists the problem, reading it raises a permanent LlmBatchFailedError naming
    line 3, and cancelling it answers its failed status."""
    server = start_server(api_key=KEY)
    batches = harness.batches(server.base_url)
    lines = [*lines_of(2), BatchLine("other", answer_body(9) | {"model": "another-model"})]
    ticket = harness.run(batches.submit_batch(lines, metadata={}))
    status = harness.ended(batches, ticket.batch_id)
    assert status.state is BatchState.FAILED
    assert [(problem.code, problem.line) for problem in status.errors] == [
        ("model_mismatch", 3)]
    with pytest.raises(LlmBatchFailedError, match=r"line 3: model_mismatch") as failed:
        harness.run(batches.read_results(status))
    assert isinstance(failed.value, PermanentStageError) and not failed.value.retryable
    assert harness.run(batches.cancel_batch(ticket.batch_id)).state is BatchState.FAILED
    assert server.stats.submissions == {}


def test_a_base_url_without_the_batch_api_is_a_config_error(
        start_server: StartServer, harness: Harness) -> None:
    """At a base URL whose server has no /files or /batches (the server's root, not
    /v1), submitting or polling says batch mode is unavailable there (a ConfigError);
    at the real base URL an unknown batch id is a NotFoundError instead."""
    server = start_server(api_key=KEY)
    absent = harness.batches(server.root_url)
    with pytest.raises(LlmBatchUnavailableError,
                       match=f"batch mode is unavailable at {server.root_url}") as refused:
        harness.run(absent.submit_batch(lines_of(1), metadata={}))
    assert isinstance(refused.value, ConfigError)
    with pytest.raises(LlmBatchUnavailableError):
        harness.run(absent.get_batch("batch_x"))
    with pytest.raises(NotFoundError) as missing:
        harness.run(harness.batches(server.base_url).get_batch("batch_x"))
    assert not isinstance(missing.value, ConfigError)


def test_a_refused_key_is_an_authentication_error(
        start_server: StartServer, harness: Harness) -> None:
    """A wrong key is refused with a 401: LlmAuthenticationError naming the variables."""
    server = start_server(api_key=KEY)
    with pytest.raises(LlmAuthenticationError, match="OPENAI_API_KEY"):
        harness.run(harness.batches(server.base_url, key="wrong").submit_batch(
            lines_of(1), metadata={}))


def test_provider_failures_are_mapped_and_a_refused_batch_leaves_no_file(
        harness: Harness) -> None:
    """A stub provider: a 429 on upload is a retryable LlmUnavailableError carrying its
    retry-after-ms; a 503 on retrieve is retryable too; a 400 on create is a permanent
    refusal, and the input file it uploaded is deleted."""
    deleted: list[str] = []
    answers = {"files": 429}

    async def upload(_request: web.Request) -> web.Response:
        if answers["files"] == 429:
            return web.json_response({"error": {"message": "slow down", "type": "requests",
                                                "code": "rate_limit_exceeded"}}, status=429,
                                     headers={"retry-after-ms": "250"})
        return web.json_response({"id": "file-1", "object": "file", "bytes": 1,
                                  "created_at": 0, "filename": "x.jsonl",
                                  "purpose": "batch", "status": "processed"})

    async def create(_request: web.Request) -> web.Response:
        return web.json_response({"error": {"message": "quota", "type":
                                             "invalid_request_error", "code": None}}, status=400)

    async def retrieve(_request: web.Request) -> web.Response:
        return web.json_response({"error": {"message": "down", "type": "server_error"}},
                                 status=503)

    async def delete(request: web.Request) -> web.Response:
        deleted.append(request.match_info["file_id"])
        return web.json_response({"id": request.match_info["file_id"], "object": "file",
                                  "deleted": True})

    app = web.Application()
    app.router.add_post("/v1/files", upload)
    app.router.add_delete("/v1/files/{file_id}", delete)
    app.router.add_post("/v1/batches", create)
    app.router.add_get("/v1/batches/{batch_id}", retrieve)

    async def start() -> tuple[web.AppRunner, int]:
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        return runner, int(runner.addresses[0][1])

    runner, port = harness.run(start())
    try:
        batches = harness.batches(f"http://127.0.0.1:{port}/v1")
        with pytest.raises(LlmUnavailableError) as limited:
            harness.run(batches.submit_batch(lines_of(1), metadata={}))
        assert limited.value.retryable and limited.value.retry_after_s == 0.25
        with pytest.raises(LlmUnavailableError, match="down"):
            harness.run(batches.get_batch("batch_1"))
        answers["files"] = 200
        with pytest.raises(PermanentStageError, match=r"\(400\): quota") as refused:
            harness.run(batches.submit_batch(lines_of(1), metadata={}))
        assert not isinstance(refused.value, LlmUnavailableError)
        assert deleted == ["file-1"]
    finally:
        harness.run(runner.cleanup())


def test_a_batch_is_found_again_by_its_metadata(
        start_server: StartServer, harness: Harness) -> None:
    """find_batch returns the batch created with a metadata token, and None for a token
    no batch carries."""
    server = start_server(api_key=KEY)
    batches = harness.batches(server.base_url)
    first = harness.run(batches.submit_batch(lines_of(1, "a"), metadata={"token": "t-1"}))
    harness.run(batches.submit_batch(lines_of(1, "b"), metadata={"token": "t-2"}))
    assert harness.run(batches.find_batch("token", "t-1")) == first.batch_id
    assert harness.run(batches.find_batch("token", "t-3")) is None


def test_input_and_result_files_have_openais_formats() -> None:
    """The input file is one POST /v1/chat/completions request per line under its
    custom_id; an empty batch or a repeated custom_id is refused before upload. Result
    lines read as replies (200) or errors: 429 and 5xx retryable, another 4xx not, an
    expired line retryable with no status; a line without a custom_id is counted
    unreadable."""
    content = write_input_file([BatchLine("a", {"model": "m", "messages": []})])
    assert content == (b'{"custom_id":"a","method":"POST","url":"/v1/chat/completions",'
                       b'"body":{"model":"m","messages":[]}}\n')
    with pytest.raises(InvalidInputError, match="custom_id 'a'"):
        write_input_file([BatchLine("a", {}), BatchLine("a", {})])
    with pytest.raises(InvalidInputError):
        write_input_file([])

    def response(custom_id: str, status: int, body: dict[str, Any]) -> dict[str, Any]:
        return {"id": "r", "custom_id": custom_id, "error": None,
                "response": {"status_code": status, "request_id": "q", "body": body}}

    def error(status: int, code: str | None) -> dict[str, Any]:
        return {"error": {"message": f"m{status}", "type": "t", "param": None, "code": code}}

    records = [response("ok", 200, {"object": "chat.completion"}),
               response("busy", 429, error(429, "rate_limit_exceeded")),
               response("bad", 400, error(400, None)),
               response("down", 502, {}),
               {"id": "r", "custom_id": "late", "response": None,
                "error": {"code": "batch_expired", "message": "too late"}},
               {"id": "r", "response": None, "error": None}]
    read, unreadable = read_result_file(
        b"\n".join(json.dumps(record).encode() for record in records) + b"\n\nnot json\n")
    assert unreadable == 2
    assert read == {"ok": {"object": "chat.completion"},
                    "busy": BatchLineError("rate_limit_exceeded", "m429", 429, True),
                    "bad": BatchLineError("t", "m400", 400, False),
                    "down": BatchLineError("http_502", "the request was answered 502", 502,
                                           True),
                    "late": BatchLineError("batch_expired", "too late", None, True)}
