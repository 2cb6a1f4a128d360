"""A command traced into a collector that never answers: it answers as it would untraced
and exits within its bounded flush (the SDK's own exit would wait up to 30 s), and a
command whose OTEL_* variables are wrong is refused naming the variable."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

DOCS = [{"title": f"Person {n}", "text": f"Person {n} was born in Paris in 19{n}0."}
        for n in range(3)]


@pytest.fixture
def dead_collector() -> Iterator[str]:
    """A loopback listener that accepts connections and never answers them."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except TimeoutError:
                continue
            except OSError:
                return

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1/traces"
    finally:
        stop.set()
        thread.join(5)
        for connection in held:
            connection.close()
        listener.close()


def _hopindex(tmp_path: Path, env: dict[str, str], *args: str
              ) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", "from hopindex.api.cli import main; main()", *args],
        env={**os.environ, "HOPINDEX_DATA_DIR": str(tmp_path / "data"), **env},
        capture_output=True, text=True, timeout=300, check=False)
    return done, time.monotonic() - started


def test_a_dead_collector_neither_fails_nor_holds_a_command(
        tmp_path: Path, dead_collector: str) -> None:
    corpus = tmp_path / "people.jsonl"
    corpus.write_text("".join(json.dumps(d) + "\n" for d in DOCS))
    traced = {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_TRACES_SAMPLER": "always_on",
              "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": dead_collector}
    ingest, _ = _hopindex(tmp_path, traced, "ingest", str(corpus), "--index", "people",
                          "--json")
    assert ingest.returncode == 0, ingest.stderr
    job = json.loads(ingest.stdout)
    assert len(job["trace_id"]) == 32  # the job was traced (into the dead collector)
    shown, _ = _hopindex(tmp_path, {}, "jobs", job["job_id"])
    assert f"trace: {job['trace_id']}" in shown.stdout, shown.stdout
    query, elapsed_s = _hopindex(tmp_path, traced, "query", "Where was Person 1 born?",
                                 "--index", "people", "--json")
    assert query.returncode == 0, query.stderr
    answer = json.loads(query.stdout)
    assert answer["passages"][0]["title"] == "Person 1" and len(answer["trace_id"]) == 32
    # The process start, the model and the query take seconds; the SDK's own exit alone
    # would wait for its 10 s export timeout and retries.
    assert elapsed_s < 20, elapsed_s


def test_a_wrong_variable_is_refused_by_name(tmp_path: Path) -> None:
    done, _ = _hopindex(tmp_path, {"OTEL_TRACES_EXPORTER": "otlp",
                                   "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, "indexes", "list")
    assert done.returncode == 78, (done.returncode, done.stderr)  # configuration
    assert "OTEL_EXPORTER_OTLP_PROTOCOL" in done.stderr
