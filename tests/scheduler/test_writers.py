"""One writer at a time on an index, with real ``hopindex`` processes on one data dir.

The sequence that once corrupted an index silently: a first ingest is still going
(here: paused on its LLM budget, so the overlap is certain) when a second process
ingests the same ids with changed texts. The second now stores nothing until its turn,
says which job it waits for, and then builds exactly what a clean build of its input
builds; ``--no-wait`` refuses at once (exit 75). Two processes ingesting disjoint
documents at the same moment both land, and the index ends ready with the units of one
clean build of both.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from hopindex.api.cli import main
from hopindex.backends.state import SqliteStateStore
from hopindex.core.models import JobState
from hopindex.core.settings import Settings
from hopindex.testing.llm_server import LlmTestServer
from tests.methods.indexrag.conftest import llm_settings, local_client
from tests.waiting import wait_until
from tests.workers.conftest import embedder_settings
from tests.workers.logged_processes import LoggedProcess, hopindex_argv, settings_env

pytestmark = pytest.mark.integration

INDEX = "shared"
RUN_TIMEOUT_S = 240.0
DOCUMENTS = [
    {"id": "curie", "title": "Marie Curie",
     "text": "Marie Curie was born in Warsaw. She won the Nobel Prize in Physics in 1903."},
    {"id": "warsaw", "title": "Warsaw",
     "text": "Warsaw is the capital of Poland. It lies on the Vistula river."},
    {"id": "nobel", "title": "Nobel Prize",
     "text": "The Nobel Prize is awarded in Stockholm. Alfred Nobel founded it."},
]
CHANGED = {"warsaw": "Warsaw is the largest city of Poland. The Vistula river runs "
                     "through it.",
           "nobel": "The Nobel Prize in Physics is given by the Royal Swedish Academy."}
MORE = [
    {"id": "vistula", "title": "Vistula",
     "text": "The Vistula is the longest river in Poland. It flows into the Baltic Sea."},
    {"id": "stockholm", "title": "Stockholm",
     "text": "Stockholm is the capital of Sweden. The Nobel Prize ceremony is held there."},
]


def _write(path: Path, records: list[dict[str, str]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _changed() -> list[dict[str, str]]:
    return [{**r, "text": CHANGED.get(r["id"], r["text"])} for r in DOCUMENTS]


def _settings(data: Path, server: LlmTestServer) -> Settings:
    return llm_settings(data, server, log_level="warning", **embedder_settings(server))


def _process(tmp_path: Path, settings: Settings, name: str, *args: str) -> LoggedProcess:
    return LoggedProcess(hopindex_argv(*args), settings_env(settings, COLUMNS="200"),
                         log_dir=tmp_path, name=name)


def _stderr_once(process: LoggedProcess, pattern: str, what: str) -> str:
    def seen() -> str:
        text = process.stderr()
        if re.search(pattern, text, re.M):
            return text
        if process.process.poll() is not None:
            raise AssertionError(f"{what}: the process ended (exit "
                                 f"{process.process.poll()}):\n{text[-3000:]}")
        return ""

    found: str = wait_until(seen, what=what, timeout_s=RUN_TIMEOUT_S)
    return found


def _units(settings: Settings) -> set[tuple[str, str]]:
    """The index's units as (kind, text): what a query can find."""
    state = SqliteStateStore(settings.data_dir / "state.sqlite3")
    try:
        doc_ids = sorted(state.document_hashes(INDEX))
        return {(u.kind.value, u.text) for u in state.units_of_documents(INDEX, doc_ids)}
    finally:
        state.close()


def _clean_build(tmp_path: Path, server: LlmTestServer, corpus: Path, method: str
                 ) -> set[tuple[str, str]]:
    settings = _settings(tmp_path / "clean", server)
    with local_client(settings) as client:
        job = client.ingest(INDEX, [corpus], method=method)
        assert job.state is JobState.SUCCEEDED, job.reason
    return _units(settings)


def _cli(settings: Settings) -> CliRunner:
    env = settings_env(settings)
    return CliRunner(env={k: v for k, v in env.items() if k.startswith("HOPINDEX_")})


