"""The test server's Files and Batch APIs answer as OpenAI's do, through the official
client and raw HTTP.

Proves: files and batches have OpenAI's shapes and course (validating → in_progress →
completed, expired, cancelling → cancelled), with the output and error lines in OpenAI's
format; a line is answered exactly as a synchronous call with its body (reply, style,
usage, a refused response_format as a 400 line) and past the per-minute limits; a
malformed input file fails the batch naming each bad line; unknown ids are 404s; the
injected line failures hit a custom_id's first submission only; every step is counted,
and ``_reset`` zeroes the counts; the knobs have CLI flags and are checked.
"""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any, Final

import openai
import pytest

from hopindex.core.errors import ConfigError
from hopindex.testing.llm_batch_files import EXPIRED_MESSAGE, drawn_share
from hopindex.testing.llm_limits import BatchEvent, Endpoint, LlmServerConfig, Outcome
from hopindex.testing.llm_server import LlmTestServer, _parser, config_from_args
from hopindex.testing.reply_styles import ReplyStyle
from tests.waiting import wait_until

KEY = "sk-batch"
MODEL = "gpt-4o-mini"
ENDPOINT: Final = "/v1/chat/completions"
StartServer = Callable[..., LlmTestServer]


def answer_prompt(n: int) -> str:
    return (f"Answer with only the name.\nContext: Person {n} was born in Town {n}. "
            f"Town {n} lies on River {n}.\nQuestion: Where was Person {n} born?")


def stage1_prompt(n: int) -> str:
    return ('Extract every fact as "qa_pairs" and list "entities".\n'
            f"Document: Person {n} was born in Town {n}. Person {n} married Partner {n}.")


def body(prompt: str, **extra: Any) -> dict[str, Any]:
    return {"model": MODEL, "messages": [{"role": "user", "content": prompt}], **extra}


def line(custom_id: str, request: dict[str, Any]) -> dict[str, Any]:
    return {"custom_id": custom_id, "method": "POST", "url": ENDPOINT, "body": request}


def jsonl(records: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(record) + "\n" for record in records).encode()


def synchronous(client: openai.OpenAI, request: dict[str, Any]) -> dict[str, Any]:
    """The JSON body of the synchronous call with ``request``."""
    raw = client.chat.completions.with_raw_response.create(**request)
    answer: dict[str, Any] = raw.http_response.json()
    return answer


def same_reply(batched: dict[str, Any], sync: dict[str, Any]) -> bool:
    """Equal but for the id and the second of creation, which each call gets anew."""
    def kept(answer: dict[str, Any]) -> dict[str, Any]:
        return {key: value for key, value in answer.items() if key not in {"id", "created"}}
    return kept(batched) == kept(sync)


def sdk(server: LlmTestServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key=KEY, max_retries=0)


def create(client: openai.OpenAI, content: bytes, **options: Any) -> openai.types.Batch:
    uploaded = client.files.create(file=("in.jsonl", content), purpose="batch")
    return client.batches.create(input_file_id=uploaded.id, endpoint=ENDPOINT,
                                 completion_window="24h", **options)


def ended(client: openai.OpenAI, batch_id: str) -> openai.types.Batch:
    """The batch once it has ended, polled as a client would."""
    def read() -> openai.types.Batch | None:
        batch = client.batches.retrieve(batch_id)
        return batch if batch.status in {"completed", "failed", "expired", "cancelled"} else None
    return wait_until(read, what=f"batch {batch_id} to end")


def lines_of(client: openai.OpenAI, file_id: str | None) -> dict[str, dict[str, Any]]:
    if file_id is None:
        return {}
    records = [json.loads(raw) for raw in client.files.content(file_id).text.splitlines()]
    return {record["custom_id"]: record for record in records}


@pytest.fixture
def server(start_server: StartServer) -> Iterator[LlmTestServer]:
    yield start_server(api_key=KEY)


