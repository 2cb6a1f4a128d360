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
from tests.conftest import CURIE_CORPUS

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
    assert summary["mentions"] > 0 and summary["bridges"] > 0
    with gzip.open(exported, "rt") as handle:
        lines = [json.loads(line) for line in handle]
    assert [lines[0]["type"], lines[-1]["type"]] == ["header", "end"]
    source_job = run(source, "ingest", "--index", "curie", "--json", str(more))
    after = answers(source, questions=(QUESTIONS[0],))

    imported = run(target, "import", str(exported))
    assert imported == summary
    assert answers(target) == before
    target_job = run(target, "ingest", "--index", "curie", "--json", str(more))
    for key in ("bridge_entities_recomputed", "bridge_entities_removed", "units_embedded"):
        assert target_job[key] == source_job[key], key
    # Re-ingesting the imported documents is a no-op: their hashes came along.
    again = run(target, "ingest", "--index", "curie", "--json", str(first))
    assert again["counts"]["stage1"]["skipped"] == 5
    assert answers(target, questions=(QUESTIONS[0],)) == after


def test_import_refuses_what_would_corrupt_an_index(tmp_path: Path) -> None:
    """An existing index, another embedder, a truncated or foreign file: exit 2 with
    the reason, nothing imported."""
    source = CliRunner(env={"HOPINDEX_DATA_DIR": str(tmp_path / "source")})
    run(source, "ingest", "--index", "curie", "--json",
        str(corpus_file(tmp_path / "c.jsonl", [0, 2])))
    exported = tmp_path / "curie.jsonl"
    run(source, "export", "--index", "curie", str(exported))

    existing = source.invoke(main, ["import", str(exported)])
    assert existing.exit_code == 2 and "already exists" in existing.output

    other_model = CliRunner(env={"HOPINDEX_DATA_DIR": str(tmp_path / "t1"),
                                 "HOPINDEX_EMBEDDER_URL": "openai://text-embedding-3-small"})
    refused = other_model.invoke(main, ["import", str(exported)])
    assert refused.exit_code == 2 and "HOPINDEX_EMBEDDER_URL" in refused.output

    truncated = tmp_path / "truncated.jsonl"
    truncated.write_text("".join(exported.read_text().splitlines(keepends=True)[:-1]))
    fresh = CliRunner(env={"HOPINDEX_DATA_DIR": str(tmp_path / "t2")})
    cut = fresh.invoke(main, ["import", str(truncated)])
    assert cut.exit_code == 2 and "truncated" in cut.output
    listed = fresh.invoke(main, ["query", "--index", "curie", "Warsaw"])
    assert listed.exit_code == 2 and "no index 'curie'" in listed.output

    foreign = tmp_path / "foreign.jsonl"
    foreign.write_text('{"id": "d1", "text": "not an export"}\n')
    wrong = fresh.invoke(main, ["import", str(foreign)])
    assert wrong.exit_code == 2 and f"{foreign}:1" in wrong.output

    busy = source.invoke(main, ["export", "--index", "nope", str(tmp_path / "x.jsonl")])
    assert busy.exit_code == 2 and "no index 'nope'" in busy.output
