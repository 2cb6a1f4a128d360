"""``hopindex eval --index-method A --index-method B``: one index per index method over the
same documents, each asked its method's default query methods, in one report beside what
building each index cost; a second run reuses the indexes and calls no LLM."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console

from hopindex.api.cli import main
from hopindex.api.client.local import LocalClient
from hopindex.api.evaluate import run_eval_command
from hopindex.api.exit_codes import ExitCode
from hopindex.core.errors import InvalidInputError
from hopindex.core.ids import doc_id_from_title
from hopindex.core.models import JobState
from hopindex.core.settings import Settings
from hopindex.evaluation.build_cost import BuildSource
from hopindex.evaluation.datasets import corpus_from_questions
from hopindex.evaluation.report import EvalReport, read_json
from hopindex.methods.registry import get_index_method
from hopindex.testing.llm_limits import Endpoint
from hopindex.testing.llm_server import LlmTestServer
from tests.conftest import CURIE_CORPUS, ingest_documents, local_client
from tests.methods.indexrag.conftest import llm_settings

pytestmark = pytest.mark.integration

SAMPLE = Path(__file__).resolve().parents[2] / "hopindex" / "sample" / "hotpotqa-100"
COMPARED = ["extractive", "indexrag"]
Server = Callable[..., LlmTestServer]


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    """Two HotpotQA questions: their 20 context paragraphs are the corpus."""
    path = tmp_path / "hotpot2.json"
    path.write_text(json.dumps(json.loads((SAMPLE / "questions.json").read_text())[:2]))
    return path


def run_eval(client: LocalClient, dataset: Path, index: str, index_methods: list[str],
             methods: list[str] | None = None) -> EvalReport:
    # The command the CLI runs: the evaluation drives the client's service itself.
    return run_eval_command(client.service, Console(file=io.StringIO()), index=index,
                            dataset_path=dataset, corpus_paths=[], fmt="hotpotqa",
                            methods=methods or [], limit=0, json_out=None,
                            index_methods=index_methods)


def chat_calls(server: LlmTestServer) -> int:
    return server.stats.count(Endpoint.CHAT)


def expected_rows() -> set[tuple[str, str]]:
    return {(method, query) for method in COMPARED
            for query in get_index_method(method).default_queries}


def test_cli_compares_index_methods_with_their_build_cost(
        tmp_path: Path, dataset: Path, start_server: Server) -> None:
    """One eval builds hq-extractive and hq-indexrag, reports each index method's build
    cost per phase (extractive: no LLM call; indexrag: calls in stage1 and stage2) and
    a row for each of its default query methods, as table, JSON, Markdown and PNG; with
    --curve, each row's build tokens (its index's build) and the cumulative-token PNG."""
    server = start_server()
    cli = CliRunner(env={"HOPINDEX_DATA_DIR": str(tmp_path / "data"),
                         "HOPINDEX_LLM_MODEL": server.config.model,
                         "HOPINDEX_LLM_BASE_URL": server.base_url,
                         "OPENAI_API_KEY": "sk-test"})
    out = tmp_path / "reports" / "compare.json"
    curve = tmp_path / "charts" / "tokens.png"
    result = cli.invoke(main, ["eval", "--index", "hq", "--dataset", str(dataset),
                               "--format", "hotpotqa", "--index-method", "extractive",
                               "--index-method", "indexrag", "--json", str(out),
                               "--curve", str(curve)])
    assert result.exit_code == 0, result.output
    assert "build cost per index method" in result.output
    report = read_json(out)

    assert [(b.index_method, b.index, b.source) for b in report.builds] == [
        ("extractive", "hq-extractive", BuildSource.BUILT),
        ("indexrag", "hq-indexrag", BuildSource.BUILT)]
    extractive, indexrag = report.builds
    assert [p.phase for p in extractive.phases] == [
        "extractive.stage1", "extractive.link", "extractive.stage2"]
    assert extractive.total().llm_calls == 0
    assert extractive.documents == 20 and extractive.wall_s > 0
    stage1, stage2 = indexrag.phase("indexrag.stage1"), indexrag.phase("indexrag.stage2")
    assert stage1 is not None and stage2 is not None
    assert stage1.llm_calls == stage1.done == 20  # one call per document
    assert stage1.prompt_tokens > 0 and stage1.completion_tokens > 0
    assert stage2.llm_calls > 0 and stage2.done > 0
    # Every request the server saw is a build call or a query's, as the report counts them.
    query_calls = sum(m.llm.calls_mean * m.n_questions for m in report.methods if m.llm)
    assert indexrag.total().llm_calls + query_calls == chat_calls(server)

    assert {(m.index_method, m.method) for m in report.methods} == expected_rows()
    assert all(m.n_questions == 2 for m in report.methods)
    assert report.skipped == []
    markdown = out.with_suffix(".md").read_text()
    assert "Build cost per index method" in markdown and "indexrag.stage2" in markdown
    assert out.with_suffix(".png").read_bytes().startswith(b"\x89PNG")

    assert "tokens/q" in result.output and "tokens p95" in result.output
    assert f"wrote {curve} (cumulative tokens, 0 to 1,000 queries)" in result.output
    assert curve.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    built_tokens = {b.index: b.total().prompt_tokens + b.total().completion_tokens
                    for b in report.builds}
    assert built_tokens["hq-indexrag"] > 0 == built_tokens["hq-extractive"]
    assert all(m.build_tokens is not None
               and m.build_tokens.tokens == built_tokens[f"hq-{m.index_method}"]
               for m in report.methods)
    curves = json.loads(out.read_text())["token_curve"]["curves"]
    assert len(curves) == len(report.methods)


def test_bad_curve_options_are_refused_before_anything_runs(
        tmp_path: Path, dataset: Path) -> None:
    """--curve names a .png file and --curve-queries needs --curve and a count of 1 or
    more: each mistake exits naming the option, before any index is built: 65 (bad
    input) for a combination the command refuses, 2 (usage) for a count click
    refuses."""
    cli = CliRunner(env={"HOPINDEX_DATA_DIR": str(tmp_path / "data")})
    base = ["eval", "--index", "bad", "--dataset", str(dataset), "--format", "hotpotqa"]
    for extra, code, message in ((["--curve", str(tmp_path / "c.svg")], ExitCode.DATA_ERROR,
                                  "--curve: the curve is written as PNG"),
                                 (["--curve-queries", "50"], ExitCode.DATA_ERROR,
                                  "--curve-queries: sets how far"),
                                 (["--curve", str(tmp_path / "c.png"), "--curve-queries",
                                   "0"], ExitCode.USAGE, "--curve-queries")):
        result = cli.invoke(main, [*base, *extra])
        assert result.exit_code == code, result.output
        assert message in result.output
    assert not (tmp_path / "c.png").exists()
    with local_client(Settings(data_dir=tmp_path / "data").resolved()) as client:
        assert client.indexes.list_indexes() == []


def test_a_questions_file_of_another_shape_exits_65_saying_what_fits(
        tmp_path: Path) -> None:
    """Questions of one's own shape ({question, answer} lines): eval exits 65 before
    building anything, its one error line naming the file and line, the fields of the
    formats it reads, an example record and the page that documents them."""
    questions = tmp_path / "mine.jsonl"
    questions.write_text('{"question": "Who?", "answer": "Curie"}\n', encoding="utf-8")
    cli = CliRunner(env={"HOPINDEX_DATA_DIR": str(tmp_path / "data")})
    result = cli.invoke(main, ["eval", "--index", "own", "--dataset", str(questions)])
    assert result.exit_code == ExitCode.DATA_ERROR, result.output
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"error: {questions}:1: unknown question format")
    assert '"context": [[title, [sentence, ...]], ...]' in line
    assert "for example {" in line and "docs/evaluation.md" in line
    with local_client(Settings(data_dir=tmp_path / "data").resolved()) as client:
        assert client.indexes.list_indexes() == []


def test_a_rerun_reuses_the_indexes_and_calls_no_llm(
        tmp_path: Path, dataset: Path, start_server: Server) -> None:
    """The second run over the same data ingests nothing and sends the LLM server no
    request: both indexes are reused, their build cost is the first run's jobs', and the
    LLM query methods are answered from the response cache."""
    server = start_server()
    with local_client(llm_settings(tmp_path / "data", server)) as client:
        first = run_eval(client, dataset, "hq", COMPARED)
        calls = chat_calls(server)
        jobs = len(client.jobs.list_jobs())
        second = run_eval(client, dataset, "hq", COMPARED)
        assert len(client.jobs.list_jobs()) == jobs  # no ingest
    assert calls > 0 and chat_calls(server) == calls
    assert [b.source for b in second.builds] == [BuildSource.REUSED] * 2
    assert [b.job_id for b in second.builds] == [b.job_id for b in first.builds]
    assert [b.phases for b in second.builds] == [b.phases for b in first.builds]
    assert {(m.index_method, m.method) for m in second.methods} == expected_rows()
    llm_rows = [m for m in second.methods if m.llm is not None and m.llm.used]
    assert llm_rows  # the indexrag index's query methods answer with the LLM
    assert all(m.llm is not None and m.llm.calls_mean == 0 and m.llm.cache_hits > 0
               for m in llm_rows)
    assert [(m.method, m.recall) for m in second.methods] == [
        (m.method, m.recall) for m in first.methods]


def test_a_reused_index_costs_the_sum_of_the_jobs_that_built_it(
        tmp_path: Path, dataset: Path, start_server: Server) -> None:
    """An index built by two ingests (half the corpus each) and a delete, then reused by
    eval: its build cost sums all three jobs (the tokens the provider answered for both
    ingests, the stage-1 documents of both), says it summed 3 jobs of which kinds, and
    the rows' build tokens are that sum."""
    server = start_server()
    documents = corpus_from_questions(dataset, "hotpotqa")
    with local_client(llm_settings(tmp_path / "data", server)) as client:
        for half in (documents[:10], documents[10:]):
            job = ingest_documents(client, "hq-indexrag", half, method="indexrag")
            assert job.state is JobState.SUCCEEDED, job.reason
        first = documents[0].doc_id or doc_id_from_title(documents[0].title)
        deleted = client.delete_documents("hq-indexrag", [first])
        assert deleted.state is JobState.SUCCEEDED, deleted.reason
        built_tokens = server.stats.prompt_tokens + server.stats.completion_tokens
        report = run_eval(client, dataset, "hq", ["indexrag"])
    (build,) = report.builds
    assert build.source is BuildSource.REUSED and build.documents == 19
    assert build.jobs == {"ingest": 2, "delete": 1}
    assert build.described == "reused; sum of 3 jobs (2 ingest, 1 delete)"
    stage1 = build.phase("indexrag.stage1")
    assert stage1 is not None and stage1.done == stage1.llm_calls == 20
    total = build.total()
    assert total.prompt_tokens + total.completion_tokens == built_tokens > 0
    assert all(m.build_tokens is not None and m.build_tokens.tokens == built_tokens
               and m.build_tokens.jobs == 3 for m in report.methods)


