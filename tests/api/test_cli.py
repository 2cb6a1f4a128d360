"""The ``hopindex`` CLI drives ingest, query, jobs, delete and eval through the real service."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from hopindex.api.cli import main
from hopindex.api.exit_codes import ExitCode
from hopindex.methods.registry import fitting_queries, method_variables
from hopindex.testing.llm_limits import Endpoint
from hopindex.testing.llm_server import LlmTestServer
from tests.api.conftest import corpus_file
from tests.conftest import CURIE_CORPUS
from tests.plugin_method.fixtures import sentences_plugin  # noqa: F401  # a fixture

pytestmark = pytest.mark.integration

SHARED_QUESTIONS = Path(__file__).resolve().parents[2] / "hopindex" / "sample" / "hotpotqa-100"


def test_ingest_query_jobs_delete_round_trip(cli: CliRunner, tmp_path: Path) -> None:
    """ingest → query --json → jobs → delete, each exiting 0 with what it promises."""
    ingested = cli.invoke(main, ["ingest", "--index", "curie", "--json",
                                 str(corpus_file(tmp_path))])
    assert ingested.exit_code == 0, ingested.output
    job = json.loads(ingested.stdout)
    assert job["state"] == "succeeded"
    assert job["counts"]["extractive.stage1"]["done"] == len(CURIE_CORPUS)

    answered = cli.invoke(main, ["query", "--index", "curie", "--json", "--k", "3",
                                 "Where was Marie Curie born?"])
    assert answered.exit_code == 0, answered.output
    result = json.loads(answered.stdout)
    assert len(result["passages"]) == 3
    assert {"doc_id", "title", "text", "via"} <= result["passages"][0].keys()

    listed = cli.invoke(main, ["jobs"])
    assert job["job_id"] in listed.output
    shown = cli.invoke(main, ["jobs", job["job_id"]])
    assert shown.exit_code == 0 and "extractive.stage1" in shown.output

    deleted = cli.invoke(main, ["delete", "--index", "curie", "--json", "d0"])
    assert deleted.exit_code == 0, deleted.output
    assert json.loads(deleted.stdout)["kind"] == "delete"
    again = cli.invoke(main, ["query", "--index", "curie", "--json", "--k", "5", "Marie Curie"])
    assert "d0" not in {p["doc_id"] for p in json.loads(again.stdout)["passages"]}


def test_partial_failure_exits_3_and_names_the_line(cli: CliRunner, tmp_path: Path) -> None:
    """A malformed line makes ingest exit 3 and print the file and line; the rest lands."""
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps({"id": "a", "title": "A", "text": "Alpha text."}) + "\n{oops\n")
    result = cli.invoke(main, ["ingest", "--index", "part", "--quiet", str(path)])
    assert result.exit_code == ExitCode.PARTIAL
    assert "c.jsonl:2" in result.output


def test_bad_names_unknown_indexes_and_bad_options_exit_with_their_codes(
        cli: CliRunner) -> None:
    """A bad index name exits 65 (bad input), an unknown index 66 (not found), an
    out-of-range option 2 (usage), each naming the problem, not with a traceback."""
    bad = cli.invoke(main, ["query", "--index", "../x", "q"])
    assert bad.exit_code == ExitCode.DATA_ERROR
    assert "invalid index name" in bad.output
    missing = cli.invoke(main, ["query", "--index", "nothing", "q"])
    assert missing.exit_code == ExitCode.NOT_FOUND
    assert "no index 'nothing'" in missing.output
    method = cli.invoke(main, ["query", "--index", "nothing", "--k", "0", "q"])
    assert method.exit_code == ExitCode.USAGE


def test_eval_compares_methods_and_writes_reports(cli: CliRunner, tmp_path: Path) -> None:
    """eval ingests the questions' own contexts when the index is empty and writes
    JSON, Markdown and PNG reports with each method's Recall@k."""
    questions = json.loads((SHARED_QUESTIONS / "questions.json").read_text())[:3]
    dataset = tmp_path / "hotpot3.json"
    dataset.write_text(json.dumps(questions))
    out = tmp_path / "reports" / "hotpot3.json"
    result = cli.invoke(main, ["eval", "--index", "h3", "--dataset", str(dataset),
                               "--format", "hotpotqa", "--method", "naive",
                               "--method", "extractive", "--json", str(out)])
    assert result.exit_code == 0, result.output
    assert "R@5" in result.output
    report = json.loads(out.read_text())
    assert [m["method"] for m in report["methods"]] == ["naive", "extractive"]
    assert all(0.0 <= m["recall"]["5"] <= 1.0 for m in report["methods"])
    assert out.with_suffix(".md").read_text().count("|") > 10
    assert out.with_suffix(".png").read_bytes().startswith(b"\x89PNG")


