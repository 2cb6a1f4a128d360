"""A real ``hopindex ingest`` process (no workers) whose job pauses on its LLM budget,
against the local test LLM server: it says so on stderr with the reason and a resume
command, keeps waiting, and goes on in place when that command is run from another
"shell" (this test), ending 0 with the job succeeded; with ``--json`` the notice is
one JSON object."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest
from click.testing import CliRunner

from hopindex.api.cli import main
from hopindex.testing.llm_server import LlmTestServer
from tests.methods.indexrag.conftest import llm_settings
from tests.waiting import wait_until
from tests.workers.conftest import embedder_settings, hotpot_corpus
from tests.workers.logged_processes import LoggedProcess, hopindex_argv, settings_env

pytestmark = pytest.mark.integration

RUN_TIMEOUT_S = 240.0
RESUME = re.compile(r"^  resume with: (hopindex jobs resume \S+(?: --\S+ \S+)*)$", re.M)


def _ingest(tmp_path: Path, server: LlmTestServer, *flags: str,
            log_level: str = "warning") -> tuple[LoggedProcess, CliRunner]:
    """The ingest process (3 documents into a new IndexRAG index, a 10-token budget)
    and a CLI runner over the same data directory and settings."""
    settings = llm_settings(tmp_path / "data", server, log_level=log_level,
                            **embedder_settings(server))
    env = settings_env(settings, COLUMNS="200")
    process = LoggedProcess(hopindex_argv("ingest", "--index", "hotpot", "--method",
                                          "indexrag", "--max-llm-tokens", "10", *flags,
                                          str(hotpot_corpus(tmp_path, limit=3))),
                            env, log_dir=tmp_path, name="ingest")
    other_shell = CliRunner(env={k: v for k, v in env.items() if k.startswith("HOPINDEX_")})
    return process, other_shell


def _wait_for(process: LoggedProcess, seen: Callable[[str], bool], what: str) -> str:
    """The ingest's stderr once ``seen`` holds for it; AssertionError with its tail if
    the process ends first or it stalls past RUN_TIMEOUT_S."""

    def check() -> str:
        text = process.stderr()
        if seen(text):
            return text
        if process.process.poll() is not None:
            raise AssertionError(f"ingest ended (exit {process.process.poll()})")
        return ""

    try:
        return wait_until(check, what=what, timeout_s=RUN_TIMEOUT_S)
    except AssertionError as stalled:
        raise AssertionError(f"{stalled}:\n{process.stderr()[-3000:]}") from None


def test_the_ingest_waits_through_pauses_and_resumes_in_place(
        start_server: Callable[..., LlmTestServer], tmp_path: Path) -> None:
    """The job pauses before its first call (10 tokens is below one); the process
    prints the reason and the resume command and waits with no request sent; running
    each resume command it prints (it may pause again on the limit suggested) carries
    the job on in the same process, which exits 0 with the job succeeded and every
    request sent once."""
    server = start_server()
    # At info level the process logs job_waiting_for_resume: the signal that it waits.
    process, other_shell = _ingest(tmp_path, server, log_level="info")
    with process:
        stderr = _wait_for(process, lambda text: bool(RESUME.search(text)),
                           "the pause notice")
        notice = re.search(r"^job (\S+) paused: (.*)$", stderr, re.M)
        assert notice is not None, stderr
        job_id = notice.group(1)
        assert notice.group(2).startswith("LLM budget is below the cost of one call: "
                                          "max_llm_tokens 10")
        assert ("this process runs the job: it waits here, and carries the job on once "
                "it is resumed from another shell") in stderr
        # The job runs on the process's main thread (no workers): once that thread logs
        # that it waits for the resume, it is parked where it neither calls the LLM nor
        # returns until the job leaves the paused state.
        _wait_for(process, lambda text: "job_waiting_for_resume" in text,
                  "the job's thread to wait for the resume")
        assert process.process.poll() is None and sum(server.stats.by_kind.values()) == 0

        def moved_on(taken: int) -> bool:
            """The ingest ended, or printed a resume command past the ``taken`` ones (the
            job may pause again on the limit a resume set)."""
            return (process.process.poll() is not None
                    or len(RESUME.findall(process.stderr())) > taken)

        resumes = 0
        while resumes < 5:
            wait_until(partial(moved_on, resumes),
                       what=f"resume command {resumes + 1} or the ingest's end",
                       timeout_s=RUN_TIMEOUT_S)
            if process.process.poll() is not None:
                break
            found = RESUME.findall(process.stderr())
            if resumes == 0:
                # Still paused up to the first resume: nothing sent all the while.
                assert sum(server.stats.by_kind.values()) == 0
            argv = shlex.split(found[resumes])
            assert argv[:4] == ["hopindex", "jobs", "resume", job_id], argv
            assert argv[4] == "--max-llm-tokens" and int(argv[5]) > 10
            done = other_shell.invoke(main, argv[1:])
            assert done.exit_code == 0, done.output
            resumes += 1
        assert process.process.wait(timeout=RUN_TIMEOUT_S) == 0, process.stderr()[-3000:]
    assert resumes >= 1
    assert f"job {job_id} resumed (LLM budget: max_llm_tokens" in process.stderr()
    shown = other_shell.invoke(main, ["jobs", job_id, "--json"])
    job = json.loads(shown.stdout)
    assert job["state"] == "succeeded" and job["pause"] == {}
    assert job["llm"]["calls"] == sum(server.stats.by_kind.values()) > 0


def test_with_json_the_pause_notice_is_one_json_object(
        start_server: Callable[..., LlmTestServer], tmp_path: Path) -> None:
    """With --json the pause is announced as one JSON object on stderr (the job.paused
    fields, the resume command, waiting true), the resume as another, and stdout holds
    the finished job alone. At the default log level no log record comes with the
    pause: the refusal and the pause are logged at info, for operators."""
    server = start_server()
    process, other_shell = _ingest(tmp_path, server, "--json")

    def notices(text: str) -> list[dict[str, object]]:
        return [json.loads(line) for line in text.splitlines() if line.startswith('{"event"')]

    with process:
        stderr = _wait_for(process, lambda text: bool(notices(text)), "the pause notice")
        paused = notices(stderr)[0]
        assert "[warning" not in stderr and "llm_budget_refused" not in stderr, stderr
        assert paused["event"] == "job.paused" and paused["waiting"] is True
        assert paused["budget"] == {"max_llm_tokens": 10} and paused["index"] == "hotpot"
        assert str(paused["reason"]).startswith("LLM budget is below the cost of one call")
        assert paused["pause"]["limits"] == {"max_llm_tokens": 10}  # type: ignore[index]  # JSON object
        assert str(paused["resume"]).startswith(f"hopindex jobs resume {paused['job_id']} "
                                                "--max-llm-tokens ")
        done = other_shell.invoke(main, ["jobs", "resume", str(paused["job_id"]),
                                         "--max-llm-tokens", "100000000"])
        assert done.exit_code == 0, done.output
        assert process.process.wait(timeout=RUN_TIMEOUT_S) == 0, process.stderr()[-3000:]
    resumed = [n for n in notices(process.stderr()) if n["event"] == "job.resumed"]
    assert resumed and resumed[0]["budget"] == {"max_llm_tokens": 100000000}
    job = json.loads(process.stdout())
    assert job["job_id"] == paused["job_id"] and job["state"] == "succeeded"
