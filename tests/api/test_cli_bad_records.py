"""The CLI reports hostile records and unknown ids as errors on the job (exit 3, or 66
when a delete finds none of its ids), never with a traceback, and leaves no job
running."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from hopindex.api.cli import main
from tests.conftest import CURIE_CORPUS

pytestmark = pytest.mark.integration


def _jobs(cli: CliRunner) -> list[dict[str, object]]:
    listed = cli.invoke(main, ["jobs", "--json"])
    assert listed.exit_code == 0, listed.output
    jobs: list[dict[str, object]] = json.loads(listed.stdout)
    return jobs


def test_a_record_with_an_unstorable_metadata_value_fails_alone(cli: CliRunner,
                                                                tmp_path: Path) -> None:
    """An unpaired surrogate in a metadata value: exit 3 naming file, line and field;
    the good record is ingested and the job succeeded."""
    corpus = tmp_path / "c.jsonl"
    good = CURIE_CORPUS[0]
    corpus.write_text(json.dumps({"id": "good", "title": good.title, "text": good.text})
                      + '\n{"id": "bad", "text": "Some text.", "metadata": '
                        '{"author": "\\ud800"}}\n', encoding="utf-8")
    result = cli.invoke(main, ["ingest", "--index", "curie", "--json", str(corpus)])
    assert result.exit_code == 3, result.output
    assert isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    job = json.loads(result.stdout)
    assert job["state"] == "succeeded"
    assert [e["where"] for e in job["errors"]] == [f"{corpus}:2:metadata.author"]
    assert [j["state"] for j in _jobs(cli)] == ["succeeded"]


def test_deleting_ids_none_of_which_exist_lists_them(cli: CliRunner, tmp_path: Path) -> None:
    """A delete of unknown ids only: the job succeeds naming each id, and the command
    exits 66 (nothing was found to delete), with no traceback; the index can then be
    deleted."""
    corpus = tmp_path / "c.jsonl"
    good = CURIE_CORPUS[0]
    corpus.write_text(json.dumps({"id": "good", "title": good.title, "text": good.text}) + "\n",
                      encoding="utf-8")
    assert cli.invoke(main, ["ingest", "--index", "curie", str(corpus)]).exit_code == 0
    result = cli.invoke(main, ["delete", "--index", "curie", "--json", "ghost-1", "ghost-2"])
    assert result.exit_code == 66, result.output
    assert isinstance(result.exception, SystemExit)
    job = json.loads(result.stdout)
    assert job["state"] == "succeeded"
    assert [e["item"] for e in job["errors"]] == ["ghost-1", "ghost-2"]
    assert all(j["state"] == "succeeded" for j in _jobs(cli))
    deleted = cli.invoke(main, ["indexes", "delete", "curie", "--yes"])
    assert deleted.exit_code == 0, deleted.output
    assert cli.invoke(main, ["indexes", "list", "--json"]).stdout.strip() == "[]"
