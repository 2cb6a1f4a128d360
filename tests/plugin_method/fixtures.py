"""Install ``tests.plugin_method`` as a plugin: an entry point in a ``*.dist-info`` folder.

The folder goes on ``sys.path`` (this process) and on ``PYTHONPATH`` (worker
processes started after it), which is how ``importlib.metadata`` finds an installed
distribution; the registry this process caches is dropped before and after, so it
is filled again with the plugin in it, and without it once the test ends.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

import tests
from hopindex.methods import registry as registry_module
from hopindex.testing.llm_server import LlmServerConfig, LlmTestServer

DISTRIBUTION = "hopindex_sentences_test-0.0.1"
REPO_ROOT = Path(tests.__file__).resolve().parents[1]


def write_distribution(site: Path) -> Path:
    """A minimal installed distribution whose one entry point registers ``sentences``."""
    info = site / f"{DISTRIBUTION}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: hopindex-sentences-test\n"
                                   "Version: 0.0.1\n")
    (info / "entry_points.txt").write_text(
        f"[{registry_module.ENTRY_POINT_GROUP}]\nsentences = tests.plugin_method:register\n")
    return site


@pytest.fixture
def sentences_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The plugin installed for this process and the workers it starts; yields the
    folder that holds its distribution."""
    site = write_distribution(tmp_path / "site")
    monkeypatch.syspath_prepend(str(site))
    paths = [str(site), str(REPO_ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(paths))
    monkeypatch.setattr(registry_module, "_registry", None)
    yield site
    # monkeypatch puts back the registry cached before the test (or None).


@pytest.fixture
def server() -> Iterator[LlmTestServer]:
    """The LLM test server, for its embeddings."""
    started = LlmTestServer(LlmServerConfig())
    started.start_in_thread()
    yield started
    started.stop()
