"""Shared helpers for the benchmark scripts: where data lives, how results are written,
the client a benchmark drives hopindex through.

Standard library only at import: the peers' venv (benchmarks/peers/) imports this
module without hopindex installed.
"""

from __future__ import annotations

import gzip
import json
import os
import platform
import resource
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hopindex.api.client.local import LocalClient
    from hopindex.core.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "benchmarks" / "data"
OUT = ROOT / "benchmarks" / "out"
# The 2WikiMultiHopQA corpus (6,119 paragraphs) and its first 100 questions, gzipped.
WIKI_CORPUS = DATA / "2wiki-corpus.json.gz"
WIKI_QUESTIONS = DATA / "2wiki-100-questions.json.gz"
# MuSiQue-dev: 200 questions (120 2-hop, 60 3-hop, 20 4-hop) with their paragraphs,
# which are its corpus (3,363 passages; see ``dataset_documents``).
MUSIQUE_QUESTIONS = DATA / "musique-dev-questions.json.gz"
SAMPLE = ROOT / "hopindex" / "sample" / "hotpotqa-100"  # HotpotQA-100, bundled


def local_client(data_dir: Path | None = None, *, settings: Settings | None = None
                 ) -> LocalClient:
    """``Client.local`` over ``settings`` (or the environment's with ``data_dir``): the
    service in this process, its internals at ``client.service`` for what a benchmark
    times apart. A server owning the data dir is refused (``DataDirInUseError``) rather
    than gone through: every figure here is of this process's service, not of an HTTP
    round trip."""
    from hopindex import Client
    from hopindex.api.client.local import LocalClient

    client = Client.local(data_dir, settings=settings, through_server=False)
    assert isinstance(client, LocalClient)  # through_server=False: never a RemoteClient
    return client


def dataset_files(corpus: str) -> tuple[Path, Path]:
    """The corpus and questions files of ``hotpot`` (HotpotQA-100), ``2wiki`` or
    ``musique`` (MuSiQue-dev, whose corpus is its questions' paragraphs: ingest it with
    ``corpus_from_questions``, as ``hopindex eval`` does without ``--corpus``). The
    readers take .json files, so the bundled gzipped ones are unpacked under OUT; exits
    naming a file that is missing."""
    if corpus == "hotpot":
        return SAMPLE / "corpus.json", SAMPLE / "questions.json"
    OUT.mkdir(parents=True, exist_ok=True)
    paths = []
    sources = {"2wiki": (WIKI_CORPUS, WIKI_QUESTIONS),
               "musique": (MUSIQUE_QUESTIONS, MUSIQUE_QUESTIONS)}[corpus]
    for source in sources:
        if not source.exists():
            sys.exit(f"benchmark data missing: {source} (see benchmarks/data/NOTICE.md)")
        target = OUT / source.name.removesuffix(".gz")
        with gzip.open(source, "rb") as fh:
            target.write_bytes(fh.read())
        paths.append(target)
    return paths[0], paths[1]


def read_json(path: Path) -> Any:
    """A bundled data file (gzipped JSON); exits naming it when it is missing."""
    if not path.exists():
        sys.exit(f"benchmark data missing: {path} (see benchmarks/data/NOTICE.md)")
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return json.load(fh)


def peak_rss_mb() -> float:
    # ru_maxrss is in KiB on Linux.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def status_mb(field_name: str) -> float:
    """A memory figure of this process from ``/proc/self/status`` (``VmHWM``: its peak
    since it was exec'd, unlike ``ru_maxrss``, which a child inherits over fork and exec;
    ``VmRSS``: now); elsewhere its ``ru_maxrss`` peak."""
    status = Path("/proc/self/status")
    if status.exists():
        for line in status.read_text().splitlines():
            if line.startswith(f"{field_name}:"):
                return int(line.split()[1]) / 1024  # kB
    return peak_rss_mb()


def high_water_mb() -> float:
    """This process's peak RSS (Linux ``VmHWM``; elsewhere ``ru_maxrss``)."""
    return status_mb("VmHWM")


def write_result(name: str, figures: dict[str, Any]) -> Path:
    OUT.mkdir(parents=True, exist_ok=True)
    record = {"benchmark": name, "date": datetime.now(UTC).isoformat(timespec="seconds"),
              "machine": {"python": platform.python_version(), "cpus": _cpus()}, **figures}
    path = OUT / f"{name}.json"
    path.write_text(json.dumps(record, indent=2))
    return path


def _cpus() -> int:
    return len(os.sched_getaffinity(0))