def test_files_and_batches_have_openais_shapes_and_course(server: LlmTestServer) -> None:
    """Upload, create, retrieve, list, read and delete: a FileObject, a Batch validating
    then completed with its timestamps, counts, usage and metadata, output lines of
    ``{id, custom_id, response: {status_code, request_id, body}, error}`` whose body is
    a chat.completion, and every step counted."""
    client = sdk(server)
    uploaded = client.files.create(
        file=("in.jsonl", jsonl([line(f"q{n}", body(answer_prompt(n))) for n in range(3)])),
        purpose="batch")
    assert (uploaded.object, uploaded.purpose, uploaded.filename) == ("file", "batch",
                                                                      "in.jsonl")
    assert uploaded.id.startswith("file-") and uploaded.bytes > 0
    created = client.batches.create(input_file_id=uploaded.id, endpoint=ENDPOINT,
                                    completion_window="24h", metadata={"job": "j1"})
    assert (created.status, created.object, created.output_file_id) == ("validating",
                                                                        "batch", None)
    assert created.request_counts is not None and created.request_counts.total == 0
    assert created.expires_at == created.created_at + 24 * 3600

    batch = client.batches.retrieve(created.id)  # batch_completion_s=0: done on this read
    assert batch.status == "completed" and batch.error_file_id is None
    assert batch.request_counts is not None
    assert (batch.request_counts.total, batch.request_counts.completed,
            batch.request_counts.failed) == (3, 3, 0)
    assert batch.in_progress_at and batch.finalizing_at and batch.completed_at
    assert batch.metadata == {"job": "j1"} and batch.model == MODEL
    output = lines_of(client, batch.output_file_id)
    assert sorted(output) == ["q0", "q1", "q2"]
    for custom_id, record in output.items():
        assert set(record) == {"id", "custom_id", "response", "error"}
        assert record["error"] is None and record["id"].startswith("batch_req_")
        assert set(record["response"]) == {"status_code", "request_id", "body"}
        completion = openai.types.chat.ChatCompletion.model_validate(
            record["response"]["body"])
        assert completion.choices[0].message.content and custom_id in {"q0", "q1", "q2"}
    assert batch.usage is not None and batch.usage.total_tokens == sum(
        r["response"]["body"]["usage"]["total_tokens"] for r in output.values())

    listed = client.batches.list(limit=1)
    assert [b.id for b in listed.data] == [batch.id] and not listed.has_more
    assert batch.output_file_id is not None
    assert client.files.retrieve(batch.output_file_id).purpose == "batch_output"
    assert client.files.delete(uploaded.id).deleted
    with pytest.raises(openai.NotFoundError):
        client.files.content(uploaded.id)
    stats = server.stats
    assert stats.batch_count(BatchEvent.FILE_UPLOADED) == 1
    assert stats.batch_count(BatchEvent.BATCH_CREATED) == 1
    assert stats.batch_count(BatchEvent.LINE_COMPLETED) == 3
    assert stats.submissions == {"q0": 1, "q1": 1, "q2": 1}
    assert stats.count(Endpoint.CHAT) == 0  # lines are not synchronous requests


def test_a_line_is_answered_as_the_synchronous_call_with_its_body(
        start_server: StartServer) -> None:
    """Under every reply style, each line's completion (content, reasoning, finish
    reason, usage) equals the synchronous reply to the same body, and under rpm=2 a
    batch of 12 lines completes while the rate window stays free for two calls."""
    server = start_server(reply_styles=ReplyStyle.mixed(refusals=False), seed=5,
                          requests_per_minute=2)
    client = sdk(server)
    requests = {f"a{n}": body(answer_prompt(n)) for n in range(6)} | {
        f"s{n}": body(stage1_prompt(n), response_format={"type": "json_object"},
                      max_tokens=40 + n) for n in range(6)}
    batch = ended(client, create(client, jsonl([line(c, r) for c, r in requests.items()])).id)
    output = lines_of(client, batch.output_file_id)
    assert len(output) == 12 and server.stats.count(Endpoint.CHAT) == 0
    assert len(server.stats.by_style) >= 3  # the comparison covers several styles

    for custom_id in ("a0", "s0"):  # the window admits two calls: the batch used none
        assert same_reply(output[custom_id]["response"]["body"],
                          synchronous(client, requests[custom_id]))
    with pytest.raises(openai.RateLimitError):
        client.chat.completions.create(**requests["a1"])

    # The rest, one by one on a server of its own without the limit.
    unlimited = sdk(start_server(reply_styles=ReplyStyle.mixed(refusals=False), seed=5))
    for custom_id, request in requests.items():
        assert same_reply(output[custom_id]["response"]["body"],
                          synchronous(unlimited, request)), custom_id


