"""Install ``tests.plugin_backend`` as a plugin: an entry point in a ``*.dist-info`` folder.

The folder goes on ``sys.path``, which is how ``importlib.metadata`` finds an installed
distribution; the backend registry this process caches is dropped before and after, so
it is filled again with the plugin in it, and without it once the test ends.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from hopindex.backends import plugins

DISTRIBUTION = "hopindex_memvec_test-0.0.1"


def write_distribution(site: Path, entries: Mapping[str, str]) -> Path:
    """A minimal installed distribution whose entry points are ``entries`` (name → value)."""
    info = site / f"{DISTRIBUTION}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: hopindex-memvec-test\n"
                                   "Version: 0.0.1\n")
    lines = "".join(f"{name} = {value}\n" for name, value in entries.items())
    (info / "entry_points.txt").write_text(f"[{plugins.ENTRY_POINT_GROUP}]\n{lines}")
    return site


def install(site: Path, monkeypatch: pytest.MonkeyPatch, entries: Mapping[str, str]) -> None:
    """``entries`` installed for this process, the registry to be filled again."""
    monkeypatch.syspath_prepend(str(write_distribution(site, entries)))
    monkeypatch.setattr(plugins, "_registry", None)


@pytest.fixture
def memvec_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The memvec plugin installed for this process; yields the folder that holds its
    distribution."""
    site = tmp_path / "site"
    install(site, monkeypatch, {"memvec": "tests.plugin_backend:register"})
    yield site
    # monkeypatch puts back the registry cached before the test (or None).
