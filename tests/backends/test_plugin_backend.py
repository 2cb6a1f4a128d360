"""A third-party backend, found only through the ``hopindex.backends`` entry points, is
opened from its URL like a built-in one, passes the shipped ``VectorStore`` contract
and reads its own ``HOPINDEX_MEMVEC_*`` settings."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from hopindex.backends import plugins
from hopindex.backends.plugin import BackendRole
from hopindex.backends.protocols import VectorStore
from hopindex.backends.registry import Backends, embedded_engine_folders, open_vector_store
from hopindex.core.errors import BackendError, ConfigError
from hopindex.methods.registry import load_settings
from hopindex.testing.contracts import VectorStoreContract
from hopindex.testing.contracts.vector_store import axis, record
from tests.plugin_backend.fixtures import memvec_plugin  # noqa: F401  # a fixture
from tests.plugin_backend.memvec import MemoryVectorStore, MemvecSettings, forget_space

with_plugin = pytest.mark.usefixtures("memvec_plugin")


@pytest.fixture
def space() -> Iterator[str]:
    name = f"space-{uuid.uuid4().hex[:12]}"
    yield name
    forget_space(name)


@with_plugin
class TestMemvecContract(VectorStoreContract):
    """The shipped suite, run on stores the registry opened from ``memvec://`` URLs."""

    persistent = True

    @pytest.fixture
    def store(self, space: str) -> Iterator[VectorStore]:
        store = open_vector_store(f"memvec://{space}")
        yield store
        store.close()

    @pytest.fixture
    def reopen_store(self, space: str) -> Callable[[], VectorStore]:
        return lambda: open_vector_store(f"memvec://{space}")


@with_plugin
def test_the_entry_point_registers_the_scheme(tmp_path: Path, space: str) -> None:
    """The distribution's entry point is visible to importlib.metadata; the registry it
    fills serves memvec:// for vectors only, and a process whose HOPINDEX_VECTOR_URL
    names it opens the plugin's store (no embedded engine to route)."""
    found = {e.name: e.value for e in entry_points(group=plugins.ENTRY_POINT_GROUP)}
    assert found.get("memvec") == "tests.plugin_backend:register"
    registry = plugins.backend_registry()
    assert "memvec" in registry.schemes(BackendRole.VECTORS)
    assert "memvec" not in registry.schemes(BackendRole.KEYWORDS)
    assert isinstance(open_vector_store(f"memvec://{space}"), MemoryVectorStore)

    settings = load_settings({"HOPINDEX_DATA_DIR": str(tmp_path),
                              "HOPINDEX_VECTOR_URL": f"memvec://{space}"})
    backends = Backends(settings)
    try:
        assert isinstance(backends.vectors, MemoryVectorStore)
    finally:
        backends.close()
    assert set(embedded_engine_folders(settings)) == {"keywords"}


@with_plugin
def test_settings_come_from_the_backends_namespace(tmp_path: Path, space: str) -> None:
    """HOPINDEX_MEMVEC_MAX_POINTS is a known setting once the plugin is installed, is
    parsed into the backend's settings and caps what the opened store holds."""
    settings = load_settings({"HOPINDEX_DATA_DIR": str(tmp_path),
                              "HOPINDEX_MEMVEC_MAX_POINTS": "2"})
    assert plugins.backend_settings(settings, "memvec") == MemvecSettings(max_points=2)
    assert "HOPINDEX_MEMVEC_MAX_POINTS" in plugins.backend_variables()
    store = open_vector_store(f"memvec://{space}", settings)
    store.ensure_index("i", 8)
    store.upsert_vectors("i", [record(0), record(1)])
    with pytest.raises(BackendError, match="HOPINDEX_MEMVEC_MAX_POINTS=2"):
        store.upsert_vectors("i", [record(2)])
    assert store.count_vectors("i") == 2
    # The defaults when no variable is given.
    assert plugins.backend_settings(load_settings({"HOPINDEX_DATA_DIR": str(tmp_path)}),
                                    "memvec") == MemvecSettings()
    assert [hit.unit_id for hit in store.search_vectors("i", axis(1), k=1)] == [record(1).unit_id]


@with_plugin
@pytest.mark.parametrize(("variable", "value", "message"), [
    ("HOPINDEX_MEMVEC_MAX_POINTS", "lots", "HOPINDEX_MEMVEC_MAX_POINTS must be an integer"),
    ("HOPINDEX_MEMVEC_MAX_POINTS", "0", "HOPINDEX_MEMVEC_\\*: max_points must be at least 1"),
    ("HOPINDEX_MEMVEC_MAX_POINT", "5", "did you mean HOPINDEX_MEMVEC_MAX_POINTS"),
], ids=["type", "refused-by-the-dataclass", "misspelt"])
def test_a_bad_setting_stops_loading_named(tmp_path: Path, variable: str, value: str,
                                           message: str) -> None:
    """A bad value, or a misspelt variable, of the backend's namespace stops the process
    when the settings load, naming the variable."""
    with pytest.raises(ConfigError, match=message):
        load_settings({"HOPINDEX_DATA_DIR": str(tmp_path), variable: value})


def test_without_the_plugin_the_scheme_and_its_settings_are_unknown(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing in hopindex names memvec: uninstalled, its URL and variables are refused."""
    monkeypatch.setattr(plugins, "_registry", None)
    with pytest.raises(ConfigError, match=r"HOPINDEX_VECTOR_URL: unsupported scheme in "
                                          r"'memvec://scratch' \(registered: qdrant://, "
                                          r"qdrant\+https://, qdrant-edge://;"):
        open_vector_store("memvec://scratch")
    with pytest.raises(ConfigError, match="unknown setting"):
        load_settings({"HOPINDEX_DATA_DIR": str(tmp_path), "HOPINDEX_MEMVEC_MAX_POINTS": "2"})