def test_a_second_ingest_waits_its_turn_and_builds_what_a_clean_build_does(
        start_server: Callable[..., LlmTestServer], tmp_path: Path) -> None:
    """The first ingest pauses on a 10-token budget; a second process ingesting the same
    ids with two texts changed waits, names the paused job and how to unblock it, and
    stores nothing meanwhile; ``--no-wait`` exits 75 naming the job. Once the first is
    resumed and ends, the second runs: the index holds the clean build's units of the
    second input, every document marked with its own text, ready, and ``repair
    --check`` finds nothing."""
    server = start_server()
    settings = _settings(tmp_path / "data", server)
    first_input = _write(tmp_path / "first.jsonl", DOCUMENTS)
    second_input = _write(tmp_path / "second.jsonl", _changed())
    first = _process(tmp_path, settings, "first", "ingest", "--index", INDEX, "--method",
                     "indexrag", "--max-llm-tokens", "10", str(first_input))
    other_shell = _cli(settings)
    with first:
        _stderr_once(first, r"^  resume with: ", "the first ingest's pause")
        job_id = re.search(r"^job (\S+) paused", first.stderr(), re.M)
        assert job_id is not None
        paused = job_id.group(1)

        refused = other_shell.invoke(main, ["ingest", "--index", INDEX, "--no-wait",
                                            str(second_input)])
        assert refused.exit_code == 75, refused.output
        assert paused in refused.output and "resume it" in refused.output

        second = _process(tmp_path, settings, "second", "ingest", "--index", INDEX,
                          str(second_input))
        with second:
            told = _stderr_once(second, r"^waiting: ", "the second ingest's wait notice")
            assert f"job {paused} (ingest, paused)" in told
            assert f"hopindex jobs resume {paused}" in told
            state = SqliteStateStore(settings.data_dir / "state.sqlite3")
            try:
                stored = {d.doc_id: d.text for d in state.get_documents(
                    INDEX, [r["id"] for r in DOCUMENTS])}
            finally:
                state.close()
            assert stored == {r["id"]: r["text"] for r in DOCUMENTS}

            resumed = other_shell.invoke(main, ["jobs", "resume", paused,
                                                "--max-llm-tokens", "10000000"])
            assert resumed.exit_code == 0, resumed.output
            assert first.process.wait(timeout=RUN_TIMEOUT_S) == 0, first.stderr()[-3000:]
            assert second.process.wait(timeout=RUN_TIMEOUT_S) == 0, second.stderr()[-3000:]

    assert _units(settings) == _clean_build(tmp_path, server, second_input, "indexrag")
    checked = other_shell.invoke(main, ["repair", "--index", INDEX, "--check", "--json"])
    assert checked.exit_code == 0, checked.output
    status = json.loads(checked.output)
    assert status["status"] == "ready"
    assert status["outstanding"]["documents"] == 0
    assert status["outstanding"]["changed_text"] == 0


def test_two_ingests_of_disjoint_documents_at_once_both_land(
        start_server: Callable[..., LlmTestServer], tmp_path: Path) -> None:
    """Two processes started together on one data dir and index, with no document in
    common: both exit 0 (one after the other), and the index is ready with the units a
    single clean build of both inputs has."""
    server = start_server()
    settings = _settings(tmp_path / "data", server)
    one = _write(tmp_path / "one.jsonl", DOCUMENTS)
    two = _write(tmp_path / "two.jsonl", MORE)
    both = _write(tmp_path / "both.jsonl", DOCUMENTS + MORE)
    with _process(tmp_path, settings, "one", "ingest", "--index", INDEX, "--method",
                  "extractive", str(one)) as first, \
            _process(tmp_path, settings, "two", "ingest", "--index", INDEX, "--method",
                     "extractive", str(two)) as second:
        assert first.process.wait(timeout=RUN_TIMEOUT_S) == 0, first.stderr()[-3000:]
        assert second.process.wait(timeout=RUN_TIMEOUT_S) == 0, second.stderr()[-3000:]
    checked = _cli(settings).invoke(main, ["repair", "--index", INDEX, "--check", "--json"])
    assert json.loads(checked.output)["status"] == "ready", checked.output
    assert _units(settings) == _clean_build(tmp_path, server, both, "extractive")
