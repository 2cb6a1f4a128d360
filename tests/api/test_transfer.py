"""``hopindex export`` / ``hopindex import`` move an index between two data directories
with nothing lost: the same answers, and later ingests stay incremental."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from hopindex.api.cli import main
from hopindex.api.exit_codes import ExitCode
from tests.conftest import CURIE_CORPUS
from tests.plugin_method.fixtures import sentences_plugin  # noqa: F401  # a fixture

pytestmark = pytest.mark.integration

QUESTIONS = ["Where was Marie Curie born?", "Who taught at the University of Paris?"]


def corpus_file(path: Path, documents: list[int]) -> Path:
    path.write_text("\n".join(json.dumps({"id": f"d{i}", "title": CURIE_CORPUS[i].title,
                                          "text": CURIE_CORPUS[i].text})
                              for i in documents) + "\n")
    return path


def run(cli: CliRunner, *args: str) -> Any:
    result = cli.invoke(main, list(args))
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def answers(cli: CliRunner, *extra: str, questions: tuple[str, ...] = tuple(QUESTIONS)
            ) -> list[list[tuple[str, float, str]]]:
    """Each question's passages as (document, score, reached via) in rank order."""
    found = []
    for question in questions:
        result = run(cli, "query", "--index", "curie", "--json", "--k", "4", *extra, question)
        found.append([(p["doc_id"], p["score"], p["via"]["kind"]) for p in result["passages"]])
    return found


def test_export_import_round_trip_then_incremental_ingest(tmp_path: Path) -> None:
    """An index imported into an empty data dir answers exactly like the original, and
    ingesting one more document there recomputes the same bridges as at the source."""
    source = CliRunner(env={"HOPINDEX_DATA_DIR": str(tmp_path / "source")})
    target = CliRunner(env={"HOPINDEX_DATA_DIR": str(tmp_path / "target")})
    first = corpus_file(tmp_path / "first.jsonl", [0, 1, 2, 3, 4])
    more = corpus_file(tmp_path / "more.jsonl", [5])
    exported = tmp_path / "curie.jsonl.gz"

    run(source, "ingest", "--index", "curie", "--json", str(first))
    before = answers(source)
    summary = run(source, "export", "--index", "curie", str(exported))
    assert summary["documents"] == 5
    assert summary["units"] == summary["vectors"] > 5  # passages and bridges, all embedded
    assert summary["mentions"] > 0 and summary["groups"] > 0
    assert summary["records"] == 5  # each document's NLP analysis
    with gzip.open(exported, "rt") as handle:
        lines = [json.loads(line) for line in handle]
    assert [lines[0]["type"], lines[-1]["type"]] == ["header", "end"]
    source_job = run(source, "ingest", "--index", "curie", "--json", str(more))
    after = answers(source, questions=(QUESTIONS[0],))

    imported = run(target, "import", str(exported))
    assert imported == summary
    assert answers(target) == before
    target_job = run(target, "ingest", "--index", "curie", "--json", str(more))
    for key in ("groups_rebuilt", "groups_removed", "units_embedded"):
        assert target_job[key] == source_job[key], key
    # Re-ingesting the imported documents is a no-op: their hashes came along.
    again = run(target, "ingest", "--index", "curie", "--json", str(first))
    assert again["counts"]["extractive.stage1"]["skipped"] == 5
    assert answers(target, questions=(QUESTIONS[0],)) == after


