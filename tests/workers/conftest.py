"""A distributed hopindex for integration tests: a private Redis as broker, state and
event log, real ``hopindex worker`` subprocesses, and the LLM test server."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from importlib.resources import as_file, files
from pathlib import Path

import openai
import pytest
import redis

from hopindex.api.client.local import LocalClient
from hopindex.backends.registry import open_keyword_index, open_vector_store
from hopindex.core.models import Job, JobState
from hopindex.core.settings import Settings
from hopindex.testing.llm_server import LlmTestServer
from hopindex.testing.redis_server import RedisServer
from hopindex.testing.workers import BeatProcess, HopindexProcess, WorkerProcess
from tests import waiting

# start_server is a fixture: imported so these tests start LLM test servers the same way.
from tests.methods.indexrag.conftest import llm_settings, local_client, start_server  # noqa: F401
from tests.redis_server import private_redis_server

INDEX = "hotpot"
JOB_TIMEOUT_S = 600.0


@pytest.fixture(scope="module")
def private_redis() -> Iterator[str]:
    """A Redis of the module's own, so no test shares queues with another run or with
    the user's own Redis."""
    with private_redis_server() as url:
        yield url


@pytest.fixture(scope="module")
def aof_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """A private Redis with an append-only file, restartable on the same port: fault
    tests that restart Redis make it their module's ``private_redis``."""
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    with RedisServer(data_dir=tmp_path_factory.mktemp("redis-aof"), database=0) as server:
        yield server


def hotpot_corpus(tmp: Path, limit: int | None = None,
                  extra: list[dict[str, str]] | None = None) -> Path:
    """The bundled HotpotQA-100 corpus (the first ``limit`` documents) as JSONL."""
    with as_file(files("hopindex") / "sample" / "hotpotqa-100" / "corpus.json") as path:
        corpus: dict[str, list[str]] = json.loads(path.read_text())
    titles = list(corpus)[:limit]
    out = tmp / f"corpus-{limit or 'all'}.jsonl"
    with out.open("w") as fh:
        for title in titles:
            fh.write(json.dumps({"title": title, "text": "".join(corpus[title])}) + "\n")
        for record in extra or []:
            fh.write(json.dumps(record) + "\n")
    return out


def distributed_settings(data_dir: Path, server: LlmTestServer, redis_url: str,
                         **overrides: object) -> Settings:
    """State, events, LLM cache and limiter on Redis; engines embedded in ``data_dir``.

    The visibility timeout is seconds, not an hour, so a killed worker's messages
    come back within the test (docs/architecture.md)."""
    values: dict[str, object] = {
        "broker_url": redis_url, "state_url": redis_url, "visibility_timeout_s": 20,
        "task_time_limit_s": 15, "job_stall_timeout_s": 120, "stage1_batch_docs": 16,
        "stage2_batch_entities": 32}
    values.update(overrides)
    return llm_settings(data_dir, server, **values)


@dataclass
class Cluster:
    settings: Settings
    tmp: Path
    workers: list[WorkerProcess] = field(default_factory=list)
    others: list[HopindexProcess] = field(default_factory=list)

    def start(self, name: str, queues: str, *, concurrency: int = 4,
              pool: str = "auto") -> WorkerProcess:
        worker = WorkerProcess(self.settings, queues.split(","), concurrency=concurrency,
                               pool=pool, name=name, log_path=self.tmp / f"{name}.log")
        self.workers.append(worker)
        return worker.wait_ready()

    def start_beat(self) -> BeatProcess:
        """``hopindex beat``: the reaper runs on a worker of the control queue."""
        beat = BeatProcess(self.settings, log_path=self.tmp / "beat.log")
        self.others.append(beat)
        return beat.wait_ready()

    def stop_all(self) -> None:
        for process in [*self.others, *self.workers]:
            process.stop()


@pytest.fixture
def cluster(tmp_path: Path, private_redis: str) -> Iterator[Callable[..., Cluster]]:
    """Clusters on one flushed Redis database; every worker is stopped at the end."""
    made: list[Cluster] = []

    def make(server: LlmTestServer, **overrides: object) -> Cluster:
        redis.Redis.from_url(private_redis).flushdb()
        c = Cluster(distributed_settings(tmp_path / "dist", server, private_redis, **overrides),
                    tmp_path)
        made.append(c)
        return c

    yield make
    for c in made:
        c.stop_all()


def unit_texts(client: LocalClient, index: str = INDEX) -> dict[str, str]:
    """Every unit of the index, id → text (bridges come with their source documents)."""
    state = client.service.backends.state
    doc_ids = sorted(state.document_hashes(index))
    return {u.unit_id: u.text for u in state.units_of_documents(index, doc_ids)}


def embedder_settings(server: LlmTestServer) -> dict[str, object]:
    """Embeddings from the test server: unit ids and texts do not depend on the vectors,
    and a CPU model shared by the eager run and every worker would double these tests'
    time without testing anything more."""
    return {"embedder_url": f"openai://{server.config.embedding_model}"}


def engine_counts(cluster: Cluster) -> tuple[int, int]:
    """Vectors and postings in the embedded engines (every worker must be stopped)."""
    vectors = open_vector_store(cluster.settings.vector_url)
    keywords = open_keyword_index(cluster.settings.keyword_url)
    try:
        return vectors.count_vectors(INDEX), keywords.count_units(INDEX)
    finally:
        vectors.close()
        keywords.close()


def eager_units(tmp_path: Path, server: LlmTestServer, corpus: Path) -> dict[str, str]:
    """The units an eager (in-process) ingest of ``corpus`` builds: the reference."""
    with local_client(llm_settings(tmp_path / "eager", server,
                                   **embedder_settings(server))) as eager:
        job = eager.ingest(INDEX, [corpus])
        expected = unit_texts(eager)
    assert job.state is JobState.SUCCEEDED and not job.errors
    return expected


