"""The README's Python SDK example, run as written: the first ```python block after
the heading ``## Python SDK`` (docs/sdk.md's first one until the README has that
section), in a folder holding the ``corpus/`` it ingests, with embeddings from the
LLM test server so no model loads. What it prints shows the job succeeded and the
passages it found."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

from hopindex.testing.llm_server import LlmTestServer

# The module's LLM test server (a fixture, imported to be used by name).
from tests.api.http.conftest import llm  # noqa: F401
from tests.conftest import CURIE_CORPUS

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parent.parent
HEADING = "## Python SDK"
# A README example is read at a glance: a dozen lines at most.
MAX_LINES = 12


def python_block(text: str, after: str | None = None) -> str | None:
    """The first ```python block of ``text`` after the line ``after`` (anywhere when
    None); None when there is none."""
    if after is not None:
        lines = text.splitlines()
        if after not in lines:
            return None
        text = "\n".join(lines[lines.index(after) + 1:])
    found = re.search(r"^```python\n(.*?)^```$", text, flags=re.MULTILINE | re.DOTALL)
    return found.group(1) if found else None


def sdk_example() -> tuple[str, str]:
    """The example and where it was read."""
    readme = python_block((ROOT / "README.md").read_text(encoding="utf-8"), after=HEADING)
    if readme is not None:
        return readme, "README.md"
    docs = python_block((ROOT / "docs" / "sdk.md").read_text(encoding="utf-8"))
    assert docs is not None, "docs/sdk.md has no ```python block"
    return docs, "docs/sdk.md"


def test_the_example_is_short() -> None:
    code, where = sdk_example()
    assert 0 < len(code.splitlines()) <= MAX_LINES, where
    assert "from hopindex import Client" in code, where


def test_the_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                          llm: LlmTestServer) -> None:  # noqa: F811
    code, where = sdk_example()
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for document in CURIE_CORPUS:
        # A text file's title is its name without the extension.
        (corpus / f"{document.title}.txt").write_text(document.text + "\n",
                                                       encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    for name in ("HOPINDEX_DATA_DIR", "HOPINDEX_LLM_MODEL", "HOPINDEX_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOPINDEX_EMBEDDER_URL", f"openai://{llm.config.embedding_model}")
    monkeypatch.setenv("HOPINDEX_LLM_BASE_URL", llm.base_url)
    monkeypatch.setenv("HOPINDEX_LLM_API_KEY", "test-key")

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, where, "exec"), {"__name__": "__readme__"})
    output = printed.getvalue()
    assert "succeeded" in output, output
    assert "Marie Curie" in output, output
    assert (tmp_path / ".hopindex").is_dir()  # Client.local()'s default data dir
