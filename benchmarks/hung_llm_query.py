"""How long a query waits for an LLM that accepts connections and never answers, with
the default query policy (one 20 s deadline for all of a query's LLM calls, 10 s per
call): each LLM query method over a small index built against the LLM test server,
then queried through a socket that accepts and never replies, through the CLI as a
user runs it (a fresh process: the figure includes start-up and the embedder's load).

Target: every query returns its passages with ``answer`` null and a ``degraded`` note
within 30 s and exits 0 (before the query policy, over five minutes and nothing). The
tests check the same with a 2 s deadline (tests/api/test_query_degraded.py), not a
wall-clock figure at the default.

    .venv/bin/python benchmarks/hung_llm_query.py [--methods indexrag,kgbridge] [--deadline-s 20]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import local_client, write_result

from hopindex.core.settings import Settings
from hopindex.readers import RawDocument, ReadResult
from hopindex.testing.llm_server import LlmServerConfig, LlmTestServer

QUESTION = "Where was the wife of Pierre Curie born?"
DOCUMENTS = [
    RawDocument(doc_id=f"d{n}", title=title, text=text, metadata={}, origin=title)
    for n, (title, text) in enumerate([
        ("Marie Curie", "Marie Curie was born in Warsaw. She married Pierre Curie in 1895."),
        ("Pierre Curie", "Pierre Curie was a French physicist, the husband of Marie Curie."),
        ("Warsaw", "Warsaw is the capital of Poland, on the Vistula river."),
        ("Sorbonne", "Marie Curie taught at the Sorbonne in Paris after 1906."),
    ])]
# Query method → the index method whose index it reads.
METHODS = {"indexrag": "indexrag", "ircot": "indexrag", "bridgerag": "indexrag",
           "compactrag": "compactrag", "sirerag": "sirerag", "kgbridge": "kgbridge"}


class SilentLlm:
    """Accepts every connection and never answers."""

    def __init__(self) -> None:
        self._socket = socket.create_server(("127.0.0.1", 0))
        self.port = self._socket.getsockname()[1]
        self._held: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self._socket.accept()
            except OSError:
                return
            self._held.append(connection)


def build(data_dir: Path) -> None:
    server = LlmTestServer(LlmServerConfig()).start_in_thread()
    settings = Settings(data_dir=data_dir, llm_model=server.config.model,
                        llm_base_url=server.base_url, llm_api_key="k").resolved()
    try:
        with local_client(settings=settings) as client:
            for index_method in sorted(set(METHODS.values())):
                client.ingest_read(index_method, ReadResult(documents=DOCUMENTS),
                                   method=index_method)
    finally:
        server.stop()


def query(data_dir: Path, silent: SilentLlm, method: str, deadline_s: float) -> dict[str, object]:
    env = {**os.environ, "HOPINDEX_DATA_DIR": str(data_dir),
           "HOPINDEX_LLM_MODEL": "hopindex-test-llm",
           "HOPINDEX_LLM_BASE_URL": f"http://127.0.0.1:{silent.port}/v1",
           "HOPINDEX_LLM_API_KEY": "k", "HOPINDEX_LLM_CACHE": "off",
           "HOPINDEX_QUERY_LLM_DEADLINE_S": str(deadline_s)}
    hopindex = Path(sys.executable).with_name("hopindex")
    started = time.monotonic()
    done = subprocess.run([str(hopindex), "query", "--index", METHODS[method], "--method",
                           method, "--json", QUESTION], env=env, capture_output=True,
                          text=True, timeout=600, check=False)
    wall_s = time.monotonic() - started
    result = json.loads(done.stdout) if done.returncode == 0 else {}
    return {"method": method, "exit": done.returncode, "wall_s": round(wall_s, 2),
            "latency_s": round(float(result.get("latency_s", 0.0)), 2),
            "answer": result.get("answer"), "passages": len(result.get("passages", [])),
            "degraded": [d["step"] for d in result.get("degraded", [])]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--deadline-s", type=float, default=20.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp) / "data"
        build(data_dir)
        silent = SilentLlm()
        rows = [query(data_dir, silent, method, args.deadline_s)
                for method in args.methods.split(",")]
    for row in rows:
        print(f"{row['method']:<11} exit {row['exit']}  wall {row['wall_s']:>6.2f}s  "
              f"query {row['latency_s']:>6.2f}s  passages {row['passages']}  "
              f"answer {row['answer']!r}  degraded {row['degraded']}")
    path = write_result("hung_llm_query", {"deadline_s": args.deadline_s, "queries": rows})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