def test_a_rebuilt_index_costs_no_new_llm_call(
        tmp_path: Path, dataset: Path, start_server: Server) -> None:
    """A new index over the same documents is built again, its LLM calls all served by
    the response cache: the build shows zero calls and a cache hit per call made first."""
    server = start_server()
    with local_client(llm_settings(tmp_path / "data", server)) as client:
        first = run_eval(client, dataset, "one", ["indexrag"])
        calls = chat_calls(server)
        again = run_eval(client, dataset, "two", ["indexrag"])
    assert chat_calls(server) == calls
    (built,), (rebuilt,) = first.builds, again.builds
    assert rebuilt.source is BuildSource.BUILT and rebuilt.index == "two-indexrag"
    assert rebuilt.total().llm_calls == 0
    assert rebuilt.total().cache_hits == built.total().llm_calls > 0


def test_an_index_built_with_another_method_is_refused_by_name(
        tmp_path: Path, dataset: Path) -> None:
    """eval --index m --index-method indexrag stops before building anything when
    m-indexrag exists as an extractive index, naming the index and its method."""
    with local_client(Settings(data_dir=tmp_path / "data").resolved()) as client:
        ingest_documents(client, "m-indexrag", CURIE_CORPUS, method="extractive")
        with pytest.raises(InvalidInputError) as refused:
            run_eval(client, dataset, "m", ["extractive", "indexrag"])
        assert [i.name for i in client.indexes.list_indexes()] == ["m-indexrag"]
    assert "'m-indexrag' is built with 'extractive'" in str(refused.value)


