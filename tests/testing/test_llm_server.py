"""The LLM test server speaks OpenAI's protocol to the official client and behaves as configured.

Proves: replies parse in both clients; stage-1, stage-2, answer and IRCoT prompts get
replies of the shape hopindex's prompts ask for; embeddings are unit-norm and repeatable;
``usage`` equals the counters; authentication, rate limits (429 + Retry-After) and the
seeded fault shares (429, 500, timeout, invalid JSON) behave as configured and repeat;
the standalone command serves and stops on SIGTERM.
"""

from __future__ import annotations

import asyncio
import json
import math
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator

import openai
import pytest

from hopindex.core.errors import ConfigError
from hopindex.testing.llm_limits import (
    Endpoint,
    LlmServerConfig,
    Outcome,
    SlidingWindowLimiter,
)
from hopindex.testing.llm_responses import (
    IRCOT_ANSWER_PHRASE,
    IRCOT_DONE,
    TaskKind,
    estimate_tokens,
)
from hopindex.testing.llm_server import LlmTestServer, running_llm_server

KEY = "sk-test"

STAGE1_PROMPT = (
    "You are an expert information extractor specializing in converting unstructured "
    "documents into clear, atomic question-answer pairs.\n"
    "Extract ALL factual information from the following document as question-answer pairs. "
    'Return {"qa_pairs": [{"question": "...", "answer": "..."}], "entities": ["..."]}.\n'
    "Document: Marie Curie\n"
    "Marie Curie was a physicist and chemist born in Warsaw. She worked at the University "
    "of Paris and shared the Nobel Prize with Pierre Curie.\n"
    "Return only a valid JSON object without any other text."
)


def stage2_prompt(*sections: tuple[str, list[tuple[str, str]]]) -> str:
    body = "\n\n".join(f"=== Document: {title} ===\n"
                       + "\n".join(f"Q: {q}\nA: {a}" for q, a in facts)
                       for title, facts in sections)
    return ("Given the following information about \u201cWarsaw\u201d from multiple source "
            "documents, generate bridging facts that connect information across these "
            f"documents.\n{body}\n\nRequirements:\n"
            " - Each bridging fact must combine information from 2+ documents\n"
            "Return a JSON array of strings. If no meaningful connections exist, return [].")


CURIE = ("Marie Curie", [("Where was Marie Curie born?", "Marie Curie was born in Warsaw."),
                         ("Whom did Marie Curie marry?", "Marie Curie married Pierre Curie.")])
WARSAW = ("Warsaw", [("What is Warsaw?", "Warsaw is the capital of Poland.")])

ANSWER_PROMPT = (
    "You are a precise question answering assistant. Answer with ONLY the exact information "
    "requested, with no explanations or extra words.\n"
    "Context: Marie Curie was born in Warsaw. Warsaw is the capital of Poland. "
    "Marie Curie worked in Paris. Warsaw lies on the Vistula.\n"
    "Question: In which city was Marie Curie born?"
)


def user(content: str) -> list[openai.types.chat.ChatCompletionMessageParam]:
    return [{"role": "user", "content": content}]


def client(server: LlmTestServer, **options: object) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key=KEY, max_retries=0,
                         **options)  # type: ignore[arg-type]


@pytest.fixture
def server() -> Iterator[LlmTestServer]:
    with running_llm_server(LlmServerConfig(api_key=KEY)) as running:
        yield running


def complete(server: LlmTestServer, prompt: str, **options: object) -> str:
    reply = client(server).chat.completions.create(
        model="gpt-4o-mini", messages=user(prompt), temperature=0, **options)  # type: ignore[call-overload]
    content = reply.choices[0].message.content
    assert isinstance(content, str)
    return content


def test_chat_completion_parses_in_sync_and_async_clients(server: LlmTestServer) -> None:
    """The response has OpenAI's shape: id, object, model, choices, finish_reason, usage."""
    reply = client(server).chat.completions.create(
        model="gpt-4o-mini", messages=user(ANSWER_PROMPT), temperature=0, max_tokens=50, seed=1)
    assert reply.object == "chat.completion"
    assert reply.id.startswith("chatcmpl-")
    assert reply.model == "gpt-4o-mini"
    assert reply.choices[0].finish_reason == "stop"
    assert reply.usage is not None and reply.usage.total_tokens == (
        reply.usage.prompt_tokens + reply.usage.completion_tokens)

    async def call_async() -> str | None:
        async with LlmTestServer(LlmServerConfig(api_key=KEY)) as own:
            async_client = openai.AsyncOpenAI(base_url=own.base_url, api_key=KEY, max_retries=0)
            answer = await async_client.chat.completions.create(model="m",
                                                                messages=user(ANSWER_PROMPT))
            await async_client.close()
            return answer.choices[0].message.content

    assert asyncio.run(call_async()) == reply.choices[0].message.content


