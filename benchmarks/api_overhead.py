"""What the HTTP API adds to a query: the same questions on the same index, asked in-process
(``Client.local``'s ``query``, the call the server makes for each request) and through the
API on loopback, side by side in one run.

The server runs in this process (the embedded engines allow one process, so that is
the only way both paths read the same index), with an API key, so authentication,
JSON both ways, the thread hand-off and the loopback round trip are all counted. Each
question is asked both ways back to back, order alternating. Throughput is measured
both ways with 1 and with 4 concurrent callers. Target: API p50 at most 5 ms above the
in-process p50.

    .venv/bin/python benchmarks/api_overhead.py [--rounds N]

Builds the HotpotQA-100 index in benchmarks/out/api-data on first use (~1 min).
"""

from __future__ import annotations

import argparse
import http.client
import json
import sys
import threading
import time
from collections.abc import Callable
from importlib.resources import files
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import OUT, local_client, write_result

from hopindex.api.client.local import LocalClient
from hopindex.api.http.keys import KeyRing, parse_env_keys
from hopindex.api.http.server import BackgroundServer
from hopindex.core.settings import Settings
from hopindex.evaluation.metrics import percentile
from hopindex.readers import RawDocument, ReadResult

INDEX = "hotpot"
METHOD = "extractive"
KEY = "bench-key-0123456789abcdef"
K = 10
THROUGHPUT_S = 10.0


def sample(name: str) -> object:
    return json.loads((files("hopindex") / "sample" / "hotpotqa-100" / name).read_text())


def ensure_index(client: LocalClient) -> None:
    corpus = sample("corpus.json")
    assert isinstance(corpus, dict)
    hashes = client.service.backends.state.document_hashes(INDEX)
    if len(hashes) >= len(corpus) and all(hashes.values()):
        return
    print(f"building the {INDEX} index ({len(corpus)} documents)", flush=True)
    records = [RawDocument(doc_id=None, title=title, text="".join(sentences), metadata={},
                           origin=f"corpus.json[{i}]")
               for i, (title, sentences) in enumerate(corpus.items())]
    client.ingest_read(INDEX, ReadResult(documents=records))


class ApiCaller:
    """One keep-alive connection: the client side costs as little as it can."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self._conn = http.client.HTTPConnection(parts.hostname or "", parts.port)
        self._headers = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"}

    def query(self, question: str) -> dict[str, object]:
        body = json.dumps({"question": question, "method": METHOD, "k": K})
        self._conn.request("POST", f"/v1/indexes/{INDEX}/query", body=body,
                           headers=self._headers)
        response = self._conn.getresponse()
        data = response.read()
        if response.status != 200:
            raise RuntimeError(f"API answered {response.status}: {data[:200]!r}")
        result: dict[str, object] = json.loads(data)
        return result

    def close(self) -> None:
        self._conn.close()


def throughput(make_call: Callable[[], Callable[[str], object]], questions: list[str],
               callers: int) -> float:
    """Queries per second with ``callers`` threads asking in a loop for THROUGHPUT_S."""
    done = [0] * callers
    stop = time.monotonic() + THROUGHPUT_S

    def work(slot: int) -> None:
        call = make_call()
        i = slot
        while time.monotonic() < stop:
            call(questions[i % len(questions)])
            done[slot] += 1
            i += callers

    threads = [threading.Thread(target=work, args=(n,)) for n in range(callers)]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(done) / (time.monotonic() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3, help="passes over the 100 questions")
    args = parser.parse_args()
    questions_data = sample("questions.json")
    assert isinstance(questions_data, list)
    questions = [q["question"] for q in questions_data]
    settings = Settings(data_dir=OUT / "api-data").resolved()
    # The server serves the same service: the embedded engines allow one process.
    with local_client(settings=settings) as client, \
            BackgroundServer(client.service, KeyRing(parse_env_keys(KEY))) as server:
        ensure_index(client)
        api = ApiCaller(server.url)
        for q in questions[:10]:  # warm the model, the searchers and the connection
            client.query(INDEX, q, method=METHOD, k=K)
            api.query(q)
        local_ms: list[float] = []
        api_ms: list[float] = []
        for i, q in enumerate(questions * args.rounds):
            for which in ((0, 1) if i % 2 else (1, 0)):
                t0 = time.perf_counter()
                if which == 0:
                    client.query(INDEX, q, method=METHOD, k=K)
                    local_ms.append((time.perf_counter() - t0) * 1000)
                else:
                    api.query(q)
                    api_ms.append((time.perf_counter() - t0) * 1000)
        api.close()

        def local_caller() -> Callable[[str], object]:
            return lambda q: client.query(INDEX, q, method=METHOD, k=K)

        def api_caller() -> Callable[[str], object]:
            return ApiCaller(server.url).query

        qps = {f"{name}_qps_{n}": throughput(make, questions, n)
               for n in (1, 4) for name, make in (("inprocess", local_caller),
                                                  ("api", api_caller))}
    figures: dict[str, object] = {
        "queries": len(api_ms), "k": K, "method": METHOD,
        "inprocess_p50_ms": percentile(local_ms, 50), "inprocess_p95_ms": percentile(local_ms, 95),
        "api_p50_ms": percentile(api_ms, 50), "api_p95_ms": percentile(api_ms, 95),
        **qps,
    }
    overhead_p50 = figures["api_p50_ms"] - figures["inprocess_p50_ms"]  # type: ignore[operator]  # floats
    figures["overhead_p50_ms"] = overhead_p50
    print(f"in-process: p50 {figures['inprocess_p50_ms']:.2f} ms, "
          f"p95 {figures['inprocess_p95_ms']:.2f} ms")
    print(f"API:        p50 {figures['api_p50_ms']:.2f} ms, p95 {figures['api_p95_ms']:.2f} ms")
    print(f"API overhead p50: {overhead_p50:.2f} ms (target <= 5 ms)")
    for n in (1, 4):
        print(f"throughput, {n} caller(s): in-process {qps[f'inprocess_qps_{n}']:.1f} q/s, "
              f"API {qps[f'api_qps_{n}']:.1f} q/s")
    print(f"wrote {write_result('api_overhead', figures)}")


if __name__ == "__main__":
    main()