def test_without_index_method_one_index_gets_its_default_query_methods(
        tmp_path: Path, dataset: Path) -> None:
    """Without --index-method eval builds INDEX itself (extractive with no LLM) and runs
    the registry's default query methods of its index method, with its build cost."""
    with local_client(Settings(data_dir=tmp_path / "data").resolved()) as client:
        report = run_eval(client, dataset, "solo", [])
    assert [m.method for m in report.methods] == list(
        get_index_method("extractive").default_queries)
    assert [(b.index, b.index_method, b.source) for b in report.builds] == [
        ("solo", "extractive", BuildSource.BUILT)]


def test_a_method_that_cannot_read_the_index_is_noted_not_run(
        tmp_path: Path, dataset: Path) -> None:
    """--method naive --method indexrag on an extractive index runs naive and notes
    indexrag as skipped; when no named method can read any index, nothing is run."""
    with local_client(Settings(data_dir=tmp_path / "data").resolved()) as client:
        report = run_eval(client, dataset, "s", [], ["naive", "indexrag"])
        with pytest.raises(InvalidInputError, match="no --method given can read any index"):
            run_eval(client, dataset, "s", [], ["indexrag"])
    assert [m.method for m in report.methods] == ["naive"]
    assert [(s.method, s.index_method) for s in report.skipped] == [("indexrag", "extractive")]