def test_llm_mode_is_only_environment_variables(tmp_path: Path) -> None:
    """HOPINDEX_LLM_MODEL + HOPINDEX_LLM_BASE_URL + OPENAI_API_KEY turn the same commands
    into IndexRAG: ingest builds AKUs and bridging facts, query answers with one call and
    shows its usage, jobs shows LLM usage per stage."""
    from hopindex.testing.llm_server import LlmServerConfig, LlmTestServer

    with LlmTestServer(LlmServerConfig(api_key="sk-test")) as server:
        cli = CliRunner(env={"HOPINDEX_DATA_DIR": str(tmp_path / "data"),
                             "HOPINDEX_LLM_MODEL": server.config.model,
                             "HOPINDEX_LLM_BASE_URL": server.base_url,
                             "OPENAI_API_KEY": "sk-test"})
        ingested = cli.invoke(main, ["ingest", "--index", "curie", "--json",
                                     str(corpus_file(tmp_path))])
        assert ingested.exit_code == 0, ingested.output
        job = json.loads(ingested.stdout)
        assert job["llm"]["stages"]["indexrag.stage1"]["calls"] == len(CURIE_CORPUS)
        answered = cli.invoke(main, ["query", "--index", "curie", "--json",
                                     "Where was Marie Curie born?"])
        assert answered.exit_code == 0, answered.output
        result = json.loads(answered.stdout)
        assert result["method"] == "indexrag" and result["answer"]
        assert result["usage"]["llm_calls"] == 1
        shown = cli.invoke(main, ["jobs", job["job_id"]])
        assert "LLM indexrag.stage1: 6 calls" in shown.output
        refused = cli.invoke(main, ["ingest", "--index", "curie", "--method", "extractive",
                                    str(corpus_file(tmp_path))])
        assert refused.exit_code == ExitCode.DATA_ERROR
        assert "built with 'indexrag'" in refused.output


def test_indexrag_without_an_llm_names_the_setting(cli: CliRunner, tmp_path: Path) -> None:
    """Asking for an IndexRAG index with no LLM configured exits 78 (configuration)
    naming the variable."""
    refused = cli.invoke(main, ["ingest", "--index", "x", "--method", "indexrag",
                                str(corpus_file(tmp_path))])
    assert refused.exit_code == ExitCode.CONFIG
    assert "HOPINDEX_LLM_MODEL" in refused.output


def test_repair_check_and_run(cli: CliRunner, tmp_path: Path) -> None:
    """`repair --check` shows the status and what is outstanding; `repair` runs a repair
    job that redoes a document left unfinished, and the index reads ready after."""
    from dataclasses import replace

    from hopindex import Client
    from hopindex.core.settings import Settings

    assert cli.invoke(main, ["ingest", "--index", "curie", "--quiet",
                             str(corpus_file(tmp_path))]).exit_code == 0
    with Client.local(settings=Settings(data_dir=tmp_path / "data").resolved()) as client:
        # As a job that died before its finalize step leaves a document.
        state = client.service.backends.state
        [doc] = state.get_documents("curie", ["d1"])
        state.put_documents([replace(doc, content_hash="")])
    checked = cli.invoke(main, ["repair", "--index", "curie", "--check", "--json"])
    assert checked.exit_code == 0, checked.output
    shown = json.loads(checked.stdout)
    assert shown["status"] == "partial" and shown["outstanding"]["documents"] == 1
    repaired = cli.invoke(main, ["repair", "--index", "curie", "--json"])
    assert repaired.exit_code == 0, repaired.output
    job = json.loads(repaired.stdout)
    assert (job["kind"], job["state"]) == ("repair", "succeeded")
    assert job["counts"]["extractive.stage1"] == {"total": 1, "done": 1, "failed": 0,
                                                  "skipped": 0}
    again = cli.invoke(main, ["repair", "--index", "curie", "--check"])
    assert "index curie: ready" in again.output


def test_a_query_method_that_cannot_read_the_index_exits_65_naming_those_that_can(
        tmp_path: Path, start_server: Callable[..., LlmTestServer]) -> None:
    """naive (passages) of an IndexRAG index (AKUs and bridges), and indexrag (AKUs) of an
    extractive index (passages and bridges), are refused before anything runs: exit 65,
    the message, on one line of stderr, naming the query methods that can read that
    index."""
    server = start_server()
    cli = CliRunner(env={"HOPINDEX_DATA_DIR": str(tmp_path / "data"),
                         "HOPINDEX_LLM_MODEL": server.config.model,
                         "HOPINDEX_LLM_BASE_URL": server.base_url,
                         "HOPINDEX_LLM_API_KEY": "test-key"})
    corpus = str(corpus_file(tmp_path))
    for index, method in (("rag", "indexrag"), ("ext", "extractive")):
        built = cli.invoke(main, ["ingest", "--index", index, "--method", method, "--quiet",
                                  corpus])
        assert built.exit_code == 0, built.output
    calls = server.stats.count(Endpoint.CHAT)
    for index, method, built_with in (("rag", "naive", "indexrag"),
                                      ("ext", "indexrag", "extractive")):
        refused = cli.invoke(main, ["query", "--index", index, "--method", method,
                                    "Where was Marie Curie born?"])
        fitting = fitting_queries(built_with)
        assert method not in fitting and built_with in fitting
        assert refused.exit_code == ExitCode.DATA_ERROR, refused.output
        [line] = refused.stderr.splitlines()
        assert line.startswith("error: ") and f"methods that fit: {', '.join(fitting)}" in line
        assert "Traceback" not in refused.output
    assert server.stats.count(Endpoint.CHAT) == calls  # refused before any LLM call


