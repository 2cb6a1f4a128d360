"""BridgeRAG's judge on the ``judge`` queue: a real ``hopindex worker --queues judge``
subprocess against the LLM test server, and the fallback when no judge worker answers."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
import redis

from hopindex.api.client.local import LocalClient
from hopindex.core.settings import Settings
from hopindex.methods.base import QueryOptions, QueryResult, SearchContext
from hopindex.methods.registry import create_query, get_index_method, method_settings
from hopindex.readers import ReadResult
from hopindex.testing.llm_server import LlmServerConfig, LlmTestServer
from hopindex.testing.workers import WorkerProcess
from hopindex.workers.query_tasks import CeleryQueryTasks
from tests.methods.bridgerag.conftest import bridgerag_settings, hotpot_documents, hotpot_questions
from tests.methods.indexrag.conftest import local_client

pytestmark = pytest.mark.integration

INDEX = "hotpot"


@dataclass
class JudgeEnv:
    server: LlmTestServer
    client: LocalClient  # queries with a broker: the judge goes to the judge queue
    tmp: Path
    questions: list[dict[str, Any]]

    def query(self, question: str, *, tasks: CeleryQueryTasks | None, timeout_s: float = 20.0,
              **params: str) -> QueryResult:
        """A bridgerag query whose judge runs on workers (``tasks``) or in-process (None)."""
        b = self.client.service.backends
        settings = replace(self.client.settings, method_env={
            **self.client.settings.method_env,
            "HOPINDEX_BRIDGERAG_JUDGE_TIMEOUT_S": str(timeout_s)})
        context = SearchContext(vectors=b.vectors, keywords=b.keywords, units=b.state,
                                documents=b.state, indexes=b.state, embedder=b.embedder,
                                llm=b.llm, settings=settings, tasks=tasks,
                                read_settings=lambda name: method_settings(settings, name),
                                index_kinds=lambda _: get_index_method("extractive").writes)
        return create_query("bridgerag", context).run_query(INDEX, question,
                                                            QueryOptions(params=params))


@pytest.fixture(scope="module")
def judge_env(tmp_path_factory: pytest.TempPathFactory, private_redis: str) -> Iterator[JudgeEnv]:
    """An index ingested in-process, then a client of a service over it whose broker is a
    private Redis."""
    redis.Redis.from_url(private_redis).flushdb()
    server = LlmTestServer(LlmServerConfig()).start_in_thread()
    tmp = tmp_path_factory.mktemp("judge")
    embedded = bridgerag_settings(tmp / "data", server)
    records = hotpot_questions(3)
    with local_client(embedded) as ingesting:
        job = ingesting.ingest_read(INDEX, ReadResult(documents=hotpot_documents(records)),
                                    method="extractive")
        assert not job.errors
    client = local_client(replace(embedded, broker_url=private_redis))
    # With a broker, the embedded engines are the embed worker's; searches go to it.
    owner = WorkerProcess(client.settings, ["embed"], concurrency=2, name="engines",
                          log_path=tmp / "engines.log").wait_ready()
    try:
        yield JudgeEnv(server=server, client=client, tmp=tmp, questions=records)
    finally:
        owner.stop()
        client.close()
        server.stop()


def judge_worker(settings: Settings, tmp: Path) -> WorkerProcess:
    return WorkerProcess(settings, ["judge"], concurrency=1, name="judge",
                         log_path=tmp / "judge-worker.log").wait_ready()


def test_judge_runs_on_a_judge_worker(judge_env: JudgeEnv) -> None:
    """Through the service, with a judge worker up: the judge call runs on the worker
    (site "worker"), its call counts in the query's usage (3 in all, as the server saw),
    and the ranking is exactly the in-process one."""
    question = judge_env.questions[0]["question"]
    with judge_worker(judge_env.client.settings, judge_env.tmp) as worker:
        judge_env.server.reset()
        result = judge_env.client.query(INDEX, question, method="bridgerag", k=5)
        assert judge_env.server.stats.by_kind == {"queries": 1, "entity_pair": 1, "scores": 1}
        assert result.trace["judge"]["site"] == "worker"
        assert result.trace["judge"]["status"] == "scored" and result.degraded == []
        assert result.usage.llm_calls == 3
        assert result.usage.prompt_tokens == judge_env.server.stats.prompt_tokens
        local = judge_env.query(question, tasks=None)
        assert local.trace["judge"]["site"] == "in_process"
        assert local.trace["pool"] == result.trace["pool"]
        assert [p.doc_id for p in local.passages] == [p.doc_id for p in result.passages]
    assert "judge_finished" in worker.log_text()


def test_no_judge_worker_degrades_to_condition_a(judge_env: JudgeEnv) -> None:
    """With a broker but no judge worker, the query waits out its timeout, then ranks as
    condition A and flags it: the judge step degraded, judge unavailable, the queue named."""
    question = judge_env.questions[1]["question"]
    reference = judge_env.query(question, tasks=None, condition="A")
    result = judge_env.query(question, tasks=CeleryQueryTasks(), timeout_s=1.0)
    trace = result.trace
    assert [d.step for d in result.degraded] == ["judge"] and trace["ranked_by"] == "A"
    assert trace["judge"]["status"] == "unavailable" and trace["judge"]["site"] == "worker"
    assert "judge queue" in trace["judge"]["error"]
    assert 1.0 <= result.usage.phases_s["judge"] < 5.0
    assert result.usage.llm_calls == 2
    assert ([p["unit_id"] for p in sorted(trace["pool"], key=lambda p: p["rank"])]
            == [p["unit_id"] for p in sorted(reference.trace["pool"], key=lambda p: p["rank"])])
    assert [p.doc_id for p in result.passages] == [p.doc_id for p in reference.passages]