def test_latency_overlaps_across_concurrent_requests() -> None:
    """Latency is a per-request sleep, not a queue: 20 concurrent calls take about one delay."""

    async def burst() -> float:
        async with LlmTestServer(LlmServerConfig(latency_s=0.3)) as own:
            async_client = openai.AsyncOpenAI(base_url=own.base_url, api_key=KEY, max_retries=0)
            started = time.monotonic()
            await asyncio.gather(*(async_client.chat.completions.create(
                model="m", messages=user(ANSWER_PROMPT)) for _ in range(20)))
            elapsed = time.monotonic() - started
            await async_client.close()
            assert own.stats.count(Endpoint.CHAT, Outcome.OK) == 20
            return elapsed

    # Queued, the 20 calls would take at least 20 * 0.3 = 6 s; half of that leaves a
    # loaded 2-core machine 2.7 s for 20 local round trips and still tells them apart.
    assert 0.3 <= asyncio.run(burst()) < 3.0


def test_stage1_prompt_yields_qa_pairs_and_entities(server: LlmTestServer) -> None:
    """One QA pair per sentence (answer = the sentence) and the capitalised names as entities."""
    data = json.loads(complete(server, STAGE1_PROMPT, response_format={"type": "json_object"}))
    assert [pair["answer"] for pair in data["qa_pairs"]] == [
        "Marie Curie was a physicist and chemist born in Warsaw.",
        "She worked at the University of Paris and shared the Nobel Prize with Pierre Curie."]
    assert all(pair["question"].endswith("?") for pair in data["qa_pairs"])
    assert {"Marie Curie", "Warsaw", "University of Paris", "Nobel Prize",
            "Pierre Curie"} <= set(data["entities"])
    assert server.stats.by_kind == {TaskKind.STAGE1.value: 1}


def test_stage2_prompt_combines_two_documents_or_returns_empty(server: LlmTestServer) -> None:
    """Each bridging fact joins a fact of one document with a fact of another; one doc → []."""
    facts = json.loads(complete(server, stage2_prompt(CURIE, WARSAW)))
    assert facts == ["Marie Curie was born in Warsaw; and Warsaw is the capital of Poland."]
    assert json.loads(complete(server, stage2_prompt(CURIE))) == []
    assert server.stats.by_kind == {TaskKind.STAGE2.value: 2}


def test_answer_is_short_and_respects_max_tokens(server: LlmTestServer) -> None:
    """The context's most frequent name absent from the question; cut at max_tokens."""
    assert complete(server, ANSWER_PROMPT, max_tokens=50) == "Warsaw"
    no_context = "Answer with ONLY the answer.\nContext: nothing here.\nQuestion: Who won?"
    assert complete(server, no_context) == "unknown"
    long_reply = client(server).chat.completions.create(
        model="m", messages=user("Summarise.\n\n" + "Word " * 200 + "end."), max_tokens=4)
    assert long_reply.choices[0].finish_reason == "length"
    assert long_reply.usage is not None and long_reply.usage.completion_tokens <= 4


def test_ircot_prompt_searches_then_concludes(server: LlmTestServer) -> None:
    """Fig. 8 format: the first step reasons from the evidence and searches; the next says DONE."""
    prompt = ("You are a reasoning assistant that helps answer multi-hop questions step by step.\n"
              "Question: Of which country is the birthplace of Marie Curie the capital?\n"
              "Retrieved Information: Marie Curie was born in Warsaw. Warsaw is in Poland.\n"
              "Reasoning so far: {cot}\n"
              "Write ONE brief reasoning sentence that makes progress toward answering the "
              "question.\nFormat your response as:\n Reasoning: <one sentence of reasoning>\n"
              " Search: <next search query, or DONE if ready to answer>")
    first = complete(server, prompt.format(cot=""))
    assert first.startswith("Reasoning: Marie Curie was born in Warsaw.")
    assert IRCOT_DONE not in first
    second = complete(server, prompt.format(cot="Marie Curie was born in Warsaw."))
    assert IRCOT_ANSWER_PHRASE in second and second.endswith(f"Search: {IRCOT_DONE}")


