"""Embedded jobs whose process died are failed with the reason when a service opens the
same data dir; live owners, reused pids, other hosts and jobs run by workers are left
alone."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from hopindex.api.client.local import LocalClient
from hopindex.core.errors import IndexBusyError
from hopindex.core.models import Job, JobKind, JobState
from hopindex.core.settings import Settings
from hopindex.readers import ReadResult
from hopindex.scheduler.recovery import (
    OwnerState,
    lease_dir,
    owner_state,
    process_start_time,
    recover_orphaned_jobs,
    this_process,
)
from hopindex.testing.llm_server import LlmTestServer
from tests.conftest import CURIE_CORPUS
from tests.methods.indexrag.conftest import ClientFactory, llm_settings, local_client
from tests.scheduler.test_pipeline import engine_counts, ingest, unit_snapshot
from tests.waiting import wait_until

pytestmark = pytest.mark.integration

INDEX = "curie"
READY_TIMEOUT_S = 60.0

# A process that owns a running job the way an embedded ingest does, then waits to be
# killed: it holds the lease for as long as it lives.
_OWNER_SCRIPT = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from hopindex.backends.registry import open_state_store
    from hopindex.core.models import Job, JobKind, JobState
    from hopindex.core.settings import Settings
    from hopindex.scheduler.recovery import owning

    settings = Settings(data_dir=Path(sys.argv[1])).resolved()
    state = open_state_store(settings.state_url)
    with owning(settings) as owner:
        state.create_job(Job(job_id=sys.argv[2], index=sys.argv[3], kind=JobKind.INGEST,
                             state=JobState.RUNNING, owner=owner))
        print("ready", flush=True)
        # Not a wait of the test's: this process must live, holding its lease, until
        # the test kills it.
        time.sleep(3600)
""")


@pytest.fixture
def owner_process(tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    """A live process owning job ``job-orphan`` of index curie in ``tmp_path/data``."""
    process = subprocess.Popen([sys.executable, "-c", _OWNER_SCRIPT, str(tmp_path / "data"),
                                "job-orphan", INDEX], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        # Log lines may come first.
        while (line := process.stdout.readline()) and line.strip() != "ready":
            pass
        assert line, "the owner process ended before its job was created"
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=30)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGBUS], ids=["SIGKILL", "SIGBUS"])
def test_a_job_whose_process_was_killed_is_failed_when_a_service_opens(
        make_client: ClientFactory, owner_process: subprocess.Popen[str],
        sig: signal.Signals) -> None:
    """While its owner lives, the job is left running (and the index busy: an ingest
    that may not wait is refused, the index cannot be deleted); once the
    owner is killed, the next service to open fails it naming pid and host, the index
    can be deleted, and the dead owner's lease is swept."""
    client = make_client()
    with pytest.raises(IndexBusyError, match="job-orphan"):
        client.ingest_read(INDEX, ReadResult(documents=CURIE_CORPUS[:2]), wait=False)
    assert client.jobs.get_job("job-orphan").state is JobState.RUNNING
    with pytest.raises(IndexBusyError):
        client.indexes.delete_index(INDEX)
    client.close()
    owner_process.send_signal(sig)
    assert owner_process.wait(timeout=30) == -sig
    recovered = make_client()
    job = recovered.jobs.get_job("job-orphan")
    assert job.state is JobState.FAILED
    assert job.reason == (f"the process that ran it (pid {owner_process.pid} on "
                          f"{socket.gethostname()}) is gone; ingest the same input again to "
                          "redo its unfinished documents")
    recovered.indexes.delete_index(INDEX)
    assert list(lease_dir(recovered.settings).glob("*.lease")) == []


def test_a_live_owner_in_another_process_is_left_alone(
        make_client: ClientFactory, owner_process: subprocess.Popen[str]) -> None:
    """The lease decides: its holder is alive, whatever else the record says."""
    client = make_client()
    assert client.jobs.get_job("job-orphan").state is JobState.RUNNING
    assert recover_orphaned_jobs(client.service.runtime) == []


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait(timeout=30)
    return process.pid


def test_without_a_lease_the_pid_start_time_and_boot_decide(tmp_path: Path) -> None:
    """No lease file: the owner is this process only if pid *and* start time match (a
    reused pid is not the owner); a different boot id on this host is a reboot; another
    host or pid namespace cannot be judged from here."""
    here = this_process()
    folder = tmp_path / "leases"

    def owner(**changes: object) -> dict[str, object]:
        record = here.owner_record("")
        record.update(changes)
        return record

    parent_started = process_start_time(os.getppid())
    assert owner_state(owner(pid=os.getppid(), started=parent_started), folder) is (
        OwnerState.ALIVE)
    assert owner_state(owner(started=str(int(here.started or "0") + 1)), folder) is (
        OwnerState.GONE)
    assert owner_state(owner(pid=_dead_pid()), folder) is OwnerState.GONE
    assert owner_state(owner(boot_id="another-boot"), folder) is OwnerState.GONE
    assert owner_state(owner(host="elsewhere", pid=_dead_pid()), folder) is OwnerState.UNKNOWN
    assert owner_state(owner(pid_namespace="pid:[1]", pid=_dead_pid()), folder) is (
        OwnerState.UNKNOWN)
    assert owner_state(owner(lease="missing.lease", pid=_dead_pid()), folder) is (
        OwnerState.GONE)