def test_a_refused_response_format_is_a_400_error_line(start_server: StartServer) -> None:
    """Where the server refuses json_schema (SCHEMA_REFUSED), that line is answered in the
    error file with the synchronous call's 400 body; the other line completes."""
    server = start_server(reply_styles=(ReplyStyle.SCHEMA_REFUSED,))
    client = sdk(server)
    schema = {"type": "json_schema", "json_schema": {"name": "r", "schema": {
        "type": "object"}}}
    refused = body(stage1_prompt(1), response_format=schema)
    batch = ended(client, create(client, jsonl([line("refused", refused),
                                                line("plain", body(answer_prompt(1)))])).id)
    assert batch.status == "completed" and batch.request_counts is not None
    assert (batch.request_counts.completed, batch.request_counts.failed) == (1, 1)
    errors = lines_of(client, batch.error_file_id)
    assert list(errors) == ["refused"] and errors["refused"]["error"] is None
    with pytest.raises(openai.BadRequestError) as sync:
        client.chat.completions.create(**refused)
    assert errors["refused"]["response"]["status_code"] == 400
    assert errors["refused"]["response"]["body"] == {"error": sync.value.body}
    assert list(lines_of(client, batch.output_file_id)) == ["plain"]
    assert server.stats.batch_count(BatchEvent.LINE_FAILED) == 1


def test_a_malformed_input_file_fails_the_batch_naming_each_line(
        server: LlmTestServer) -> None:
    """Not JSON, no custom_id, a repeated custom_id, another url, another method, another
    model: the batch is failed with each problem's code and line, runs nothing and
    submits nothing; an empty file fails as empty_file."""
    good = line("ok", body(answer_prompt(1)))
    content = b"\n".join([
        json.dumps(good).encode(), b"{not json",
        json.dumps({"method": "POST", "url": ENDPOINT, "body": body("x")}).encode(),
        json.dumps(good).encode(),
        json.dumps(line("u", body("x")) | {"url": "/v1/embeddings"}).encode(),
        json.dumps(line("m", body("x")) | {"method": "GET"}).encode(),
        json.dumps(line("other", body("x") | {"model": "another"})).encode()])
    client = sdk(server)
    batch = ended(client, create(client, content).id)
    assert batch.status == "failed" and batch.failed_at and batch.errors is not None
    assert [(e.code, e.line) for e in batch.errors.data or []] == [
        ("invalid_json_line", 2), ("missing_required_parameter", 3),
        ("duplicate_custom_id", 4), ("url_mismatch", 5), ("invalid_method", 6),
        ("model_mismatch", 7)]
    assert batch.output_file_id is None and batch.error_file_id is None
    empty = ended(client, create(client, b"\n").id)
    assert empty.errors is not None
    assert [(e.code, e.line) for e in empty.errors.data or []] == [("empty_file", None)]
    assert server.stats.submissions == {} and server.stats.by_kind == {}
    assert server.stats.batch_count(BatchEvent.BATCH_FAILED) == 2