def test_embeddings_are_unit_norm_and_deterministic(server: LlmTestServer) -> None:
    """Float and base64 encodings agree; equal texts give equal vectors, shared words a cosine."""
    texts = ["Marie Curie was born in Warsaw", "Warsaw is the capital of Poland", ""]
    first = client(server).embeddings.create(model="emb", input=texts)  # base64 by default
    again = client(server).embeddings.create(model="emb", input=texts, encoding_format="float")
    vectors = [item.embedding for item in first.data]
    for vector, repeat in zip(vectors, (item.embedding for item in again.data), strict=True):
        assert len(vector) == 384
        assert math.isclose(sum(x * x for x in vector), 1.0, rel_tol=1e-5)
        assert max(abs(a - b) for a, b in zip(vector, repeat, strict=True)) < 1e-6
    cosine = sum(a * b for a, b in zip(vectors[0], vectors[1], strict=True))
    assert 0.0 < cosine < 0.99
    assert first.usage.prompt_tokens == sum(estimate_tokens(t) for t in texts)
    small = client(server).embeddings.create(model="emb", input="x", dimensions=16)
    assert len(small.data[0].embedding) == 16


def test_usage_equals_counters(server: LlmTestServer) -> None:
    """The counters sum exactly the usage every reply reported, by endpoint and kind."""
    prompt_tokens = completion_tokens = 0
    for prompt in (STAGE1_PROMPT, stage2_prompt(CURIE, WARSAW), ANSWER_PROMPT, "Hello there."):
        reply = client(server).chat.completions.create(model="m", messages=user(prompt))
        assert reply.usage is not None
        prompt_tokens += reply.usage.prompt_tokens
        completion_tokens += reply.usage.completion_tokens
    embedded = client(server).embeddings.create(model="e", input=["a b c", "d e"])
    stats = server.stats
    assert (stats.prompt_tokens, stats.completion_tokens) == (prompt_tokens, completion_tokens)
    assert stats.embedding_tokens == embedded.usage.prompt_tokens
    assert stats.count(Endpoint.CHAT, Outcome.OK) == 4
    assert stats.by_kind == {"stage1": 1, "stage2": 1, "answer": 1, "other": 1}
    with urllib.request.urlopen(f"{server.root_url}/_stats", timeout=5) as response:
        assert json.loads(response.read()) == stats.as_dict()
    server.reset()
    assert server.stats.as_dict()["requests"] == {} and server.stats.prompt_tokens == 0