def _orphan(client: LocalClient, job_id: str, owner: dict[str, object]) -> Job:
    job = Job(job_id=job_id, index=INDEX, kind=JobKind.DELETE, state=JobState.RUNNING,
              owner=owner)
    client.service.backends.state.create_job(job)
    return job


def test_jobs_run_by_workers_are_never_failed_from_here(make_client: ClientFactory,
                                                        tmp_path: Path) -> None:
    """A job without an owner (sent to workers) stays running; with a broker configured
    nothing is failed at all, not even a job whose owner is dead."""
    client = make_client()
    ingest(client, CURIE_CORPUS[:1])
    dead = this_process().owner_record("")
    dead["pid"] = _dead_pid()
    _orphan(client, "job-dead-owner", dead)
    _orphan(client, "job-on-workers", {})
    client.close()
    settings = Settings(data_dir=tmp_path / "data", broker_url="redis://127.0.0.1:1/0").resolved()
    with local_client(settings) as distributed:
        assert distributed.jobs.get_job("job-dead-owner").state is JobState.RUNNING
    reopened = make_client()
    assert reopened.jobs.get_job("job-dead-owner").state is JobState.FAILED
    assert "delete the same ids again" in reopened.jobs.get_job("job-dead-owner").reason
    assert reopened.jobs.get_job("job-on-workers").state is JobState.RUNNING


def test_a_jobs_owner_record_survives_the_store(make_client: ClientFactory) -> None:
    """An embedded ingest records its owner (this process and its lease), and gives the
    lease back once the job is over."""
    client = make_client()
    job = ingest(client, CURIE_CORPUS[:1])
    here = this_process()
    assert {k: job.owner[k] for k in ("host", "pid", "boot_id", "started")} == {
        "host": here.host, "pid": here.pid, "boot_id": here.boot_id, "started": here.started}
    assert str(job.owner["lease"]).endswith(".lease")
    assert json.loads(json.dumps(job.as_dict()))["owner"] == job.owner
    assert list(lease_dir(client.settings).glob("*.lease")) == []


@pytest.mark.parametrize(("stage", "calls_before_kill"), [("stage1", 3), ("stage2", 2)])
def test_an_embedded_ingest_killed_mid_job_is_recovered_and_redone_exactly(
        tmp_path: Path, start_server: Callable[..., LlmTestServer], stage: str,
        calls_before_kill: int) -> None:
    """A real ``hopindex ingest`` (IndexRAG, the LLM test server answering slowly, one
    call at a time) is SIGKILLed with a call of ``stage`` in flight. The next service over
    its data dir fails the job naming the dead process; the index is no longer busy;
    ingesting the same file again ends with the unit set of a clean build (ids, kinds,
    texts): 0 lost, 0 duplicated."""
    server = start_server(latency_s=0.25)
    corpus = tmp_path / "curie.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"d{i}", "title": d.title, "text": d.text})
                              + "\n" for i, d in enumerate(CURIE_CORPUS)), encoding="utf-8")
    one_at_a_time = {"llm_concurrency": 1, "stage1_batch_docs": 1}
    with local_client(llm_settings(tmp_path / "clean", server, **one_at_a_time)) as clean:
        built = clean.ingest(INDEX, [corpus])
        assert built.state is JobState.SUCCEEDED, built.reason
        expected = unit_snapshot(clean), engine_counts(clean)
    calls = dict(server.stats.by_kind)
    assert calls[stage] > calls_before_kill
    server.reset()

    settings = llm_settings(tmp_path / "killed", server, **one_at_a_time)
    env = {**os.environ, "HOPINDEX_DATA_DIR": str(settings.data_dir),
           "HOPINDEX_LLM_MODEL": settings.llm_model,
           "HOPINDEX_LLM_BASE_URL": settings.llm_base_url,
           "HOPINDEX_LLM_API_KEY": settings.llm_api_key,
           "HOPINDEX_LLM_CONCURRENCY": "1", "HOPINDEX_STAGE1_BATCH_DOCS": "1"}
    process = subprocess.Popen([str(Path(sys.executable).with_name("hopindex")), "ingest",
                                "--index", INDEX, "--quiet", str(corpus)], env=env)
    try:

        def calls_made() -> bool:
            assert process.poll() is None, "the ingest ended before it could be killed"
            return server.stats.by_kind.get(stage, 0) >= calls_before_kill

        wait_until(calls_made, what=f"the ingest's {calls_before_kill} {stage} calls",
                   timeout_s=READY_TIMEOUT_S, interval_s=0.05)
        process.send_signal(signal.SIGKILL)
        assert process.wait(timeout=30) == -signal.SIGKILL
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=30)
    killed_at = dict(server.stats.by_kind)

    with local_client(settings) as client:
        [job] = client.jobs.list_jobs(INDEX)
        assert job.state is JobState.FAILED
        assert f"the process that ran it (pid {process.pid} on " in job.reason
        assert "ingest the same input again" in job.reason
        assert all(j.state.is_final for j in client.jobs.list_jobs(INDEX))
        server.reset()
        again = client.ingest(INDEX, [corpus])
        assert again.state is JobState.SUCCEEDED, again.reason
        assert (unit_snapshot(client), engine_counts(client)) == expected
        print(f"clean build: {calls} LLM calls; killed after {killed_at}; the redo made "
              f"{dict(server.stats.by_kind)} (the rest came from the cache)")
        client.indexes.delete_index(INDEX)