def test_config_lists_every_method_setting_with_its_effective_value(tmp_path: Path) -> None:
    """`hopindex config` shows each method's HOPINDEX_<METHOD>_* variables after the core
    settings, given ones as given and the rest at their defaults; a bad method value
    exits 78 (configuration) naming the variable."""
    env = {"HOPINDEX_DATA_DIR": str(tmp_path), "HOPINDEX_EXTRACTIVE_TAU": "7"}
    shown = CliRunner().invoke(main, ["config", "--json"], env=env)
    assert shown.exit_code == 0, shown.output
    values = json.loads(shown.stdout)
    variables = method_variables()
    assert set(variables) <= set(values) and values["HOPINDEX_EXTRACTIVE_TAU"] == "7"
    for variable, (_method, field) in variables.items():
        if variable != "HOPINDEX_EXTRACTIVE_TAU":
            default = field.default
            shown_default = str(default).lower() if isinstance(default, bool) else str(default)
            assert values[variable] == shown_default, variable
    assert list(values)[-len(variables):] == sorted(variables)
    plain = CliRunner().invoke(main, ["config"], env=env)
    assert "HOPINDEX_EXTRACTIVE_TAU=7\n" in plain.output
    bad = CliRunner().invoke(main, ["config"], env={**env, "HOPINDEX_EXTRACTIVE_TAU": "x"})
    assert bad.exit_code == ExitCode.CONFIG and "HOPINDEX_EXTRACTIVE_TAU" in bad.output


@pytest.mark.usefixtures("sentences_plugin")
def test_rebuild_check_and_run(cli: CliRunner, tmp_path: Path) -> None:
    """`rebuild --check` shows how stale an index's tree built on request is; `rebuild`
    runs a rebuild job (listed by `jobs` under its kind) after which the tree reads
    current; an index whose method builds no tree on request exits 65 naming the
    method."""
    def corpus(name: str, beta: str) -> str:
        path = tmp_path / name
        texts = {"a": "Paris is in France.", "b": beta, "c": "Rivers flow."}
        path.write_text("".join(json.dumps({"id": k, "title": k.upper(), "text": v}) + "\n"
                                for k, v in texts.items()))
        return str(path)

    assert cli.invoke(main, ["ingest", "--index", "lazy", "--method", "lazy_sentences",
                             "--quiet", corpus("one.jsonl", "The river is the Seine.")]
                      ).exit_code == 0
    assert cli.invoke(main, ["ingest", "--index", "lazy", "--quiet",
                             corpus("two.jsonl", "The river is the Marne.")]).exit_code == 0
    checked = cli.invoke(main, ["rebuild", "--index", "lazy", "--check", "--json"])
    assert checked.exit_code == 0, checked.output
    [level] = json.loads(checked.stdout)["levels"]
    assert (level["phase"], level["state"], level["changed_since_build"]) == (
        "lazy_sentences.tree", "stale", 1)
    shown = cli.invoke(main, ["rebuild", "--index", "lazy", "--check"])
    assert "lazy_sentences.tree: stale" in shown.output
    assert "changed since: 1 documents (33%)" in shown.output

    rebuilt = cli.invoke(main, ["rebuild", "--index", "lazy", "--json"])
    assert rebuilt.exit_code == 0, rebuilt.output
    job = json.loads(rebuilt.stdout)
    assert (job["kind"], job["state"]) == ("rebuild", "succeeded")
    assert "rebuild" in cli.invoke(main, ["jobs", "--index", "lazy"]).output
    again = cli.invoke(main, ["repair", "--index", "lazy", "--check"])
    assert "lazy_sentences.tree: current" in again.output

    assert cli.invoke(main, ["ingest", "--index", "curie", "--quiet",
                             str(corpus_file(tmp_path))]).exit_code == 0
    refused = cli.invoke(main, ["rebuild", "--index", "curie"])
    assert refused.exit_code == ExitCode.DATA_ERROR
    assert "built with 'extractive'" in refused.output and "nothing to rebuild" in refused.output