def as_version_1(lines: list[dict[str, Any]], groups: str, records: str
                 ) -> list[dict[str, Any]]:
    """An export as the previous version wrote it: each document's analysis on its
    line (the record of namespace ``records`` without the hash later versions add),
    one bridge line per group of namespace ``groups``, no group or record lines."""
    analyses = {line["key"]: {k: line["value"][k] for k in ("s", "e")} for line in lines
                if line["type"] == "record" and line["namespace"] == records}
    bridges = [{"type": "bridge", "entity": line["key"], "unit_ids": line["unit_ids"]}
               for line in lines if line["type"] == "group" and line["namespace"] == groups]
    old: list[dict[str, Any]] = []
    for line in lines:
        if line["type"] == "header":
            old.append({**line, "version": 1})
        elif line["type"] == "document":
            old.append({**line, "analysis": analyses.get(line["doc_id"])})
        elif line["type"] == "end":
            counts = {k: line["counts"][k]
                      for k in ("index", "documents", "units", "vectors", "mentions")}
            old.extend([*bridges, {"type": "end", "counts": {**counts,
                                                             "bridges": len(bridges)}}])
        elif line["type"] not in ("group", "record"):
            old.append(line)
    return old


def index_state(data_dir: Path, namespace: str, records: str
                ) -> tuple[dict[str, Any], dict[str, Any]]:
    """The index's groups of ``namespace`` and its documents' records of ``records``."""
    from hopindex.core.settings import Settings
    from tests.conftest import local_client

    with local_client(Settings(data_dir=data_dir).resolved()) as client:
        state = client.service.backends.state
        groups = state.get_groups("curie", namespace, state.list_group_keys("curie", namespace))
        doc_ids = sorted(state.document_hashes("curie"))
        return groups, state.get_records("curie", records, doc_ids)


def test_a_version_1_export_imports_into_groups_and_records(tmp_path: Path) -> None:
    """A file of the previous format (analyses on document lines, bridge lines) imports
    as the stores' own upgrade would have moved it: each bridge a group of "bridge"
    whose members are its units' documents, each analysis a record of
    "extractive.analysis"; the index answers as the original, and a later ingest
    rebuilds the same groups as at the source."""
    # The namespaces the previous version's data lands in (what the store upgrades use).
    from hopindex.backends.state.groups import ANALYSIS_NAMESPACE, BRIDGE_NAMESPACE

    source = CliRunner(env={"HOPINDEX_DATA_DIR": str(tmp_path / "source")})
    target = CliRunner(env={"HOPINDEX_DATA_DIR": str(tmp_path / "target")})
    run(source, "ingest", "--index", "curie", "--json",
        str(corpus_file(tmp_path / "first.jsonl", [0, 1, 2, 3, 4])))
    before = answers(source)
    exported = tmp_path / "curie.jsonl"
    summary = run(source, "export", "--index", "curie", str(exported))
    lines = [json.loads(line) for line in exported.read_text().splitlines()]
    old = tmp_path / "curie-v1.jsonl"
    old.write_text("".join(json.dumps(line) + "\n" for line in as_version_1(
        lines, BRIDGE_NAMESPACE, ANALYSIS_NAMESPACE)))

    imported = run(target, "import", str(old))
    assert imported == summary
    assert answers(target) == before
    source_groups, source_records = index_state(tmp_path / "source", BRIDGE_NAMESPACE,
                                                ANALYSIS_NAMESPACE)
    target_groups, target_records = index_state(tmp_path / "target", BRIDGE_NAMESPACE,
                                                ANALYSIS_NAMESPACE)
    assert source_groups and target_groups == source_groups
    assert len(target_records) == 5
    assert target_records == {doc_id: {k: record[k] for k in ("s", "e")}
                              for doc_id, record in source_records.items()}
    more = corpus_file(tmp_path / "more.jsonl", [5])
    source_job = run(source, "ingest", "--index", "curie", "--json", str(more))
    target_job = run(target, "ingest", "--index", "curie", "--json", str(more))
    for key in ("groups_rebuilt", "groups_removed", "units_embedded"):
        assert target_job[key] == source_job[key], key


