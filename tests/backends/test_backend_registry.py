"""The backend registry: URL schemes to backends, its refusals, and what it imports."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from hopindex.backends import plugins
from hopindex.backends.builtin import BUILTIN_BACKENDS
from hopindex.backends.plugin import BackendRegistry, BackendRole, BackendSpec
from hopindex.backends.registry import (
    open_event_log,
    open_keyword_index,
    open_state_store,
    open_vector_store,
)
from hopindex.backends.state.sqlite_store import SqliteStateStore
from hopindex.core.errors import ConfigError
from hopindex.core.settings import Settings
from tests.plugin_backend.fixtures import install

BUILTIN_SCHEMES = {
    BackendRole.VECTORS: "qdrant://, qdrant+https://, qdrant-edge://",
    BackendRole.KEYWORDS: "elasticsearch://, elasticsearch+https://, tantivy://",
    BackendRole.STATE: "redis://, rediss://, sqlite://, unix://",
}
OPENERS = {BackendRole.VECTORS: open_vector_store, BackendRole.KEYWORDS: open_keyword_index,
           BackendRole.STATE: open_state_store}


def raising_register(registry: BackendRegistry) -> None:
    """An entry point's callable that fails as a broken plugin would."""
    raise RuntimeError("the plugin's engine client is not installed")


def _with_specs(monkeypatch: pytest.MonkeyPatch, *specs: BackendSpec) -> None:
    """The process registry: the built-in backends and ``specs``."""
    found = BackendRegistry()
    for spec in (*BUILTIN_BACKENDS, *specs):
        found.add(spec)
    monkeypatch.setattr(plugins, "_registry", found)


@pytest.mark.parametrize("role", list(BackendRole))
def test_unknown_scheme_names_the_setting_and_the_registered_schemes(
        role: BackendRole, monkeypatch: pytest.MonkeyPatch) -> None:
    """The refusal names the role's variable and the URL, lists every scheme registered
    for that role, and says where more come from."""
    monkeypatch.setattr(plugins, "_registry", None)
    with pytest.raises(ConfigError) as caught:
        OPENERS[role]("nosuch://somewhere")
    assert str(caught.value) == (
        f"{role.variable}: unsupported scheme in 'nosuch://somewhere' (registered: "
        f"{BUILTIN_SCHEMES[role]}; a backend plugin adds others through the "
        "'hopindex.backends' entry points)")


def test_a_plugin_whose_register_raises_is_named(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A plugin failing to register stops the registry with a ConfigError naming the
    entry point, its value and the error, not a bare traceback from inside it."""
    value = f"{__name__}:raising_register"
    install(tmp_path / "site", monkeypatch, {"broken": value})
    with pytest.raises(ConfigError) as caught:
        open_vector_store("qdrant-edge://./vectors")
    assert str(caught.value) == (
        f"backend plugin 'broken' ({value}) failed to load: "
        "RuntimeError: the plugin's engine client is not installed")


def _open_state(url: str, settings: Settings) -> SqliteStateStore:
    return SqliteStateStore(Path(":memory:"))


def test_a_plugin_cannot_take_a_built_in_scheme() -> None:
    """Registering a (role, scheme) already served is refused naming both backends; the
    same scheme for another role is another backend's to take."""
    found = BackendRegistry()
    for spec in BUILTIN_BACKENDS:
        found.add(spec)
    with pytest.raises(ConfigError, match="scheme sqlite:// is already served by backend "
                                          "'sqlite'"):
        found.add(BackendSpec(name="mine", role=BackendRole.STATE, schemes=("sqlite",),
                              opener=_open_state))
    found.add(BackendSpec(name="mine", role=BackendRole.KEYWORDS, schemes=("sqlite",),
                          opener=_open_state))
    assert found.find(BackendRole.KEYWORDS, "sqlite") is found.backends["mine"]


@dataclass(frozen=True)
class _LlmSettings:
    model: str = ""


def test_a_namespace_variable_may_not_be_a_core_setting() -> None:
    """A backend named ``llm`` with a ``model`` field would own HOPINDEX_LLM_MODEL, which
    is the core setting's: refused, naming the variable."""
    with pytest.raises(ConfigError, match="HOPINDEX_LLM_MODEL is taken by a core setting"):
        BackendRegistry().add(BackendSpec(name="llm", role=BackendRole.STATE,
                                          schemes=("llmstate",), opener=_open_state,
                                          settings_type=_LlmSettings))


@dataclass
class _Mutable:
    limit: int = 1


@pytest.mark.parametrize(("fields", "message"), [
    ({"name": "Mem-Vec"}, "backend name 'Mem-Vec' must be lowercase"),
    ({"schemes": ()}, "must serve lower-case URL schemes"),
    ({"schemes": ("Mem",)}, "must serve lower-case URL schemes"),
    ({"embedded": True}, "a state backend is never an embedded engine"),
    ({"role": BackendRole.VECTORS, "event_log": _open_state}, "only a state backend"),
    ({"settings_type": dict}, "settings_type must be a frozen dataclass"),
    ({"settings_type": _Mutable}, "settings_type must be a frozen dataclass"),
])
def test_a_malformed_spec_is_refused(fields: dict[str, object], message: str) -> None:
    given: dict[str, object] = {"name": "mem", "role": BackendRole.STATE,
                                "schemes": ("mem",), "opener": _open_state, **fields}
    with pytest.raises(ConfigError, match=message):
        BackendSpec(**given)  # type: ignore[arg-type]  # a mapping of mixed values, one per field


def test_a_state_backend_without_an_event_log_refuses_events(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Its state opens; asking for the events beside it names the backend."""
    _with_specs(monkeypatch, BackendSpec(name="memstate", role=BackendRole.STATE,
                                         schemes=("memstate",), opener=_open_state))
    state = open_state_store("memstate://x")
    try:
        assert isinstance(state, SqliteStateStore)
    finally:
        state.close()
    with pytest.raises(ConfigError, match="the 'memstate' state backend keeps no event log"):
        open_event_log("memstate://x")


def test_finding_a_backend_imports_no_adapter(tmp_path: Path) -> None:
    """Filling the registry and resolving every built-in URL imports no engine's
    adapter: a backend's module is imported when it is opened, and only then."""
    code = (
        "import sys\n"
        "from hopindex.backends.plugin import BackendRole\n"
        "from hopindex.backends.registry import embedded_engine_folders\n"
        "from hopindex.backends.plugins import find_backend\n"
        "from pathlib import Path\n"
        "from hopindex.core.settings import Settings\n"
        f"embedded_engine_folders(Settings(data_dir=Path({str(tmp_path)!r})).resolved())\n"
        "for role, url in [('vectors', 'qdrant://h:1'), ('keywords', 'elasticsearch://h:1'),"
        " ('state', 'redis://h'), ('state', 'sqlite://x')]:\n"
        "    find_backend(BackendRole(role), url)\n"
        "loaded = [m for m in sys.modules if m.startswith(('hopindex.backends.vector',"
        " 'hopindex.backends.keyword', 'hopindex.backends.state', 'hopindex.backends.events',"
        " 'qdrant', 'tantivy', 'redis', 'elasticsearch'))]\n"
        "print(loaded)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]", result.stdout