def assert_built_as_eager(cluster: Cluster, job: Job, got: dict[str, str],
                          expected: dict[str, str]) -> None:
    """The job succeeded cleanly with the eager run's exact units, each in both engines
    once (stops every worker: the embedded engines allow one process)."""
    cluster.stop_all()
    assert job.state is JobState.SUCCEEDED, job.reason
    assert not job.errors
    assert got == expected
    assert engine_counts(cluster) == (len(expected), len(expected))


# Where kombu's Redis transport keeps a message a worker has taken and not yet
# acknowledged (a hash of [message, exchange, routing key]); with late acknowledgement
# that lasts until its task returns. A queue's waiting messages are a list per
# priority step.
_UNACKED = "unacked"
_PRIORITY_STEPS = ("", "\x06\x163", "\x06\x166", "\x06\x169")


def taken_messages(broker_url: str, queues: Collection[str]) -> int:
    """Messages of ``queues`` some worker has taken and not acknowledged: its tasks
    running (or held for their countdown). Recorded before the worker runs the task,
    so a task that has started is always counted."""
    broker = redis.Redis.from_url(broker_url)
    try:
        return sum(1 for raw in broker.hvals(_UNACKED) if json.loads(raw)[2] in queues)
    finally:
        broker.close()


def waiting_messages(broker_url: str, queues: Collection[str]) -> int:
    """Messages of ``queues`` waiting in the broker for a worker to take them."""
    broker = redis.Redis.from_url(broker_url)
    try:
        return sum(broker.llen(f"{q}{step}") for q in queues for step in _PRIORITY_STEPS)
    finally:
        broker.close()


def queues_idle(broker_url: str, queues: Collection[str]) -> bool:
    """No message of ``queues`` waits in the broker or is held by a worker: every task
    sent to them has returned."""
    return (waiting_messages(broker_url, queues) == 0
            and taken_messages(broker_url, queues) == 0)


def kill_mid_task(victim: WorkerProcess, broker_url: str, queues: Collection[str],
                  slots: int) -> None:
    """SIGKILL ``victim`` (which alone takes ``queues``, ``slots`` tasks at a time) while
    tasks of them are in progress: once each of its slots holds a taken message, or at
    least one does and none is left to take.

    Not the moment the awaited count moves: that is when a task finishes and its slot
    pops the next message, and kombu records a popped message as taken a few
    milliseconds later, so a SIGKILL inside that gap would lose it. A slot holding a
    taken message is not in that gap, nor is one with nothing left to pop."""

    def in_progress() -> bool:
        taken = taken_messages(broker_url, queues)
        return taken >= slots or (taken > 0 and waiting_messages(broker_url, queues) == 0)

    waiting.wait_until(in_progress, what=f"tasks of {', '.join(queues)} in progress on "
                       f"{victim.name}", interval_s=0.005)
    victim.kill()


def chat_requests(server: LlmTestServer) -> int:
    """Chat requests the server has received, counted by kind on arrival (before its
    latency)."""
    return sum(server.stats.by_kind.values())


def chats_in_flight(server: LlmTestServer) -> int:
    """Chat requests the server has received and not yet answered: each is counted by
    kind on arrival, before the server's latency, and by outcome when answered."""
    return chat_requests(server) - server.stats.count("chat.completions")


# Three quick attempts per call: an outage of a few seconds outlasts them all.
FAST_GIVE_UP = {"llm_max_attempts": 3}


def kinds_and_texts(client: LocalClient) -> dict[str, tuple[str, str]]:
    """Every unit of the index: id → (kind, text)."""
    state = client.service.backends.state
    doc_ids = sorted(state.document_hashes(INDEX))
    return {u.unit_id: (u.kind.value, u.text) for u in state.units_of_documents(INDEX, doc_ids)}


def assert_batches_cancelled(job: Job, server: LlmTestServer) -> None:
    """A cancelled job left no batch outstanding, and the provider was asked to cancel
    every batch it had created (a batch recorded but not yet created when the cancel
    came has no id: it is settled with the job, and nothing was sent for it)."""
    assert job.state is JobState.CANCELLED
    assert not any(b.outstanding for b in job.provider_batches)
    provider = openai.OpenAI(base_url=server.base_url, api_key="test-key")
    sent = [batch for batch in job.provider_batches if batch.batch_id]
    assert sent
    for batch in sent:
        assert provider.batches.retrieve(batch.batch_id).status in ("cancelling", "cancelled")


def eager_reference(tmp_path: Path, server: LlmTestServer, corpus: Path
                    ) -> dict[str, tuple[str, str]]:
    """The clean build's units (id → kind, text), made by an eager ingest."""
    with local_client(llm_settings(tmp_path / "clean", server,
                                   **embedder_settings(server))) as s:
        job = s.ingest(INDEX, [corpus])
        assert job.state is JobState.SUCCEEDED and not job.errors
        return kinds_and_texts(s)


def wait_until(client: LocalClient, job_id: str, ready: Callable[[Job], bool],
               timeout_s: float = JOB_TIMEOUT_S) -> Job:
    """The job once ``ready`` holds for it or it ended, polled every 50 ms."""

    def reached() -> Job | None:
        job = client.jobs.get_job(job_id)
        return job if ready(job) or job.state.is_final else None

    job = waiting.wait_until(reached, what=f"job {job_id} to reach the awaited point",
                             timeout_s=timeout_s, interval_s=0.05)
    assert job is not None  # wait_until returns a truthy value
    return job
