"""The embedded engines with a broker on one machine: the embed worker owns them, the API's
queries and every other engine call of another process travel to it, and a process that
opens them anyway is told who owns them and what to do instead."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from importlib.resources import files
from pathlib import Path

import pytest
import requests

from hopindex.api.client.local import LocalClient
from hopindex.api.client.opening import open_service_client
from hopindex.api.client.remote import RemoteClient
from hopindex.api.exit_codes import ExitCode
from hopindex.core.errors import BackendUnavailableError, HopindexError
from hopindex.core.models import Job, JobState, Stage
from hopindex.core.settings import Settings
from hopindex.testing.llm_server import LlmTestServer
from hopindex.testing.workers import HopindexProcess
from tests import waiting
from tests.methods.indexrag.conftest import llm_settings, local_client
from tests.workers.conftest import (
    INDEX,
    JOB_TIMEOUT_S,
    Cluster,
    embedder_settings,
    engine_counts,
    hotpot_corpus,
    unit_texts,
)

pytestmark = pytest.mark.integration

SERVE_READY = "hopindex API on "
QUERY_CLIENTS = 4
# A document the test changes and one it deletes (both among the first corpus titles).
CHANGED_AT, DELETED_AT = 0, 1
CHANGE = " In 2026 its archive moved to Helsinki, where the Finnish National Library keeps it."


def questions(count: int) -> list[str]:
    records = json.loads((files("hopindex") / "sample" / "hotpotqa-100" / "questions.json")
                         .read_text())
    return [str(r["question"]) for r in records[:count]]


@contextmanager
def serving(settings: Settings, log_path: Path) -> Iterator[tuple[HopindexProcess, str]]:
    """A real ``hopindex serve`` on a free loopback port, with its URL."""
    process = HopindexProcess(settings, ["serve", "--port", "0"], name="serve",
                              log_path=log_path, ready_mark=SERVE_READY)
    try:
        process.wait_ready()
        found = re.search(SERVE_READY + r"(http://\S+)", process.log_text())
        assert found is not None, process.log_text()
        yield process, found.group(1)
    finally:
        process.stop()


@dataclass
class QueryLoad:
    """``clients`` threads querying through the API in a loop until stopped; every
    answer other than success is kept with what it said."""

    client: RemoteClient
    asked: list[str]
    clients: int = QUERY_CLIENTS
    answered: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _run(self, offset: int) -> None:
        n = offset
        while not self._stop.is_set():
            question = self.asked[n % len(self.asked)]
            n += self.clients
            try:
                self.client.query(INDEX, question)
            except HopindexError as exc:
                with self._lock:
                    self.errors.append(str(exc)[:300])
            else:
                with self._lock:
                    self.answered.append(time.monotonic())

    def outcomes_since(self, moment: float) -> int:
        """Queries answered since ``moment`` (``time.monotonic``), and every failure."""
        with self._lock:
            return sum(moment <= t for t in self.answered) + len(self.errors)

    @contextmanager
    def running(self) -> Iterator[QueryLoad]:
        threads = [threading.Thread(target=self._run, args=(i,), daemon=True)
                   for i in range(self.clients)]
        for thread in threads:
            thread.start()
        try:
            yield self
        finally:
            self._stop.set()
            for thread in threads:
                thread.join(timeout=120)


def changed_document(tmp: Path, corpus: Path) -> Path:
    first = json.loads(corpus.read_text().splitlines()[CHANGED_AT])
    out = tmp / "changed.jsonl"
    out.write_text(json.dumps({"title": first["title"], "text": first["text"] + CHANGE}) + "\n")
    return out


def doc_id_titled(client: LocalClient, corpus: Path, at: int) -> str:
    title = json.loads(corpus.read_text().splitlines()[at])["title"]
    state = client.service.backends.state
    found = [d.doc_id for d in state.get_documents(INDEX, sorted(state.document_hashes(INDEX)))
             if d.title == title]
    assert len(found) == 1, title
    return found[0]


def eager_after_changes(tmp: Path, server: LlmTestServer, corpus: Path,
                        changed: Path) -> dict[str, str]:
    """The reference: the same ingest, change and delete run eagerly in this process."""
    with local_client(llm_settings(tmp / "eager", server, **embedder_settings(server))) as eager:
        jobs = [eager.ingest(INDEX, [corpus]), eager.ingest(INDEX, [changed])]
        jobs.append(eager.delete_documents(INDEX, [doc_id_titled(eager, corpus, DELETED_AT)]))
        expected = unit_texts(eager)
    assert all(j.state is JobState.SUCCEEDED and not j.errors for j in jobs)
    return expected


def wait_while_recording(reader: LocalClient, job_id: str) -> tuple[Job, float]:
    """Wait for the job; returns it and when its first units reached the engines."""
    first_embed = float("inf")

    def ended() -> Job | None:
        nonlocal first_embed
        job = reader.jobs.get_job(job_id)
        if job.count(Stage.EMBED).done and first_embed == float("inf"):
            first_embed = time.monotonic()
        return job if job.state.is_final else None

    job = waiting.wait_until(ended, what=f"job {job_id} to finish", timeout_s=JOB_TIMEOUT_S,
                             interval_s=0.05)
    assert job is not None  # wait_until returns a truthy value
    return job, first_embed


def outcome(job: Job) -> str:
    return f"{job.kind.value} job {job.state.value}" + (f": {job.reason}" if job.reason else "")


def test_queries_changes_and_deletes_while_the_owner_holds_the_engines(
        tmp_path: Path, start_server: Callable[..., LlmTestServer],
        cluster: Callable[..., Cluster]) -> None:
    """serve + two LLM workers + the embed worker (the engine owner) on the embedded
    engines: four clients query through the API for a whole LLM-mode ingest; then the
    owner restarts and a query runs (an API that opened the engines itself would now
    hold them against the new owner), one document changes, one is deleted, and a last
    query runs. Every query answers, every job succeeds, and the index ends with the
    eager run's unit ids and texts, each in both engines once."""
    server = start_server(latency_s=0.03)
    corpus = hotpot_corpus(tmp_path, limit=200)
    changed = changed_document(tmp_path, corpus)
    expected = eager_after_changes(tmp_path, server, corpus, changed)
    asked = questions(20)

    c = cluster(server, **embedder_settings(server))
    c.start("engines", "embed")
    c.start("llm-1", "stage1,stage2,control")
    c.start("llm-2", "stage1,stage2,control")
    problems: list[str] = []
    # The reader reads the job records and units beside the server, in this process:
    # Client.local would go through the server that owns the data dir.
    with serving(c.settings, tmp_path / "serve.log") as (api, url), \
            open_service_client(c.settings) as reader:
        client = RemoteClient(url)
        job = client.ingest(INDEX, [corpus], wait=False)
        with QueryLoad(client, asked).running() as load:
            job, first_embed = wait_while_recording(reader, job.job_id)

            # Queries answered once the engines held units, while the owner holds them:
            # on a loaded machine the ingest may end before ten have, and the owner
            # still holds the engines after it (until it is stopped below).
            waiting.wait_until(lambda: load.outcomes_since(first_embed) >= 10,
                               what="ten queries answered since the first embed",
                               timeout_s=JOB_TIMEOUT_S)
        problems += [f"query during the ingest: {e}" for e in load.errors]
        if job.state is not JobState.SUCCEEDED:
            problems.append(outcome(job))

        c.workers[0].stop()
        c.start("engines-2", "embed")
        for question in asked[:2]:
            try:
                client.query(INDEX, question)
            except HopindexError as exc:
                problems.append(f"query after the owner restarted: {exc}")
        job = client.ingest(INDEX, [changed], wait=False)
        job, _ = wait_while_recording(reader, job.job_id)
        if job.state is not JobState.SUCCEEDED or job.errors:
            problems.append(f"change: {outcome(job)} {job.errors}")
        job = client.delete_documents(INDEX, [doc_id_titled(reader, corpus, DELETED_AT)],
                                      wait=False)
        job, _ = wait_while_recording(reader, job.job_id)
        if job.state is not JobState.SUCCEEDED or job.errors:
            problems.append(f"delete: {outcome(job)} {job.errors}")
        try:
            result = client.query(INDEX, asked[0])
            assert result.passages
        except HopindexError as exc:
            problems.append(f"query after the changes: {exc}")
        got = unit_texts(reader)
        api_log = api.log_text()
    assert not problems, "\n".join(problems)
    assert "Traceback" not in api_log
    c.stop_all()
    assert got == expected
    assert engine_counts(c) == (len(expected), len(expected))