def test_unknown_ids_are_404_and_bad_requests_400(server: LlmTestServer) -> None:
    """An unknown batch or file id is a 404 in OpenAI's error shape; another endpoint or
    completion window, a purpose other than batch, a file not named .jsonl and metadata
    past OpenAI's limits are 400s; without the key, 401."""
    client = sdk(server)
    with pytest.raises(openai.NotFoundError) as missing:
        client.batches.retrieve("batch_nope")
    assert missing.value.body == {"message": "No batch found with id 'batch_nope'.",
                                  "type": "invalid_request_error", "param": None,
                                  "code": None}
    for call in (lambda: client.files.content("file-nope"),
                 lambda: client.batches.cancel("batch_nope"),
                 lambda: client.batches.create(input_file_id="file-nope", endpoint=ENDPOINT,
                                               completion_window="24h")):
        with pytest.raises(openai.NotFoundError):
            call()
    uploaded = client.files.create(file=("in.jsonl", jsonl([line("a", body("x"))])),
                                   purpose="batch")
    for options in ({"endpoint": "/v1/embeddings", "completion_window": "24h"},
                    {"endpoint": ENDPOINT, "completion_window": "1h"},
                    {"endpoint": ENDPOINT, "completion_window": "24h",
                     "metadata": {f"k{n}": "v" for n in range(17)}}):
        with pytest.raises(openai.BadRequestError):
            client.batches.create(input_file_id=uploaded.id, **options)
    with pytest.raises(openai.BadRequestError):
        client.files.create(file=("in.jsonl", b"{}"), purpose="fine-tune")
    with pytest.raises(openai.BadRequestError, match=r"Must be \.jsonl"):
        client.files.create(file=("in.txt", b"{}"), purpose="batch")
    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=server.base_url, api_key="wrong",
                      max_retries=0).batches.retrieve("batch_nope")
    stats = server.stats
    assert stats.count(Endpoint.BATCHES, Outcome.NOT_FOUND) == 3
    assert stats.count(Endpoint.FILES, Outcome.BAD_REQUEST) == 2
    assert stats.count(Endpoint.BATCHES, Outcome.UNAUTHORIZED) == 1


def test_injected_line_failures_hit_a_first_submission_only(
        start_server: StartServer) -> None:
    """batch_fail_lines=0.4 answers with a 500 exactly the custom_ids its seeded hash
    picks; sent again in a new batch, each of them completes, and the counts show
    two submissions for those lines and one for the rest."""
    server = start_server(api_key=KEY, batch_fail_lines=0.4, seed=3)
    client = sdk(server)
    ids = [f"line-{n}" for n in range(20)]
    picked = {custom_id for custom_id in ids if drawn_share(3, custom_id) < 0.4}
    assert 0 < len(picked) < len(ids)
    first = ended(client, create(client, jsonl(
        [line(c, body(answer_prompt(n))) for n, c in enumerate(ids)])).id)
    errors = lines_of(client, first.error_file_id)
    assert set(errors) == picked
    assert {e["response"]["status_code"] for e in errors.values()} == {500}
    assert {e["response"]["body"]["error"]["type"] for e in errors.values()} == {
        "server_error"}
    again = ended(client, create(client, jsonl(
        [line(c, body(answer_prompt(ids.index(c)))) for c in sorted(picked)])).id)
    assert again.error_file_id is None and set(lines_of(client, again.output_file_id)) == picked
    assert server.stats.submissions == {c: 2 if c in picked else 1 for c in ids}
    assert server.stats.batch_count(BatchEvent.LINE_FAILED) == len(picked)


def test_a_batch_stays_in_progress_for_its_completion_time(
        start_server: StartServer) -> None:
    """With batch_completion_s=1 the first read finds the batch in_progress with no
    line done; its lines complete over the second (the counts rise), and it is
    completed no sooner than a second after that read."""
    client = sdk(start_server(api_key=KEY, batch_completion_s=1.0))
    batch_id = create(client, jsonl([line(f"q{n}", body(answer_prompt(n)))
                                     for n in range(4)])).id
    began = time.monotonic()
    first = client.batches.retrieve(batch_id)
    assert first.status == "in_progress" and first.output_file_id is None
    assert first.request_counts is not None and first.request_counts.completed == 0
    seen: list[int] = []

    def done() -> openai.types.Batch | None:
        batch = client.batches.retrieve(batch_id)
        assert batch.request_counts is not None
        seen.append(batch.request_counts.completed)
        return batch if batch.status == "completed" else None

    batch = wait_until(done, what="the batch to complete")
    assert time.monotonic() - began >= 1.0
    assert seen == sorted(seen) and seen[-1] == 4
    assert len(lines_of(client, batch.output_file_id)) == 4


