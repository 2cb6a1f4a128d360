"""API tests share the CLI runner and the Curie corpus file; those that build LLM-mode
indexes start test servers like the method tests."""

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.conftest import CURIE_CORPUS

# start_server is a fixture: imported so these tests start LLM test servers the same way.
from tests.methods.indexrag.conftest import start_server  # noqa: F401


@pytest.fixture
def cli(tmp_path: Path) -> CliRunner:
    """The CLI over a data directory of this test's own."""
    return CliRunner(env={"HOPINDEX_DATA_DIR": str(tmp_path / "data")})


def corpus_file(tmp_path: Path) -> Path:
    """The Curie corpus as a JSON Lines file, ids d0, d1, …"""
    path = tmp_path / "curie.jsonl"
    path.write_text("\n".join(json.dumps({"id": f"d{i}", "title": d.title, "text": d.text})
                              for i, d in enumerate(CURIE_CORPUS)) + "\n")
    return path