def flat(text: str) -> str:
    """``text`` on one line: the CLI's console wraps long messages at its width."""
    return " ".join(text.split())


def _cli(settings: Settings, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **settings.to_env()}
    return subprocess.run([sys.executable, "-c", "from hopindex.api.cli import main; main()",
                           *args], env=env, capture_output=True, text=True, timeout=120,
                          check=False)


def test_a_second_process_opening_the_engines_is_told_who_owns_them(
        tmp_path: Path, start_server: Callable[..., LlmTestServer],
        cluster: Callable[..., Cluster]) -> None:
    """While the embed worker owns the engines: a second embed worker does not start, an
    eager `hopindex query` and an eager API's query fail with an error naming the owner
    (pid, host, command) and both ways out, and that API's /readyz says it is not ready
    and why; an API with the broker is ready and names the owner it reaches. With the
    owner gone, the broker's API is not ready and its queries answer 503 saying how to
    start one. With a new owner, an export, the index's deletion and an import through
    it move every vector and posting."""
    server = start_server()
    c = cluster(server, **embedder_settings(server))
    owner = c.start("engines", "embed,control")
    c.start("llm", "stage1,stage2")
    pid = str(owner.process.pid)
    with local_client(c.settings) as client:
        job = client.ingest(INDEX, [hotpot_corpus(tmp_path, 5)], wait=False)
        job = client.jobs.wait_for_job(job.job_id, timeout_s=JOB_TIMEOUT_S)
        assert job.state is JobState.SUCCEEDED, job.reason

    with pytest.raises(BackendUnavailableError, match="did not start"):
        c.start("engines-2", "embed")
    refused = c.workers[-1]
    refused.stop()
    assert refused.process.returncode == ExitCode.UNAVAILABLE
    said = flat(refused.log_text())
    for needle in (f"pid {pid} on {socket.gethostname()}", "`hopindex worker --queues embed",
                   "engine owner", "HOPINDEX_VECTOR_URL=qdrant://"):
        assert needle in said, (needle, said)

    eager = replace(c.settings, broker_url="")
    done = _cli(eager, "query", "--index", INDEX, "Who is Demon Dice?")
    assert done.returncode == ExitCode.UNAVAILABLE, done.stdout + done.stderr
    said = flat(done.stderr)
    for needle in (f"pid {pid}", "`hopindex worker --queues embed", "HOPINDEX_BROKER_URL",
                   "HOPINDEX_VECTOR_URL=qdrant://", "HOPINDEX_KEYWORD_URL=elasticsearch://"):
        assert needle in said, (needle, said)
    assert "Traceback" not in done.stderr

    with serving(eager, tmp_path / "eager-serve.log") as (_, url):
        answer = requests.post(f"{url}/v1/indexes/{INDEX}/query",
                               json={"question": "Who is Demon Dice?"}, timeout=60)
        assert answer.status_code == 503, answer.text
        assert f"pid {pid}" in answer.json()["error"]["message"]
        ready = requests.get(f"{url}/readyz", timeout=30)
        assert ready.status_code == 503
        assert f"pid {pid}" in ready.json()["checks"]["engines"]

    with serving(c.settings, tmp_path / "serve.log") as (_, url):
        ready = requests.get(f"{url}/readyz", timeout=30)
        assert ready.status_code == 200, ready.text
        assert ready.json()["checks"]["engines"] == "ok"
        assert ready.json()["engines"]["owner"]["pid"] == owner.process.pid
        owner.stop()
        ready = requests.get(f"{url}/readyz", timeout=30)
        assert ready.status_code == 503
        assert "no engine owner" in ready.json()["checks"]["engines"]
        answer = requests.post(f"{url}/v1/indexes/{INDEX}/query",
                               json={"question": "Who is Demon Dice?"}, timeout=60)
        assert answer.status_code == 503, answer.text
        assert "hopindex worker --queues embed" in answer.json()["error"]["message"]

        # A new owner: export, deletion and import travel to it like queries.
        c.start("engines-3", "embed")
        assert requests.get(f"{url}/readyz", timeout=30).status_code == 200
        # A client of a service in this process, beside the server (Client.local would
        # go through it): its export and import reach the engines through the new owner.
        with open_service_client(c.settings) as client:
            engines = client.service.backends
            exported = client.indexes.export_index(INDEX, tmp_path / "hotpot.jsonl.gz")
            assert exported.vectors == exported.units == job.units_embedded > 0
            assert requests.delete(f"{url}/v1/indexes/{INDEX}", timeout=60).status_code == 204
            assert (engines.vectors.count_vectors(INDEX), engines.keywords.count_units(INDEX)
                    ) == (0, 0)
            imported = client.indexes.import_index(tmp_path / "hotpot.jsonl.gz")
            assert imported.as_dict() == exported.as_dict()
            assert (engines.vectors.count_vectors(INDEX), engines.keywords.count_units(INDEX)
                    ) == (exported.vectors, exported.vectors)