def test_an_expiring_batch_reports_its_undone_lines_as_expired(
        start_server: StartServer) -> None:
    """Under batch_expire a batch of 5 lines expires with its first 2 lines answered in
    the output file and the other 3 in the error file as batch_expired, counted so."""
    server = start_server(api_key=KEY, batch_expire=True)
    client = sdk(server)
    batch = ended(client, create(client, jsonl([line(f"q{n}", body(answer_prompt(n)))
                                                for n in range(5)])).id)
    assert batch.status == "expired" and batch.expired_at and not batch.completed_at
    assert sorted(lines_of(client, batch.output_file_id)) == ["q0", "q1"]
    errors = lines_of(client, batch.error_file_id)
    assert sorted(errors) == ["q2", "q3", "q4"]
    assert {json.dumps(e["error"]) for e in errors.values()} == {json.dumps(
        {"code": "batch_expired", "message": EXPIRED_MESSAGE})}
    assert all(e["response"] is None for e in errors.values())
    assert server.stats.batch_count(BatchEvent.LINE_EXPIRED) == 3


def test_a_cancelled_batch_keeps_its_done_lines_and_drops_the_rest(
        start_server: StartServer) -> None:
    """Cancelled once a line is done, the batch goes cancelling, then cancelled: the lines
    done by then are in the output file, the rest in no file and counted cancelled. A
    second cancel answers the cancelled batch; cancelling an ended one is a 409."""
    server = start_server(api_key=KEY, batch_completion_s=4.0)
    client = sdk(server)
    batch_id = create(client, jsonl([line(f"q{n}", body(answer_prompt(n)))
                                     for n in range(8)])).id
    def one_done() -> bool:
        counts = client.batches.retrieve(batch_id).request_counts
        return counts is not None and counts.completed >= 1
    wait_until(one_done, what="a first line done")
    cancelling = client.batches.cancel(batch_id)
    assert cancelling.status == "cancelling" and cancelling.cancelling_at
    assert cancelling.request_counts is not None
    done = cancelling.request_counts.completed
    assert 1 <= done < 8
    batch = client.batches.retrieve(batch_id)
    assert batch.status == "cancelled" and batch.cancelled_at and batch.error_file_id is None
    assert sorted(lines_of(client, batch.output_file_id)) == [f"q{n}" for n in range(done)]
    assert server.stats.batch_count(BatchEvent.LINE_CANCELLED) == 8 - done
    assert client.batches.cancel(batch_id).status == "cancelled"
    finished = ended(client, create(client, b"{not json\n").id)  # failed at once
    with pytest.raises(openai.ConflictError):
        client.batches.cancel(finished.id)


def test_reset_zeroes_the_batch_counts(server: LlmTestServer) -> None:
    """``POST /_reset`` empties the batch counts and submissions, and ``/_stats``
    carries them."""
    client = sdk(server)
    ended(client, create(client, jsonl([line("a", body("x"))])).id)
    with urllib.request.urlopen(f"{server.root_url}/_stats") as response:
        stats = json.load(response)
    assert stats["submissions"] == {"a": 1} and stats["batches"]["lines_completed"] == 1
    request = urllib.request.Request(f"{server.root_url}/_reset", method="POST")
    with urllib.request.urlopen(request) as response:
        assert json.load(response)["batches"] == {}
    assert server.stats.submissions == {} and server.stats.batches == {}


def test_batch_knobs_have_flags_and_are_checked() -> None:
    """--batch-completion-s, --batch-fail-lines and --batch-expire set the knobs; a
    share outside [0, 1] or a negative time is a ConfigError."""
    config = config_from_args(_parser().parse_args(
        ["--batch-completion-s", "2.5", "--batch-fail-lines", "0.1", "--batch-expire"]))
    assert (config.batch_completion_s, config.batch_fail_lines, config.batch_expire) == (
        2.5, 0.1, True)
    defaults = config_from_args(_parser().parse_args([]))
    assert (defaults.batch_completion_s, defaults.batch_fail_lines,
            defaults.batch_expire) == (0.0, 0.0, False)
    with pytest.raises(ConfigError, match="batch_fail_lines"):
        LlmServerConfig(batch_fail_lines=1.5)
    with pytest.raises(ConfigError):
        LlmServerConfig(batch_completion_s=-1.0)