def test_wrong_or_missing_key_is_401(server: LlmTestServer) -> None:
    """A bad bearer token raises AuthenticationError; none at all gets OpenAI's error shape."""
    wrong = openai.OpenAI(base_url=server.base_url, api_key="sk-wrong", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        wrong.chat.completions.create(model="m", messages=user("hi"))
    request = urllib.request.Request(f"{server.base_url}/chat/completions", method="POST",
                                     data=b"{}", headers={"Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=5)
    assert caught.value.code == 401
    assert set(json.loads(caught.value.read())["error"]) >= {"message", "type", "code"}
    assert server.stats.count(Endpoint.CHAT, Outcome.UNAUTHORIZED) == 2


def test_requests_per_minute_limit_is_429_with_retry_after() -> None:
    """The third request in a minute with rpm=2 is refused, naming the wait in Retry-After."""
    with running_llm_server(LlmServerConfig(requests_per_minute=2)) as server:
        for _ in range(2):
            complete(server, "hello")
        with pytest.raises(openai.RateLimitError) as caught:
            complete(server, "hello")
        retry_after = int(caught.value.response.headers["Retry-After"])
        assert 55 <= retry_after <= 60
        assert caught.value.body is not None
        assert server.stats.count(Endpoint.CHAT, Outcome.RATE_LIMITED) == 1


def test_tokens_per_minute_limit_is_429() -> None:
    """A request whose tokens overflow the minute's budget is refused; a smaller one fits."""
    with running_llm_server(LlmServerConfig(tokens_per_minute=40)) as server:
        complete(server, "one two three four five six")
        with pytest.raises(openai.RateLimitError):
            complete(server, " ".join(["word"] * 30))
        complete(server, "short")


def test_sliding_window_wait_is_the_time_until_admission() -> None:
    """Retry-After is when the blocking entry leaves the 60 s window, not a fixed figure."""
    now = [100.0]
    limiter = SlidingWindowLimiter(2, 100, clock=lambda: now[0])
    assert limiter.admit(10) == 0.0
    now[0] = 110.0
    assert limiter.admit(10) == 0.0
    assert limiter.admit(10) == pytest.approx(50.0)  # the entry at t=100 expires at 160
    now[0] = 160.0
    assert limiter.admit(95) == pytest.approx(10.0)  # 10 + 95 > 100 until t=170
    now[0] = 170.0
    assert limiter.admit(95) == 0.0


def fault_outcomes(server: LlmTestServer, requests: int) -> Counter[str]:
    shared = client(server)  # one connection pool: building a client costs more than a call
    outcomes: Counter[str] = Counter()
    for _ in range(requests):
        try:
            content = shared.chat.completions.create(
                model="m", messages=user(STAGE1_PROMPT)).choices[0].message.content or ""
        except openai.RateLimitError:
            outcomes["429"] += 1
        except openai.InternalServerError:
            outcomes["500"] += 1
        else:
            try:
                json.loads(content)
            except ValueError:
                outcomes["invalid_json"] += 1
            else:
                outcomes["ok"] += 1
    return outcomes


def test_fault_shares_match_config_and_repeat_with_the_seed() -> None:
    """Over 200 requests each fault's share is near its setting; the same seed repeats them."""
    config = LlmServerConfig(fail_429=0.1, fail_500=0.15, fail_invalid_json=0.2, seed=7)
    with running_llm_server(config) as server:
        outcomes = fault_outcomes(server, 200)
        for outcome, share in (("429", 0.1), ("500", 0.15), ("invalid_json", 0.2),
                               ("ok", 0.55)):
            assert abs(outcomes[outcome] / 200 - share) < 0.07, outcomes
        stats = server.stats
        assert stats.requests["chat.completions"] == dict(outcomes)
        server.reset()
        assert fault_outcomes(server, 200) == outcomes


def test_timeout_fault_outlasts_the_client_timeout_and_stops_quickly() -> None:
    """A hanging request makes a 0.5 s client raise APITimeoutError; stopping cancels it."""
    server = LlmTestServer(LlmServerConfig(fail_timeout=1.0)).start_in_thread()
    try:
        with pytest.raises(openai.APITimeoutError):
            client(server, timeout=0.5).chat.completions.create(model="m", messages=user("hi"))
        assert server.stats.count(Endpoint.CHAT, Outcome.TIMEOUT) == 1
    finally:
        started = time.monotonic()
        server.stop()
    assert time.monotonic() - started < 3.0


def test_invalid_json_fault_breaks_only_json_replies() -> None:
    """JSON replies arrive truncated so json.loads rejects them; free-text answers are intact."""
    with running_llm_server(LlmServerConfig(fail_invalid_json=1.0)) as server:
        for prompt in (STAGE1_PROMPT, stage2_prompt(CURIE, WARSAW), stage2_prompt(CURIE)):
            with pytest.raises(json.JSONDecodeError):
                json.loads(complete(server, prompt))
        assert complete(server, ANSWER_PROMPT) == "Warsaw"
        assert server.stats.requests["chat.completions"] == {"invalid_json": 3, "ok": 1}


def test_config_rejects_impossible_settings() -> None:
    """Shares outside [0, 1] or summing above 1, and non-positive limits, are config errors."""
    for bad in ({"fail_500": 1.5}, {"fail_429": 0.6, "fail_500": 0.6},
                {"requests_per_minute": 0}, {"embedding_dimension": 0}):
        with pytest.raises(ConfigError):
            LlmServerConfig(**bad)


def test_standalone_command_serves_until_sigterm() -> None:
    """``python -m hopindex.testing.llm_server --port 0`` prints its URL, serves, exits 0."""
    process = subprocess.Popen(
        [sys.executable, "-m", "hopindex.testing.llm_server", "--port", "0", "--latency-ms",
         "1", "--rpm", "600", "--api-key", KEY, "--log-level", "WARNING"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        base_url = process.stdout.readline().strip()
        assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1")
        remote = openai.OpenAI(base_url=base_url, api_key=KEY, max_retries=0)
        assert [model.id for model in remote.models.list().data] == [
            "hopindex-test-llm", "hopindex-test-embedding"]
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