def test_import_refuses_what_would_corrupt_an_index(tmp_path: Path) -> None:
    """An existing index, another embedder, a truncated or foreign file, a line of the
    previous format in a file of this one: exit with the reason (65 bad input, 78 for the
    embedder setting), nothing imported; an unknown index exits 66."""
    source = CliRunner(env={"HOPINDEX_DATA_DIR": str(tmp_path / "source")})
    run(source, "ingest", "--index", "curie", "--json",
        str(corpus_file(tmp_path / "c.jsonl", [0, 2])))
    exported = tmp_path / "curie.jsonl"
    run(source, "export", "--index", "curie", str(exported))

    existing = source.invoke(main, ["import", str(exported)])
    assert existing.exit_code == ExitCode.DATA_ERROR and "exists here" in existing.output

    other_model = CliRunner(env={"HOPINDEX_DATA_DIR": str(tmp_path / "t1"),
                                 "HOPINDEX_EMBEDDER_URL": "openai://text-embedding-3-small"})
    refused = other_model.invoke(main, ["import", str(exported)])
    assert refused.exit_code == ExitCode.CONFIG and "HOPINDEX_EMBEDDER_URL" in refused.output

    truncated = tmp_path / "truncated.jsonl"
    truncated.write_text("".join(exported.read_text().splitlines(keepends=True)[:-1]))
    fresh = CliRunner(env={"HOPINDEX_DATA_DIR": str(tmp_path / "t2")})
    cut = fresh.invoke(main, ["import", str(truncated)])
    assert cut.exit_code == ExitCode.DATA_ERROR and "truncated" in cut.output
    listed = fresh.invoke(main, ["query", "--index", "curie", "Warsaw"])
    assert listed.exit_code == ExitCode.NOT_FOUND and "no index 'curie'" in listed.output

    stray = tmp_path / "stray.jsonl"
    held = exported.read_text().splitlines(keepends=True)
    stray.write_text("".join([*held[:-1], '{"type": "bridge", "entity": "x", "unit_ids": []}\n',
                              held[-1]]))
    mixed = fresh.invoke(main, ["import", str(stray)])
    assert mixed.exit_code == ExitCode.DATA_ERROR and f"{stray}:{len(held)}" in mixed.output

    foreign = tmp_path / "foreign.jsonl"
    foreign.write_text('{"id": "d1", "text": "not an export"}\n')
    wrong = fresh.invoke(main, ["import", str(foreign)])
    assert wrong.exit_code == ExitCode.DATA_ERROR and f"{foreign}:1" in wrong.output

    busy = source.invoke(main, ["export", "--index", "nope", str(tmp_path / "x.jsonl")])
    assert busy.exit_code == ExitCode.NOT_FOUND and "no index 'nope'" in busy.output


@pytest.mark.usefixtures("sentences_plugin")
def test_the_build_state_of_a_tree_built_on_request_moves_with_the_index(
        tmp_path: Path) -> None:
    """An index whose tree is stale (one document changed since its build) reads the same
    after export and import: built by the same job, stale by the same document, so the
    imported index is not built again from scratch by its next ingest."""
    source = CliRunner(env={"HOPINDEX_DATA_DIR": str(tmp_path / "source")})
    target = CliRunner(env={"HOPINDEX_DATA_DIR": str(tmp_path / "target")})
    first = corpus_file(tmp_path / "first.jsonl", [0, 1, 2])
    changed = tmp_path / "changed.jsonl"
    changed.write_text(json.dumps({"id": "d1", "title": CURIE_CORPUS[1].title,
                                   "text": "Pierre Curie was a physicist."}) + "\n")
    run(source, "ingest", "--index", "curie", "--method", "lazy_sentences", "--json",
        str(first))
    run(source, "ingest", "--index", "curie", "--json", str(changed))
    [level] = run(source, "repair", "--index", "curie", "--check", "--json")["levels"]
    assert (level["state"], level["changed_since_build"]) == ("stale", 1)
    exported = tmp_path / "curie.jsonl"
    summary = run(source, "export", "--index", "curie", str(exported))
    assert summary["records"] == 1  # the tree's build state: the method keeps no others
    run(target, "import", str(exported))
    assert run(target, "repair", "--index", "curie", "--check", "--json")["levels"] == [level]
